package proxy

import (
	"bytes"
	"net/http"
	"time"

	"lbd/h2backend"
)

// Request trailers to HTTP/2 backends. A client's trailers reach the
// proxy as the trailer section of a chunked body: an HTTP/1.1 client's
// as it sent them, an HTTP/2 client's as package h2 translated its
// trailing HEADERS; or, for an HTTP/2 client's body with a declared
// length, which has no trailer section, from the connection
// (TrailerSource). The HTTP/1.1 backend path relays that section with
// the body's bytes; the HTTP/2 paths decode the body, so h2Body keeps
// the section's lines (dechunker.keepTrailer) and they are sent here:
// a trailing HEADERS frame on the frame path, http.Request.Trailer on
// x/net's. ChunkScanner checked the lines on the way (RFC 9112 §7.1.2,
// http1.BannedTrailer); fields HTTP/2 forbids (hopByHopH2) are left out.
// Header rules (AddHeader, HeadRemove...) apply to heads, not to
// trailers. A request without trailers costs a check where its body
// ends (and a look under the HTTP/2 stream's lock for one with a
// length); the HTTP/1.1 path has none of this.

// TrailerSource is implemented by the connections of package h2: the
// trailers of a request whose body came with its Content-Length, which
// the HTTP/1.1 stream the proxy reads has no place for. It waits for the
// client's end of the stream, at most patience.
type TrailerSource interface {
	RequestTrailer(patience time.Duration) []byte
}

// clientTrailer is the request's trailer section once its body is
// done: a chunked body's own or, for an HTTP/2 client's body sent with
// its length, the trailers its stream ended with (waited for at most the
// listener's Client timeout: a client that keeps its stream open past
// its declared length ends without). nil: none.
func (x *h2Exchange) clientTrailer() []byte {
	if !x.body.byLength {
		return x.body.trailer()
	}
	if ts, ok := x.c.nc.(TrailerSource); ok {
		return ts.RequestTrailer(x.st.Client)
	}
	return nil
}

// trailer is the trailer section of the client's body ("Name: value\r\n"
// lines) once it is known: the body is finished, or was complete in the
// buffer. nil when there is none.
func (b *h2Body) trailer() []byte {
	if b.whole == nil && !b.finished() {
		return nil
	}
	return b.dc.trailer
}

// announcedTrailers is the client's Trailer field (RFC 9110 §6.6.2),
// which the forwarded head leaves out as hop-by-hop, when the body may
// end with trailers: an HTTP/2 backend gets it back, as some servers
// (Go's) keep only the trailer fields a request announced. nil: none.
func (x *h2Exchange) announcedTrailers() []byte {
	_, h2Client := x.c.nc.(TrailerSource)
	if x.body.length() >= 0 && len(x.body.trailer()) == 0 && !(h2Client && x.body.byLength) {
		return nil // an HTTP/1.1 length, or a whole body without: none will follow
	}
	return x.c.req.HeaderValue(hdrTrailer)
}

var (
	hdrTrailer = []byte("Trailer")
	trailerB   = []byte("trailer")
)

// forEachTrailer calls f with each field of a trailer section that may
// go into an HTTP/2 request, the value without surrounding whitespace.
func forEachTrailer(lines []byte, f func(name, value []byte)) {
	for len(lines) > 0 {
		var l []byte
		l, lines, _ = bytes.Cut(lines, crlfB) // the last line may lack its CRLF
		name, value, ok := bytes.Cut(l, colonB)
		if !ok || hopByHopH2(string(name)) {
			continue
		}
		f(name, bytes.TrimSpace(value))
	}
}

// sendBody sends a piece of the request body to the frame path's
// stream; end makes it the last (endRequest).
func (x *h2Exchange) sendBody(s *h2backend.Stream, p []byte, end bool) error {
	if end {
		return x.endRequest(s, p)
	}
	return s.WriteData(p, false)
}

// endRequest sends the last piece of the request body and ends the
// stream: with a trailing HEADERS frame when the client sent trailers
// (RFC 9113 §8.1), else with END_STREAM on the data.
func (x *h2Exchange) endRequest(s *h2backend.Stream, p []byte) error {
	lines := x.clientTrailer()
	if len(lines) == 0 {
		return s.WriteData(p, true)
	}
	var blk h2backend.RequestBlock // a request with trailers is rare: built when needed
	forEachTrailer(lines, blk.Field)
	if len(blk.Bytes()) == 0 {
		return s.WriteData(p, true)
	}
	if len(p) > 0 {
		if err := s.WriteData(p, false); err != nil {
			return err
		}
	}
	return s.WriteTrailers(blk.Bytes())
}

// requestTrailer is the http.Request.Trailer for x/net's path. x/net
// sends trailers only for a request whose Trailer is not nil when it
// starts, so a chunked body still to come gets an empty map, filled as
// its end is read (h2Body.Read, in the Transport's goroutine that then
// sends it); a body in hand has its trailers already. nil: none.
func (b *h2Body) requestTrailer() http.Header {
	switch {
	case b.chunked:
		b.hdr = http.Header{}
		return b.hdr
	case len(b.trailer()) > 0:
		h := http.Header{}
		fillTrailer(h, b.trailer())
		return h
	}
	return nil
}

// fillTrailer adds the fields of a trailer section to h.
func fillTrailer(h http.Header, lines []byte) {
	forEachTrailer(lines, func(name, value []byte) {
		h.Add(string(name), string(value))
	})
}
