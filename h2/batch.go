package h2

import (
	"crypto/tls"
	"net"
	"sync"
)

// batchCap bounds the bytes waiting in a batchConn: beyond it the h2
// server's writes wait, so a client that stops reading holds streams
// back through flow control rather than through memory.
const batchCap = 256 << 10

// batchConn coalesces the h2 server's writes on one connection. The
// server flushes after every response it finishes; with many streams in
// flight that is one TLS record and one system call per response. Here a
// flush only appends to a buffer and wakes a writer goroutine, which
// sends everything gathered since its last write in one TLS record, so
// under load the responses of several streams share a system call
// (HAProxy batches the same way, per event-loop pass), while an idle
// connection still writes at once.
type batchConn struct {
	net.Conn
	mu      sync.Mutex
	room    *sync.Cond // signalled when the writer took the buffer
	buf     []byte
	err     error // the first write error; later writes return it
	closing bool
	kick    chan struct{} // cap 1: there is something to write
	done    chan struct{} // closed when the writer goroutine ended
}

func newBatchConn(c net.Conn) *batchConn {
	b := &batchConn{Conn: c, kick: make(chan struct{}, 1), done: make(chan struct{})}
	b.room = sync.NewCond(&b.mu)
	go b.writer()
	return b
}

// Write queues p for the writer goroutine.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	for b.err == nil && !b.closing && len(b.buf) > 0 && len(b.buf)+len(p) > batchCap {
		b.room.Wait()
	}
	if b.err != nil || b.closing {
		err := b.err
		b.mu.Unlock()
		if err == nil {
			err = net.ErrClosed
		}
		return 0, err
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
	var out []byte
	for range b.kick {
		b.mu.Lock()
		out, b.buf = b.buf, out[:0]
		closing := b.closing
		b.mu.Unlock()
		if len(out) > 0 {
			if _, err := b.Conn.Write(out); err != nil {
				b.mu.Lock()
				b.err = err
				b.mu.Unlock()
			}
		}
		b.room.Broadcast()
		if closing {
			return
		}
	}
}

// Close sends what is queued (a GOAWAY, the last frames), then closes.
func (b *batchConn) Close() error {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		<-b.done
		return nil
	}
	b.closing = true
	b.mu.Unlock()
	b.room.Broadcast()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	<-b.done
	return b.Conn.Close()
}

// tlsBatchConn is a batchConn over TLS: the h2 server checks the
// protocol version and cipher and hands the state to requests, so it
// must see it through the wrapper.
type tlsBatchConn struct {
	*batchConn
	cs interface{ ConnectionState() tls.ConnectionState }
}

// ConnectionState implements the h2 server's connectionStater.
func (t tlsBatchConn) ConnectionState() tls.ConnectionState { return t.cs.ConnectionState() }

// batched wraps c, keeping its TLS state visible.
func batched(c net.Conn) (net.Conn, func() error) {
	b := newBatchConn(c)
	if cs, ok := c.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return tlsBatchConn{batchConn: b, cs: cs}, b.Close
	}
	return b, b.Close
}
