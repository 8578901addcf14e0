package h2

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

var (
	// errStreamGone: the stream was reset (by the client, or by lbd for a
	// framing error) or the connection ended; the proxy drops the request.
	errStreamGone = errors.New("h2: stream reset")
	errConnClosed = errors.New("h2: connection closed")
	// errNoStream: the proxy wrote with no request in progress.
	errNoStream = errors.New("h2: write outside a stream")
)

// maxPending bounds what one stream may have waiting for the proxy,
// framing included: its window's worth of payload in ordinary frames.
const maxPending = 2 * streamRecvWindow

// Credit thresholds: a WINDOW_UPDATE is sent once this much of the
// request body was taken by the proxy (or the buffer ran dry).
const (
	streamCreditStep = 16 << 10
	connCreditStep   = 64 << 10
)

// A vconn is the proxy's end of HTTP/2 streams, one at a time: the proxy
// serves it as an HTTP/1.1 client connection. Reads return the request
// translated into HTTP/1.1; writes are the proxy's HTTP/1.1 response,
// which the encoder turns into HEADERS and DATA frames on the spot. A
// vconn serves the connection's streams one after another, so the
// proxy's per-connection goroutine, buffers and backend affinity are
// reused as for a keep-alive HTTP/1.1 client.
type vconn struct {
	sc *serverConn

	// cur is the stream whose frames may still be written, checked under
	// the output lock: once lbd or the client reset a stream, the proxy's
	// late frames for it are dropped instead of sent.
	cur atomic.Uint32
	// recvWin is the stream's receive window: DATA the client may still
	// send before the proxy takes what is buffered.
	recvWin atomic.Int64

	mu      sync.Mutex
	in      []byte // request bytes for the proxy, which has read in[:off]
	off     int
	id      uint32 // current stream, 0 between streams
	isHEAD  bool
	held    bool  // the head waits for the stream's end (Content-Length 0)
	endRecv bool  // the client ended the stream
	readAny bool  // the proxy has read part of this stream
	dead    bool  // carries no further stream: reads end
	closed  bool  // the proxy closed it
	rerr    error // the current stream failed: reads fail with it
	// Body accounting for the current stream.
	declared int64 // Content-Length, -1 = none
	received int64 // DATA payload received
	chunked  bool  // DATA is passed on chunk-encoded
	// trailer: the trailer lines of a body passed on with its length,
	// which the HTTP/1.1 stream cannot carry (RequestTrailer).
	trailer  []byte
	credited int64 // payload bytes already given back as connection window
	// streamOwed: consumed payload not yet given back as stream window.
	streamOwed int64
	// sink takes request data directly (direct.go); draining: the proxy
	// may hold request bytes it read and has not passed on yet.
	sink     RequestSink
	draining bool

	// Under sc.mu: the stream's send window.
	sendWin int64
	waiting bool

	// wmu serialises the encoder between the proxy's writes and a Close
	// that may come from another goroutine (a stopping server).
	wmu     sync.Mutex
	enc     respEncoder
	closing atomic.Bool // Close started: writes waiting for window give up

	// onGone, if set (OnGone), is called when the current stream is
	// reset or its connection ends.
	onGone func()

	ready chan struct{} // cap 1: input arrived or the state changed
	space chan struct{} // cap 1: the send window grew or the state changed
	rdl   deadline
	wdl   deadline
}

func newVconn(sc *serverConn) *vconn {
	return &vconn{sc: sc, ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// Read implements net.Conn. Between streams it waits without a deadline:
// an idle vconn belongs to its HTTP/2 connection, which has its own idle
// timeout, and the proxy must not close it under a stream just assigned.
func (v *vconn) Read(b []byte) (int, error) {
	for {
		v.mu.Lock()
		// The proxy reads again once it has passed on what it read: the
		// direct path may resume when nothing is queued (direct.go).
		v.draining = false
		if v.off < len(v.in) && !v.held {
			n := copy(b, v.in[v.off:])
			v.off += n
			if v.off == len(v.in) {
				v.in, v.off = v.in[:0], 0
			}
			v.readAny, v.draining = true, true
			id, stream, conn := v.takeCredit()
			v.mu.Unlock()
			if conn > 0 {
				v.sc.giveCredit(id, stream, conn)
			}
			return n, nil
		}
		rerr, dead, active := v.rerr, v.dead || v.closed, v.id != 0
		v.mu.Unlock()
		switch {
		case rerr != nil:
			return 0, rerr
		case dead:
			return 0, io.EOF
		case !active:
			<-v.ready
			continue
		case v.rdl.passed():
			return 0, os.ErrDeadlineExceeded
		}
		if err := wait(v.ready, &v.rdl); err != nil {
			return 0, err
		}
	}
}

// takeCredit works out the window to give back after a read: the payload
// the proxy has consumed (what is still buffered bounds what is not, as
// framing bytes only add to it). The connection's share is passed on
// every time (giveCredit sends it in steps); the stream's only in steps
// of streamCreditStep, and only while the client still sends: with a
// window of streamRecvWindow the client never waits for it, and a
// stream of small messages (gRPC) does not cost a WINDOW_UPDATE each.
// Called with v.mu held.
func (v *vconn) takeCredit() (id uint32, stream, conn int64) {
	pending := len(v.in) - v.off
	consumed := v.received - int64(pending)
	if consumed <= v.credited {
		return 0, 0, 0
	}
	n := consumed - v.credited
	v.credited = consumed
	if !v.endRecv {
		if v.streamOwed += n; v.streamOwed >= streamCreditStep {
			stream, v.streamOwed = v.streamOwed, 0
			v.recvWin.Add(stream)
		}
	}
	return v.id, stream, n
}

// Write implements net.Conn: the proxy's response for the current stream.
func (v *vconn) Write(p []byte) (int, error) {
	v.mu.Lock()
	id, rerr, isHEAD, gone := v.id, v.rerr, v.isHEAD, v.dead || v.closed
	v.mu.Unlock()
	switch {
	case rerr != nil:
		return 0, rerr
	case id == 0 || gone:
		return 0, errNoStream
	}
	v.wmu.Lock()
	err := v.enc.write(v, id, isHEAD, p)
	v.wmu.Unlock()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close implements net.Conn. A stream the proxy leaves unfinished is
// ended: a close-delimited body with END_STREAM, a request it never read
// with REFUSED_STREAM (the client may retry it), anything else with a
// reset.
func (v *vconn) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	id, readAny := v.id, v.readAny
	v.mu.Unlock()
	v.closing.Store(true)
	signal(v.ready)
	signal(v.space)
	v.sc.vconnClosed(v)
	if id == 0 {
		return nil
	}
	v.wmu.Lock()
	defer v.wmu.Unlock()
	switch {
	case !readAny:
		v.abort(id, http2.ErrCodeRefusedStream)
	case v.enc.state == rsUntilClose:
		if v.sendData(id, nil, true) == nil {
			v.finish(id, false)
			return nil
		}
		v.abort(id, http2.ErrCodeInternal)
	case v.enc.state == rsHead && !v.enc.started:
		if v.sc.answer(v, id, 502, false) == nil {
			v.finish(id, false)
			return nil
		}
		v.abort(id, http2.ErrCodeInternal)
	default:
		v.abort(id, http2.ErrCodeInternal)
	}
	return nil
}

// abort resets the current stream from the proxy's side.
func (v *vconn) abort(id uint32, code http2.ErrCode) {
	if v.cur.CompareAndSwap(id, 0) {
		v.sc.rst(id, code)
	}
	v.release(id, errStreamGone)
}

// release detaches stream id (once) and tells the connection; err, if
// any, is what the proxy's reads of it return from now on.
func (v *vconn) release(id uint32, err error) {
	v.mu.Lock()
	if v.id != id {
		v.mu.Unlock()
		return
	}
	v.id, v.dead = 0, true
	if v.rerr == nil {
		v.rerr = err
	}
	owed := v.received - v.credited // never read: its window comes back now
	v.in, v.off = v.in[:0], 0
	gone := v.onGone
	v.onGone, v.sink = nil, nil
	v.mu.Unlock()
	if gone != nil {
		gone()
	}
	signal(v.ready)
	signal(v.space)
	v.sc.streamDone(v, id, false, owed)
}

// finish runs when the proxy's response is complete. The vconn is kept
// for the next stream only when the exchange ended cleanly on both
// sides; otherwise the proxy reads EOF and drops it.
func (v *vconn) finish(id uint32, keepAlive bool) {
	v.cur.CompareAndSwap(id, 0)
	v.mu.Lock()
	if v.id != id {
		v.mu.Unlock()
		return
	}
	reuse := keepAlive && v.endRecv && v.off == len(v.in) && v.rerr == nil && !v.closed
	open := !v.endRecv
	owed := v.received - v.credited
	v.id, v.readAny, v.onGone, v.sink = 0, false, nil, nil
	if !reuse {
		v.dead = true
		v.in, v.off = v.in[:0], 0
	} else {
		owed = 0 // all consumed and credited by takeCredit
		if cap(v.in) > keepCap {
			v.in = nil // an idle vconn keeps no large upload buffer
		}
	}
	v.mu.Unlock()
	v.sc.answered.Add(1)
	if open {
		// The client is still sending a body nobody will read (RFC 9113
		// §8.1: the response is complete, the request may stop).
		v.sc.rst(id, http2.ErrCodeNo)
	}
	v.sc.streamDone(v, id, reuse, owed)
}

// kill ends the current stream for a reason outside the proxy: the
// client reset it, or the connection is gone.
func (v *vconn) kill(id uint32, err error) {
	v.cur.CompareAndSwap(id, 0)
	v.release(id, err)
}

// assign starts stream id on an idle vconn with its translated head. It
// reports false if the proxy closed the vconn meanwhile.
func (v *vconn) assign(id uint32, head []byte, req *request, endStream bool, recvWin int64) bool {
	v.mu.Lock()
	if v.closed || v.dead {
		v.mu.Unlock()
		return false
	}
	v.id, v.isHEAD, v.held, v.endRecv, v.readAny = id, req.isHEAD, req.hold, endStream, false
	v.sink, v.draining = nil, false
	v.declared, v.received, v.chunked, v.credited, v.streamOwed = req.declared, 0, req.chunked, 0, 0
	v.trailer = v.trailer[:0]
	v.in, v.off = append(v.in[:0], head...), 0
	v.recvWin.Store(recvWin)
	v.cur.Store(id)
	v.mu.Unlock()
	signal(v.ready)
	return true
}

// data adds a DATA frame's payload to stream id. It returns the error
// code to reset the stream with, or 0, and whether the payload was taken
// (else its window is the caller's to give back).
func (v *vconn) data(id uint32, p []byte, end bool) (http2.ErrCode, bool) {
	v.mu.Lock()
	defer signal(v.ready)
	defer v.mu.Unlock()
	switch {
	case v.id != id:
		return 0, false // ended meanwhile; the frame is dropped
	case v.endRecv:
		return http2.ErrCodeStreamClosed, false
	case v.declared >= 0 && v.received+int64(len(p)) > v.declared:
		return http2.ErrCodeProtocol, false // more than Content-Length
	case len(v.in)-v.off > maxPending:
		// Tiny DATA frames on a chunk-encoded body cost framing bytes
		// the window does not count: a client made of them is cut off.
		return http2.ErrCodeEnhanceYourCalm, false
	}
	v.received += int64(len(p))
	if v.off > 0 && v.off >= len(v.in)/2 {
		v.in, v.off = v.in[:copy(v.in, v.in[v.off:])], 0 // keep the buffer bounded
	}
	if v.chunked && len(p) > 0 {
		v.in = strconv.AppendInt(v.in, int64(len(p)), 16)
		v.in = append(v.in, "\r\n"...)
		v.in = append(v.in, p...)
		v.in = append(v.in, "\r\n"...)
	} else {
		v.in = append(v.in, p...)
	}
	if end {
		return v.endLocked(nil), true
	}
	return 0, true
}

// endLocked ends the request body, with trailer lines if any.
func (v *vconn) endLocked(trailer []byte) http2.ErrCode {
	if v.declared >= 0 && v.received != v.declared {
		return http2.ErrCodeProtocol // less than Content-Length
	}
	if v.chunked {
		v.in = append(v.in, "0\r\n"...)
		v.in = append(v.in, trailer...)
		v.in = append(v.in, "\r\n"...)
	}
	v.endRecv, v.held = true, false
	return 0
}

// shutdown ends everything when the connection is gone.
func (v *vconn) shutdown() {
	v.mu.Lock()
	id := v.id
	v.dead = true
	v.mu.Unlock()
	if id != 0 {
		v.kill(id, errConnClosed)
	}
	signal(v.ready)
	signal(v.space)
}

// retire ends an idle vconn: the proxy reads EOF and lets it go.
func (v *vconn) retire() {
	v.mu.Lock()
	if v.id == 0 {
		v.dead = true
	}
	v.mu.Unlock()
	signal(v.ready)
}

// LocalAddr implements net.Conn: the HTTP/2 connection's.
func (v *vconn) LocalAddr() net.Addr { return v.sc.local }

// RemoteAddr implements net.Conn: the client's, for logs, sessions by IP
// and X-Forwarded-For.
func (v *vconn) RemoteAddr() net.Addr { return v.sc.remote }

// SSLHeaders implements proxy.TLSInfo: the client's X-SSL-* lines.
func (v *vconn) SSLHeaders() []byte { return v.sc.ssl }

// NoHTTPS11 implements proxy.TLSInfo. It is 0: the Pound setting forces
// HTTP/1.0 on TLS connections, and HTTP/2 is not offered when it is 1.
func (v *vconn) NoHTTPS11() int { return 0 }

// HTTP2 implements proxy.HTTP2Stream: logs show HTTP/2.0.
func (v *vconn) HTTP2() {}

// SetDeadline implements net.Conn.
func (v *vconn) SetDeadline(t time.Time) error {
	v.SetReadDeadline(t)
	return v.SetWriteDeadline(t)
}

// SetReadDeadline implements net.Conn. A read waiting is woken to
// look at the new deadline, which may be earlier than the one it waits
// for (the proxy interrupts a body read that way).
func (v *vconn) SetReadDeadline(t time.Time) error {
	v.rdl.set(t)
	signal(v.ready)
	return nil
}

// OnGone implements proxy.StreamWatcher: f is called (once, from
// another goroutine) when the current stream is reset by the client or
// by lbd for a framing error, or the connection ends; never if the
// exchange completes. It reports false, and keeps nothing, when the
// stream is gone already.
func (v *vconn) OnGone(f func()) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.id == 0 || v.rerr != nil || v.dead || v.closed {
		return false
	}
	v.onGone = f
	return true
}

// ForgetGone implements proxy.StreamWatcher: the exchange that called
// OnGone is over.
func (v *vconn) ForgetGone() {
	v.mu.Lock()
	v.onGone = nil
	v.mu.Unlock()
}

// ResetStream implements proxy.StreamResetter: the proxy's backend
// reset the stream this one answers, with code.
func (v *vconn) ResetStream(code uint32) {
	v.mu.Lock()
	id := v.id
	v.mu.Unlock()
	if id == 0 {
		return
	}
	v.wmu.Lock()
	defer v.wmu.Unlock()
	v.abort(id, http2.ErrCode(code))
}

// SetWriteDeadline implements net.Conn.
func (v *vconn) SetWriteDeadline(t time.Time) error {
	v.wdl.set(t)
	return nil
}
