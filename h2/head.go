package h2

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Translating an HTTP/2 request into an HTTP/1.1 head is where
// request smuggling through a proxy happens (HTTP/2 framing carries
// lengths and fields an HTTP/1.1 parser would read differently), so
// buildHead refuses, rather than repairs, anything that would change
// meaning on the way: a field value or name, a method, path or
// authority that an HTTP/1.1 parser could split differently, an
// inconsistent Content-Length, or a connection-specific field.
// golang.org/x/net/http2 already enforces most of RFC 9113 §8; every
// rule is checked again here so the translation does not depend on it.

// hopHeaders are connection-specific: forbidden in HTTP/2 requests
// (RFC 9113 §8.2.2), and never copied into an HTTP/2 response.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Http2-Settings"}

// status400 and status405 are the answers for refused requests.
const (
	status400 = http.StatusBadRequest
	status405 = http.StatusMethodNotAllowed
)

// buildHead appends the HTTP/1.1 request head for r to dst. It returns
// the status to refuse the request with, or 0, and whether a body
// follows chunked.
func buildHead(dst []byte, r *http.Request) (head []byte, status int, chunked bool) {
	if r.Method == http.MethodConnect {
		return dst, status405, false // no tunnels over HTTP/2 (RFC 8441 is not offered)
	}
	if !isToken(r.Method) || !validPath(r.RequestURI) || !validAuthority(r.Host) {
		return dst, status400, false
	}
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, r.RequestURI...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, r.Host...)
	dst = append(dst, "\r\n"...)
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys) // map order is random; a stable order keeps backends' logs comparable
	for _, k := range keys {
		switch {
		case slices.Contains(hopHeaders, k):
			return dst, status400, false
		case k == "Host" || k == "Content-Length" || k == "Te" || k == "Expect":
			continue // written below, or hop-by-hop (TE: trailers), or answered by the h2 server
		case !isToken(k):
			return dst, status400, false
		}
		for _, v := range r.Header[k] {
			if !validValue(v) {
				return dst, status400, false
			}
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = append(dst, v...)
			dst = append(dst, "\r\n"...)
		}
	}
	dst, status, chunked = appendFraming(dst, r)
	return append(dst, "\r\n"...), status, chunked
}

// appendFraming writes the body framing: the Content-Length the client
// declared (which the h2 server holds the DATA frames to), or chunked
// when it declared none and sends a body.
func appendFraming(dst []byte, r *http.Request) ([]byte, int, bool) {
	cl, hasCL := r.Header["Content-Length"]
	if hasCL && (len(cl) != 1 || !digits(cl[0])) {
		return dst, status400, false // Pound: a repeated or odd Content-Length is 400
	}
	if hasCL {
		// With END_STREAM on the HEADERS frame the h2 server sees no
		// body and never compares it with the declared length.
		if n, _ := strconv.ParseInt(cl[0], 10, 64); n != max(r.ContentLength, 0) {
			return dst, status400, false
		}
	}
	switch {
	case r.ContentLength > 0 || hasCL:
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, max(r.ContentLength, 0), 10)
		return append(dst, "\r\n"...), 0, false
	case r.ContentLength < 0:
		return append(dst, "Transfer-Encoding: chunked\r\n"...), 0, true
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		// An HTTP/1.1 server may wait for a body it was not told is
		// empty (RFC 9110 §8.6: send Content-Length for such methods).
		return append(dst, "Content-Length: 0\r\n"...), 0, false
	}
	return dst, 0, false
}

func digits(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token (method, field name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validValue allows what an HTTP/1.1 field value may hold (no CR, LF or
// NUL, which would end or split the line, and no other controls but TAB).
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validPath accepts an origin-form target ("/...") or "*": visible
// ASCII only, no fragment. A space would let the path end the request
// line early; raw non-ASCII would be read differently by backends.
func validPath(p string) bool {
	if p != "*" && (p == "" || p[0] != '/') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// validAuthority accepts host[:port] without userinfo (RFC 9113
// §8.3.1): letters, digits, and the few characters a reg-name, an IP
// literal or a port use.
func validAuthority(a string) bool {
	if a == "" {
		return false // HTTP/1.1 needs a Host
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~:[]%!$&'()*+,;=", c) >= 0:
		default:
			return false
		}
	}
	return true
}
