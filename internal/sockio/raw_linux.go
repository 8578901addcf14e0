//go:build linux

package sockio

import (
	"io"
	"net"
	"syscall"
)

// Raw reads and writes a plain TCP connection with RawSyscalls (Reader,
// Send) for a goroutine that streams frames through it: an HTTP/2
// connection's reader and its writer. net.Conn's read(2) and write(2)
// go through entersyscall, which wakes Go's sysmon from its deep sleep
// whenever the process had been idle, and lets sysmon hand the P to
// another thread when a loopback write (which does the receiver's work
// too) runs long: with small messages streamed both ways that thread
// traffic cost as much as the proxy's own work (bench/RESULTS.md §31).
//
// One goroutine reads and one writes at a time, as net.Conn allows; the
// RawConn's Read and Write hold the descriptor, so a concurrent Close
// never leaves them a reused one. TCP_INQ is not needed: a read that
// finds nothing waits for readability as net.Conn does.
type Raw struct {
	rc syscall.RawConn
	nc net.Conn

	// Read's state, for the callback bound once in readFn.
	rd     Reader
	rp     []byte
	rn     int
	rerr   error
	readFn func(fd uintptr) bool

	// Write's.
	wp      []byte
	wn      int
	werr    error
	writeFn func(fd uintptr) bool
}

// PlainConn is implemented by wrappers of a connection that add nothing
// to its bytes on the way out (lbd's h2c sniffing, its backend accounting):
// it returns the wrapped connection.
type PlainConn interface{ PlainConn() net.Conn }

// NewRaw returns a Raw for nc when it is a plain TCP connection, possibly
// behind PlainConn wrappers, or nil: TLS and anything else keep net.Conn.
func NewRaw(nc net.Conn) *Raw {
	inner := nc
	for {
		u, ok := inner.(PlainConn)
		if !ok {
			break
		}
		inner = u.PlainConn()
	}
	tc, ok := inner.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &Raw{rc: rc, nc: inner}
	r.readFn, r.writeFn = r.readStep, r.writeStep
	return r
}

// Read reads into p like net.Conn.Read (deadlines included).
func (r *Raw) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rp, r.rn, r.rerr = p, 0, nil
	err := r.rc.Read(r.readFn)
	r.rp = nil
	switch {
	case err != nil:
		return 0, err
	case r.rerr != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: r.rerr} // as Write's and net.Conn's
	case r.rn == 0:
		return 0, io.EOF
	}
	return r.rn, nil
}

func (r *Raw) readStep(fd uintptr) bool {
	n, _, err := r.rd.Read(fd, r.rp)
	if err == syscall.EAGAIN {
		return false // wait for readability
	}
	r.rn, r.rerr = n, err
	return true
}

// Write writes all of p like net.Conn.Write: what the socket takes at
// once with Send, the rest (a full socket buffer) with net.Conn's Write,
// which waits.
func (r *Raw) Write(p []byte) (int, error) {
	n, err := r.TrySend(p)
	if err != nil || n == len(p) {
		return n, err
	}
	m, err := r.nc.Write(p[n:])
	return n + m, err
}

// TrySend writes what the socket takes of p now, without waiting: n may
// be short of len(p) (0 when the socket buffer is full), with a nil
// error. Like Write, one goroutine at a time.
func (r *Raw) TrySend(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.wp, r.wn, r.werr = p, 0, nil
	err := r.rc.Write(r.writeFn)
	r.wp = nil
	if err == nil && r.werr != nil && r.werr != syscall.EAGAIN {
		err = &net.OpError{Op: "write", Net: "tcp", Err: r.werr}
	}
	return r.wn, err
}

func (r *Raw) writeStep(fd uintptr) bool {
	r.wn, r.werr = Send(fd, r.wp)
	return true // never wait here: net.Conn's Write waits for the rest
}
