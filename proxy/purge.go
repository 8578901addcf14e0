package proxy

import (
	"strconv"

	"lbd/service"
)

// The PURGE method (lbd's CachePurge, in a service's cache settings):
// a client in the service's purge ACL removes the request's URL — every
// variant stored under it, here and, through the engine, on every
// instance of the cluster — as `lbctl cache purge URL` would. The answer
// follows Squid, Traffic Server and nginx's cache_purge: 200 when this
// instance had something stored, 404 when it had nothing. A client
// outside the ACL gets 403: the method exists on the resource but the
// client may not use it (Varnish's example VCL answers 405, which
// RFC 9110 §15.5.6 reserves for a method the resource does not support
// and which must then list the others in Allow). A service without
// CachePurge answers PURGE as an unknown method, 400, as before.

// purge serves a PURGE request routed to svc.
func (c *conn) purge(st *Listener, svc *service.Service) bool {
	if status, _ := c.purgeRefusal(svc, true); status != 0 { // the reason is the explainer's
		return c.fail(st, status)
	}
	host, target := string(c.req.Host), c.purgeTarget()
	var n int
	if st.PurgeCache != nil {
		var err error
		if n, err = st.PurgeCache(host, target, false); err != nil {
			st.diag(err)
			return c.fail(st, 500)
		}
	} else {
		n = svc.Cache.PurgeURL(host, target, false)
	}
	status, reply := c.purgeReply(st, n)
	c.srv.countGenerated(status)
	c.dl.forWrite(c.nc, c.now, st.Client)
	if err := c.writeClient(reply); err != nil {
		return false
	}
	c.ex.status, c.ex.gen = status, true
	c.logRequest(st)
	return false
}

// purgeRefusal is the status a PURGE routed to svc is refused with, and
// why (0: the client may purge); count: the ACL decision is counted.
func (c *conn) purgeRefusal(svc *service.Service, count bool) (int, string) {
	cfg := svc.Cfg
	if svc.Cache == nil || cfg == nil || cfg.Rare().Cache == nil || cfg.Rare().Cache.Purge == nil {
		return 400, "the service has no CachePurge: PURGE is an unknown method there"
	}
	acl := cfg.Rare().Cache.Purge
	in := acl.Contains(c.client)
	if count {
		acl.Decided(in)
	}
	if !in {
		return 403, "the client is not in the service's CachePurge ACL"
	}
	return 0, ""
}

// purgeReply is the answer to a PURGE that removed n keys here.
func (c *conn) purgeReply(st *Listener, n int) (int, []byte) {
	status, body := 200, "Purged "+strconv.Itoa(n)+"\n"
	if n == 0 {
		status, body = 404, "Not in cache\n"
	}
	reply := "HTTP/1." + strconv.Itoa(c.req.Minor) + " " + strconv.Itoa(status) + " " + Reason(status) + "\r\n" +
		"Content-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
	return status, c.editGenerated(st, []byte(reply))
}

// purgeDecides explains a PURGE routed to svc (nothing is removed).
func (x *explainer) purgeDecides(svc *service.Service) {
	c := x.c
	if status, why := c.purgeRefusal(svc, false); status != 0 {
		x.check("purge allowed (CachePurge)", false, why)
		x.generated(status, CauseNone, "error", why)
		return
	}
	x.check("purge allowed (CachePurge)", true, "")
	n := svc.Cache.StoredURL(string(c.req.Host), c.purgeTarget())
	status, page := c.purgeReply(x.st, n)
	why := "PURGE removes the URL here (" + strconv.Itoa(n) + " stored) and, in a cluster, on the other instances"
	x.reply(status, "purge", page, why)
}

// purgeTarget is the request's target as the cache keys it: origin form.
func (c *conn) purgeTarget() string {
	r := &c.req
	if !r.AbsoluteForm {
		return string(r.Target)
	}
	if r.Query != nil {
		return string(r.Path) + "?" + string(r.Query)
	}
	return string(r.Path)
}
