// Package http1 reads and checks HTTP/1.x message heads and chunked bodies
// on raw bytes, strictly, in one pass, without allocating. It is the wire
// layer of lbd's proxy engine: net/http is too lenient for a proxy (see
// shared/spec/http-strictness.md), so lbd parses requests itself.
//
// All []byte fields of Request and Response alias the caller's buffer; they
// are valid until the buffer is reused.
package http1

import "errors"

// ErrNeedMore means buf does not yet hold a complete head and no limit is
// exceeded yet: read more bytes and parse again from the start of the head.
var ErrNeedMore = errors.New("http1: incomplete head")

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
	// CheckMethods refuses a method outside the xHTTP level XHTTP with
	// 405 before the request-target is judged, as Pound does (CONNECT
	// /path is a 405 where CONNECT is not allowed, not a 400).
	CheckMethods bool
	XHTTP        int
	// ConnectPath accepts CONNECT with an origin-form target ("CONNECT
	// /x"), which Pound 4 forwards like any request when xHTTP allows the
	// method. Such a request is never kept alive (KeepAlive false), so a
	// backend that takes it for a tunnel cannot desynchronise anything.
	ConnectPath bool
	// Purge makes PURGE a method (MethodPURGE) that the xHTTP check lets
	// through: a service of the listener answers it (lbd's CachePurge).
	// Without it PURGE is an unknown method (400), as in Pound.
	Purge bool
}

// DefaultLimits are Pound 4's and HAProxy's.
var DefaultLimits = Limits{
	MaxRequestLine: 4096,
	MaxHeaderLine:  4096,
	MaxHeaders:     100,
	MaxHead:        64 << 10,
}

// maxConnLines is how many Connection header lines a head remembers for
// IsHopByHop without rescanning; more lines fall back to a scan.
const maxConnLines = 4

// Request is a parsed request head, reusable across requests: each parse
// keeps the Headers backing array, so steady state allocates nothing.
type Request struct {
	Method   []byte
	MethodID Method // Method looked up; never MethodUnknown after a successful parse
	Target   []byte // request-target as sent (origin-form, absolute-form, authority-form, '*')
	Path     []byte // Target's path part (absolute-form: after the authority, "/" if empty), no query; nil for CONNECT
	Query    []byte // Target after '?', without '?'; nil if none
	Minor    int    // HTTP/1.<Minor>: 0 or 1
	Headers  []Header

	Host []byte // Host header value, or the authority of an absolute-form or CONNECT target
	// AbsoluteForm: the target carried a scheme and authority. RFC 9112
	// §3.2.2 says the authority wins over Host, so the forwarder must send
	// Path[?Query] as origin-form and "Host: " + Host instead of the Host
	// header received.
	AbsoluteForm  bool
	ContentLength int64 // -1 when absent
	Chunked       bool  // Transfer-Encoding: chunked (the only coding accepted)
	KeepAlive     bool  // connection persists after this exchange
	Expect100     bool  // Expect: 100-continue (HTTP/1.1 only; RFC 9110 §10.1.1)
	Upgrade       bool  // GET with Upgrade: websocket and Connection: upgrade, HTTP/1.1
	HeadLen       int   // bytes of the head, including leading empty lines and the final CRLF CRLF

	conn  [maxConnLines][]byte // Connection header values, for IsHopByHop
	nConn int
}

// Response is a parsed response head.
type Response struct {
	Minor         int
	Status        int
	Reason        []byte
	Headers       []Header
	ContentLength int64 // -1 when absent or dropped (TE+CL)
	Chunked       bool
	KeepAlive     bool // backend connection may be reused after the body
	Upgrade       bool // 101 with Upgrade: websocket: the caller may tunnel if it asked for it
	HeadLen       int

	conn  [maxConnLines][]byte
	nConn int
}

// BodyKind is how a message body is framed (RFC 9112 §6.3).
type BodyKind uint8

// The body framings.
const (
	BodyNone       BodyKind = iota // no body bytes follow the head
	BodyLength                     // exactly ContentLength bytes follow
	BodyChunked                    // chunked; validate with ChunkScanner
	BodyUntilClose                 // response only: the body ends when the backend closes
)

// Error is a message the proxy must refuse. Status is the answer to send:
// 400, 413, 414, 417 or 501 from ParseRequestHead and ChunkScanner, 502 from
// ParseResponseHead. The connection is always closed after it because the
// framing is in doubt. Errors are shared package values: do not modify them.
type Error struct {
	Status int
	Reason string // short, for logs
}

// Error returns the short reason, for logs.
func (e *Error) Error() string { return e.Reason }
