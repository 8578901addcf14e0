package h2backend

import (
	"lbd/internal/h2frame"
)

// Direct hand-off of DATA between the two connections of a relayed
// stream, without the proxy's goroutine in between. Under a stream of
// small messages (gRPC streaming) the goroutine hand-offs, not the bytes,
// were the cost: each message woke the proxy's goroutine (response) or
// the request body's goroutine (request), and each of those woke a
// writer. Here the connection readers pass a frame's payload straight to
// the other side's write buffer when nothing stands in the way:
//
//   - response: the backend connection's reader offers each DATA payload
//     to the stream's ResponseRelay (the client's stream). It is taken
//     only if the client's windows and the client connection's output
//     queue have room at once; otherwise it is buffered as before (at
//     most the stream's window) and the proxy's goroutine relays it,
//     waiting for the client. Once data is buffered, later data is too,
//     until the proxy has caught up (draining), so order is kept.
//   - request: the client connection's reader offers DATA to
//     TryWriteData, which appends it to this connection's write buffer
//     if the backend's windows allow it all; the reader writes the buffer
//     out (Flush) once it has handled the frames it has read. Refused
//     data takes the request body's goroutine, as before (package h2).
//
// Ends of stream, trailers, resets and errors never take these paths:
// they stay with the proxy's goroutine, which sees them in order after
// the data.

// ResponseRelay takes response data for the client without blocking.
type ResponseRelay interface {
	// RelayData sends p to the client at once and reports true, or
	// reports false having sent nothing. It must not block.
	RelayData(p []byte) bool
}

// SetRelay attaches r to the stream (nil detaches it). Once SetRelay(nil)
// returns, the reader no longer calls the relay it had.
func (s *Stream) SetRelay(r ResponseRelay) {
	s.mu.Lock()
	s.relay = r
	s.mu.Unlock()
}

// relayNow offers p to the relay; called by the reader with s.mu held.
// Only when nothing is buffered nor held by the proxy may data overtake
// the proxy's goroutine.
func (s *Stream) relayNow(p []byte) bool {
	return s.relay != nil && len(p) > 0 && s.off == len(s.body) && !s.draining && s.relay.RelayData(p)
}

// takeCredit returns the stream window to give back to the backend, in
// steps of creditStep, while it still sends; called with s.mu held.
func (s *Stream) takeCredit() int64 {
	if s.ended || s.taken < creditStep {
		return 0
	}
	credit := s.taken
	s.taken = 0
	s.recvWin += credit
	return credit
}

// TryWriteData appends p as DATA frames (without END_STREAM) to the
// connection's write buffer if the backend's windows take all of it now
// and the buffer has room, and reports whether it did; it never blocks.
// Flush writes the buffer. The caller must not mix it with a WriteData in
// progress (package h2 sends data here only while the proxy holds none).
func (s *Stream) TryWriteData(p []byte) bool {
	c := s.c
	n := int64(len(p))
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == 0 || c.streams[s.id] != s || s.sendWin < n || c.sendWin < n {
		return false
	}
	w := c.begin()
	if len(w) >= writeCap || c.werr != nil {
		c.commit(w)
		return false
	}
	s.sendWin -= n
	c.sendWin -= n
	for len(p) > 0 {
		k := min(len(p), c.peerFrame)
		w = h2frame.AppendData(w, s.id, p[:k], false)
		p = p[k:]
	}
	c.commit(w)
	return true
}

// Flush writes what TryWriteData appended (with any other stream's
// frames) without making the caller wait: the client connection's reader
// calls it, and a backend that does not read its socket must not hold up
// the client's other streams. What the socket does not take at once is
// written by a goroutine of its own; a write in progress elsewhere takes
// it all. A write error closes the connection, whose reader then fails
// the streams, so it is not returned here.
func (s *Stream) Flush() { s.c.flushSoon() }

// flushSoon is Flush's: one non-blocking send on plain TCP, else (TLS,
// or a full socket) flush in another goroutine.
func (c *conn) flushSoon() {
	c.wmu.Lock()
	if len(c.wbuf) == 0 || c.flushing || c.werr != nil {
		c.wmu.Unlock()
		return
	}
	if c.raw == nil {
		c.wmu.Unlock()
		go c.flush() // TLS: the caller may not wait on the backend
		return
	}
	c.flushing = true // other writers leave their frames to this one
	out := c.wbuf
	c.wbuf, c.wspare = c.wspare[:0], nil
	c.wmu.Unlock()
	n, err := c.raw.TrySend(out)
	c.wmu.Lock()
	switch {
	case err != nil:
		c.werr = err
		c.wbuf = c.wbuf[:0]
	case n < len(out): // the socket is full: the rest goes first, later
		c.wbuf = append(append(make([]byte, 0, len(out)-n+len(c.wbuf)), out[n:]...), c.wbuf...)
	case cap(out) <= writeCap:
		c.wspare = out[:0]
	}
	c.flushing = false
	more := err == nil && len(c.wbuf) > 0
	c.wroom.Broadcast()
	c.wmu.Unlock()
	if err != nil {
		c.nc.Close() // the reader stops and fails the streams
	}
	if more {
		go c.flush()
	}
}
