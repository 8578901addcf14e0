package proxy

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"lbd/http1"
)

// h2Body is the client's request body as an HTTP/2 backend's stream
// reads it: from the read buffer, then from the client, with the chunk
// framing of an HTTP/1.1 (or translated HTTP/2) body removed. The
// Transport reads it in its own goroutine while the proxy relays the
// response; the proxy waits for any read in progress before it lets go
// of the connection's buffer (abort).
type h2Body struct {
	c       *conn
	st      *Listener
	onData  func()
	chunked bool
	// byLength: the client declared the body's length (an HTTP/2
	// client's trailers then come from TrailerSource).
	byLength bool
	left     int64 // Content-Length bytes still to come
	dc       dechunker
	// whole: a chunked body that was complete in the buffer, decoded, so
	// the stream announces its length and ends with its one DATA frame;
	// wholeBuf is its buffer, kept from one request to the next.
	whole, wholeBuf []byte
	state           atomic.Int32          // bodyUntouched, bodyReading, bodyDone
	mu              sync.Mutex            // held by Read for its whole duration
	closed          bool                  // under mu: no further reads
	errValue        atomic.Pointer[error] // what ended the body early
	// hdr is x/net's Request.Trailer for a chunked body, filled at its
	// end (requestTrailer).
	hdr http.Header
}

// keepWhole bounds the whole-body buffer an exchange keeps.
const keepWhole = 64 << 10

const (
	bodyUntouched int32 = iota
	bodyReading
	bodyDone
)

func newH2Body(c *conn, st *Listener, onData func()) *h2Body {
	b := &h2Body{}
	b.init(c, st, onData)
	return b
}

// init sets b up for the current request, keeping the buffer of the
// last whole body for the next one.
func (b *h2Body) init(c *conn, st *Listener, onData func()) {
	*b = h2Body{c: c, st: st, onData: onData, wholeBuf: b.wholeBuf,
		dc: dechunker{keepTrailer: true, trailer: b.dc.trailer[:0]}}
	switch c.req.BodyKind() {
	case http1.BodyChunked:
		b.chunked = true
		c.chunk.Reset()
		b.takeWhole()
	case http1.BodyLength:
		b.left, b.byLength = c.req.ContentLength, true
	default:
		b.state.Store(bodyDone)
	}
	if !b.finished() {
		// The head's read deadline (Client) must not cut a long-lived
		// stream: the exchange's idle timer (the backend's TimeOut,
		// data either way) bounds it instead, and abort interrupts a
		// read the exchange no longer needs. Set before any reader runs.
		c.nc.SetReadDeadline(time.Time{})
		c.dl.read = 0
	}
}

// takeWhole decodes a chunked body that is already complete in the
// buffer (a gRPC unary call, typically) into b.whole.
func (b *h2Body) takeWhole() {
	c := b.c
	avail := (*c.buf)[c.r:c.w]
	var scan http1.ChunkScanner
	n, done, err := scan.Scan(avail)
	if err != nil || !done {
		return // read as it comes; Read reports a framing error
	}
	buf := b.wholeBuf[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	b.whole = b.dc.decode(buf, avail[:n])
	if cap(b.whole) <= keepWhole {
		b.wholeBuf = b.whole[:0] // reused when the body is the exchange's (h2framex.go)
	}
	c.r += n
	b.chunked, b.left = false, int64(len(b.whole))
	if b.left == 0 {
		b.state.Store(bodyDone)
	}
}

// length is the Content-Length the stream announces, -1 if unknown.
// A body in hand keeps its length when it is sent again to another
// backend (inHand counted it as sent: left is 0 by then).
func (b *h2Body) length() int64 {
	switch {
	case b.chunked:
		return -1
	case b.whole != nil:
		return int64(len(b.whole))
	}
	return b.left
}

// inHand returns the whole body when it is in memory already (a
// complete chunked body, one whose Content-Length bytes are all in the
// buffer, or none), and counts it as sent; ok false means it is read as
// it comes.
func (b *h2Body) inHand() (whole []byte, ok bool) {
	c := b.c
	if b.whole == nil && !b.chunked && b.state.Load() == bodyUntouched && int64(c.w-c.r) >= b.left {
		b.whole = (*c.buf)[c.r : c.r+int(b.left)] // the buffer is not read again before the exchange ends
		c.r += int(b.left)
	}
	switch {
	case b.whole != nil:
		b.left = 0
		b.state.Store(bodyDone)
		return b.whole, true
	case b.finished() && b.length() == 0:
		return nil, true
	}
	return nil, false
}

// replayable says the body can be sent again to another backend.
func (b *h2Body) replayable() bool { return b.whole != nil || !b.touched() }

func (b *h2Body) touched() bool  { return b.state.Load() != bodyUntouched }
func (b *h2Body) finished() bool { return b.state.Load() == bodyDone }

// failure is what ended the body early (client I/O, bad framing), or nil.
func (b *h2Body) failure() error {
	if p := b.errValue.Load(); p != nil {
		return *p
	}
	return nil
}

func (b *h2Body) fail(err error) (int, error) {
	b.errValue.Store(&err)
	return 0, err
}

// Read implements io.Reader.
func (b *h2Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, io.ErrClosedPipe
	}
	if b.state.Load() == bodyDone {
		return 0, io.EOF
	}
	b.state.Store(bodyReading)
	if b.whole != nil {
		n := copy(p, b.whole[len(b.whole)-int(b.left):])
		if b.left -= int64(n); b.left == 0 {
			b.state.Store(bodyDone)
		}
		b.onData()
		return n, nil
	}
	c := b.c
	for {
		avail := (*c.buf)[c.r:c.w]
		if len(avail) == 0 {
			if err := b.fill(); err != nil {
				return b.fail(err)
			}
			continue
		}
		if !b.chunked {
			n := copy(p, avail[:min(int64(len(avail)), b.left)])
			c.r += n
			b.left -= int64(n)
			if b.left == 0 {
				b.state.Store(bodyDone)
			}
			b.onData()
			return n, nil
		}
		// Decoded data is never longer than its framing: a window of
		// len(p) input bytes decodes into p in place.
		in := avail[:min(len(avail), len(p))]
		n, done, err := c.chunk.Scan(in)
		if err != nil {
			return b.fail(errBadRequest)
		}
		out := b.dc.decode(p[:0], in[:n])
		c.r += n
		if done {
			b.state.Store(bodyDone)
			if b.hdr != nil {
				fillTrailer(b.hdr, b.dc.trailer)
			}
		}
		if len(out) > 0 || done {
			b.onData()
			return len(out), nil
		}
	}
}

// fill reads more of the body from the client into the empty buffer.
func (b *h2Body) fill() error {
	c := b.c
	c.r, c.w = 0, 0
	n, err := c.nc.Read(*c.buf)
	c.w = n
	if n > 0 {
		return nil
	}
	if err == nil || err == io.EOF {
		return errClientIO // the client ended before its body did
	}
	return errClientIO
}

// Close implements io.Closer; the Transport calls it when the stream
// ends, possibly while a Read is in progress in its other goroutine.
func (b *h2Body) Close() error { return nil }

// abort stops reading for good and waits for a read in progress: the
// connection's buffer may be released after it returns. A finished body
// of an HTTP/2 client may still have the frame path waiting for its
// trailers (TrailerSource): the past deadline wakes that wait too.
func (b *h2Body) abort() {
	if _, h2Client := b.c.nc.(TrailerSource); b.finished() && !(b.byLength && h2Client) {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		return
	}
	b.c.nc.SetReadDeadline(time.Unix(1, 0)) // wakes a blocked read
	b.c.dl.read = 1
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}
