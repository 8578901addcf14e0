//go:build linux

package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"lbd/internal/idlewait"
)

// TLS client connections between requests are parked whole: the
// connection keeps its *tls.Conn (keys, sequence numbers and what
// crypto/tls buffers cannot leave Go), but gives back its goroutine (and
// stack), its conn structure, read buffer, header arrays and request
// language state, as a plain connection does; the parker's epoll set
// watches the socket's own descriptor (park_linux.go, parkHeld). An idle
// HTTP/1.1-over-TLS connection thus costs what crypto/tls keeps, some
// 7 KiB, instead of some 40 (bench/RESULTS.md §39).
//
// It is parked only after a read that found nothing: tls.Conn then holds
// no decrypted bytes, and at most a partial record, whose rest must come
// through the socket, so readability is the right thing to wait for.

// parksHeld reports whether c, waiting for a request, is one that may be
// parked whole: a TLS connection, with a Client timeout longer than the
// delay before parking (a shorter one ends it first).
func (c *conn) parksHeld(st *Listener) bool {
	if st.Client <= parkAfter || !parking.ready() {
		return false
	}
	_, ok := c.nc.(interface{ NetConn() net.Conn })
	return ok
}

// waitHeld reads the first bytes of the next request under parkDelay's
// deadline and parks the connection when none came by then (parked:
// it is no longer this goroutine's, nor is c). With bytes, or if it
// could not be parked, the caller goes on reading the request as ever;
// err is a read's failure, for the caller to end the connection with.
func (c *conn) waitHeld(st *Listener) (parked bool, err error) {
	c.prepareRead()
	if c.heldSince.IsZero() {
		c.idleDeadline()
	} else {
		c.resumedDeadline(st)
	}
	n, err := c.nc.Read((*c.buf)[c.w:])
	if n > 0 {
		c.now, c.heldSince = time.Now(), time.Time{}
		c.w += n
		return false, nil // an error comes again with the next read
	}
	if !c.heldSince.IsZero() {
		// Woken by bytes that made no plaintext (part of a record): the
		// wait goes on from where it began, not from the wake-up, or a
		// client trickling a record would never meet the Client timeout.
		c.now, c.heldSince = c.heldSince, time.Time{}
	}
	switch {
	case err == nil:
		return false, io.ErrNoProgress
	case !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(c.now) >= st.Client:
		return false, err
	}
	if c.parkHeld() {
		return true, nil
	}
	c.dl.read = 0 // readHead sets the Client timeout's again
	return false, nil
}

// resumedDeadline is idleDeadline for a connection resumed from the
// parker: parkDelay from now, but no later than the Client timeout
// counted from when its wait began.
func (c *conn) resumedDeadline(st *Listener) {
	end := time.Now().Add(c.srv.parkDelay())
	if limit := c.heldSince.Add(st.Client); limit.Before(end) {
		end = limit
	}
	c.dl.read = end.UnixNano()
	c.nc.SetReadDeadline(end)
}

// parkHeld hands the TLS connection to the parker and gives back
// everything else (recycle), as conn.park does for a bare socket.
func (c *conn) parkHeld() bool {
	rc := idlewait.TLSSocket(c.nc)
	if rc == nil {
		return false
	}
	srv := c.srv
	// Out of srv.conns first: Close and closeIdle then leave it to the
	// parker, and never close nc while it is being registered.
	srv.toParker(c)
	if parking.parkHeld(rc, c.nc, srv, c.now) {
		c.recycle()
		return true
	}
	srv.fromParker(c)
	return false
}

// resumeHeld serves a connection parked whole again, on a pooled conn,
// from its first read.
func resumeHeld(fd int, h heldConn, srv *Server) {
	nc := h.nc
	// It is in the set: removing it cannot fail, and the descriptor
	// must leave it before nc can close it (its number is reused).
	_ = syscall.EpollCtl(parking.epfd, syscall.EPOLL_CTL_DEL, fd, nil) // in the set: cannot fail (above)
	if srv.refusing() {
		nc.Close() // the server is closing: no request is taken
		srv.parkedGone()
		return
	}
	c := newConn(srv, nc)
	c.heldSince = h.since
	srv.fromParker(c)
	c.serve()
}
