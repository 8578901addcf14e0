package h2

import (
	"strconv"
	"strings"

	"golang.org/x/net/http2/hpack"

	"lbd/http1"
)

// Translating an HTTP/2 request into an HTTP/1.1 head is where request
// smuggling through a proxy happens (HTTP/2 framing carries lengths and
// fields an HTTP/1.1 parser would read differently), so the translation
// refuses, rather than repairs, anything that would change meaning on
// the way. Malformed requests (RFC 9113 §8.2, §8.3: bad field names or
// values, connection-specific fields, misplaced or missing
// pseudo-headers) reset the stream with PROTOCOL_ERROR; requests that
// are well-formed HTTP/2 but cannot be carried into HTTP/1.1 safely (an
// odd Content-Length, a method, path or authority an HTTP/1.1 parser
// could split differently) are answered 400 without reaching the proxy.

// Refusal statuses.
const (
	status400 = 400
	status405 = 405
	status431 = 431
)

// Pseudo-header bits, to catch repeats.
const (
	pseudoMethod uint8 = 1 << iota
	pseudoScheme
	pseudoPath
	pseudoAuthority
)

// reqBuilder collects one decoded header block (the hpack decoder calls
// field for each entry) and then writes the HTTP/1.1 head. It is reused
// for every block of a connection.
type reqBuilder struct {
	maxSize int // header list size limit (SETTINGS_MAX_HEADER_LIST_SIZE)

	method, scheme, path, authority, host string
	seen                                  uint8
	regular                               bool   // a regular field has come: no pseudo-header may follow
	fields                                []byte // "Name: value\r\n" lines to forward
	cookie                                []byte // cookie fields joined (RFC 9113 §8.2.3)
	contentLength                         int64  // -1 = none
	clCount                               int
	expect100                             bool
	size                                  int
	status                                int  // refuse with this status (first reason wins)
	malformed                             bool // reset the stream with PROTOCOL_ERROR
	trailers                              bool // a trailer block: fields holds its lines
}

func (r *reqBuilder) reset(trailers bool) {
	*r = reqBuilder{maxSize: r.maxSize, fields: r.fields[:0], cookie: r.cookie[:0], contentLength: -1, trailers: trailers}
}

func (r *reqBuilder) refuse(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// field takes one decoded field.
func (r *reqBuilder) field(f hpack.HeaderField) {
	r.size += len(f.Name) + len(f.Value) + 32 // RFC 9113 §6.5.2
	if r.size > r.maxSize {
		r.refuse(status431)
		return // refused: nothing more is kept, however much is decoded
	}
	if r.malformed {
		return
	}
	if strings.HasPrefix(f.Name, ":") {
		r.pseudo(f.Name, f.Value)
		return
	}
	r.regular = true
	if !validLowerName(f.Name) || !validValue(f.Value) {
		r.malformed = true
		return
	}
	if r.trailers {
		r.trailerField(f.Name, f.Value)
		return
	}
	switch f.Name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "http2-settings":
		r.malformed = true // connection-specific (§8.2.2)
	case "te":
		if f.Value != "trailers" {
			r.malformed = true
		}
	case "host":
		if r.host != "" {
			r.refuse(status400)
		}
		r.host = f.Value
	case "content-length":
		r.clCount++
		n, err := strconv.ParseInt(f.Value, 10, 64)
		if r.clCount > 1 || !digits(f.Value) || err != nil {
			r.refuse(status400) // Pound: a repeated or odd Content-Length is 400
		}
		r.contentLength = n
	case "expect":
		// Answered here (100 Continue); the proxy sees a plain request.
		r.expect100 = r.expect100 || strings.EqualFold(f.Value, "100-continue")
	case "cookie":
		if len(r.cookie) > 0 {
			r.cookie = append(r.cookie, "; "...)
		}
		r.cookie = append(r.cookie, f.Value...)
	default:
		r.fields = appendCanonical(r.fields, f.Name)
		r.fields = append(r.fields, ": "...)
		r.fields = append(r.fields, f.Value...)
		r.fields = append(r.fields, "\r\n"...)
	}
}

// trailerField takes a field of a request's trailer block (RFC 9110
// §6.5) as an HTTP/1.1 trailer line. A field HTTP/2 calls
// connection-specific (§8.2.2), or one that lbd's HTTP/1.1 parser refuses
// in a chunked body's trailer section (framing, routing, credentials:
// http1.BannedTrailer), makes the block malformed: the stream is reset,
// and the request never reaches a backend complete. The lines, final
// CRLF included, stay within what that parser takes (MaxTrailerBytes).
func (r *reqBuilder) trailerField(name, value string) {
	if name == "proxy-connection" || http1.BannedTrailer(name) {
		r.malformed = true // every other connection-specific field is banned too
		return
	}
	r.fields = appendCanonical(r.fields, name)
	r.fields = append(r.fields, ": "...)
	r.fields = append(r.fields, value...)
	r.fields = append(r.fields, "\r\n"...)
	if len(r.fields)+len("\r\n") > http1.MaxTrailerBytes {
		r.malformed = true
	}
}

// trailer returns a complete trailer block's fields as HTTP/1.1 lines;
// ok is false when the block is malformed or over the size bound.
func (r *reqBuilder) trailer() (lines []byte, ok bool) {
	return r.fields, !r.malformed && r.status == 0
}

// pseudo takes a pseudo-header field (§8.3.1).
func (r *reqBuilder) pseudo(name, value string) {
	if r.regular || r.trailers {
		r.malformed = true
		return
	}
	var bit uint8
	switch name {
	case ":method":
		bit, r.method = pseudoMethod, value
	case ":scheme":
		bit, r.scheme = pseudoScheme, value
	case ":path":
		bit, r.path = pseudoPath, value
	case ":authority":
		bit, r.authority = pseudoAuthority, value
	default: // :status, :protocol (extended CONNECT is not offered), unknown
		r.malformed = true
		return
	}
	if r.seen&bit != 0 {
		r.malformed = true
	}
	r.seen |= bit
}

// request is the outcome of a complete request header block.
type request struct {
	status    int   // answer with this status instead; 0 = forward
	malformed bool  // reset with PROTOCOL_ERROR
	chunked   bool  // the body follows chunk-encoded
	declared  int64 // Content-Length, -1 = none
	hold      bool  // Content-Length 0 but the stream is open: wait for its end
	isHEAD    bool
}

// head appends the HTTP/1.1 head to dst. endStream tells whether the
// HEADERS frame ended the stream (no body).
func (r *reqBuilder) head(dst []byte, endStream bool) ([]byte, request) {
	out := request{declared: r.contentLength}
	switch {
	case r.malformed:
		out.malformed = true
		return dst, out
	case r.method == "CONNECT":
		out.status = status405 // no tunnels over HTTP/2 (RFC 8441 is not offered)
		return dst, out
	case r.method == "" || r.scheme == "" || r.path == "":
		out.malformed = true
		return dst, out
	case r.authority != "" && r.host != "" && r.host != r.authority:
		out.malformed = true // §8.3.1: they must not differ
		return dst, out
	}
	if r.authority == "" {
		r.authority = r.host
	}
	if r.status == 0 && (!isToken(r.method) || !validPath(r.path) || !validAuthority(r.authority) ||
		(r.path == "*" && r.method != "OPTIONS")) { // asterisk-form is for OPTIONS only (RFC 9112 §3.2.4)
		r.refuse(status400)
	}
	if r.status == 0 && r.clCount == 1 && endStream && r.contentLength != 0 {
		r.refuse(status400) // a length announced and no data to match it
	}
	if out.status = r.status; out.status != 0 {
		return dst, out
	}
	out.isHEAD = r.method == "HEAD"
	dst = append(dst, r.method...)
	dst = append(dst, ' ')
	dst = append(dst, r.path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, r.authority...)
	dst = append(dst, "\r\n"...)
	dst = append(dst, r.fields...)
	if len(r.cookie) > 0 {
		dst = append(dst, "Cookie: "...)
		dst = append(dst, r.cookie...)
		dst = append(dst, "\r\n"...)
	}
	switch {
	case r.clCount == 1:
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, r.contentLength, 10)
		dst = append(dst, "\r\n"...)
		// DATA after a declared length of 0 is malformed (§8.1.1) and must
		// not reach a backend as a valid empty request first.
		out.hold = r.contentLength == 0 && !endStream
	case !endStream:
		dst = append(dst, "Transfer-Encoding: chunked\r\n"...)
		out.chunked = true
	case r.method == "POST" || r.method == "PUT" || r.method == "PATCH":
		// An HTTP/1.1 server may wait for a body it was not told is
		// empty (RFC 9110 §8.6: send Content-Length for such methods).
		dst = append(dst, "Content-Length: 0\r\n"...)
		out.declared = 0
	}
	return append(dst, "\r\n"...), out
}

// appendCanonical writes a lower-case HTTP/2 field name the way HTTP/1.1
// clients usually do ("x-forwarded-for" -> "X-Forwarded-For"), which old
// backends that compare names case-sensitively expect.
func appendCanonical(b []byte, name string) []byte {
	up := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if up && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = c == '-'
		b = append(b, c)
	}
	return b
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

// isToken reports whether s is an RFC 9110 token (a method).
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

// validLowerName: a token without upper-case letters (§8.2.1).
func validLowerName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return isToken(s)
}

// validValue allows what a field value may hold (§8.2.1): no NUL, CR, LF
// or other controls but TAB, and no whitespace at either end.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return v == "" || (v[0] != ' ' && v[0] != '\t' && v[len(v)-1] != ' ' && v[len(v)-1] != '\t')
}

// validPath accepts an origin-form target ("/...") or "*": visible ASCII
// only, no fragment. A space would let the path end the request line
// early; raw non-ASCII would be read differently by backends.
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
// §8.3.1), by the same rule the HTTP/1.1 parser holds Host to.
func validAuthority(a string) bool {
	return a != "" && http1.ValidHost([]byte(a)) // HTTP/1.1 needs a Host
}
