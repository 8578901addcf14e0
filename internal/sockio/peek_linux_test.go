package sockio

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestPeek: what Peek reports for each state of an idle connection, and
// that it consumes nothing.
func TestPeek(t *testing.T) {
	for _, tc := range []struct {
		name    string
		peer    func(t *testing.T, peer *net.TCPConn) // what the peer does first
		wantN   int
		wantErr error
	}{
		{name: "nothing waiting is EAGAIN", peer: func(*testing.T, *net.TCPConn) {}, wantErr: syscall.EAGAIN},
		{name: "bytes waiting", peer: func(t *testing.T, peer *net.TCPConn) {
			if _, err := peer.Write([]byte("HTTP/1.1 408")); err != nil {
				t.Fatal(err)
			}
		}, wantN: 1},
		{name: "the peer's FIN is 0 bytes", peer: func(t *testing.T, peer *net.TCPConn) {
			if err := peer.CloseWrite(); err != nil {
				t.Fatal(err)
			}
		}, wantN: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, peer := pair(t)
			tc.peer(t, peer)
			buf := make([]byte, 1)
			peek := func() (n int, err error) {
				control(t, ours, func(fd uintptr) { n, err = Peek(fd, buf) })
				return n, err
			}
			var n int
			var err error
			// The peer's bytes or FIN cross loopback at once, but allow the
			// kernel a moment rather than race it.
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
				n, err = peek()
				if err != syscall.EAGAIN || tc.wantErr != nil || time.Now().After(deadline) {
					break
				}
			}
			if n != tc.wantN || err != tc.wantErr {
				t.Fatalf("Peek = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
			if tc.wantN > 0 {
				// Still there for the real read.
				again, err := peek()
				if again != tc.wantN || err != nil {
					t.Fatalf("second Peek = %d, %v: the first consumed the byte", again, err)
				}
			}
		})
	}
}
