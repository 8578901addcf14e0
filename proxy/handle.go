package proxy

import (
	"time"

	"lbd/backend"
	"lbd/cache"
	"lbd/config"
	"lbd/http1"
	"lbd/service"
	"lbd/waf"
)

// exchange is the per-request state that outlives one function: reset at
// the start of every request, never reallocated.
type exchange struct {
	start   time.Time
	svc     *service.Service
	be      *backend.Backend
	status  int
	cause   Cause // why lbd answered status itself (zproxy's reason phrase)
	bytes   int64 // response body bytes sent to the client
	gen     bool  // the proxy generated the response
	closeCl bool  // close the client connection after this exchange
	// badExpand: a SetHeader line referred to a group or accessor the
	// request does not have; Pound answers 500.
	badExpand bool
	// limited: the reply lbd writes answers the service selection (no
	// service matched, or an Error backend), so when a TBF condition
	// refused the request it says when to retry (withRetryAfter).
	limited bool
	// edits caches the header rules for this request (listener's and its
	// service's), see editsFor.
	edits *HeaderEdits
	// respExtra holds complete header lines ("Name: value\r\n") the
	// session layer adds to the response (COOKIEINSERT's Set-Cookie).
	respExtra []byte
	// Lua (lua.go). forwarded: c.rs.Req holds the lines as forwarded
	// (the request rules ran on them). scripted: the response rules
	// call Lua. kept: c.body holds the whole request body. resend: a
	// response script asked to send the request again. newBody: it
	// replaced the response body. capture is the ContentCapture limit
	// while the body streams; prefer the backend a resend to the same
	// service goes to.
	forwarded, scripted, kept, resend, newBody bool
	// logged: the exchange's access log line is written; a failure deep
	// in forwarding logs it, and the caller must not log it again.
	logged  bool
	capture int64
	prefer  *backend.Backend
	// preRead: send made the first read of the response (WriteRead):
	// preN bytes, preErr its error; unread: the kernel said more
	// followed them (see bodyPrefix).
	preRead, unread bool
	preN            int
	preErr          error
	// The WAF (waf.go): the request's transaction (nil: the listener has
	// no rules), the verdict that answered, wafResp while the response
	// body is given to it, continued when the WAF's body read already
	// sent 100 Continue; dechunk and wafData decode chunked bodies for it.
	waf        *waf.Tx
	wafVerdict *waf.Verdict
	wafResp    bool
	continued  bool
	dechunk    dechunker
	wafData    []byte
	// grpcStatus is the response's grpc-status plus one (0: none), for
	// the log and the metrics (h2relay.go).
	grpcStatus int
	// The service's cache (cache.go): the request's transaction (nil:
	// the service has none), and the decoding of a chunked body stored.
	cache        *cache.Tx
	cacheChunked bool
	cacheDechunk dechunker
	cacheData    []byte
}

// handle serves the request whose head is at buf[r:]. It reports whether
// the connection may carry another request.
func (c *conn) handle(st *Listener) bool {
	ok := c.serveRequest(st)
	if c.ex.waf != nil {
		c.wafClose(st)
	}
	if c.ex.cache != nil {
		c.cacheEnd()
	}
	if c.rs.Script.Owner != nil {
		c.rs.EndScripts() // the Lua state goes back to the pool
	}
	if cap(c.body) > maxKeptBody {
		c.body = nil
	}
	if cap(c.out) > maxKeptBody {
		c.out = nil // a request body the WAF held
	}
	return ok
}

func (c *conn) serveRequest(st *Listener) bool {
	c.ex = exchange{start: c.now, respExtra: c.ex.respExtra[:0], wafData: c.ex.wafData[:0], cacheData: c.ex.cacheData[:0]}
	req := &c.req
	c.rs.Begin(c.client, st.Detached)
	c.rs.X.Minor, c.rs.X.Services = req.Minor, &st.Router
	if !c.srv.Enabled() {
		return c.fail(st, 503)
	}
	if status, cause := checkRequest(st, req); status != 0 {
		return c.failCause(st, status, cause)
	}
	if st.Challenges != nil && isChallenge(req) {
		if done, ok := c.acmeChallenge(st); done {
			return ok
		}
	}
	service.LoadRequest(c.rs, req, c.head())
	if len(st.Combine) > 0 {
		c.rs.Combine(&c.rs.Req, st.Combine)
	}
	svc, err := st.Router.Route(c.rs)
	if err != nil {
		st.diag(err)
		return c.fail(st, 500)
	}
	if svc == nil {
		c.ex.limited = true
		return c.failCause(st, 503, CauseNoService)
	}
	c.ex.svc = svc
	if len(svc.Auth) > 0 {
		if done, ok := c.authenticate(st, svc); done {
			return ok
		}
	}
	if st.WAF != nil {
		if done, ok := c.wafRequestHead(st, svc.UseSpecial()); done {
			return ok
		}
	}
	if req.MethodID == http1.MethodPURGE {
		return c.purge(st, svc) // purge.go: a service of the listener has CachePurge
	}
	if svc.UseSpecial() {
		return c.special(st, svc)
	}
	var ok bool
	if svc.Cache != nil {
		ok = c.cached(st, svc)
	} else {
		ok = c.forward(st, svc)
	}
	c.logRequest(st)
	// At a hand-over the connection stays if the response said so,
	// whenever the drain began: closing it now would reset a client
	// that was promised keep-alive and may be sending its next request.
	stopping := c.srv.closing.Load() && !c.srv.handover.Load()
	return ok && !c.ex.closeCl && req.KeepAlive && !stopping && !c.noHTTPS11()
}

// checkRequest applies the listener's request rules (xHTTP, CheckURL,
// MaxRequest) and returns the status to refuse with, or 0.
func checkRequest(st *Listener, req *http1.Request) (int, Cause) {
	// The parser already refused unknown methods (400); Pound 4 and
	// zproxy both answer 405 to a method xHTTP does not allow.
	if !http1.MethodAllowed(st.XHTTP, req.MethodID) && req.MethodID != http1.MethodPURGE {
		return 405, CauseNone // PURGE: the service decides (purge)
	}
	cfg := st.Cfg
	if cfg == nil {
		return 0, CauseNone
	}
	zproxy := st.Dialect == config.DialectZproxy
	if cfg.CheckURL != nil && !cfg.CheckURL.Match(req.Target) {
		if zproxy {
			return 503, CauseBadURL // validateRequestLine's BAD_URL
		}
		return 501, CauseNone
	}
	if cfg.MaxRequest > 0 {
		// zproxy limits the request head and answers 501 ("Request too
		// large"); Pound 4 checks Content-Length and answers 413.
		if zproxy {
			if int64(req.HeadLen) > cfg.MaxRequest {
				return 501, CauseNone
			}
		} else if req.ContentLength > cfg.MaxRequest {
			return 413, CauseNone
		}
	}
	return 0, CauseNone
}

// fail answers a generated error and closes the connection: after an error
// the request body was not read, so framing is in doubt.
func (c *conn) fail(st *Listener, status int) bool {
	return c.failCause(st, status, CauseNone)
}

// failCause is fail for an error whose zproxy page names its cause.
func (c *conn) failCause(st *Listener, status int, cause Cause) bool {
	c.ex.cause = cause
	c.writeError(st, status)
	c.ex.status, c.ex.gen = status, true
	c.logRequest(st)
	return false
}
