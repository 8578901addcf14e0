//go:build linux

package sockio

import (
	"bytes"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// fill sends until the socket's buffers are full, and returns how much
// went; the peer reads nothing meanwhile.
func fill(t *testing.T, fd uintptr) int {
	t.Helper()
	chunk := make([]byte, 64<<10)
	total := 0
	for i := 0; i < 1000; i++ {
		k, err := Send(fd, chunk)
		if err == syscall.EAGAIN {
			return total
		}
		if err != nil {
			t.Fatalf("send after %d bytes: %v", total, err)
		}
		total += k
	}
	t.Fatalf("the socket took %d bytes and is still not full", total)
	return 0
}

func TestSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup prepares the connection; check runs Send on ours.
		setup func(t *testing.T, ours, peer *net.TCPConn)
		check func(t *testing.T, fd uintptr, peer *net.TCPConn)
	}{
		{
			name: "everything fits and arrives as sent",
			check: func(t *testing.T, fd uintptr, peer *net.TCPConn) {
				msg := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				if k, err := Send(fd, msg); err != nil || k != len(msg) {
					t.Fatalf("sent %d, %v; want %d", k, err, len(msg))
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("peer read %q, %v", got, err)
				}
			},
		},
		{
			// RawSyscall holds the P: Send must not block even on a
			// socket in blocking mode.
			name: "a full socket is EAGAIN, even in blocking mode",
			check: func(t *testing.T, fd uintptr, peer *net.TCPConn) {
				if fill(t, fd) == 0 {
					t.Fatal("nothing could be sent")
				}
				blocking(t, fd)
				k, err := bounded(t, func() (int, error) { return Send(fd, []byte("x")) })
				if err != syscall.EAGAIN || k != 0 {
					t.Fatalf("sent %d, %v to a full socket; want 0, EAGAIN", k, err)
				}
			},
		},
		{
			name: "a reset peer: ECONNRESET once, then EPIPE",
			setup: func(t *testing.T, ours, peer *net.TCPConn) {
				peer.SetLinger(0) // reset, so that our side knows at once
				peer.Close()
				arrivedReset(t, ours)
			},
			check: func(t *testing.T, fd uintptr, _ *net.TCPConn) {
				// The reset is reported once (ECONNRESET); after it the
				// socket is shut and every send is EPIPE.
				var err error
				for i := 0; i < 2 && err != syscall.EPIPE; i++ {
					_, err = Send(fd, []byte("late"))
				}
				if err != syscall.EPIPE {
					t.Fatalf("send to a reset connection: %v, want EPIPE", err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, peer := pair(t)
			if tc.setup != nil {
				tc.setup(t, ours, peer)
			}
			control(t, ours, func(fd uintptr) { tc.check(t, fd, peer) })
		})
	}
}

// blocking puts fd in blocking mode until the test ends.
func blocking(t *testing.T, fd uintptr) {
	t.Helper()
	if err := syscall.SetNonblock(int(fd), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.SetNonblock(int(fd), true) })
}

// bounded runs f and fails the test if it has not returned in 5 s: a
// call that blocks.
func bounded(t *testing.T, f func() (int, error)) (int, error) {
	t.Helper()
	type result struct {
		k   int
		err error
	}
	done := make(chan result, 1)
	go func() { k, err := f(); done <- result{k, err} }()
	select {
	case r := <-done:
		return r.k, r.err
	case <-time.After(5 * time.Second):
		t.Fatal("the call blocked")
		return 0, nil
	}
}

// arrivedReset waits (bounded) until the peer's reset has closed c.
func arrivedReset(t *testing.T, c *net.TCPConn) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if tcpState(t, c) == tcpClose {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the reset never arrived")
}

const tcpClose = 7 // TCP_CLOSE

func TestSendDoesNotAllocate(t *testing.T) {
	ours, peer := pair(t)
	msg := []byte("x")
	buf := make([]byte, 1)
	var k int
	var serr error
	send := func(fd uintptr) { k, serr = Send(fd, msg) }
	rc, err := ours.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if err := rc.Control(send); err != nil || serr != nil || k != 1 {
			t.Fatalf("sent %d, %v, %v", k, err, serr)
		}
		if _, err := io.ReadFull(peer, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per send, want 0", allocs)
	}
}

// TestReadDoesNotBlock: Read holds the P too, so an empty socket in
// blocking mode must still be EAGAIN at once.
func TestReadDoesNotBlock(t *testing.T) {
	ours, _ := pair(t)
	control(t, ours, func(fd uintptr) {
		blocking(t, fd)
		var r Reader
		buf := make([]byte, 16)
		_, err := bounded(t, func() (int, error) { n, _, err := r.Read(fd, buf); return n, err })
		if err != syscall.EAGAIN {
			t.Fatalf("read of an empty socket: %v, want EAGAIN", err)
		}
	})
}
