//go:build linux

package sockio

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// wrapper is a PlainConn wrapper, as lbd's h2c and backend conns are.
type wrapper struct{ net.Conn }

func (w wrapper) PlainConn() net.Conn { return w.Conn }

// TestNewRaw: plain TCP, also behind PlainConn wrappers, gets raw I/O;
// anything else (TLS, pipes) keeps net.Conn.
func TestNewRaw(t *testing.T) {
	ours, _ := pair(t)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	tests := []struct {
		name string
		nc   net.Conn
		raw  bool
	}{
		{"plain TCP", ours, true},
		{"wrapped twice", wrapper{wrapper{ours}}, true},
		{"TLS", tls.Client(ours, &tls.Config{}), false},
		{"wrapped TLS", wrapper{tls.Client(ours, &tls.Config{})}, false},
		{"pipe", a, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewRaw(tc.nc) != nil; got != tc.raw {
				t.Errorf("NewRaw: %v, want %v", got, tc.raw)
			}
		})
	}
}

// TestRawReadWrite: what Raw writes arrives whole, also beyond what the
// socket buffer takes at once (the rest goes through net.Conn's Write);
// Read waits for data, honours the read deadline, and reports the
// peer's close as io.EOF.
func TestRawReadWrite(t *testing.T) {
	ours, peer := pair(t)
	r := NewRaw(ours)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: more than a socket buffer
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big)))) // a short read fails below
		got <- b
	}()
	if n, err := r.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write: %d %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("peer got %d bytes, want %d intact", len(b), len(big))
	}

	ours.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read with nothing to read: %v, want the deadline", err)
	}
	ours.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(10 * time.Millisecond) // Read waits for it
		peer.Write([]byte("hello"))
		peer.Close()
	}()
	buf := make([]byte, 16)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read: %q %v", buf[:n], err)
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("Read after the peer closed: %d %v, want EOF", n, err)
	}
}
