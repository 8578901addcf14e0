package cache

import (
	"bytes"
	"strings"
	"time"

	"lbd/http1"
)

// Response tells the cache the backend's answer to the request (its head
// parsed in resp) and says what the proxy does with it.
func (t *Tx) Response(req *http1.Request, resp *http1.Response) Outcome {
	c := t.c
	now := c.now()
	if t.method != http1.MethodGET && t.method != http1.MethodHEAD {
		t.invalidateFor(req, resp)
		return Relay
	}
	if t.Action == Pass {
		return Relay
	}
	if t.Action == Validate && resp.Status == 304 {
		return t.freshen(resp, now)
	}
	if resp.Status >= 500 && t.staleIfError(now) {
		return ServeStored
	}
	if t.method == http1.MethodHEAD {
		return Relay
	}
	if !t.storable(resp) {
		if t.flight != nil {
			c.rememberPass(t.key, now)
		}
		return Relay
	}
	o := newObject(resp, req, t.reqTime, now, varyFields(resp))
	o.stored = now
	if c.cfg.CDNControl {
		if d, ok := targeted(resp); ok {
			o.cdn = &d
		}
	}
	t.fill = o
	if resp.ContentLength > 0 {
		o.Body = make([]byte, 0, resp.ContentLength)
	}
	t.stored = true
	return Store
}

// freshen handles a 304 to a Validate (§4.3.4): the stored response
// is updated when the 304's validators select it, and served.
func (t *Tx) freshen(resp *http1.Response, now time.Time) Outcome {
	o := t.Obj
	if t.clientCond {
		// The client's own validators were sent: the 304 speaks of the
		// stored response only if it names the same ETag.
		etag := bytes.TrimSpace(resp.HeaderValue([]byte("ETag")))
		if etag == nil || o.etag == nil || !bytes.Equal(etag, o.etag) {
			return Relay
		}
	}
	// lbd sent the stored response's validators: the 304 is about it.
	n := o.update(resp, t.reqTime, now)
	t.c.replace(t.key, o, n)
	t.Obj = n
	t.revalidated = true
	if t.clientCond {
		return Relay // the client's own conditional: it gets the 304
	}
	return ServeStored
}

// staleIfError: the stored response may answer instead of an error
// (RFC 5861 §4), by the response's or the request's stale-if-error.
func (t *Tx) staleIfError(now time.Time) bool {
	o := t.Obj
	if o == nil || o.cc.MustRevalidate || o.cc.ProxyRevalidate || o.cc.SMaxAge >= 0 || o.cc.NoCache {
		return false
	}
	life, _ := o.lifetime(t.c.policy()) // heuristic or explicit, the lifetime is the same
	stale := o.Age(now) - life
	window := max(o.cc.StaleIfError, t.reqCC.StaleIfError)
	if window < 0 || stale > window {
		return false
	}
	t.fwd, t.ttl, t.detail = "", -max(stale, 0), "stale-if-error"
	t.c.Stats.Stale.Add(1)
	return true
}

// Failed is called when no response came (the backend is down or timed
// out): it reports whether a stored response is served instead.
func (t *Tx) Failed() bool {
	if t.Action != Validate && t.Action != Miss {
		return false
	}
	return t.staleIfError(t.c.now())
}

// storable applies §3 (and §3.5 for Authorization) to the response.
func (t *Tx) storable(resp *http1.Response) bool {
	c := t.c
	cc := ParseDirectives(resp.Headers, "Cache-Control")
	if c.cfg.CDNControl {
		if d, ok := targeted(resp); ok {
			// The targeted field replaces Cache-Control for this cache
			// (RFC 9213 §2.1): its no-store and freshness decide.
			if d.NoStore || d.Private {
				return false
			}
			if d.MaxAge >= 0 || d.SMaxAge >= 0 {
				return !t.reqCC.NoStore
			}
		}
	}
	switch {
	case resp.Status < 200 || resp.Status == 206 || resp.Status == 304:
		return false
	case cc.MustUnderstand && !understood(resp.Status):
		return false
	case t.reqCC.NoStore || (cc.NoStore && !(cc.MustUnderstand && understood(resp.Status))):
		return false
	case cc.Private && !t.private:
		return false
	case t.auth && !cc.Public && !cc.MustRevalidate && cc.SMaxAge < 0:
		return false
	case c.cfg.MaxObject > 0 && resp.ContentLength > c.cfg.MaxObject:
		return false
	}
	for _, f := range varyFields(resp) {
		if f == "*" {
			return false
		}
	}
	explicit := cc.MaxAge >= 0 || cc.SMaxAge >= 0 || cc.Public || resp.HeaderValue([]byte("Expires")) != nil
	return explicit || heuristicAllowed(resp.Status)
}

// understood lists the status codes whose caching rules lbd implements
// (for must-understand, RFC 9111 §5.2.2.3).
func understood(status int) bool {
	switch status {
	case 200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 451, 501:
		return true
	}
	return false
}

// Write adds body bytes of a Store response (as the client gets them,
// decoded). An object that grows past MaxObject is dropped.
func (t *Tx) Write(p []byte) {
	if t.fill == nil {
		return
	}
	if max := t.c.cfg.MaxObject; max > 0 && int64(len(t.fill.Body)+len(p)) > max {
		t.fill = nil
		t.c.rememberPass(t.key, t.c.now())
		return
	}
	t.fill.Body = append(t.fill.Body, p...)
}

// Finish ends the transaction: a Store response whose body arrived whole
// (complete) is stored; waiters for the key go on.
func (t *Tx) Finish(complete bool) {
	if t.fill != nil && complete {
		if b := t.fill.Body; cap(b) > len(b)+len(b)/8 {
			// A body whose length was not known grew by doubling: what
			// is stored costs what it weighs.
			t.fill.Body = append(make([]byte, 0, len(b)), b...)
		}
		var validated *Object
		if t.Action == Validate {
			validated = t.Obj // answered by a full response: it goes
		}
		t.c.put(t.key, t.fill, validated)
	}
	t.fill = nil
	if t.flight != nil {
		t.c.land(t.flight)
		t.flight = nil
	}
}

// Storing reports whether body bytes are wanted (Write).
func (t *Tx) Storing() bool { return t.fill != nil }

// invalidateFor applies §4.4: a non-error response to an unsafe method
// invalidates the target and the same-host Location and Content-Location.
func (t *Tx) invalidateFor(req *http1.Request, resp *http1.Response) {
	if resp.Status < 200 || resp.Status >= 400 || safe(t.method) {
		return
	}
	c := t.c
	c.invalidate(t.key)
	for _, name := range [...]string{"Location", "Content-Location"} {
		v := resp.HeaderValue([]byte(name))
		if v == nil {
			continue
		}
		if target, ok := sameOrigin(string(bytes.TrimSpace(v)), t.host, string(req.Path)); ok {
			c.Purge(func(k string) bool {
				return keyURL(k) == t.host+target
			})
		}
	}
	// The request key itself, with every extension.
	c.PurgeURL(t.host, string(req.Target), false)
}

func safe(m http1.Method) bool {
	switch m {
	case http1.MethodGET, http1.MethodHEAD, http1.MethodOPTIONS, http1.MethodTRACE:
		return true
	}
	return false
}

// sameOrigin resolves a Location value against the request and returns
// its target when it is on the request's host.
func sameOrigin(loc, host, reqPath string) (string, bool) {
	switch {
	case strings.HasPrefix(loc, "//"):
		return "", false
	case strings.HasPrefix(loc, "/"):
		return loc, true
	case strings.HasPrefix(loc, "http://") || strings.HasPrefix(loc, "https://"):
		_, rest, _ := strings.Cut(loc, "://")
		h, path, found := strings.Cut(rest, "/")
		if !strings.EqualFold(h, host) {
			return "", false
		}
		if !found {
			return "/", true
		}
		return "/" + path, true
	case strings.Contains(loc, ":"):
		return "", false
	}
	dir := reqPath[:strings.LastIndexByte(reqPath, '/')+1]
	return dir + loc, true
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// targeted is the response's field aimed at gateway caches: RFC 9213's
// CDN-Cache-Control, else the older Surrogate-Control (W3C Edge
// Architecture), whose directives aimed at a named device are skipped.
func targeted(resp *http1.Response) (Directives, bool) {
	if d := ParseDirectives(resp.Headers, "CDN-Cache-Control"); d.Present {
		return d, true
	}
	d := ParseDirectives(resp.Headers, "Surrogate-Control")
	return d, d.Present
}
