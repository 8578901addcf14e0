package cache

import (
	"bytes"
	"strconv"

	"lbd/http1"
)

// Directives are the Cache-Control directives (RFC 9111 §5.2) of one
// message that a shared cache acts on, with the stale-* extensions of
// RFC 5861. Durations are in seconds; -1 means the directive is absent.
type Directives struct {
	MaxAge, SMaxAge      int64
	MaxStale             int64 // request: -1 absent; maxStaleAny when given without a value
	MinFresh             int64
	StaleWhileRevalidate int64
	StaleIfError         int64

	NoStore, NoCache, Private, Public bool
	MustRevalidate, ProxyRevalidate   bool
	OnlyIfCached, NoTransform         bool
	MustUnderstand, Immutable         bool
	// Present: at least one Cache-Control field was seen (a Pragma:
	// no-cache only counts when there is none, §5.4).
	Present bool
}

// maxStaleAny is max-stale without a value: any staleness is accepted.
const maxStaleAny = int64(1) << 40

// deltaMax is the largest delta-seconds lbd keeps (§1.2.2: 2^31).
const deltaMax = int64(1) << 31

func emptyDirectives() Directives {
	return Directives{MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1, StaleWhileRevalidate: -1, StaleIfError: -1}
}

// ParseDirectives reads every field called name (Cache-Control, or
// CDN-Cache-Control) of headers.
func ParseDirectives(headers []http1.Header, name string) Directives {
	d := emptyDirectives()
	for i := range headers {
		if http1.EqualFold(headers[i].Name, name) {
			d.Present = true
			d.parse(headers[i].Value)
		}
	}
	return d
}

// parse adds the directives of one field value.
func (d *Directives) parse(v []byte) {
	for len(v) > 0 {
		var item []byte
		item, v = nextItem(v)
		name, arg, hasArg := splitDirective(item)
		if len(name) == 0 || bytes.IndexByte(arg, ';') >= 0 {
			continue // Surrogate-Control's "max-age=60;device": not for lbd
		}
		switch {
		case eqLower(name, "max-age"):
			d.MaxAge = firstDelta(d.MaxAge, arg, hasArg, 0)
		case eqLower(name, "s-maxage"):
			d.SMaxAge = firstDelta(d.SMaxAge, arg, hasArg, 0)
		case eqLower(name, "max-stale"):
			if !hasArg {
				d.MaxStale = maxStaleAny
			} else {
				d.MaxStale = firstDelta(d.MaxStale, arg, true, -1)
			}
		case eqLower(name, "min-fresh"):
			d.MinFresh = firstDelta(d.MinFresh, arg, hasArg, -1)
		case eqLower(name, "stale-while-revalidate"):
			d.StaleWhileRevalidate = firstDelta(d.StaleWhileRevalidate, arg, hasArg, -1)
		case eqLower(name, "stale-if-error"):
			d.StaleIfError = firstDelta(d.StaleIfError, arg, hasArg, -1)
		case eqLower(name, "no-store"):
			d.NoStore = true
		case eqLower(name, "no-cache"):
			// The qualified form (no-cache="Set-Cookie") is kept as the
			// unqualified one: revalidating always is correct for both.
			d.NoCache = true
		case eqLower(name, "private"):
			d.Private = true
		case eqLower(name, "public"):
			d.Public = true
		case eqLower(name, "must-revalidate"):
			d.MustRevalidate = true
		case eqLower(name, "proxy-revalidate"):
			d.ProxyRevalidate = true
		case eqLower(name, "only-if-cached"):
			d.OnlyIfCached = true
		case eqLower(name, "no-transform"):
			d.NoTransform = true
		case eqLower(name, "must-understand"):
			d.MustUnderstand = true
		case eqLower(name, "immutable"):
			d.Immutable = true
		}
	}
}

// firstDelta parses a delta-seconds argument; the first occurrence of
// a directive wins (§4.2.1). A missing or malformed argument counts as
// bad: for the lifetimes (bad = 0) that makes the response stale, as
// §4.2.1 advises for invalid freshness information; for the others
// (bad = -1) the directive is ignored.
func firstDelta(old int64, arg []byte, hasArg bool, bad int64) int64 {
	if old >= 0 {
		return old
	}
	if n, ok := parseDelta(arg); hasArg && ok {
		return n
	}
	return bad
}

// parseDelta reads delta-seconds (§1.2.2), quoted or not; values past
// 2^31 are 2^31.
func parseDelta(b []byte) (int64, bool) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < deltaMax {
			n = n*10 + int64(c-'0')
		}
	}
	return min(n, deltaMax), true
}

// nextItem cuts the next comma-separated item off v, honouring quoted
// strings (a comma inside quotes does not separate).
func nextItem(v []byte) (item, rest []byte) {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return bytes.TrimSpace(v[:i]), v[i+1:]
		}
	}
	return bytes.TrimSpace(v), nil
}

func splitDirective(item []byte) (name, arg []byte, hasArg bool) {
	i := bytes.IndexByte(item, '=')
	if i < 0 {
		return item, nil, false
	}
	return bytes.TrimSpace(item[:i]), bytes.TrimSpace(item[i+1:]), true
}

func eqLower(b []byte, s string) bool { return http1.EqualFold(b, s) }

// String renders the directives for tests and diagnostics.
func (d Directives) String() string {
	var b []byte
	add := func(on bool, s string) {
		if on {
			b = append(b, s...)
			b = append(b, ' ')
		}
	}
	num := func(n int64, s string) {
		if n >= 0 {
			b = append(b, s...)
			b = append(b, '=')
			b = strconv.AppendInt(b, n, 10)
			b = append(b, ' ')
		}
	}
	num(d.MaxAge, "max-age")
	num(d.SMaxAge, "s-maxage")
	num(d.MaxStale, "max-stale")
	num(d.MinFresh, "min-fresh")
	num(d.StaleWhileRevalidate, "stale-while-revalidate")
	num(d.StaleIfError, "stale-if-error")
	add(d.NoStore, "no-store")
	add(d.NoCache, "no-cache")
	add(d.Private, "private")
	add(d.Public, "public")
	add(d.MustRevalidate, "must-revalidate")
	add(d.ProxyRevalidate, "proxy-revalidate")
	add(d.OnlyIfCached, "only-if-cached")
	return string(bytes.TrimSpace(b))
}
