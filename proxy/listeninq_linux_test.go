package proxy

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"lbd/internal/sockio"
)

// TestServeInheritsInq: on a plain TCP listener made as the engine makes
// them (sockio.ListenControl) the connections Serve accepts have TCP_INQ
// on (the raw loop needs it to know when a socket is empty) without a
// setsockopt of their own; on an MPTCP listener, whose ordinary
// connections do not inherit it, each connection still gets it.
func TestServeInheritsInq(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mptcp bool
	}{
		{name: "plain TCP listener"},
		{name: "MPTCP listener", mptcp: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, unused, b, algo := serveOneBackend(t, httpBackend(t, echoPath), 30*time.Second, 30*time.Second)
			if err := unused.Close(); err != nil {
				t.Fatal(err)
			}
			lc := net.ListenConfig{Control: sockio.ListenControl}
			lc.SetMultipathTCP(tc.mptcp)
			ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			serveTest(t, srv, ln, b, algo)
			c, br := dialRaw(t, ln.Addr().String())
			for i := 0; i < 3; i++ {
				fmt.Fprintf(c, "GET /i%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
				if code, body := readBody(t, br); code != 200 || body != fmt.Sprintf("GET /i%d 0", i) {
					t.Fatalf("request %d: %d %q", i, code, body)
				}
			}
			if !tc.mptcp && !srv.inqListener.Load() {
				t.Error("Serve did not see that its connections inherit TCP_INQ")
			}
			onRawLoop(t, srv)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for cn := range srv.conns {
				on, gerr := 0, error(nil)
				if err := cn.raw.rc.Control(func(fd uintptr) {
					on, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, 36)
				}); err != nil || gerr != nil {
					t.Fatal(err, gerr)
				}
				if on != 1 {
					t.Errorf("TCP_INQ on the client connection = %d, want 1", on)
				}
			}
		})
	}
}
