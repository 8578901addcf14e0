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
	ours, p := accept(t, ln)
	return ours, p.(*net.TCPConn)
}

// accept dials ln and returns both ends, ours the accepted one.
func accept(t testing.TB, ln net.Listener) (ours *net.TCPConn, peer net.Conn) {
	t.Helper()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := ln.Accept()
	if err != nil {
		peer.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close(); nc.Close() })
	return nc.(*net.TCPConn), peer
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
