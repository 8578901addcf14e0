package cache

import (
	"bytes"
	"strconv"
	"time"
	"unsafe"

	"lbd/http1"
)

// Action is what the proxy does with a request.
type Action uint8

const (
	// Pass: forward it; nothing is stored (an unsafe method's success
	// invalidates the stored responses it names, §4.4).
	Pass Action = iota
	// Hit: answer with Tx.Obj (as a 304 when Tx.NotModified).
	Hit
	// Miss: forward it; the response may be stored (Tx.Response).
	Miss
	// Validate: forward it with Tx.AppendConditionals; a 304 freshens
	// Tx.Obj (Tx.Response says to serve it).
	Validate
	// Refuse: only-if-cached and nothing usable is stored: 504 (§5.2.1.7).
	Refuse
)

// Outcome is what the proxy does with the backend's response.
type Outcome uint8

const (
	// Relay the response as it is; nothing is stored.
	Relay Outcome = iota
	// Store: relay it and give its body to Tx.Write, then Tx.Finish.
	Store
	// ServeStored: discard it and answer with Tx.Obj instead (a 304
	// that freshened it, or an error stale-if-error covers).
	ServeStored
)

// Tx is one request's dealings with the cache.
type Tx struct {
	c      *Cache
	Action Action
	// Obj is the stored response a Hit serves, or the one a Validate
	// revalidates.
	Obj *Object
	// NotModified: the Hit answers the client's own conditional with 304.
	NotModified bool
	// Background: a stale Hit under stale-while-revalidate; the proxy
	// revalidates in the background with Refresh.
	Background bool

	key        string
	keyBuf     []byte // BeginIn builds the key here
	host       string
	method     http1.Method
	reqTime    time.Time
	reqCC      Directives
	clientCond bool
	private    bool // IgnorePrivate matched the path
	auth       bool
	flight     *flight
	refresh    *flight // the background revalidation this Hit claimed
	dry        bool    // Peek: count nothing, claim nothing
	// A Hit that answers a Range request: bytes [rangeFirst, rangeLast].
	ranged                bool
	rangeFirst, rangeLast int64
	fill                  *Object
	// The Cache-Status parameters: fwd ("" for a hit), ttl (of a hit),
	// detail, and whether the response was stored or revalidated.
	fwd, detail         string
	ttl                 int64
	stored, revalidated bool
}

// Begin decides what to do with req.
func (c *Cache) Begin(req *http1.Request) *Tx {
	t := new(Tx)
	c.BeginIn(t, req)
	return t
}

// BeginIn is Begin in a Tx the caller reuses once it is Finished (the
// proxy keeps one per connection), so that a fresh hit allocates
// nothing: the key is built in the Tx's own buffer.
func (c *Cache) BeginIn(t *Tx, req *http1.Request) {
	now := c.now()
	*t = Tx{c: c, method: req.MethodID, reqTime: now, keyBuf: c.appendKey(t.keyBuf[:0], req)}
	// A view of keyBuf while the request only looks up; ownKey makes it
	// a string of its own before anything keeps it (store, flights,
	// hit-for-pass, a background revalidation).
	t.key = unsafe.String(unsafe.SliceData(t.keyBuf), len(t.keyBuf))
	t.host = t.key[:len(req.Host)] // the key starts with the host, lower-cased
	t.begin(req, now)
	if t.Action != Hit || t.Background {
		t.ownKey()
	}
}

// ownKey gives the Tx a key that outlives its key buffer.
func (t *Tx) ownKey() {
	if len(t.keyBuf) > 0 && unsafe.StringData(t.key) == unsafe.SliceData(t.keyBuf) {
		t.key = string(t.keyBuf)
		t.host = t.key[:len(t.host)]
	}
}

// Done drops what a Finished Tx refers to (a stored object may be
// evicted meanwhile), keeping only its key buffer for the next BeginIn.
func (t *Tx) Done() { *t = Tx{keyBuf: t.keyBuf[:0]} }

func (t *Tx) begin(req *http1.Request, now time.Time) {
	c := t.c
	if req.ContentLength > 0 || req.Chunked || (req.MethodID != http1.MethodGET && req.MethodID != http1.MethodHEAD) {
		t.fwd = "method"
		c.Stats.Passes.Add(1)
		return
	}
	t.reqCC = ParseDirectives(req.Headers, "Cache-Control")
	if !t.reqCC.Present && pragmaNoCache(req.Headers) {
		t.reqCC.NoCache = true
	}
	t.auth = req.HeaderValue([]byte("Authorization")) != nil
	t.clientCond = req.HeaderValue([]byte("If-None-Match")) != nil || req.HeaderValue([]byte("If-Modified-Since")) != nil
	if p := c.cfg.IgnorePrivate; p != nil {
		t.private = p.Match(req.Path)
	}
	rng := req.HeaderValue([]byte("Range"))
	if req.HeaderValue([]byte("If-Range")) != nil || req.HeaderValue([]byte("If-Match")) != nil ||
		req.HeaderValue([]byte("If-Unmodified-Since")) != nil || (rng != nil && !t.rangeHit(req, rng, now)) {
		// Precondition requests, and ranges no fresh stored response
		// holds, go to the origin; what is stored is neither used nor
		// changed by them (206 responses are not stored).
		t.Action, t.Obj, t.fwd, t.detail = Pass, nil, "request", ""
		c.Stats.Passes.Add(1)
		return
	}
	if rng == nil {
		t.decide(req, now, true)
	}
}

// AppendHead renders the head of the stored response a Hit serves (as a
// 304, a 206 or whole), without the Cache-Status line and the blank line.
func (t *Tx) AppendHead(dst []byte) []byte {
	status := t.Obj.Status
	switch {
	case t.NotModified:
		status = 304
	case t.ranged:
		status = 206
	}
	return t.Obj.appendHead(dst, status, t.Age(), t.rangeFirst, t.rangeLast)
}

// Body is the part of the stored body a Hit sends (nil for a 304).
func (t *Tx) Body() []byte {
	switch {
	case t.NotModified:
		return nil
	case t.ranged:
		return t.Obj.Body[t.rangeFirst : t.rangeLast+1]
	}
	return t.Obj.Body
}

// Status is the status a Hit answers with.
func (t *Tx) Status() int {
	switch {
	case t.NotModified:
		return 304
	case t.ranged:
		return 206
	}
	return t.Obj.Status
}

// decide looks the request up; coalesce: a miss may wait for another
// request of the same key that is already on its way to the backend.
func (t *Tx) decide(req *http1.Request, now time.Time, coalesce bool) {
	c := t.c
	o, vary := c.find(t.key, req)
	if o != nil && t.usable(o, now) {
		return
	}
	t.ownKey() // flights and hit-for-pass keep it
	if t.reqCC.OnlyIfCached {
		t.Action, t.Obj, t.fwd, t.detail = Refuse, nil, "miss", "only-if-cached"
		return
	}
	t.Action, t.Obj = Miss, nil
	switch {
	case o != nil && (o.etag != nil || !o.lastMod.IsZero()):
		t.Action, t.Obj, t.fwd = Validate, o, "stale"
	case o != nil:
		// No validators: fetched anew, but kept at hand for
		// stale-if-error.
		t.Obj, t.fwd = o, "stale"
	case t.reqCC.NoCache:
		t.fwd = "request"
	case vary:
		t.fwd = "vary-miss"
	default:
		t.fwd = "uri-miss"
	}
	if t.reqCC.NoCache || !coalesce {
		t.count()
		return
	}
	if c.passing(t.key, now) {
		t.detail = "uncacheable"
		t.count()
		return
	}
	if f := c.join(t.key); f != nil {
		c.Stats.Coalesced.Add(1)
		f.wait()
		t.decide(req, c.now(), false)
		return
	}
	t.flight = c.lead(t.key)
	t.count()
}

func (t *Tx) count() {
	if t.dry {
		return
	}
	switch t.Action {
	case Miss:
		t.c.Stats.Misses.Add(1)
	case Validate:
		t.c.Stats.Revalidations.Add(1)
	}
}

// usable reports whether o answers the request without the origin, and
// sets the Tx up for a Hit if so.
func (t *Tx) usable(o *Object, now time.Time) bool {
	age := o.Age(now)
	life, _ := o.lifetime(t.c.policy()) // heuristic or explicit, the lifetime is the same
	rc := t.reqCC
	if o.cc.NoCache || rc.NoCache || (rc.MaxAge >= 0 && age > rc.MaxAge) {
		return false
	}
	ttl := life - age
	if ttl > 0 && (rc.MinFresh < 0 || ttl >= rc.MinFresh) {
		t.hit(o, ttl, "")
		return true
	}
	if ttl > 0 || o.cc.MustRevalidate || o.cc.ProxyRevalidate || o.cc.SMaxAge >= 0 {
		return false // min-fresh not met, or staleness forbidden
	}
	stale := -ttl
	if rc.MaxStale >= 0 && stale <= rc.MaxStale {
		t.hit(o, -stale, "")
		if !t.dry {
			t.c.Stats.Stale.Add(1)
		}
		return true
	}
	if swr := o.cc.StaleWhileRevalidate; swr >= 0 && stale <= swr {
		t.hit(o, -stale, "stale-while-revalidate")
		if !t.dry {
			t.c.Stats.Stale.Add(1)
			t.ownKey() // the background revalidation keeps it
			t.refresh = t.c.claimRefresh(t.key)
			t.Background = t.refresh != nil
		}
		return true
	}
	return false
}

func (t *Tx) hit(o *Object, ttl int64, detail string) {
	t.Action, t.Obj, t.fwd, t.ttl, t.detail = Hit, o, "", ttl, detail
	if t.dry {
		return
	}
	t.c.Stats.Hits.Add(1)
}

// Age is the Age a Hit is served with.
func (t *Tx) Age() int64 { return t.Obj.Age(t.c.now()) }

// AppendStatus adds the Cache-Status line (RFC 9211).
func (t *Tx) AppendStatus(dst []byte) []byte {
	dst = append(dst, "Cache-Status: "...)
	dst = append(dst, t.c.cfg.Name...)
	if t.fwd == "" {
		dst = append(dst, "; hit; ttl="...)
		dst = strconv.AppendInt(dst, t.ttl, 10)
	} else {
		dst = append(dst, "; fwd="...)
		dst = append(dst, t.fwd...)
	}
	if t.revalidated {
		dst = append(dst, "; fwd-status=304"...)
	}
	if t.stored {
		dst = append(dst, "; stored"...)
	}
	if t.detail != "" {
		dst = append(dst, "; detail="...)
		dst = append(dst, t.detail...)
	}
	return append(dst, "\r\n"...)
}

func pragmaNoCache(headers []http1.Header) bool {
	for _, h := range headers {
		if http1.EqualFold(h.Name, "Pragma") && bytes.Contains(bytes.ToLower(h.Value), []byte("no-cache")) {
			return true
		}
	}
	return false
}

// find returns the stored response req selects, and whether responses
// of the key are stored for other variants only.
func (c *Cache) find(key string, req *http1.Request) (*Object, bool) {
	e := c.lookup(key)
	if e == nil {
		return nil, false
	}
	for _, o := range e.objs {
		if o.varyMatches(req) {
			return o, false
		}
	}
	return nil, true
}

// key is the primary cache key: the lower-cased host and the target in
// origin form, then the operator's extensions.
func (c *Cache) key(req *http1.Request) string { return string(c.appendKey(nil, req)) }

// appendKey appends the key of req to b.
func (c *Cache) appendKey(b []byte, req *http1.Request) []byte {
	for _, ch := range req.Host {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		b = append(b, ch)
	}
	if req.AbsoluteForm {
		b = append(b, req.Path...)
		if req.Query != nil {
			b = append(b, '?')
			b = append(b, req.Query...)
		}
	} else {
		b = append(b, req.Target...)
	}
	for _, h := range c.cfg.KeyHeaders {
		v, _ := combinedInto(nil, req.Headers, h) // absent and empty key alike
		b = append(b, keySep+"h="...)
		b = append(b, v...)
	}
	for _, name := range c.cfg.KeyCookies {
		b = append(b, keySep+"c="...)
		b = append(b, cookieValue(req.Headers, name)...)
	}
	return b
}

// cookieValue is the value of the named cookie in the Cookie fields.
func cookieValue(headers []http1.Header, name string) []byte {
	for _, h := range headers {
		if !http1.EqualFold(h.Name, "Cookie") {
			continue
		}
		for v := h.Value; len(v) > 0; {
			var pair []byte
			if i := bytes.IndexByte(v, ';'); i >= 0 {
				pair, v = v[:i], v[i+1:]
			} else {
				pair, v = v, nil
			}
			k, val, _ := bytes.Cut(bytes.TrimSpace(pair), []byte("=")) // no '=': a bare name, val empty
			if string(k) == name {
				return val
			}
		}
	}
	return nil
}

// policy is the part of the configuration freshness depends on.
type policy struct {
	defaultTTL int64
}

func (c *Cache) policy() policy {
	return policy{defaultTTL: int64(c.cfg.DefaultTTL / time.Second)}
}

// Refresh is the background revalidation a stale-while-revalidate Hit
// asked for (Background): a Validate of the same stored response, whose
// Response and Finish the caller runs with a copy of the request.
func (t *Tx) Refresh() *Tx {
	r := &Tx{c: t.c, Action: Validate, Obj: t.Obj, key: t.key, host: t.host, method: http1.MethodGET,
		reqTime: t.c.now(), reqCC: emptyDirectives(), flight: t.refresh, fwd: "stale"}
	t.refresh, t.Background = nil, false
	t.c.Stats.Revalidations.Add(1)
	return r
}

// Peek says what Begin would decide for req, changing nothing: "hit"
// (with its Cache-Status parameters) or what would go to the backend.
func (c *Cache) Peek(req *http1.Request) string {
	t := &Tx{c: c, method: req.MethodID, reqTime: c.now(), dry: true}
	t.key = c.key(req)
	switch {
	case req.ContentLength > 0 || req.Chunked || (req.MethodID != http1.MethodGET && req.MethodID != http1.MethodHEAD):
		return "not for the cache: the method or a body (fwd=method)"
	case req.HeaderValue([]byte("If-Range")) != nil || req.HeaderValue([]byte("If-Match")) != nil ||
		req.HeaderValue([]byte("If-Unmodified-Since")) != nil:
		return "not for the cache: a precondition request (fwd=request)"
	case req.HeaderValue([]byte("Range")) != nil:
		return "a range: answered from a fresh stored response that holds it, else passed (fwd=request)"
	}
	t.reqCC = ParseDirectives(req.Headers, "Cache-Control")
	if !t.reqCC.Present && pragmaNoCache(req.Headers) {
		t.reqCC.NoCache = true
	}
	t.decide(req, t.reqTime, false)
	line := string(t.AppendStatus(nil))
	line = line[len("Cache-Status: ") : len(line)-2]
	switch t.Action {
	case Hit:
		return "would be a hit: " + line
	case Validate:
		return "would revalidate the stored response: " + line
	case Refuse:
		return "would answer 504 (only-if-cached): " + line
	}
	return "would be a miss: " + line
}
