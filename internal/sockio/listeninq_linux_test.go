package sockio

import (
	"context"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestInheritsInq: a connection accepted on a plain TCP listener made
// with ListenControl has TCP_INQ on, and its reads report what is left,
// with no setsockopt of its own; on a listener without it the accepted
// connection has it off, so the option comes from the listener. On an
// MPTCP listener an ordinary client's connection does not inherit it, and
// InheritsInq must say so: whatever it reports has to match what the
// accepted connection has (where the kernel has no MPTCP, Go's MPTCP
// listener is plain TCP and both are on).
func TestInheritsInq(t *testing.T) {
	cases := []struct {
		name    string
		addr    string // "" is 127.0.0.1:0
		mptcp   bool   // the listener asks for MPTCP
		control func(string, string, syscall.RawConn) error
		want    bool // InheritsInq must report true
	}{
		{name: "TCP listener made with ListenControl", control: ListenControl, want: true},
		{name: "IPv6 TCP listener made with ListenControl", addr: "[::1]:0", control: ListenControl, want: true},
		{name: "TCP listener without it"},
		{name: "MPTCP listener made with ListenControl", mptcp: true, control: ListenControl},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lc := net.ListenConfig{Control: tc.control}
			lc.SetMultipathTCP(tc.mptcp)
			addr := tc.addr
			if addr == "" {
				addr = "127.0.0.1:0"
			}
			ln, err := lc.Listen(context.Background(), "tcp", addr)
			if err != nil && tc.addr != "" {
				t.Skipf("no IPv6 loopback here: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			said := InheritsInq(ln)
			if tc.want && !said {
				t.Fatal("InheritsInq: false for a TCP listener with TCP_INQ on")
			}
			ours, peer := accept(t, ln)
			if got := inqOf(t, ours); (got == 1) != said {
				t.Fatalf("TCP_INQ on the accepted connection = %d, InheritsInq said %v", got, said)
			}
			if !said {
				return
			}
			rc, ok := Inq(ours, true)
			if !ok {
				t.Fatal("Inq refused an inherited connection")
			}
			if _, err := peer.Write([]byte("GET")); err != nil {
				t.Fatal(err)
			}
			var rd Reader
			buf := make([]byte, 16)
			var n, inq int
			var rerr error
			if err := rc.Read(func(fd uintptr) bool {
				n, inq, rerr = rd.Read(fd, buf)
				return rerr != syscall.EAGAIN
			}); err != nil || rerr != nil {
				t.Fatal(err, rerr)
			}
			if n != 3 || inq != 0 {
				t.Fatalf("read %d bytes, inq %d; want 3 and 0 (the kernel said the socket is empty)", n, inq)
			}
		})
	}
	t.Run("not a TCP listener", func(t *testing.T) {
		ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if InheritsInq(ln) {
			t.Fatal("InheritsInq: true for a UNIX listener")
		}
	})
}

// TestInqSetAfterListen shows why TCP_INQ goes on before the socket
// listens: a connection the kernel queued before it was set is a copy of
// the listener as it was, without it.
func TestInqSetAfterListen(t *testing.T) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// The connection is in the accept queue once the listener counts it
	// (TCP_INFO's unacked is that queue's length on a listening socket):
	// only then is it a copy of the listener as it was.
	for i := 0; ; i++ {
		var info *unix.TCPInfo
		var ierr error
		if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
			t.Fatal(err, ierr)
		}
		if info.Unacked >= 1 {
			break
		}
		if i == 500 {
			t.Fatal("the connection never reached the accept queue")
		}
		time.Sleep(2 * time.Millisecond)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = EnableInq(fd) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := inqOf(t, nc.(*net.TCPConn)); got != 0 {
		t.Fatalf("TCP_INQ on a connection queued before it was set = %d, want 0", got)
	}
}

// inqOf returns the TCP_INQ setting of c.
func inqOf(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	on, gerr := 0, error(nil)
	control(t, c, func(fd uintptr) { on, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpINQ) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return on
}
