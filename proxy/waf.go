package proxy

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"lbd/backend"
	"lbd/config"
	"lbd/http1"
	"lbd/waf"
)

// The WAF (package waf) sees each request of a listener that has rules
// in its four phases, as zproxy feeds libmodsecurity: request headers
// once the service is chosen, the request body before anything goes to a
// backend (what is inspected is held: at most SecRequestBodyLimit),
// response headers as they arrive, and the response body as it streams.
// A verdict while nothing of the response was sent is answered as the
// rule says; one at the end of a body already partly sent cuts the
// response short (see wafCut). A listener without rules has no Engine,
// and these functions are never reached.

// errWAFCut: a phase 4 verdict came after part of the body was sent.
var errWAFCut = errors.New("response cut by a WAF rule")

// wafRequestHead starts the request's transaction and runs phase 1, and
// phase 2 when the request has no body (or goes to a backend of lbd's
// own, which reads no body). done: the WAF answered (ok: as handle).
func (c *conn) wafRequestHead(st *Listener, special bool) (done, ok bool) {
	req := &c.req
	tx := st.WAF.Begin(addrPort(c.nc.RemoteAddr()), addrPort(c.nc.LocalAddr()))
	c.ex.waf = tx
	tx.RequestLine(string(req.Method), string(req.Target), c.protocol())
	for _, h := range req.Headers {
		tx.AddRequestHeader(string(h.Name), string(h.Value))
	}
	if v := tx.RequestHeaders(); v != nil {
		return true, c.wafAnswer(st, v)
	}
	if hasBody(req) && !special {
		return false, false // phase 2 runs in forward, with the body
	}
	return c.wafPhase2(st)
}

// wafPhase2 runs phase 2 on what the WAF was given of the body.
func (c *conn) wafPhase2(st *Listener) (done, ok bool) {
	v, err := c.ex.waf.RequestBody()
	if err != nil {
		st.diag(err)
		return true, c.fail(st, 500)
	}
	if v != nil {
		return true, c.wafAnswer(st, v)
	}
	return false, false
}

func hasBody(req *http1.Request) bool { return req.Chunked || req.ContentLength > 0 }

// protocol is the request's protocol as ModSecurity's REQUEST_PROTOCOL.
func (c *conn) protocol() string {
	switch {
	case c.http2:
		return "HTTP/2.0"
	case c.req.Minor == 0:
		return "HTTP/1.0"
	}
	return "HTTP/1.1"
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
}

// wafRequestBody reads the request body the WAF inspects into c.out
// (after the head, at headLen) and runs phase 2. whole is updated when
// the whole body was read. An Expect: 100-continue client is told to
// send first, as zproxy does.
func (c *conn) wafRequestBody(st *Listener, headLen int, whole *bool) (done, ok bool) {
	tx := c.ex.waf
	if tx.WantsRequestBody() {
		if c.req.Expect100 && !*whole {
			c.dl.forWrite(c.nc, c.now, st.Client)
			if _, err := c.nc.Write(continueBody); err != nil {
				return true, c.failStatus(st, errClientIO)
			}
			c.ex.continued = true
		}
		v, err := c.wafReadBody(st, headLen, whole)
		if err != nil {
			return true, c.failStatus(st, err)
		}
		if v != nil {
			return true, c.wafAnswer(st, v)
		}
	}
	return c.wafPhase2(st)
}

// wafReadBody feeds the buffered body bytes and reads on until the body
// ends or the WAF has seen what it inspects.
func (c *conn) wafReadBody(st *Listener, headLen int, whole *bool) (*waf.Verdict, error) {
	c.ex.dechunk.reset()
	v, full, err := c.wafFeedRequest(c.out[headLen:])
	rate := bodyRate{start: c.now}
	for v == nil && err == nil && !full && !*whole {
		var piece []byte
		piece, *whole, err = c.nextBodyPiece(st, &rate)
		if err != nil {
			return nil, err
		}
		c.out = append(c.out, piece...)
		v, full, err = c.wafFeedRequest(piece)
	}
	if err != nil {
		st.diag(err)
		return nil, errBadRequest
	}
	return v, nil
}

// wafFeedRequest gives the WAF request body bytes as sent (decoded when
// chunked).
func (c *conn) wafFeedRequest(raw []byte) (*waf.Verdict, bool, error) {
	data := raw
	if c.req.Chunked {
		c.ex.wafData = c.ex.dechunk.decode(c.ex.wafData[:0], raw)
		data = c.ex.wafData
	}
	if len(data) == 0 {
		return nil, false, nil
	}
	return c.ex.waf.WriteRequestBody(data)
}

// wafResponseHead runs phase 3, and phase 4 at once when the response
// has no body the WAF reads. inspect: the body is to be given to it.
func (c *conn) wafResponseHead(st *Listener, kind http1.BodyKind) (v *waf.Verdict, inspect bool) {
	tx := c.ex.waf
	resp := &c.resp
	for _, h := range resp.Headers {
		tx.AddResponseHeader(string(h.Name), string(h.Value))
	}
	if v := tx.ResponseHeaders(resp.Status, "HTTP/1."+strconv.Itoa(resp.Minor)); v != nil {
		return v, false
	}
	if kind != http1.BodyNone && tx.WantsResponseBody() {
		c.ex.dechunk.reset()
		return nil, true
	}
	v, err := tx.ResponseBody()
	if err != nil {
		st.diag(err)
	}
	return v, false
}

// wafResponseBody gives the WAF the next raw bytes of the response body;
// last runs phase 4. Once the WAF has seen what it inspects it runs
// phase 4 itself, and no more is given.
func (c *conn) wafResponseBody(st *Listener, raw []byte, last bool) *waf.Verdict {
	if !c.ex.wafResp {
		return nil
	}
	data := raw
	if c.resp.BodyKind(c.req.MethodID == http1.MethodHEAD) == http1.BodyChunked {
		c.ex.wafData = c.ex.dechunk.decode(c.ex.wafData[:0], raw)
		data = c.ex.wafData
	}
	tx := c.ex.waf
	if len(data) > 0 {
		v, full, err := tx.WriteResponseBody(data)
		if err != nil {
			st.diag(err)
		}
		if v != nil || full || err != nil {
			c.ex.wafResp = false
			return v
		}
	}
	if !last {
		return nil
	}
	c.ex.wafResp = false
	v, err := tx.ResponseBody()
	if err != nil {
		st.diag(err)
	}
	return v
}

// wafAnswer answers a verdict before anything of the response was sent:
// the rule's redirect, its deny status with the listener's ErrWAF page,
// or a dropped connection. The connection closes after it.
func (c *conn) wafAnswer(st *Listener, v *waf.Verdict) bool {
	c.srv.wafHits.Add(1)
	c.ex.wafVerdict = v
	st.diag(errors.New("WAF: " + v.String()))
	c.ex.status, c.ex.gen = v.Status, true
	if v.Drop {
		c.abort()
		c.ex.status = 0
		c.logRequest(st)
		return false
	}
	c.srv.countGenerated(v.Status)
	c.dl.forWrite(c.nc, c.now, st.Client)
	if _, err := c.nc.Write(c.editGenerated(st, c.wafReply(st, v))); err != nil {
		c.ex.status = 0
	}
	c.logRequest(st)
	return false
}

// wafReply renders the answer to a verdict in the listener's dialect.
func (c *conn) wafReply(st *Listener, v *waf.Verdict) []byte {
	if v.Redirect() {
		return c.redirectReply(st.Dialect, v.Status, []byte(v.Location))
	}
	var page *config.ErrorPage
	if w := st.Cfg.WAF; w != nil {
		if page = w.Pages[v.Status]; page == nil {
			page = w.Page
		}
	}
	reason := http.StatusText(v.Status)
	if r, ok := statusText[v.Status]; ok {
		reason = r[0]
	}
	if st.Dialect == config.DialectZproxy {
		body := zproxyDefaultBody(v.Status, reason)
		if page != nil {
			body = append(append([]byte{}, page.Body...), '\n')
		}
		return renderZproxyError(v.Status, reason, body)
	}
	body := defaultBody(st.Dialect, v.Status)
	if page != nil {
		body = page.Body
	}
	return renderError(st.Dialect, c.req.Minor, v.Status, body)
}

// wafCut ends a response whose body was partly sent when a phase 4
// verdict came. zproxy writes its answer where the rest of the body
// would be: in a chunked body that is a framing error no client takes
// for the end; lbd does the same, and resets a body of any other kind
// (a close would look like its end).
func (c *conn) wafCut(st *Listener, kind http1.BodyKind) {
	v := c.ex.wafVerdict
	c.srv.wafHits.Add(1)
	st.diag(errors.New("WAF: " + v.String() + " after part of the response was sent: response cut"))
	if kind == http1.BodyChunked && !v.Drop {
		c.dl.forWrite(c.nc, c.now, st.Client)
		if _, err := c.nc.Write(c.wafReply(st, v)); err == nil {
			return
		}
	}
	c.abort()
}

// wafClose ends the request's transaction (its logging phase).
func (c *conn) wafClose(st *Listener) {
	if err := c.ex.waf.Close(); err != nil {
		st.diag(err)
	}
	c.ex.waf, c.ex.wafVerdict, c.ex.wafResp, c.ex.continued = nil, nil, false, false
}

// wafBodyPiece is the hook of the body copy loops: it gives the WAF the
// piece about to be sent, and turns a verdict into errWAFCut.
func (c *conn) wafBodyPiece(st *Listener, p []byte, last bool) error {
	if v := c.wafResponseBody(st, p, last); v != nil {
		c.ex.wafVerdict = v
		return errWAFCut
	}
	return nil
}

// wafHeldVerdict handles a verdict on a response nothing of which was
// sent: the backend connection goes, the WAF answers.
func (c *conn) wafHeldVerdict(st *Listener, bc *backend.Conn, v *waf.Verdict) bool {
	bc.Close()
	c.ex.be.Done(bc, c.resp.Status, time.Since(c.ex.start))
	return c.wafAnswer(st, v)
}

// wafDecides runs the request through the listener's rules in a dry
// transaction (phase 1, and phase 2 when the request has no body: the
// explainer has none to give), as conn.wafRequestHead would. It reports
// whether a rule decides the answer, recorded as the reply.
func (x *explainer) wafDecides() bool {
	c, st := x.c, x.st
	if st.WAF == nil {
		return false
	}
	req := &c.req
	tx := st.WAF.BeginDry(addrPort(c.nc.RemoteAddr()), addrPort(c.nc.LocalAddr()))
	defer func() {
		if err := tx.Discard(); err != nil {
			st.diag(err)
		}
	}()
	tx.RequestLine(string(req.Method), string(req.Target), c.protocol())
	for _, h := range req.Headers {
		tx.AddRequestHeader(string(h.Name), string(h.Value))
	}
	v := tx.RequestHeaders()
	phases := "phase 1"
	if v == nil && !hasBody(req) {
		var err error
		if v, err = tx.RequestBody(); err != nil {
			x.check("WAF", false, err.Error())
			return false
		}
		phases = "phases 1 and 2"
	}
	if v == nil {
		x.check("WAF", true, "no rule decides in "+phases+" (the response phases need the backend)")
		return false
	}
	x.check("WAF", false, v.String())
	kind := "waf"
	if v.Redirect() {
		kind = "redirect"
	}
	x.reply(v.Status, kind, c.editGenerated(st, c.wafReply(st, v)), "WAF "+v.String())
	return true
}

// appendWAFVerdict is %{waf}N: RULE/PHASE/ACTION of the rule that
// decided the request (deny, redirect, drop), or "-".
func (c *conn) appendWAFVerdict(b []byte) []byte {
	v := c.ex.wafVerdict
	if v == nil {
		return append(b, '-')
	}
	b = strconv.AppendInt(b, int64(v.RuleID), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(v.Phase), 10)
	switch {
	case v.Drop:
		return append(b, "/drop"...)
	case v.Redirect():
		return append(b, "/redirect"...)
	}
	return append(b, "/deny"...)
}
