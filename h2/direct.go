package h2

import (
	"lbd/internal/h2frame"
)

// Direct DATA between a client's stream and the proxy's backend stream
// (the frame-level HTTP/2 backends of package h2backend), without the
// proxy's goroutine in between: with small messages streamed both ways
// (gRPC), waking that goroutine (and the one reading the request body)
// for every message cost more than the messages.
//
//   - Request: the reader passes a DATA payload to the stream's
//     RequestSink when nothing of the stream is waiting for the proxy
//     (sendDirect) and the sink takes it at once; the client's window is
//     then given back as if the proxy had read it. Otherwise the payload
//     is queued for the proxy as before, and the direct path waits until
//     the proxy has read and passed on all of it (draining): order holds.
//     Once it has handled the frames it read, the reader Flushes the
//     sinks it used, so the messages of several streams share a write.
//   - Response: TryWriteData queues DATA for the current stream when the
//     client's windows and the output queue take it at once and the
//     proxy's own response is between two pieces of body; else the caller
//     (the backend connection's reader) buffers it for the proxy.
//
// The request body's end (END_STREAM, on DATA or on trailing HEADERS) is
// never passed directly: it is queued for the proxy (vconn.endLocked),
// which ends the backend stream after all the data. That is the one place
// a request's trailers would be relayed from.

// RequestSink takes a stream's request data straight from the reader.
type RequestSink interface {
	// SendData passes p on and returns what writes it out, or nil
	// having taken nothing. It must not block.
	SendData(p []byte) Flusher
}

// A Flusher writes out what a RequestSink took: the reader calls it once
// it has handled the frames it read, even if the stream has ended since.
// It may block on the backend's connection.
type Flusher interface{ Flush() }

// SinkRequest attaches sink to the current stream's request body, or
// detaches it (nil); it reports false, attaching nothing, when the body
// cannot take the direct path: ended already, or not chunk-encoded for
// the proxy (a Content-Length body is counted by the proxy's reader).
// Once SinkRequest(nil) returns, the reader no longer calls the sink.
func (v *vconn) SinkRequest(sink RequestSink) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if sink != nil && (v.id == 0 || v.endRecv || !v.chunked || v.rerr != nil) {
		return false
	}
	v.sink = sink
	// The proxy may hold body bytes read before: until its next Read,
	// new data queues behind them.
	v.draining = true
	return true
}

// sendDirect passes p, a DATA payload for stream id, to the stream's
// sink if it may overtake nothing and the sink takes it; it returns what
// to flush, or nil when p is to be queued for the proxy.
func (v *vconn) sendDirect(id uint32, p []byte, end bool) Flusher {
	v.mu.Lock()
	sink := v.sink
	if sink == nil || end || len(p) == 0 || v.id != id || v.endRecv || v.draining || v.off != len(v.in) {
		v.mu.Unlock()
		return nil
	}
	f := sink.SendData(p)
	if f == nil {
		v.mu.Unlock()
		return nil
	}
	v.received += int64(len(p))
	cid, stream, conn := v.takeCredit()
	v.mu.Unlock()
	if conn > 0 {
		v.sc.giveCredit(cid, stream, conn)
	}
	return f
}

// noteFlush remembers what to flush once the frames read are handled.
func (sc *serverConn) noteFlush(s Flusher) {
	for _, t := range sc.flushes {
		if t == s {
			return
		}
	}
	sc.flushes = append(sc.flushes, s)
}

// flushSinks writes out the request data passed to sinks.
func (sc *serverConn) flushSinks() {
	for i, s := range sc.flushes {
		s.Flush()
		sc.flushes[i] = nil
	}
	sc.flushes = sc.flushes[:0]
}

// TryWriteData sends p as DATA on the current stream if nothing stands
// in the way: the client's windows and the output queue take all of it
// now, and the proxy's response is past its head and between two pieces
// of body. It reports false, sending nothing, otherwise; it never waits.
func (v *vconn) TryWriteData(p []byte) bool {
	if len(p) == 0 || !v.wmu.TryLock() { // the proxy is writing: it goes first
		return false
	}
	defer v.wmu.Unlock()
	id := v.cur.Load()
	if id == 0 || !v.enc.between(id, len(p)) {
		return false
	}
	sc := v.sc
	n := int64(len(p))
	if !sc.reserveAll(v, n) {
		return false
	}
	q := sc.out
	b, ok := q.tryBegin()
	if !ok {
		sc.giveBack(v, n)
		return false
	}
	if v.cur.Load() != id { // reset meanwhile
		q.end(b)
		sc.giveBack(v, n)
		return false
	}
	maxFrame := int(sc.maxFrame.Load())
	for len(p) > 0 {
		k := min(len(p), maxFrame)
		b = h2frame.AppendData(b, id, p[:k], false)
		p = p[k:]
	}
	q.end(b)
	v.enc.took(n)
	return true
}

// between reports whether n bytes of body may be sent for stream id
// without the encoder: between chunks of a chunked body, or within a
// Content-Length body that they do not complete.
func (e *respEncoder) between(id uint32, n int) bool {
	switch {
	case e.id != id:
		return false
	case e.state == rsChunked:
		return e.chunks.AtChunkStart()
	case e.state == rsLength:
		return e.remaining > int64(n)
	}
	return false
}

// took accounts for n bytes sent by TryWriteData.
func (e *respEncoder) took(n int64) {
	if e.state == rsLength {
		e.remaining -= n
	}
}

// reserveAll takes n bytes of both send windows for v, or nothing.
func (sc *serverConn) reserveAll(v *vconn, n int64) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed || sc.sendWin < n || v.sendWin < n {
		return false
	}
	sc.sendWin -= n
	v.sendWin -= n
	return true
}

// giveBack returns what reserveAll took for DATA that was not sent.
func (sc *serverConn) giveBack(v *vconn, n int64) {
	sc.mu.Lock()
	v.sendWin += n
	sc.mu.Unlock()
	sc.unreserve(int(n))
}

// tryBegin is begin for a caller that must not wait: false when the
// queue is full or closed.
func (q *outQueue) tryBegin() ([]byte, bool) {
	q.mu.Lock()
	if q.err != nil || q.closing || len(q.buf) >= outCap {
		q.mu.Unlock()
		return nil, false
	}
	return q.buf, true
}
