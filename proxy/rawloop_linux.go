//go:build linux

package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"lbd/http1"
	"lbd/internal/sockio"
)

// rawLoop serves a plain TCP client connection from inside one
// RawConn.Read call, so that after a response it can wait for the next
// request without first trying a read that must fail (EAGAIN), which is
// what net.Conn.Read does: one wasted system call per request.
//
// Why inside: RawConn.Read forgets the readiness the poller saw before
// it was called, and the poller is edge-triggered, so waiting is safe
// only when no edge came between the last read and the wait. Within one
// call the runtime keeps every edge; and every read reports (TCP_INQ,
// package sockio) whether it left the socket empty, without even a FIN,
// so later bytes are sure to raise a new edge. The loop waits without
// reading only then, and reads otherwise: a pipelined request, a FIN, or
// a stale wake-up cost what they cost before, never a hang.
//
// Inside the callback the connection's read lock is held, so a request
// is served there only if serving it needs no further read from the
// client (servesInline); any other is handed out to the ordinary path,
// and the loop starts again after it with a read.
type rawLoop struct {
	rc syscall.RawConn
	fn func(fd uintptr) bool // c.rawStep, bound once per connection
	rd sockio.Reader
	// inq is what the last read left in the socket (0: nothing, so
	// wait); 1 when unknown, as at the start of each RawConn.Read.
	inq   int
	first time.Time // when the first bytes of a partial head came (readHead's)
	err   error     // why reading stopped
	next  rawNext
	// inside: a request is being served inside the callback; fill must
	// not read (the read lock is held), and writeClient may use fd.
	inside bool
	fd     uintptr
	// idleWait: the read deadline in force is parkDelay's, so the
	// connection may be parked when it passes (park_linux.go).
	idleWait bool
}

type rawNext uint8

const (
	rawDone    rawNext = iota // the connection is finished
	rawHandOut                // c.req is to be served the ordinary way
)

// initRaw puts plain TCP client connections on the raw loop.
func (c *conn) initRaw(nc net.Conn) {
	rc, ok := sockio.Inq(nc, c.srv.inqListener.Load())
	if !ok {
		return // TLS, HTTP/2 streams, no TCP_INQ: net.Conn as ever
	}
	c.raw.rc = rc
	if c.raw.fn == nil { // bound once per pooled conn: a method value allocates
		c.raw.fn = c.rawStep
	}
}

func (c *conn) rawOn() bool { return c.raw.rc != nil }

// kept is what a recycled conn keeps of its raw loop: the bound callback.
func (l *rawLoop) kept() rawLoop { return rawLoop{fn: l.fn} }

// serveRaw is serve's request loop on the raw loop. It returns true when
// the connection was parked (it is then no longer this goroutine's),
// false when it is finished and to be released.
func (c *conn) serveRaw() (parked bool) {
	l := &c.raw
	for {
		l.inq, l.err, l.next = 1, nil, rawDone
		err := l.rc.Read(l.fn)
		if err == nil {
			err = l.err
		}
		if err != nil && c.parkable(err) {
			if c.park() {
				return true
			}
			continue
		}
		if err != nil {
			c.idle.Store(false)
			c.headError(c.srv.state.Load(), err)
			return false
		}
		if l.next == rawDone {
			return false
		}
		if !c.handle(c.srv.state.Load()) {
			return false
		}
		c.shrink()
	}
}

// waitDeadline sets the read deadline before the loop waits: parkDelay's
// when the connection is between requests and may be parked, else the
// Client timeout.
func (c *conn) waitDeadline(st *Listener) {
	l := &c.raw
	// parkAfter is the longer delay: a Client timeout shorter than it
	// ends an idle connection before it would be parked.
	l.idleWait = c.r == c.w && st.Client > parkAfter && parking.ready()
	if !l.idleWait {
		c.dl.forRead(c.nc, c.now, st.Client)
		return
	}
	c.idleDeadline()
}

// idleDeadline sets parkDelay's read deadline on a connection waiting
// between requests. Lazily, as forRead: the deadline moves only when the
// one in force is not an idle one ending between 3/4 of its delay and
// its delay from now, so a busy connection rarely pays for moving it,
// nor for asking parkDelay (replaced: the Client timeout's, a later one).
func (c *conn) idleDeadline() {
	d, n := &c.dl, c.now.UnixNano()
	if left := d.read - n; left > d.idle || left < d.idle*3/4 {
		d.idle = int64(c.srv.parkDelay())
		d.read = n + d.idle
		c.nc.SetReadDeadline(time.Unix(0, d.read))
	}
}

// parkable: the wait between requests ended at parkDelay's deadline, not
// at the Client timeout.
func (c *conn) parkable(err error) bool {
	return c.raw.idleWait && c.r == c.w && errors.Is(err, os.ErrDeadlineExceeded) &&
		time.Since(c.now) < c.srv.state.Load().Client
}

// park hands the connection's socket to the parker and gives back
// everything else: its buffers, this conn (to connPool) and Go's objects
// for the socket (closed). It reports false, the connection then staying
// with this goroutine, when that could not be done (out of descriptors
// for the copy, or epoll refused it).
func (c *conn) park() bool {
	srv := c.srv
	if fd, err := dupSocket(c.raw.rc); err == nil {
		srv.toParker(c)
		if parking.park(fd, srv, c.now) {
			// The socket lives on as fd. An error closing this
			// descriptor cannot matter: it is not the socket's last.
			c.nc.Close()
			c.recycle()
			return true
		}
		srv.fromParker(c)
		syscall.Close(fd) // a copy never used: an error cannot matter
	}
	// It waits here, without parkDelay's (expired) deadline: the next
	// wait sets the Client timeout's or parkDelay's again. Clearing it
	// cannot fail on an open socket, and an error would show there.
	c.nc.SetReadDeadline(time.Time{})
	c.dl.read, c.raw.idleWait = 0, false
	return false
}

// rawStep is the RawConn.Read callback: it serves every complete request
// in the buffer, reads when the socket may hold more, and returns false
// (wait for readability) when the last read left it empty. It returns
// true when the connection ends or a request is handed out.
func (c *conn) rawStep(fd uintptr) bool {
	l := &c.raw
	l.fd = fd
	for {
		st := c.srv.state.Load()
		if c.r == c.w {
			c.idle.Store(true)
			if c.srv.closing.Load() && !c.srv.handover.Load() {
				l.next = rawDone
				return true
			}
		} else {
			switch err := c.parseHead(st, &l.first); {
			case err == nil:
				l.first = time.Time{}
				c.idle.Store(false)
				if !c.servesInline() {
					l.next = rawHandOut
					return true
				}
				// A reload may have happened while the request came.
				l.inside = true
				ok := c.handle(c.srv.state.Load())
				l.inside = false
				if !ok {
					l.next = rawDone
					return true
				}
				c.shrink()
				continue
			case err != http1.ErrNeedMore: // errHeadTimeout among them
				l.err = err
				return true
			}
		}
		if l.inq == 0 {
			// Nothing was left behind: what comes next raises an edge.
			l.inq = 1
			c.waitDeadline(st)
			return false
		}
		if !c.rawRead(fd, st) {
			return l.err != nil
		}
	}
}

// rawRead reads once into the buffer, as fill does. It reports false
// when nothing came: l.err says why, or it is nil for EAGAIN (then wait).
func (c *conn) rawRead(fd uintptr, st *Listener) bool {
	l := &c.raw
	c.prepareRead()
	if c.w == len(*c.buf) {
		l.err = io.ErrNoProgress // as fill: the head limit ends it first
		return false
	}
	n, inq, err := l.rd.Read(fd, (*c.buf)[c.w:])
	if err == syscall.EAGAIN {
		c.waitDeadline(st)
		return false
	}
	c.now = time.Now()
	switch {
	case err != nil:
		l.err = err
		return false
	case n == 0:
		l.err = io.EOF
		return false
	}
	c.w += n
	l.inq = inq
	return true
}

// writeClient writes p to the client. Inside the read callback the
// socket is known and held open, so it first sends without the runtime's
// write path (sockio.Send: no VFS write, no entersyscall); what does not
// fit in the socket buffer is written by net.Conn, which waits for room
// under the write deadline.
func (c *conn) writeClient(p []byte) error {
	if c.raw.inside && len(p) > 0 {
		k, err := sockio.Send(c.raw.fd, p)
		if err != nil && err != syscall.EAGAIN {
			return os.NewSyscallError("sendto", err)
		}
		if p = p[k:]; len(p) == 0 {
			return nil
		}
	}
	_, err := c.nc.Write(p)
	return err
}

// servesInline reports whether the request just parsed can be served
// without reading from the client again: its body (if any) is in the
// buffer, and it cannot become a tunnel.
func (c *conn) servesInline() bool {
	req := &c.req
	if req.Upgrade || req.Chunked || req.MethodID == http1.MethodCONNECT {
		return false
	}
	return req.ContentLength <= 0 || int64(c.w-c.r-req.HeadLen) >= req.ContentLength
}

// interrupt ends the connection from another goroutine (Server.Close,
// closeIdle). On the raw loop it may be serving a request inside the
// read callback, holding the read lock, and Close would wait until that
// request is done: shutdown(2) instead ends it for the client at once,
// wakes the loop, and the connection's goroutine closes it.
func (c *conn) interrupt() {
	if !c.rawOn() {
		c.nc.Close()
		return
	}
	// Errors cannot matter: the socket may be shut down already.
	c.raw.rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
}
