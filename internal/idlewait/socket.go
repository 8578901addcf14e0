package idlewait

import (
	"net"
	"syscall"
)

// TLSSocket returns the socket under a TLS connection (one that has a
// NetConn, as *tls.Conn does), which is what its owner parks, or nil
// for any other connection.
func TLSSocket(c net.Conn) syscall.RawConn {
	inner, ok := c.(interface{ NetConn() net.Conn })
	if !ok {
		return nil
	}
	s, ok := inner.NetConn().(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := s.SyscallConn()
	if err != nil {
		return nil // a closed socket: nothing to park
	}
	return rc
}
