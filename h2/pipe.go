package h2

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// pipeCap bounds the bytes buffered in one direction of a bridge: enough
// for a typical response to be handed over in one step, small enough
// that a slow HTTP/2 reader holds back the proxy (and so the backend)
// instead of filling memory.
const pipeCap = 64 << 10

// newPipe returns the two ends of an in-memory, full-duplex connection.
// Unlike net.Pipe, a write does not wait for the reader to take it: the
// proxy hands a whole response over and goes on, and the bridge reads it
// in one step, which saves a goroutine switch per read and write.
func newPipe() (*pipeEnd, *pipeEnd) {
	ab, ba := newPipeBuf(), newPipeBuf()
	return &pipeEnd{rd: ba, wr: ab}, &pipeEnd{rd: ab, wr: ba}
}

// pipeBuf is one direction: bytes written and not yet read. Readers
// and writers wait on separate channels: with one, a reader that finds
// the buffer empty right after draining it could swallow the wake-up
// meant for the writer waiting for space, and both would wait forever.
type pipeBuf struct {
	mu     sync.Mutex
	data   []byte
	closed bool          // no more data will come, or nobody reads
	data1  chan struct{} // cap 1: data arrived (or close, deadline change)
	space1 chan struct{} // cap 1: space freed (or close, deadline change)
}

func newPipeBuf() *pipeBuf {
	return &pipeBuf{data1: make(chan struct{}, 1), space1: make(chan struct{}, 1)}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (b *pipeBuf) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	signal(b.data1)
	signal(b.space1)
}

// wait blocks until the buffer changed or the deadline passed.
func wait(ch <-chan struct{}, dl *deadline) error {
	t := dl.timer()
	if t == nil {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-t:
		return os.ErrDeadlineExceeded
	}
}

// deadline is a settable point in time with a reusable timer, so a
// connection waiting for its next request does not allocate one.
type deadline struct {
	mu sync.Mutex
	at time.Time
	t  *time.Timer
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	d.at = t
	d.mu.Unlock()
}

// timer returns a channel firing at the deadline, or nil when there is
// none. Only the one goroutine reading (or writing) an end waits on it.
func (d *deadline) timer() <-chan time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at.IsZero() {
		return nil
	}
	if d.t == nil {
		d.t = time.NewTimer(time.Until(d.at))
	} else {
		d.t.Reset(time.Until(d.at)) // Go 1.23+: no stale value to drain
	}
	return d.t.C
}

func (d *deadline) passed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.at.IsZero() && !time.Now().Before(d.at)
}

// pipeEnd is one end: it reads rd and writes wr.
type pipeEnd struct {
	rd, wr    *pipeBuf
	rdl, wdl  deadline
	closeOnce sync.Once
}

var pipeAddr = &net.UnixAddr{Name: "h2-bridge", Net: "pipe"}

// Read implements net.Conn.
func (p *pipeEnd) Read(b []byte) (int, error) {
	for {
		p.rd.mu.Lock()
		if len(p.rd.data) > 0 {
			n := copy(b, p.rd.data)
			p.rd.data = p.rd.data[n:]
			if len(p.rd.data) == 0 {
				p.rd.data = p.rd.data[:0:0] // let a drained buffer go
			}
			p.rd.mu.Unlock()
			signal(p.rd.space1) // a writer may wait for space
			return n, nil
		}
		closed := p.rd.closed
		p.rd.mu.Unlock()
		switch {
		case closed:
			return 0, io.EOF
		case p.rdl.passed():
			return 0, os.ErrDeadlineExceeded
		}
		if err := wait(p.rd.data1, &p.rdl); err != nil {
			return 0, err
		}
	}
}

// Write implements net.Conn; it blocks only while pipeCap bytes wait.
func (p *pipeEnd) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		p.wr.mu.Lock()
		if p.wr.closed {
			p.wr.mu.Unlock()
			return n, io.ErrClosedPipe
		}
		if room := pipeCap - len(p.wr.data); room > 0 {
			k := min(room, len(b)-n)
			p.wr.data = append(p.wr.data, b[n:n+k]...)
			n += k
			p.wr.mu.Unlock()
			signal(p.wr.data1)
			continue
		}
		p.wr.mu.Unlock()
		if p.wdl.passed() {
			return n, os.ErrDeadlineExceeded
		}
		if err := wait(p.wr.space1, &p.wdl); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Close implements net.Conn: the peer reads EOF after what is buffered,
// and its writes fail.
func (p *pipeEnd) Close() error {
	p.closeOnce.Do(func() {
		p.wr.close()
		p.rd.close()
	})
	return nil
}

// LocalAddr implements net.Conn.
func (p *pipeEnd) LocalAddr() net.Addr { return pipeAddr }

// RemoteAddr implements net.Conn.
func (p *pipeEnd) RemoteAddr() net.Addr { return pipeAddr }

// SetDeadline implements net.Conn.
func (p *pipeEnd) SetDeadline(t time.Time) error {
	p.rdl.set(t)
	p.wdl.set(t)
	signal(p.rd.data1)
	signal(p.wr.space1)
	return nil
}

// SetReadDeadline implements net.Conn.
func (p *pipeEnd) SetReadDeadline(t time.Time) error {
	p.rdl.set(t)
	signal(p.rd.data1)
	return nil
}

// SetWriteDeadline implements net.Conn.
func (p *pipeEnd) SetWriteDeadline(t time.Time) error {
	p.wdl.set(t)
	signal(p.wr.space1)
	return nil
}
