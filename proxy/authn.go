package proxy

import (
	"errors"
	"net/http"

	"lbd/edgeauth"
	"lbd/http1"
	"lbd/service"
)

// Edge authentication is the access stage after routing: every check a
// service's Authenticate names must pass, in order. A refusal is the
// check's own answer (a 401 with its challenge, a redirect, or what the
// forward authentication service said); a pass strips the client's
// copies of the headers the check sets and adds its own. A service
// without Authenticate never comes here.

// authenticate reports done when the request was answered here.
func (c *conn) authenticate(st *Listener, svc *service.Service) (done, ok bool) {
	var x *edgeauth.Exchange
	for _, chk := range svc.Auth {
		if x == nil && svc.AuthForward {
			x = c.authExchange()
		}
		out := c.rs.Authenticate(chk, x)
		chk.Stats().Record(out.OK())
		if !out.OK() {
			st.diag(errors.New("authentication " + chk.Name() + ": " + out.Reason))
			return true, c.authRefuse(st, out.Reply)
		}
		c.rs.ForwardIdentity(chk.Strip(), out.ID)
	}
	return false, false
}

// authExchange is what forward authentication passes on.
func (c *conn) authExchange() *edgeauth.Exchange {
	_, tls := c.nc.(TLSInfo)
	host, _ := c.rs.Req.Header("Host") // absent: empty host, which the exchange treats as none
	return &edgeauth.Exchange{Method: c.req.Method, URI: c.req.Target, Host: host,
		TLS: tls, Client: c.client}
}

// authRefuse writes a check's answer and closes the connection: the
// request body, if any, was not read.
func (c *conn) authRefuse(st *Listener, r *edgeauth.Reply) bool {
	reason := http.StatusText(r.Status)
	if reason == "" {
		reason = "Status"
	}
	c.srv.countGenerated(r.Status)
	c.dl.forWrite(c.nc, c.now, st.Client)
	c.ex.status, c.ex.gen = r.Status, true
	if _, err := c.nc.Write(r.Render(c.req.Minor, reason, c.req.MethodID == http1.MethodHEAD)); err != nil {
		c.ex.status = 0
	}
	c.logRequest(st)
	return false
}

// authDecides is the access stage in the routing explainer: JWT and API
// key checks run as they would (they change nothing but the verified
// token cache); forward authentication is not asked, since a dry run
// sends nothing anywhere. It reports whether a refusal ends the route.
func (x *explainer) authDecides(svc *service.Service) bool {
	c := x.c
	for _, chk := range svc.Auth {
		name := "authentication" + quoted(chk.Name())
		if _, fwd := chk.(*edgeauth.Forward); fwd {
			x.check(name, true, "forward authentication: not asked in a dry run (the authentication service decides)")
			continue
		}
		out := c.rs.Authenticate(chk, nil)
		if !out.OK() {
			x.check(name, false, out.Reason)
			reason := http.StatusText(out.Reply.Status)
			x.reply(out.Reply.Status, "authentication", out.Reply.Render(c.req.Minor, reason, false), name+" refuses the request: "+out.Reason)
			return true
		}
		detail := "passed"
		if out.ID.Name != "" {
			detail = "passed as " + out.ID.Name
		}
		x.check(name, true, detail)
		c.rs.ForwardIdentity(chk.Strip(), out.ID)
	}
	return false
}
