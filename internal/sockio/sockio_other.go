//go:build !linux

// Package sockio reads a non-blocking TCP socket and learns whether
// anything is left in it; only Linux has TCP_INQ (see sockio_linux.go),
// so here nothing is supported and callers keep to net.Conn.
package sockio

import (
	"errors"
	"net"
	"syscall"
)

// Supported reports whether this platform has TCP_INQ.
const Supported = false

// InheritsInq always reports false here.
func InheritsInq(net.Listener) bool { return false }

// Inq always reports false here.
func Inq(net.Conn, bool) (syscall.RawConn, bool) { return nil, false }

// EnableInq always fails here.
func EnableInq(uintptr) error { return errors.ErrUnsupported }

// Reader is unused here.
type Reader struct{}

// Read always fails here.
func (r *Reader) Read(uintptr, []byte) (n, inq int, err error) {
	return 0, 1, errors.ErrUnsupported
}

// Send always fails here.
func Send(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }

// Peek looks at what is waiting in fd without consuming it or blocking:
// EAGAIN when nothing is, otherwise the bytes copied into p (0 at the end
// of the stream).
func Peek(fd uintptr, p []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), p, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}

// Raw is unused here.
type Raw struct{ net.Conn }

// PlainConn is implemented by wrappers that add nothing to the bytes.
type PlainConn interface{ PlainConn() net.Conn }

// TrySend is never called here (NewRaw returns nil).
func (r *Raw) TrySend(p []byte) (int, error) { return 0, errors.ErrUnsupported }

// NewRaw always returns nil here: callers keep to net.Conn.
func NewRaw(net.Conn) *Raw { return nil }
