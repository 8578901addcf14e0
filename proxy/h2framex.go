package proxy

import (
	"sync"
	"sync/atomic"
	"time"

	"lbd/h2backend"
)

// The frame-level path's exchange state. An HTTP/2 client's streams
// follow one another on the proxy's vconn, so the exchange (its body
// reader, header block buffer, timers and callbacks) is kept on the
// conn and set up again for each request: a call allocates none of it.
// Cancelling is abort, which resets the backend stream directly (x/net's
// path cancels a context instead).

// frames is the frame-level path's part of h2Exchange.
type frames struct {
	block      h2backend.RequestBlock
	pumpDone   chan struct{} // the request body's goroutine ended
	onActivity func()        // x.activity, bound once
	// The direct path (h2direct.go): the client's stream when it offers
	// one, the backend stream its reader passes request data to, and
	// the response bytes its relay sent.
	direct  directStream
	sinkTo  *h2backend.Stream
	relayed atomic.Int64

	mu       sync.Mutex
	live     bool // a request is in progress: timers and aborts apply
	aborted  bool
	stream   *h2backend.Stream
	deadArm  bool // the deadline timer was started for this request
	idleFire atomic.Bool
	// lastActive (Unix ns) is when data last moved: the idle timer,
	// when it fires, waits on if there was some since (activity then
	// costs a clock read, not a timer reset per message).
	lastActive atomic.Int64
}

// frameExchange returns c's exchange, set up for the current request.
func (c *conn) frameExchange(st *Listener) *h2Exchange {
	x := c.h2x
	if x == nil {
		x = &h2Exchange{c: c, body: &h2Body{}}
		x.cancel = x.abort
		x.onActivity = x.activity
		c.h2x = x
	}
	x.st = st
	x.grpcDeadline.Store(false)
	x.idleOut.Store(false)
	x.pumpDone = nil
	x.direct, _ = c.nc.(directStream) // nil: no direct path (not an HTTP/2 client)
	x.mu.Lock()
	x.live, x.aborted, x.stream, x.deadArm, x.idleFor = true, false, nil, false, 0
	if v := c.req.HeaderValue(hdrGRPCTimeout); v != nil {
		if d, ok := h2backend.ParseTimeout(v); ok {
			x.deadArm = true
			x.armTimer(&x.deadline, d, &x.grpcDeadline)
		}
	}
	x.mu.Unlock()
	if w, ok := c.nc.(StreamWatcher); ok && !w.OnGone(x.cancel) {
		x.cancel()
	}
	x.body.init(c, st, x.onActivity)
	return x
}

var hdrGRPCTimeout = []byte("Grpc-Timeout")

// armTimer (re)starts the timer in *slot to set flag and abort the
// exchange after d; called with x.mu held. A timer that fired is
// replaced rather than reused (stopFrames), so a late callback of the
// last request finds itself no longer in its slot and does nothing.
func (x *h2Exchange) armTimer(slot **time.Timer, d time.Duration, flag *atomic.Bool) {
	if *slot != nil {
		(*slot).Reset(d)
		return
	}
	// t is set under x.mu, which the callback takes before reading it:
	// a short timer may fire before AfterFunc returns.
	var t *time.Timer
	t = time.AfterFunc(d, func() { x.expire(slot, &t, flag) })
	*slot = t
}

func (x *h2Exchange) expire(slot **time.Timer, t **time.Timer, flag *atomic.Bool) {
	x.mu.Lock()
	mine := x.live && *slot == *t
	if mine && slot == &x.idle {
		if quiet := time.Duration(time.Now().UnixNano() - x.lastActive.Load()); quiet < x.idleFor {
			(*t).Reset(x.idleFor - quiet)
			mine = false
		}
	}
	if mine {
		flag.Store(true)
	}
	x.mu.Unlock()
	if mine {
		x.abort()
	}
}

// armIdleFrames starts the idle timer (the backend's TimeOut without
// data either way).
func (x *h2Exchange) armIdleFrames(b interface{ TimeOut() time.Duration }) {
	if t := b.TimeOut(); t > 0 {
		x.lastActive.Store(time.Now().UnixNano())
		x.mu.Lock()
		x.idleFor = t // read by the timer's callback, under x.mu
		x.idleFire.Store(true)
		x.armTimer(&x.idle, t, &x.idleOut)
		x.mu.Unlock()
	}
}

// abort cancels the exchange: the backend stream, if open, is reset.
func (x *h2Exchange) abort() {
	x.mu.Lock()
	x.aborted = true
	s := x.stream
	x.mu.Unlock()
	if s != nil {
		s.Cancel()
	}
}

func (x *h2Exchange) wasAborted() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.aborted
}

// setStream makes s the exchange's stream (the last try's, if any, is
// reset); false if the exchange was aborted meanwhile, s then reset too.
func (x *h2Exchange) setStream(s *h2backend.Stream) bool {
	x.mu.Lock()
	old := x.stream
	x.stream = s
	aborted := x.aborted
	x.mu.Unlock()
	if old != nil {
		old.Cancel()
	}
	if aborted {
		s.Cancel()
	}
	return !aborted
}

// stopFrames ends the exchange: the stream is reset unless complete,
// the body reader and its goroutine stopped, the timers stopped.
func (x *h2Exchange) stopFrames() {
	if w, ok := x.c.nc.(StreamWatcher); ok {
		w.ForgetGone()
	}
	x.mu.Lock()
	x.live = false
	s := x.stream
	x.stream = nil
	x.mu.Unlock()
	if s != nil {
		s.Cancel() // a stream still open either way is reset
	}
	x.detachSink()
	x.body.abort()
	if x.pumpDone != nil {
		<-x.pumpDone
	}
	x.mu.Lock()
	if x.deadArm && !x.deadline.Stop() {
		x.deadline = nil
	}
	if x.idleFire.Load() && !x.idle.Stop() {
		x.idle = nil
	}
	x.idleFire.Store(false)
	x.mu.Unlock()
}
