//go:build linux

package backend

import (
	"io"
	"net"
	"syscall"
	"time"

	"lbd/internal/sockio"
)

// writeReader sends a request on a plain TCP connection and waits for
// the socket to become readable before the first read(2), inside one
// RawConn.Read. net.Conn would write, then read at once and fail with
// EAGAIN (the backend cannot have answered yet), then wait: one wasted
// system call per request.
//
// Waiting without reading first is safe only when no readiness edge was
// lost: RawConn.Read forgets the readiness the poller saw before it was
// called, and edge-triggered epoll reports nothing new for bytes (or a
// FIN) already sitting in the socket. The write happens inside the call,
// so the answer's edge always comes after it. What a pooled conn got
// while it sat idle is the exception: a backend that closes it makes our
// write draw a reset, which wakes us; but one that only half-closes and
// keeps reading (Apache's lingering close) sends nothing more, and a FIN
// whose edge the poller took before this call is never seen by waiting.
// So the wait is bounded (staleWait), and then one plain read finds what
// it would have found at once without the wait. A response that ended
// in the bytes read here leaves the conn out of the pool if the kernel
// said more followed (TCP_INQ: Unread), and Get peeks at long-idle ones.
type writeReader struct {
	rc  syscall.RawConn
	raw net.Conn              // the dialled socket: used while Conn is still it (not TLS)
	fn  func(fd uintptr) bool // w.step, bound once at dial: no per-call closure
	rd  sockio.Reader

	out, in []byte
	sent    bool // out is written; what comes now is the answer
	once    bool // read once without waiting (after the bounded wait)
	got     bool // a read returned (bytes, EOF or an error)
	n, inq  int
	err     error
}

func (w *writeReader) init(nc net.Conn) {
	rc, ok := sockio.Inq(nc, false) // dialled: nothing to inherit
	if !ok {
		return // TLS, or no TCP_INQ (Linux < 4.18): the ordinary write and read
	}
	w.rc, w.raw, w.fn = rc, nc, w.step
}

func (w *writeReader) usable(c *Conn) bool { return w.fn != nil && c.Conn == w.raw }

// step is the RawConn.Read callback: first the write, then (once the
// runtime saw the socket readable) the read.
func (w *writeReader) step(fd uintptr) bool {
	if !w.sent {
		for len(w.out) > 0 {
			k, err := sockio.Send(fd, w.out)
			switch {
			case err == syscall.EAGAIN:
				return true // the socket buffer is full: the rest the ordinary way
			case err != nil:
				w.err = err
				return true
			}
			w.out = w.out[k:]
		}
		w.sent = true
		return false // the answer cannot be there yet: wait for it
	}
	k, inq, err := w.rd.Read(fd, w.in)
	if err == syscall.EAGAIN {
		return w.once // a stale wake-up: wait again (or, once, give up)
	}
	w.got, w.n, w.inq, w.err = true, k, inq, err
	return true
}

// writeRead is WriteRead on a plain TCP socket.
func (c *Conn) writeRead(p, buf []byte, start time.Time, timeout time.Duration) (int, bool, error) {
	w := &c.wr
	w.out, w.in, w.sent, w.once, w.got, w.n, w.inq, w.err = p, buf, false, false, false, 0, 1, nil
	n, sent, err := c.waitRead(start, timeout)
	w.out, w.in = nil, nil // the buffers are the caller's
	return n, sent, err
}

func (c *Conn) waitRead(start time.Time, timeout time.Duration) (int, bool, error) {
	w := &c.wr
	c.unread = false
	// The bounded wait runs from now; start may be long past (a retry
	// after a failed connect), and the real deadline runs from it.
	c.armWait(time.Now(), start, timeout)
	rerr := w.rc.Read(w.fn)
	if !w.sent {
		switch {
		case w.err != nil:
			return 0, false, w.err
		case rerr != nil:
			return 0, false, rerr
		}
		c.armRead(start, timeout)
		return c.writeThenRead(w.out, w.in) // EAGAIN: the rest the ordinary way
	}
	if rerr != nil {
		if !isDeadline(rerr) {
			return 0, true, rerr
		}
		// The bounded wait is over. One plain read finds a FIN or bytes
		// that came while the conn was pooled; else the backend is just
		// slow, and the ordinary read waits out the real deadline (if
		// that one has not passed already: then RawConn.Read says so).
		c.armRead(start, timeout)
		w.once = true
		if err := w.rc.Read(w.fn); err != nil {
			return 0, true, err
		}
		if !w.got {
			n, err := c.Conn.Read(w.in)
			return n, true, err
		}
	}
	c.unread = w.inq > 0
	if w.err != nil {
		return 0, true, w.err
	}
	if w.n == 0 {
		return 0, true, io.EOF
	}
	return w.n, true, nil
}
