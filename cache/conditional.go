package cache

import (
	"bytes"
	"time"

	"lbd/http1"
)

// A Hit for a request that carries its own conditions or a Range, and
// the conditions a Validate request adds: RFC 9110 §13 and §14.

// rangeHit answers a single byte range from a fresh stored 200 whose
// body holds it (RFC 9110 §14.2); anything else is passed.
func (t *Tx) rangeHit(req *http1.Request, rng []byte, now time.Time) bool {
	o, _ := t.c.find(t.key, req) // the second value is whether other variants are stored: no error
	if o == nil || o.Status != 200 || t.reqCC.NoCache {
		return false
	}
	first, last, ok := parseRange(rng, int64(len(o.Body)))
	if !ok {
		return false
	}
	t.dry = true
	usable := t.usable(o, now) && t.ttl > 0
	t.dry = false
	if !usable {
		return false
	}
	t.c.Stats.Hits.Add(1)
	t.rangeFirst, t.rangeLast, t.ranged = first, last, true
	return true
}

// parseRange reads one "bytes=" range of a body of size bytes: first-last,
// first-, or -suffix. A list, another unit or an unsatisfiable range is
// not ok (the origin answers those).
func parseRange(v []byte, size int64) (first, last int64, ok bool) {
	spec, found := bytes.CutPrefix(bytes.TrimSpace(v), []byte("bytes="))
	if !found || bytes.IndexByte(spec, ',') >= 0 || size == 0 {
		return 0, 0, false
	}
	a, b, found := bytes.Cut(bytes.TrimSpace(spec), []byte("-"))
	if !found {
		return 0, 0, false
	}
	if len(a) == 0 { // a suffix: the last b bytes
		n, ok := parseDelta(b)
		if !ok || n == 0 {
			return 0, 0, false
		}
		return max(size-n, 0), size - 1, true
	}
	first, ok = parseDelta(a)
	if !ok || first >= size {
		return 0, 0, false
	}
	if len(b) == 0 {
		return first, size - 1, true
	}
	last, ok = parseDelta(b)
	if !ok || last < first {
		return 0, 0, false
	}
	return first, min(last, size-1), true
}

// CheckConditional decides, for a Hit, whether the client's own
// If-None-Match or If-Modified-Since is answered with 304 (RFC 9110
// §13.2.2: If-None-Match first, weak comparison).
func (t *Tx) CheckConditional(req *http1.Request) {
	o := t.Obj
	if t.Action != Hit || o.Status != 200 {
		return
	}
	if inm := req.HeaderValue([]byte("If-None-Match")); inm != nil {
		t.NotModified = etagListMatches(inm, o.etag)
		return
	}
	if ims := req.HeaderValue([]byte("If-Modified-Since")); ims != nil {
		since := parseDate(ims)
		lm := o.lastMod
		if lm.IsZero() {
			lm = o.date
		}
		t.NotModified = !since.IsZero() && !lm.IsZero() && !lm.After(since)
	}
}

// etagListMatches: one of the If-None-Match list's tags is etag (weak
// comparison), or the list is "*".
func etagListMatches(list, etag []byte) bool {
	for v := list; len(v) > 0; {
		var item []byte
		item, v = nextItem(v)
		if string(item) == "*" || (etag != nil && bytes.Equal(bytes.TrimPrefix(item, []byte("W/")), bytes.TrimPrefix(etag, []byte("W/")))) {
			return true
		}
	}
	return false
}

// AppendConditionals adds the validators of the stored response to a
// Validate request head's fields (each line ends in CRLF), unless the
// client sent conditionals of its own (then they go as they are).
func (t *Tx) AppendConditionals(dst []byte) []byte {
	if t.Action != Validate || t.clientCond {
		return dst
	}
	o := t.Obj
	if o.etag != nil {
		dst = append(dst, "If-None-Match: "...)
		dst = append(dst, o.etag...)
		dst = append(dst, "\r\n"...)
	}
	if lm := o.Header("Last-Modified"); lm != nil {
		dst = append(dst, "If-Modified-Since: "...)
		dst = append(dst, lm...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}
