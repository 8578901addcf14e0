package cache

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"lbd/http1"
)

// Object is one stored response: its status, its header fields as the
// origin sent them (less the hop-by-hop and framing fields, and Age,
// which lbd computes), its body, and what freshness needs. An Object is
// never changed once it is in the store: a 304 that freshens it makes a
// new one (update).
type Object struct {
	Status    int
	reason    []byte
	headers   []http1.Header // slices of raw
	raw       []byte
	Body      []byte
	cc        Directives
	cdn       *Directives // CDN-Cache-Control, when the cache honours it
	date      time.Time   // zero: none or invalid
	expires   time.Time
	expiresOK bool // Expires present: expires holds it, or the zero time when invalid
	lastMod   time.Time
	etag      []byte
	ageValue  int64
	reqTime   time.Time
	respTime  time.Time
	// vary holds, for each field the response varies on, the request's
	// value (nil when the request had none); varyAll is Vary: *.
	vary    []varyField
	varyAll bool
	// stored is when the object went into the store (for Cache-Status ttl).
	stored time.Time
}

type varyField struct {
	name  string
	value []byte
	had   bool
}

// excluded reports the fields a cache does not store or forward from
// the stored response (§3.1): framing, Age, and those that only concern
// the connection (the caller removes those Connection names).
func excluded(name []byte) bool {
	for _, s := range [...]string{"Content-Length", "Transfer-Encoding", "Age", "Connection", "Keep-Alive",
		"Proxy-Connection", "TE", "Trailer", "Upgrade", "Proxy-Authenticate", "Proxy-Authorization",
		"Proxy-Authentication-Info"} {
		if http1.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// noUpdate lists the fields a 304 does not change in the stored
// response: they describe the stored representation itself.
func noUpdate(name []byte) bool {
	for _, s := range [...]string{"Content-Encoding", "Content-MD5", "Content-Range", "ETag"} {
		if http1.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// ageValue is the response's Age (§5.1). One field line with a valid
// delta-seconds gives it; anything else (a list, a second line, a
// negative, fractional or suffixed value) is invalid, and the response
// is taken as stale: the largest age.
func ageValue(headers []http1.Header) int64 {
	var v []byte
	lines := 0
	for _, h := range headers {
		if http1.EqualFold(h.Name, "Age") {
			v = bytes.TrimSpace(h.Value)
			lines++
		}
	}
	if lines == 0 {
		return 0
	}
	n, ok := parseDelta(v)
	if lines > 1 || !ok || v[0] == '"' {
		return deltaMax
	}
	return n
}

// newObject records a response head; the body is added by a Fill.
func newObject(resp *http1.Response, req *http1.Request, reqTime, respTime time.Time, fields []string) *Object {
	o := &Object{Status: resp.Status, reqTime: reqTime, respTime: respTime}
	o.raw = make([]byte, 0, resp.HeadLen+len(resp.Reason))
	o.raw = append(o.raw, resp.Reason...)
	type span struct{ n0, n1, v0, v1 int }
	spans := make([]span, 0, len(resp.Headers))
	for _, h := range resp.Headers {
		if excluded(h.Name) || resp.IsHopByHop(h.Name) {
			continue
		}
		var s span
		s.n0 = len(o.raw)
		o.raw = append(o.raw, h.Name...)
		s.n1, s.v0 = len(o.raw), len(o.raw)
		o.raw = append(o.raw, h.Value...)
		s.v1 = len(o.raw)
		spans = append(spans, s)
	}
	o.ageValue = ageValue(resp.Headers)
	o.reason = o.raw[:len(resp.Reason):len(resp.Reason)]
	o.headers = make([]http1.Header, len(spans))
	for i, s := range spans {
		o.headers[i] = http1.Header{Name: o.raw[s.n0:s.n1:s.n1], Value: o.raw[s.v0:s.v1:s.v1]}
	}
	o.analyse()
	o.recordVary(req, fields)
	return o
}

// analyse reads what freshness and validation need from the headers.
func (o *Object) analyse() {
	o.cc = ParseDirectives(o.headers, "Cache-Control")
	o.date, o.expires, o.expiresOK, o.lastMod, o.etag = time.Time{}, time.Time{}, false, time.Time{}, nil
	var seenDate, seenLM bool
	for _, h := range o.headers {
		switch {
		case http1.EqualFold(h.Name, "Date") && !seenDate:
			seenDate = true
			o.date = parseDate(h.Value)
		case http1.EqualFold(h.Name, "Expires") && !o.expiresOK:
			o.expiresOK = true
			o.expires = parseDate(h.Value) // invalid: zero, in the past (§5.3)
		case http1.EqualFold(h.Name, "Last-Modified") && !seenLM:
			seenLM = true
			o.lastMod = parseDate(h.Value)
		case http1.EqualFold(h.Name, "ETag") && o.etag == nil:
			o.etag = bytes.TrimSpace(h.Value)
		}
	}
}

func parseDate(v []byte) time.Time {
	t, err := http.ParseTime(string(bytes.TrimSpace(v)))
	if err != nil {
		return time.Time{} // an invalid date is no date (the callers say what that means)
	}
	return t
}

// recordVary keeps the request's values of the fields the response
// varies on (the secondary key, §4.1).
func (o *Object) recordVary(req *http1.Request, fields []string) {
	for _, name := range fields {
		if name == "*" {
			o.varyAll = true
			continue
		}
		v, had := combined(req.Headers, name)
		o.vary = append(o.vary, varyField{name: name, value: v, had: had})
	}
}

// varyMatches reports whether req selects this stored response.
func (o *Object) varyMatches(req *http1.Request) bool {
	if o.varyAll {
		return false
	}
	var scratch [256]byte
	for _, f := range o.vary {
		v, had := combinedInto(scratch[:0], req.Headers, f.name)
		if had != f.had || !bytes.Equal(v, f.value) {
			return false
		}
	}
	return true
}

// combined is the value of every field name joined with ", " and with
// the whitespace around the commas normalised.
func combined(headers []http1.Header, name string) ([]byte, bool) {
	v, had := combinedInto(nil, headers, name)
	return bytes.Clone(v), had
}

func combinedInto(dst []byte, headers []http1.Header, name string) ([]byte, bool) {
	had := false
	for _, h := range headers {
		if !http1.EqualFold(h.Name, name) {
			continue
		}
		for v := h.Value; len(v) > 0; {
			var item []byte
			item, v = nextItem(v)
			if len(item) == 0 {
				continue
			}
			if had {
				dst = append(dst, ", "...)
			}
			had = true
			dst = append(dst, item...)
		}
		had = true
	}
	return dst, had
}

// varyFields lists the field names of the response's Vary, lower-cased.
func varyFields(resp *http1.Response) []string {
	var out []string
	for _, h := range resp.Headers {
		if !http1.EqualFold(h.Name, "Vary") {
			continue
		}
		for v := h.Value; len(v) > 0; {
			var item []byte
			item, v = nextItem(v)
			if len(item) > 0 {
				out = append(out, string(bytes.ToLower(item)))
			}
		}
	}
	return out
}

// size is what the object costs in memory, roughly.
func (o *Object) size() int64 {
	n := int64(len(o.raw) + len(o.Body) + 48*len(o.headers) + 256)
	for _, f := range o.vary {
		n += int64(len(f.name) + len(f.value) + 48)
	}
	return n
}

// Age is the current age (§4.2.3) in whole seconds.
func (o *Object) Age(now time.Time) int64 {
	var apparent int64
	if !o.date.IsZero() {
		apparent = max(0, seconds(o.respTime.Sub(o.date)))
	}
	delay := max(0, seconds(o.respTime.Sub(o.reqTime)))
	initial := max(apparent, o.ageValue+delay)
	return initial + max(0, seconds(now.Sub(o.respTime)))
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// Lifetime is the freshness lifetime (§4.2.1) for a shared cache, in
// seconds; heuristic reports that no explicit information gave it.
func (o *Object) lifetime(p policy) (n int64, heuristic bool) {
	cc := o.cc
	if o.cdn != nil {
		cc = *o.cdn
	}
	switch {
	case cc.SMaxAge >= 0:
		return cc.SMaxAge, false
	case cc.MaxAge >= 0:
		return cc.MaxAge, false
	case o.expiresOK:
		if o.expires.IsZero() {
			return 0, false
		}
		date := o.date
		if date.IsZero() {
			date = o.respTime
		}
		return max(0, seconds(o.expires.Sub(date))), false
	}
	if !heuristicAllowed(o.Status) && !o.cc.Public {
		return 0, true
	}
	if p.defaultTTL > 0 {
		return p.defaultTTL, true
	}
	if !o.lastMod.IsZero() {
		date := o.date
		if date.IsZero() {
			date = o.respTime
		}
		// 10 % of the time since the last modification (§4.2.2), at
		// most a day, as Squid and Traffic Server.
		return min(max(0, seconds(date.Sub(o.lastMod))/10), 86400), true
	}
	return 0, true
}

// heuristicAllowed lists the status codes heuristically cacheable by
// default (RFC 9110 §15.1).
func heuristicAllowed(status int) bool {
	switch status {
	case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// appendHead renders the head served from this object: the status line,
// the stored fields, Content-Length (none for a 304), Content-Range for a
// 206 of bytes [first, last], and Age; the caller adds its own lines and
// the blank line.
func (o *Object) appendHead(dst []byte, status int, age, first, last int64) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	switch status {
	case o.Status:
		dst = append(dst, ' ')
		dst = append(dst, o.reason...)
	case 304:
		dst = append(dst, " Not Modified"...)
	case 206:
		dst = append(dst, " Partial Content"...)
	}
	dst = append(dst, "\r\n"...)
	for _, h := range o.headers {
		dst = append(dst, h.Name...)
		dst = append(dst, ": "...)
		dst = append(dst, h.Value...)
		dst = append(dst, "\r\n"...)
	}
	switch {
	case status == 206:
		dst = append(dst, "Content-Range: bytes "...)
		dst = strconv.AppendInt(dst, first, 10)
		dst = append(dst, '-')
		dst = strconv.AppendInt(dst, last, 10)
		dst = append(dst, '/')
		dst = strconv.AppendInt(dst, int64(len(o.Body)), 10)
		dst = append(dst, "\r\nContent-Length: "...)
		dst = strconv.AppendInt(dst, last-first+1, 10)
		dst = append(dst, "\r\n"...)
	case status != 304 && bodyAllowed(o.Status):
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(o.Body)), 10)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "Age: "...)
	dst = strconv.AppendInt(dst, age, 10)
	return append(dst, "\r\n"...)
}

func bodyAllowed(status int) bool { return status != 204 && status != 304 && status >= 200 }

// update is the object a 304 freshens this one into (§4.3.4): the 304's
// fields replace the stored ones of the same name (not the framing
// ones), and the times are the 304's.
func (o *Object) update(resp *http1.Response, reqTime, respTime time.Time) *Object {
	n := &Object{Status: o.Status, Body: o.Body, reqTime: reqTime, respTime: respTime,
		vary: o.vary, varyAll: o.varyAll, stored: respTime, cdn: o.cdn}
	n.ageValue = ageValue(resp.Headers)
	replaced := func(name []byte) bool {
		for _, h := range resp.Headers {
			if http1.EqualFold(h.Name, string(name)) && !excluded(h.Name) && !resp.IsHopByHop(h.Name) && !noUpdate(h.Name) {
				return true
			}
		}
		return false
	}
	var hs []http1.Header
	for _, h := range o.headers {
		if !replaced(h.Name) {
			hs = append(hs, h)
		}
	}
	for _, h := range resp.Headers {
		if excluded(h.Name) || resp.IsHopByHop(h.Name) || noUpdate(h.Name) {
			continue
		}
		hs = append(hs, h)
	}
	n.raw = append(n.raw, o.reason...)
	n.reason = n.raw[:len(o.reason):len(o.reason)]
	type span struct{ n0, n1, v0, v1 int }
	spans := make([]span, len(hs))
	for i, h := range hs {
		spans[i].n0 = len(n.raw)
		n.raw = append(n.raw, h.Name...)
		spans[i].n1, spans[i].v0 = len(n.raw), len(n.raw)
		n.raw = append(n.raw, h.Value...)
		spans[i].v1 = len(n.raw)
	}
	n.headers = make([]http1.Header, len(spans))
	for i, s := range spans {
		n.headers[i] = http1.Header{Name: n.raw[s.n0:s.n1:s.n1], Value: n.raw[s.v0:s.v1:s.v1]}
	}
	n.analyse()
	return n
}

// Header returns the first stored value of a field (nil when none).
func (o *Object) Header(name string) []byte {
	for _, h := range o.headers {
		if http1.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return nil
}
