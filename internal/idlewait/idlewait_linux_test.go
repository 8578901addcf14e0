//go:build linux

package idlewait

import (
	"net"
	"syscall"
	"testing"
	"time"
)

type waker chan struct{}

func (w waker) Wake() { w <- struct{}{} }

// pair returns the accepted end of a loopback connection, as a raw
// socket, and the client end.
func pair(t *testing.T) (syscall.RawConn, net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
	rc, err := s.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return rc, s, c
}

func woken(w waker) bool {
	select {
	case <-w:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

func TestSet(t *testing.T) {
	s := Open()
	if s == nil {
		t.Fatal("no epoll set")
	}
	defer s.Close()
	cases := []struct {
		name string
		run  func(t *testing.T, rc syscall.RawConn, ours, peer net.Conn)
	}{
		{"bytes wake the owner, once", func(t *testing.T, rc syscall.RawConn, _, peer net.Conn) {
			w := make(waker, 2)
			tk, ok := s.Park(rc, w)
			if !ok {
				t.Fatal("not parked")
			}
			peer.Write([]byte("x"))
			if !woken(w) {
				t.Fatal("not woken")
			}
			if s.Unpark(tk) {
				t.Fatal("taken back after its wake-up")
			}
		}},
		{"already readable wakes at once", func(t *testing.T, rc syscall.RawConn, _, peer net.Conn) {
			peer.Write([]byte("x"))
			time.Sleep(10 * time.Millisecond)
			w := make(waker, 1)
			if _, ok := s.Park(rc, w); !ok || !woken(w) {
				t.Fatal("not woken")
			}
		}},
		{"a FIN wakes the owner", func(t *testing.T, rc syscall.RawConn, _, peer net.Conn) {
			w := make(waker, 1)
			if _, ok := s.Park(rc, w); !ok {
				t.Fatal("not parked")
			}
			peer.Close()
			if !woken(w) {
				t.Fatal("not woken")
			}
		}},
		{"taken back, then parked again", func(t *testing.T, rc syscall.RawConn, _, peer net.Conn) {
			w := make(waker, 1)
			tk, ok := s.Park(rc, w)
			if !ok || !s.Unpark(tk) {
				t.Fatal("not parked, or not taken back")
			}
			if s.Unpark(tk) {
				t.Fatal("taken back twice")
			}
			peer.Write([]byte("x"))
			select {
			case <-w:
				t.Fatal("woken after it was taken back")
			case <-time.After(50 * time.Millisecond):
			}
			if _, ok := s.Park(rc, w); !ok || !woken(w) {
				t.Fatal("parked again: not woken") // the descriptor left the set
			}
		}},
		{"a closed socket is refused", func(t *testing.T, rc syscall.RawConn, ours, _ net.Conn) {
			ours.Close()
			if _, ok := s.Park(rc, make(waker, 1)); ok {
				t.Fatal("parked a closed socket")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc, ours, peer := pair(t)
			tc.run(t, rc, ours, peer)
		})
	}
}
