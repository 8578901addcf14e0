package h2

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"lbd/internal/h2frame"
	"lbd/internal/sockio"
)

// outCap bounds the bytes waiting to be written on one connection: beyond
// it the streams' writes wait, so a client that stops reading holds the
// proxy back (and, through it, the backends) instead of filling memory.
const outCap = 256 << 10

// keepCap is the largest write buffer an idle connection keeps.
const keepCap = 64 << 10

// controlCap is the room kept beyond outCap for the connection's own
// frames (acknowledgements, resets, window updates, GOAWAY), so the
// reading goroutine is not held up by responses the client has not read
// yet; a client that floods PINGs without reading still meets a bound.
const controlCap = 64 << 10

// closeGrace bounds the last flush when a connection closes.
const closeGrace = 2 * time.Second

// outQueue gathers the frames of every stream of one connection and has
// one goroutine write them. Under load the responses of several streams
// share a TLS record and a system call (HAProxy batches the same way,
// once per event-loop pass); an idle connection still writes at once.
type outQueue struct {
	nc      net.Conn
	w       io.Writer     // nc, or its raw writes (sockio.Raw) on plain TCP
	timeout time.Duration // write timeout; 0 = none

	mu      sync.Mutex
	room    sync.Cond // signalled when the writer took the buffer
	buf     []byte
	spare   []byte
	err     error // the first write error; later appends return it
	closing bool
	// tableUpdate: the client changed SETTINGS_HEADER_TABLE_SIZE; the
	// next header block starts with a table size update.
	tableUpdate bool
	// running: the writer goroutine runs; asleep: the connection is
	// parked, and the writer ends once the queue is empty (end and
	// close start another).
	running, asleep bool
	// writing: the writer has taken the buffer and is writing it.
	writing bool
	kick    chan struct{} // cap 1: there is something to write
	done    chan struct{} // closed when the writer ended for good (close)
}

func newOutQueue(nc net.Conn, w io.Writer, timeout time.Duration) *outQueue {
	q := &outQueue{nc: nc, w: w, timeout: timeout, kick: make(chan struct{}, 1), done: make(chan struct{})}
	q.room.L = &q.mu
	q.running = true
	go q.writer()
	return q
}

// sleep lets the writer end once the queue is empty, giving its buffers
// back, while the connection is parked; anything queued after starts it
// again (and wakes the queue).
func (q *outQueue) sleep() {
	q.mu.Lock()
	q.asleep = true
	q.mu.Unlock()
	q.wake()
}

// awake: the connection is back; its writer keeps running again.
func (q *outQueue) awake() {
	q.mu.Lock()
	q.asleep = false
	q.mu.Unlock()
}

// startLocked starts the writer if it has ended (parked); q.mu held.
func (q *outQueue) startLocked() {
	q.asleep = false
	if !q.running {
		q.running = true
		go q.writer()
	}
}

func (q *outQueue) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// begin locks the queue for appending frames, waiting while it is full;
// control frames have controlCap more room. The caller appends to the
// returned slice and passes it to end.
func (q *outQueue) begin(control bool) ([]byte, error) {
	limit := outCap
	if control {
		limit += controlCap
	}
	q.mu.Lock()
	for q.err == nil && !q.closing && len(q.buf) >= limit {
		q.room.Wait()
	}
	if q.err != nil || q.closing {
		err := q.err
		q.mu.Unlock()
		if err == nil {
			err = net.ErrClosed
		}
		return nil, err
	}
	return q.buf, nil
}

// end stores what the caller appended, unlocks and wakes the writer.
func (q *outQueue) end(b []byte) {
	q.buf = b
	if !q.running {
		q.startLocked()
	}
	q.mu.Unlock()
	q.wake()
}

func (q *outQueue) writer() {
	var deadline int64 // lazily moved, as the proxy's client deadlines
	for range q.kick {
		// Let the streams that are ready to run add their frames first:
		// one write then carries all of them.
		runtime.Gosched()
		q.mu.Lock()
		out := q.buf
		q.buf, q.spare = q.spare[:0], nil
		closing := q.closing
		q.writing = len(out) > 0
		q.mu.Unlock()
		var err error
		if len(out) > 0 {
			if q.timeout > 0 && !closing { // close set its own, shorter one
				if now := time.Now().UnixNano(); deadline-now < int64(q.timeout)*3/4 {
					deadline = now + int64(q.timeout)
					q.nc.SetWriteDeadline(time.Unix(0, deadline))
				}
			}
			_, err = q.w.Write(out)
		}
		q.mu.Lock()
		q.writing = false
		if err != nil && q.err == nil {
			q.err = err
		}
		if cap(out) <= keepCap {
			q.spare = out[:0]
		}
		q.mu.Unlock()
		q.room.Broadcast()
		if err != nil {
			q.nc.Close() // the reader stops too
		}
		if closing {
			close(q.done)
			return
		}
		if q.ended() {
			return
		}
	}
}

// drained reports whether everything queued has been written, without
// error: only then may the connection park, for a write that fails or
// times out closes the socket, which a parked connection would never
// learn (closing a descriptor takes it out of epoll with no event).
func (q *outQueue) drained() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf) == 0 && !q.writing && q.err == nil
}

// ended ends the writer of a parked connection whose queue is empty,
// with its buffers.
func (q *outQueue) ended() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.asleep || len(q.buf) > 0 || q.closing {
		return false
	}
	q.running, q.buf, q.spare = false, nil, nil
	return true
}

// close writes what is queued (a GOAWAY, the last frames), stops the
// writer and closes the connection.
func (q *outQueue) close() {
	q.mu.Lock()
	if !q.closing {
		q.closing = true
		// A client that stopped reading must not hold the close up.
		q.nc.SetWriteDeadline(time.Now().Add(closeGrace))
		q.startLocked()
		q.wake()
	}
	q.mu.Unlock()
	q.room.Broadcast()
	<-q.done
	q.nc.Close()
}

// headers appends a header block whose first byte is the spare one for a
// table size update; called between begin and end.
func (q *outQueue) headers(b []byte, id uint32, block []byte, end bool, maxFrame int) []byte {
	if q.tableUpdate {
		q.tableUpdate = false
		return h2frame.AppendHeaders(b, id, block, end, maxFrame)
	}
	return h2frame.AppendHeaders(b, id, block[1:], end, maxFrame)
}

// socketIO returns what the connection's reader reads and its output
// queue writes: c itself, or on plain TCP its raw system calls
// (sockio.Raw), after the bytes the h2c sniffing read ahead.
func socketIO(c net.Conn) (io.Reader, io.Writer) {
	raw := sockio.NewRaw(c)
	if raw == nil {
		return c, c
	}
	if p, ok := c.(interface{ TakePrefix() []byte }); ok {
		if pre := p.TakePrefix(); len(pre) > 0 {
			return io.MultiReader(bytes.NewReader(pre), raw), raw
		}
	}
	return raw, raw
}
