// Package http1 reads and checks HTTP/1.x message heads and chunked bodies
// on raw bytes, strictly, in one pass, without allocating. It is the wire
// layer of lbd's proxy engine: net/http is too lenient for a proxy (see
// shared/spec/http-strictness.md), so lbd parses requests itself.
//
// All []byte fields of Request and Response alias the caller's buffer; they
// are valid until the buffer is reused.
package http1

// Header is one header field, name and value slices into the head buffer.
// Value has leading and trailing whitespace removed.
type Header struct {
	Name  []byte
	Value []byte
}

// Limits bound a request head. Zero fields take the defaults in
// DefaultLimits.
type Limits struct {
	MaxRequestLine int // longer request line -> 414 (Pound LineBufferSize, 4096)
	MaxURI         int // longer target -> 414 (Pound MaxURI; 0 = no extra limit)
	MaxHeaderLine  int // longer header line -> 413 (Pound LineBufferSize, 4096)
	MaxHeaders     int // more header fields -> 400 (100)
	MaxHead        int // larger head -> 400 (64 KiB)
}

// DefaultLimits are Pound 4's and HAProxy's.
var DefaultLimits = Limits{
	MaxRequestLine: 4096,
	MaxHeaderLine:  4096,
	MaxHeaders:     100,
	MaxHead:        64 << 10,
}

// Request is a parsed request head, reusable across requests (Reset keeps
// the Headers backing array).
type Request struct {
	Method  []byte
	Target  []byte // request-target as sent (origin-form, absolute-form, '*')
	Path    []byte // Target's path part (absolute-form: after the authority), no query
	Query   []byte // Target after '?', without '?'; nil if none
	Minor   int    // HTTP/1.<Minor>: 0 or 1
	Headers []Header

	Host          []byte // Host header value (or the absolute-form authority)
	ContentLength int64  // -1 when absent
	Chunked       bool   // Transfer-Encoding: chunked (last coding)
	KeepAlive     bool   // connection persists after this exchange
	Expect100     bool   // Expect: 100-continue
	Upgrade       bool   // Upgrade: websocket with Connection: upgrade
	HeadLen       int    // bytes of the head, including the final CRLF CRLF
}

// Response is a parsed response head.
type Response struct {
	Minor         int
	Status        int
	Reason        []byte
	Headers       []Header
	ContentLength int64 // -1 when absent
	Chunked       bool
	KeepAlive     bool // backend connection may be reused after the body
	HeadLen       int
}

// Error is a request the proxy must refuse: Status is the answer to send
// (400, 405, 413, 414, 501, 505, ...); the connection is always closed after
// it because framing is in doubt.
type Error struct {
	Status int
	Reason string // short, for logs
}

func (e *Error) Error() string { return e.Reason }
