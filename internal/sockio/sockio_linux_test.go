//go:build linux

package sockio

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// tcpState is tcpi_state from TCP_INFO (its first byte).
func tcpState(t *testing.T, c *net.TCPConn) byte {
	var info [256]byte
	control(t, c, func(fd uintptr) {
		l := uint32(len(info))
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&l)), 0)
		if e != 0 {
			t.Fatal(e)
		}
	})
	return info[0]
}

const tcpCloseWait = 8 // TCP_CLOSE_WAIT: the peer's FIN has arrived

// arrived waits (bounded) until the socket holds want bytes, and the
// peer's FIN too if fin.
func arrived(t *testing.T, c *net.TCPConn, want int, fin bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		var n int
		control(t, c, func(fd uintptr) {
			var peek [256]byte
			k, _, err := syscall.Recvfrom(int(fd), peek[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err == nil {
				n = k
			}
		})
		if n >= want && (!fin || tcpState(t, c) == tcpCloseWait) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%d bytes (fin %v) never arrived", want, fin)
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inq     bool   // TCP_INQ on
		send    string // what the peer sends before the read
		fin     bool   // then the peer half-closes
		buf     int
		wantN   int
		wantInq int // -1: more than 0
		wantErr error
		next    int // what a second read returns (-1: EAGAIN)
	}{
		{name: "drained", inq: true, send: "hello", buf: 64, wantN: 5, wantInq: 0, next: -1},
		{name: "more than the buffer", inq: true, send: "hello world", buf: 4, wantN: 4, wantInq: 7, next: 4},
		{name: "data and FIN", inq: true, send: "hello", fin: true, buf: 64, wantN: 5, wantInq: -1, next: 0},
		{name: "FIN alone", inq: true, fin: true, buf: 64, wantN: 0, wantInq: -1, next: 0},
		{name: "nothing", inq: true, buf: 64, wantErr: syscall.EAGAIN, wantInq: 1, next: -1},
		{name: "TCP_INQ off says nothing", send: "hello", buf: 64, wantN: 5, wantInq: 1, next: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, peer := pair(t)
			if tc.inq {
				control(t, ours, func(fd uintptr) {
					if err := EnableInq(fd); err != nil {
						t.Fatal(err)
					}
				})
			}
			if tc.send != "" {
				if _, err := peer.Write([]byte(tc.send)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.fin {
				if err := peer.CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			arrived(t, ours, len(tc.send), tc.fin)
			var r Reader
			buf := make([]byte, tc.buf)
			var n, inq int
			var err error
			control(t, ours, func(fd uintptr) { n, inq, err = r.Read(fd, buf) })
			if !errors.Is(err, tc.wantErr) || n != tc.wantN {
				t.Fatalf("Read = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
			if tc.wantInq == -1 && inq <= 0 || tc.wantInq >= 0 && inq != tc.wantInq {
				t.Fatalf("inq = %d, want %d (-1: > 0)", inq, tc.wantInq)
			}
			control(t, ours, func(fd uintptr) { n, _, err = r.Read(fd, buf) })
			switch {
			case tc.next == -1 && err != syscall.EAGAIN:
				t.Fatalf("second Read = %d, %v; want EAGAIN", n, err)
			case tc.next >= 0 && (err != nil || n != tc.next):
				t.Fatalf("second Read = %d, %v; want %d", n, err, tc.next)
			}
		})
	}
}

func TestReadDoesNotAllocate(t *testing.T) {
	ours, peer := pair(t)
	control(t, ours, func(fd uintptr) {
		if err := EnableInq(fd); err != nil {
			t.Fatal(err)
		}
	})
	rc, err := ours.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var r Reader
	buf := make([]byte, 64)
	msg := []byte("x")
	var n, inq int
	var rerr error
	read := func(fd uintptr) bool { n, inq, rerr = r.Read(fd, buf); return rerr != syscall.EAGAIN }
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		if err := rc.Read(read); err != nil || rerr != nil || n != 1 {
			t.Fatalf("read %d, %v, %v", n, err, rerr)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per read, want 0", allocs)
	}
	if inq != 0 {
		t.Fatalf("inq %d after reading everything", inq)
	}
}

// BenchmarkRead compares a recvmsg with TCP_INQ (Reader.Read) against a
// plain read(2) of the same bytes: what knowing the socket is empty costs.
func BenchmarkRead(b *testing.B) {
	for _, tc := range []struct {
		name string
		inq  bool
	}{{"recvmsg+inq", true}, {"read", false}} {
		b.Run(tc.name, func(b *testing.B) {
			ours, peer := pair(b)
			rc, err := ours.SyscallConn()
			if err != nil {
				b.Fatal(err)
			}
			if tc.inq {
				rc.Control(func(fd uintptr) { EnableInq(fd) })
			}
			var r Reader
			buf := make([]byte, 4096)
			msg := make([]byte, 100)
			var rerr error
			read := func(fd uintptr) bool {
				if tc.inq {
					_, _, rerr = r.Read(fd, buf)
				} else {
					_, rerr = syscall.Read(int(fd), buf)
				}
				return rerr != syscall.EAGAIN
			}
			for b.Loop() {
				peer.Write(msg)
				if err := rc.Read(read); err != nil || rerr != nil {
					b.Fatal(err, rerr)
				}
			}
		})
	}
}

func TestInq(t *testing.T) {
	ours, _ := pair(t)
	pipe, other := net.Pipe()
	defer pipe.Close()
	defer other.Close()
	for _, tc := range []struct {
		name string
		nc   net.Conn
		want bool
	}{
		{"a plain TCP connection", ours, true},
		{"anything else", pipe, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, ok := Inq(tc.nc, false)
			if ok != tc.want || (rc != nil) != tc.want {
				t.Fatalf("Inq: %v, %v; want %v", rc, ok, tc.want)
			}
			if !ok {
				return
			}
			var on int
			var gerr error
			rc.Control(func(fd uintptr) { on, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpINQ) })
			if gerr != nil || on != 1 {
				t.Fatalf("TCP_INQ is %d (%v), want 1", on, gerr)
			}
		})
	}
}
