package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"lbd/backend"
	"lbd/h2backend"
	"lbd/http1"
	"lbd/service"
)

// The frame-level path to HTTP/2 backends, for HTTP/2 clients: the
// forwarded head (after routing, access rules and header rules, as for
// any request) is encoded straight into an HPACK block and sent on
// h2backend's own client connection (Pool.Open); the request body goes
// out as DATA frames from the goroutine that reads it, and the response
// comes back from the connection's reader as fields and data the proxy
// relays. No net/http request, header map or client goroutine per call.
// HTTP/1.1 clients keep the Transport path (h2forward.go).

// forwardH2Frames is forwardHTTP2 for an HTTP/2 client.
func (c *conn) forwardH2Frames(st *Listener, svc *service.Service) bool {
	req := &c.req
	c.out = c.appendRequestHead(st, svc, c.out[:0])
	if c.ex.badExpand {
		return c.fail(st, 500)
	}
	c.r += req.HeadLen
	headLen := len(c.out)
	key := svc.SessionKey(req, c.client, c.key[:0])
	x := c.frameExchange(st)
	defer x.stopFrames()
	tries := st.tries()
	var last error = errNoBackend
	for i := 0; i < tries; i++ {
		b := c.pick(svc, key)
		if b == nil {
			break
		}
		c.out = c.bindBackend(st, svc, b, c.out[:headLen])
		c.out = c.bindServerName(b, c.out)
		if !x.requestBlock(b, c.out) {
			return c.fail(st, 400)
		}
		b.StreamStarted()
		s, err := x.openStream(b)
		if err == nil {
			c.ex.be = b
			var ok bool
			ok, err = x.relayFrames(svc, s)
			if err == nil {
				svc.Pin(key, b)
				b.StreamEnded()
				b.Done(nil, c.ex.status, time.Since(c.ex.start))
				return ok && x.body.finished()
			}
		}
		b.StreamEnded()
		b.Done(nil, 0, time.Since(c.ex.start))
		last = x.cause(err)
		if last == errNoBackend && x.body.replayable() {
			continue // nothing reached the backend: try another
		}
		break
	}
	return c.failHTTP2(st, last)
}

// requestBlock encodes the forwarded HTTP/1.1 head into the exchange's
// HPACK block, without the fields HTTP/2 forbids.
func (x *h2Exchange) requestBlock(b *backend.Backend, head []byte) bool {
	line, rest, _ := bytes.Cut(head, crlfB) // no CRLF: a bare request line, checked below
	method, target, ok := bytes.Cut(line, spaceB)
	target, _, ok2 := bytes.Cut(target, spaceB)
	if !ok || !ok2 {
		return false
	}
	if rest = bytes.TrimSuffix(rest, crlfB); len(rest) == 0 {
		return false
	}
	authority := forwardedHost(rest)
	if authority == nil {
		authority = []byte(b.Address())
	}
	blk := &x.block
	blk.Start(method, target, authority, b.HTTP2().Scheme() == "https")
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, crlfB) // the last line may lack its CRLF
		name, value, ok := bytes.Cut(l, colonB)
		if !ok || bytes.EqualFold(name, hostB) || hopByHopH2(string(name)) {
			continue
		}
		blk.Field(name, bytes.TrimSpace(value))
	}
	blk.Field(teB, trailersB) // gRPC servers may insist on a trailers-capable path
	if v := x.announcedTrailers(); v != nil {
		blk.Field(trailerB, v)
	}
	if n := x.body.length(); n >= 0 {
		var num [20]byte
		blk.Field(contentLengthB, strconv.AppendInt(num[:0], n, 10))
	}
	return true
}

// forwardedHost is the Host field of the forwarded head's lines.
func forwardedHost(lines []byte) []byte {
	for len(lines) > 0 {
		var l []byte
		l, lines, _ = bytes.Cut(lines, crlfB) // the last line may lack its CRLF
		if name, value, ok := bytes.Cut(l, colonB); ok && bytes.EqualFold(name, hostB) {
			return bytes.TrimSpace(value)
		}
	}
	return nil
}

var (
	crlfB          = []byte(crlf)
	spaceB         = []byte(" ")
	colonB         = []byte(":")
	hostB          = []byte("Host")
	teB            = []byte("te")
	trailersB      = []byte("trailers")
	contentLengthB = []byte("content-length")
)

// openStream sends the request head and, when the body is already in
// hand (a unary gRPC call), the body with it; a body still coming is
// sent by a goroutine of its own while the response is relayed.
func (x *h2Exchange) openStream(b *backend.Backend) (*h2backend.Stream, error) {
	x.armIdleFrames(b)
	whole, inHand := x.body.inHand()
	trailed := inHand && len(x.clientTrailer()) > 0 // they follow the data (endRequest)
	// The connect, if any, is bounded by ConnTO; a client gone meanwhile
	// cancels the stream once it is open.
	s, sent, err := b.HTTP2().Open(context.Background(), x.block.Bytes(), whole, inHand && !trailed)
	if err != nil {
		return nil, err
	}
	if !x.setStream(s) {
		return nil, h2backend.ErrCanceled
	}
	switch {
	case inHand && (sent < len(whole) || trailed):
		x.activity()
		if err := x.endRequest(s, whole[sent:]); err != nil {
			return nil, err
		}
	case !inHand:
		x.attachSink(s)
		x.pumpDone = make(chan struct{})
		go x.pump(s)
	}
	return s, nil
}

// pump sends the request body as it comes from the client.
func (x *h2Exchange) pump(s *h2backend.Stream) {
	defer close(x.pumpDone)
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	for {
		n, err := x.body.Read(*bp)
		end := errors.Is(err, io.EOF) || (err == nil && x.body.finished())
		if n > 0 || end {
			if werr := x.sendBody(s, (*bp)[:n], end); werr != nil {
				return
			}
		}
		if end {
			return
		}
		if err != nil {
			x.cancel() // the client's body failed: so does the stream
			return
		}
	}
}

// relayFrames relays the response. An error means no response head was
// relayed (the caller answers or retries); ok is as for relay.
func (x *h2Exchange) relayFrames(svc *service.Service, s *h2backend.Stream) (bool, error) {
	c := x.c
	status, fields, length, ended, err := s.ReadHead()
	if err != nil {
		return false, err
	}
	x.activity()
	isHEAD := c.req.MethodID == http1.MethodHEAD
	if ended && length > 0 && !isHEAD && status != 304 {
		return false, h2backend.ErrBadResponse // a body announced and not sent (RFC 9113 §8.1.1)
	}
	if ended && length < 0 {
		// Content-Length 0 makes it one HEADERS frame with END_STREAM
		// for the client: a trailers-only response stays one.
		length = 0
	}
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	rb := *bp
	// Trailers (gRPC's are never announced) need the chunked framing.
	chunked := !ended && (length < 0 || hasField(fields, "Trailer: "))
	raw := append(appendStatusLine(rb[:0], status, reasonFor(status)), fields...)
	if chunked {
		raw = append(raw, "Transfer-Encoding: chunked\r\n"...)
	} else {
		var num [20]byte
		raw = appendLine(raw, "Content-Length", strconv.AppendInt(num[:0], length, 10))
	}
	raw = append(raw, crlf...)
	c.noteGRPCLines(fields)
	keep, more, ok := x.relayHead(svc, raw, isHEAD)
	if !ok || !more {
		return keep && ok, nil
	}
	if ended {
		return keep, nil
	}
	return keep && x.copyFrames(s, rb, chunked) == nil, nil
}

// copyFrames streams the response body and, when chunked, the trailers.
func (x *h2Exchange) copyFrames(s *h2backend.Stream, rb []byte, chunked bool) error {
	x.startRelay(s)
	err := x.copyChunks(s, rb, chunked)
	x.stopRelay(s)
	if err != nil || !chunked {
		return err
	}
	c := x.c
	trailer := s.Trailer()
	c.noteGRPCLines(trailer)
	end := append(append(append(rb[:0], "0\r\n"...), trailer...), crlf...)
	return c.writeClient(end)
}

// hasField reports whether lines has a field line starting with prefix
// ("Name: ").
func hasField(lines []byte, prefix string) bool {
	for len(lines) > 0 {
		var l []byte
		l, lines, _ = bytes.Cut(lines, crlfB) // the last line may lack its CRLF
		if len(l) >= len(prefix) && string(l[:len(prefix)]) == prefix {
			return true
		}
	}
	return false
}

// noteGRPCLines records the grpc-status among header lines, if any.
func (c *conn) noteGRPCLines(lines []byte) {
	const prefix = "Grpc-Status: "
	for len(lines) > 0 {
		var l []byte
		l, lines, _ = bytes.Cut(lines, crlfB) // the last line may lack its CRLF
		if len(l) > len(prefix) && string(l[:len(prefix)]) == prefix {
			if n, err := strconv.Atoi(string(l[len(prefix):])); err == nil && n >= 0 && n < 100 {
				c.ex.grpcStatus = n + 1
			}
			return
		}
	}
}
