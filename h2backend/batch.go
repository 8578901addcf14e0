package h2backend

import (
	"net"
	"sync"
	"time"
)

// batchCap bounds the bytes a batchConn holds for its writer; beyond it
// writers wait, so a backend that stops reading holds the streams back
// instead of filling memory.
const batchCap = 256 << 10

// batchConn gathers what the HTTP/2 client writes (it flushes every
// frame: a request's HEADERS, then its DATA) and has one goroutine
// write it, so the frames written while that goroutine waits to run go
// out in one system call, as lbd's front end does with its responses
// (h2/out.go). An idle connection still writes at once.
type batchConn struct {
	net.Conn

	mu     sync.Mutex
	room   sync.Cond // signalled when the writer took the buffer
	buf    []byte
	spare  []byte
	err    error // the first write error: later writes return it
	closed bool
	kick   chan struct{} // cap 1: there is something to write
	done   chan struct{} // closed when the writer goroutine ended
}

// closeGrace bounds the last write when a connection closes.
const closeGrace = time.Second

func newBatchConn(nc net.Conn) *batchConn {
	b := &batchConn{Conn: nc, kick: make(chan struct{}, 1), done: make(chan struct{})}
	b.room.L = &b.mu
	go b.writer()
	return b
}

// Write queues p for the writer goroutine.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	for b.err == nil && !b.closed && len(b.buf) >= batchCap {
		b.room.Wait()
	}
	switch {
	case b.err != nil:
		err := b.err
		b.mu.Unlock()
		return 0, err
	case b.closed:
		b.mu.Unlock()
		return 0, net.ErrClosed
	}
	b.buf = append(b.buf, p...)
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (b *batchConn) writer() {
	defer close(b.done)
	for range b.kick {
		b.mu.Lock()
		out := b.buf
		b.buf, b.spare = b.spare[:0], nil
		b.room.Broadcast()
		closed := b.closed
		b.mu.Unlock()
		if len(out) > 0 {
			if _, err := b.Conn.Write(out); err != nil {
				b.mu.Lock()
				b.err = err
				b.room.Broadcast()
				b.mu.Unlock()
				b.Conn.Close() // the reader sees it and fails the streams
				return
			}
		}
		b.mu.Lock()
		if b.spare == nil && cap(out) <= batchCap {
			b.spare = out[:0]
		}
		b.mu.Unlock()
		if closed {
			return
		}
	}
}

// Close writes what is queued (a GOAWAY, say), within closeGrace, and
// closes the connection.
func (b *batchConn) Close() error {
	b.mu.Lock()
	already := b.closed
	b.closed = true
	b.room.Broadcast()
	b.mu.Unlock()
	if !already {
		_ = b.Conn.SetWriteDeadline(time.Now().Add(closeGrace)) // its error is the connection's own, which Close reports below
		select {
		case b.kick <- struct{}{}:
		default:
		}
		<-b.done
	}
	return b.Conn.Close()
}
