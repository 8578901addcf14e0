package proxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-ch
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// tunnelFixture is client <-> [c | tunnel | b] <-> server over loopback
// TCP, the tunnel running in the background.
type tunnelFixture struct {
	client, server net.Conn
	done           chan struct{}
}

func newTunnelFixture(t *testing.T, idle time.Duration) *tunnelFixture {
	t.Helper()
	client, c := tcpPair(t)
	b, server := tcpPair(t)
	f := &tunnelFixture{client: client, server: server, done: make(chan struct{})}
	go func() {
		tunnel(c, b, idle)
		c.Close()
		b.Close()
		close(f.done)
	}()
	return f
}

func (f *tunnelFixture) ended(d time.Duration) bool {
	select {
	case <-f.done:
		return true
	case <-time.After(d):
		return false
	}
}

func TestTunnelHalfCloseEachWay(t *testing.T) {
	cases := []struct {
		name string
		// first closes its write side once its message is sent; the
		// other side must still be able to answer.
		clientFirst bool
	}{
		{name: "client closes first", clientFirst: true},
		{name: "server closes first", clientFirst: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newTunnelFixture(t, 5*time.Second)
			first, second := f.server, f.client
			if tc.clientFirst {
				first, second = f.client, f.server
			}
			msg := bytes.Repeat([]byte("ping "), 50000)
			go func() {
				first.Write(msg)
				first.(*net.TCPConn).CloseWrite()
			}()
			got, err := io.ReadAll(second) // ends at the relayed FIN
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("relayed %d bytes (%v), want %d then EOF", len(got), err, len(msg))
			}
			if f.ended(100 * time.Millisecond) {
				t.Fatal("tunnel ended with one direction still open")
			}
			second.Write([]byte("pong"))
			second.(*net.TCPConn).CloseWrite()
			back, err := io.ReadAll(first)
			if err != nil || string(back) != "pong" {
				t.Fatalf("answer after half-close: %q, %v", back, err)
			}
			if !f.ended(5 * time.Second) {
				t.Fatal("tunnel did not end once both sides had closed")
			}
		})
	}
}

func TestTunnelIdleCountsBothDirections(t *testing.T) {
	idle := 300 * time.Millisecond
	f := newTunnelFixture(t, idle)
	// The server never speaks; the client keeps talking for longer
	// than idle: the quiet direction must not end the tunnel.
	go io.Copy(io.Discard, f.server)
	for i := 0; i < 8; i++ {
		if _, err := f.client.Write([]byte("tick")); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		time.Sleep(idle / 3)
	}
	if f.ended(0) {
		t.Fatal("tunnel ended while the client was still sending")
	}
	if !f.ended(5 * idle) {
		t.Fatal("tunnel outlived its idle timeout once both sides were quiet")
	}
}

func TestTunnelResetEndsBothDirections(t *testing.T) {
	f := newTunnelFixture(t, 5*time.Second)
	f.server.(*net.TCPConn).SetLinger(0)
	f.server.Close() // RST: an error, not a half-close
	if !f.ended(5 * time.Second) {
		t.Fatal("a reset backend did not end the tunnel")
	}
	f.client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(f.client); err != nil && isTimeout(err) {
		t.Fatal("the client side was left open")
	}
}
