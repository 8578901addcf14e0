package sockio

import (
	"context"
	"net"
	"testing"
)

// pair returns the two ends of a loopback TCP connection.
func pair(t testing.TB) (ours, peer *net.TCPConn) {
	return pairWith(t, net.ListenConfig{})
}

// pairWith is pair with the listening socket made by lc: ours is the
// accepted end.
func pairWith(t testing.TB, lc net.ListenConfig) (ours, peer *net.TCPConn) {
	t.Helper()
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return s.(*net.TCPConn), c.(*net.TCPConn)
}

// control runs f on the socket's descriptor.
func control(t *testing.T, c *net.TCPConn, f func(fd uintptr)) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(f); err != nil {
		t.Fatal(err)
	}
}
