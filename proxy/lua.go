package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"lbd/backend"
	"lbd/http1"
	"lbd/rules"
	"lbd/service"
)

// Pound 4's Lua hooks on the data path: LuaBackend, response scripts that
// replace the body, and resending a request (src/http.c lua_response,
// backend_response, http_process_request). LuaMatch and LuaModify run
// inside the rule programs; nothing here runs for a request whose
// service and listener call no Lua.

// keepBody keeps the request body for the response scripts: for a
// resend, and as http.req.body when the service has ContentCapture and
// the body fits in it. buffered is the part already read; whole says it
// is all of it, else the rest is captured as it streams (up to
// ContentCapture).
func (c *conn) keepBody(svc *service.Service, buffered []byte, whole bool) {
	limit := svc.Cfg.Rare().ContentCapture
	c.body = append(c.body[:0], buffered...)
	c.ex.kept = whole
	switch {
	case whole:
		c.exposeBody(limit)
	case limit > 0 && int64(len(buffered)) <= limit:
		c.ex.capture = limit
	}
}

// captureChunk adds a streamed piece of the body; past the limit the
// capture stops and the body is not kept.
func (c *conn) captureChunk(chunk []byte) {
	if int64(len(c.body)+len(chunk)) > c.ex.capture {
		c.ex.capture = 0
		return
	}
	c.body = append(c.body, chunk...)
}

// captureDone marks a fully captured body kept.
func (c *conn) captureDone() {
	c.ex.kept = true
	c.exposeBody(c.ex.capture)
	c.ex.capture = 0
}

func (c *conn) exposeBody(limit int64) {
	if limit > 0 && int64(len(c.body)) <= limit {
		c.rs.X.Body, c.rs.X.HasBody = c.body, true
	}
}

// maxKeptBody is the body capacity a connection keeps between requests.
const maxKeptBody = 64 << 10

// pick chooses the backend: the one a resend to the same service prefers
// (once), or one of the balancer groups a script's http.balancer allows.
func (c *conn) pick(svc *service.Service, key []byte) *backend.Backend {
	if b := c.ex.prefer; b != nil {
		c.ex.prefer = nil
		if b.Available() {
			return b
		}
	}
	if min := c.rs.X.Resend.MinWeight; min > 0 {
		return svc.PickMin(key, min)
	}
	return svc.Pick(key)
}

// discardResponse drops the backend's response (a response script
// replaced its body or asked to resend): the connection goes back to the
// pool when the body came complete with the head, else it is closed.
func (c *conn) discardResponse(bc *backend.Conn, kind http1.BodyKind, rb []byte, n int) {
	b := c.ex.be
	_, complete, clean, err := c.bodyPrefix(kind, rb[headRoom+c.resp.HeadLen:headRoom+n])
	b.Done(bc, c.resp.Status, time.Since(c.ex.start))
	if err == nil && complete && clean && c.resp.KeepAlive && c.req.MethodID != http1.MethodCONNECT {
		b.Put(bc)
		return
	}
	bc.Close()
}

// sendNewBody answers with the head and the body a response script set.
func (c *conn) sendNewBody(st *Listener, bc *backend.Conn, kind http1.BodyKind, rb []byte, n int, head []byte, keep bool) bool {
	c.discardResponse(bc, kind, rb, n)
	c.out = head
	if c.req.MethodID != http1.MethodHEAD {
		c.out = append(c.out, c.rs.X.RespBody...)
		c.ex.bytes = int64(len(c.rs.X.RespBody))
	}
	c.dl.forWrite(c.nc, c.now, st.Client)
	_, err := c.nc.Write(c.out)
	return err == nil && keep
}

// resend prepares sending the request again as a response script asked
// (http.resend, http.balancer, http.service.name). again is false when
// it cannot be: the answer has been sent then, and ok says whether the
// connection goes on. At most rules.MaxResends resends, as Pound.
func (c *conn) resend(st *Listener, svc *service.Service) (next *service.Service, again, ok bool) {
	x := &c.rs.X
	r := x.Resend
	x.Resend.Mode, c.ex.resend, c.ex.prefer = rules.ResendNone, false, nil
	if r.Count >= rules.MaxResends {
		st.diag(c.exchangeError(500, fmt.Sprintf("refusing to do more than %d resends", rules.MaxResends)))
		return nil, false, c.fail(st, 500)
	}
	x.Resend.Count++
	if !c.ex.kept {
		st.diag(c.exchangeError(500, "cannot resend: the request body was not kept (ContentCapture is too small or unset)"))
		return nil, false, c.fail(st, 500)
	}
	next = svc
	switch r.Mode {
	case rules.ResendSame:
		c.ex.prefer = c.ex.be
	case rules.ResendService:
		if s, isSvc := r.Service.(*service.Service); isSvc && s != nil {
			next = s
			break
		}
		var err error
		if next, err = st.Router.Route(c.rs); err != nil {
			st.diag(err)
			return nil, false, c.fail(st, 500)
		}
		if next == nil {
			return nil, false, c.failCause(st, 503, CauseNoService)
		}
	}
	moved := next != svc
	if moved {
		c.ex.svc, c.ex.edits = next, nil
		c.ex.scripted = hasResponseScripts(st, next)
		// A resend to another service passes that service's checks too.
		if len(next.Auth) > 0 {
			if done, ok := c.authenticate(st, next); done {
				return nil, false, ok
			}
		}
	}
	if next.UseSpecial() {
		return nil, false, c.resendSpecial(st, next)
	}
	c.out = c.appendResendHead(st, next, moved, c.out[:0])
	if c.ex.badExpand {
		return nil, false, c.fail(st, 500)
	}
	c.out = append(c.out, c.body...)
	return next, true, true
}

// resendSpecial hands a resent request to a special backend, which reads
// the request from its head (the body is not read again).
func (c *conn) resendSpecial(st *Listener, svc *service.Service) bool {
	if c.req.Chunked || c.req.ContentLength > 0 {
		st.diag(c.exchangeError(500, "cannot resend a request with a body to a special backend"))
		return c.fail(st, 500)
	}
	c.r -= c.req.HeadLen // the head is still in the buffer: nothing was read since
	return c.special(st, svc)
}

// appendResendHead writes the head of a resent request: the request as
// it was last sent with the scripts' changes, the forwarding headers
// added once; when it moves to another service, that service's request
// rules and its pair's edits apply. The head is rendered as any ruled
// request's (renderRuledRequest).
func (c *conn) appendResendHead(st *Listener, svc *service.Service, moved bool, dst []byte) []byte {
	e := c.editsFor(st, svc)
	var err error
	switch {
	case !c.ex.forwarded:
		// The head went out without rules: the listener, the first
		// service and their pair have none.
		c.ruleForwardedLines(st)
		err = c.runRequestPrograms(nil, svc.ReqRules, e.Req)
	case moved:
		err = c.runRequestPrograms(nil, svc.ReqRules, e.Req)
	}
	if err != nil {
		st.diag(err)
		c.ex.badExpand = true
	}
	return c.renderRuledRequest(st, dst)
}

// exchangeError is a diagnostic in Pound's request log form:
// e500: client => backend: "request line": message.
func (c *conn) exchangeError(status int, msg string) error {
	be := "-"
	if c.ex.be != nil {
		be = c.ex.be.Address()
	}
	return fmt.Errorf("e%d: %s => %s: \"%s %s HTTP/1.%d\": %s", status, c.client, be, c.req.Method, c.req.Target, c.req.Minor, msg)
}

// luaBackend answers with the response a LuaBackend function builds
// (Pound's lua_response): the request rules run, then the function,
// then the response rules. Like the other special backends it does not
// read a request body, so after one the connection closes.
func (c *conn) luaBackend(st *Listener, svc *service.Service) bool {
	x := &c.rs.X
	x.Service = svc
	// The function sees the request as the request rules left it (the
	// pair's edits are for forwarding: the request goes nowhere).
	err := c.runRequestPrograms(nil, st.ReqRules, svc.ReqRules)
	if err == nil {
		err = svc.Lua.Run(c.rs)
	}
	if err == nil && (x.Status < 100 || x.Status > 599) {
		err = fmt.Errorf("%s: Lua backend %s set no response code (http.resp.code)", svc.Special.Pos, svc.Lua.Func())
	}
	if err == nil {
		// The response rules, then the pair's edits, as for any reply.
		err = c.ruledResponseLines(st, c.editsFor(st, svc), c.rs.Resp.Lines)
	}
	if err != nil {
		st.diag(err)
		return c.fail(st, 500)
	}
	keep := c.keepAfterGenerated()
	out := c.out[:0]
	if x.DefaultReason || x.Reason == nil {
		out = appendStatusLine(out, x.Status, http.StatusText(x.Status))
	} else {
		out = appendStatusLine(out, x.Status, x.Reason)
	}
	for _, l := range c.rs.Resp.Lines {
		if name := rules.LineName(l); http1.EqualFold(name, hdrContentLen) ||
			http1.EqualFold(name, "Transfer-Encoding") || http1.EqualFold(name, "Connection") {
			continue // the framing is lbd's
		}
		out = append(append(out, l...), crlf...)
	}
	out = append(out, "Content-Length: "...)
	out = append(strconv.AppendInt(out, int64(len(x.RespBody)), 10), crlf...)
	switch {
	case !keep:
		out = append(out, closeLine...)
	case c.req.Minor == 0:
		out = append(out, keepLine...)
	}
	out = append(out, crlf...)
	if c.req.MethodID != http1.MethodHEAD {
		out = append(out, x.RespBody...)
		c.ex.bytes = int64(len(x.RespBody))
	}
	c.out = out
	c.ex.status = x.Status
	c.dl.forWrite(c.nc, c.now, st.Client)
	_, werr := c.nc.Write(out)
	c.logRequest(st)
	c.r += c.req.HeadLen
	return werr == nil && keep
}
