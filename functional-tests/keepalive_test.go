package functionaltests

// TCP keep-alive on lbd's sockets, as Pound: probes on for client and
// backend connections, with the kernel's timing (net.ipv4.tcp_keepalive_*)
// rather than a runtime's own.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procTCPHex is addr ("127.0.0.1:80") as /proc/net/tcp writes it.
func procTCPHex(t *testing.T, addr string) string {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	ip := a.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// keepAliveTimer finds the established socket from local to remote ("" =
// any) in /proc/net/tcp and returns its timer kind (2 is keep-alive) and
// the seconds until it fires.
func keepAliveTimer(t *testing.T, local, remote string) (kind int, left float64) {
	t.Helper()
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when ...
		if len(f) < 6 || f[3] != "01" || (local != "" && f[1] != local) || (remote != "" && f[2] != remote) {
			continue
		}
		tr, when, _ := strings.Cut(f[5], ":")
		k, err1 := strconv.ParseInt(tr, 16, 32)
		w, err2 := strconv.ParseInt(when, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable timer %q", f[5])
		}
		return int(k), float64(w) / 100 // USER_HZ
	}
	t.Fatalf("no established socket %s -> %s", local, remote)
	return 0, 0
}

func TestKeepAliveProbesUseKernelTiming(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/tcp_keepalive_time")
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, b *backend) *proc
	}{
		{"a socket lbd binds", func(t *testing.T, b *backend) *proc { return startLBD(t, plainConfig(10, 10, b)) }},
		// Go would set its own 15 s probes on these.
		{"a socket from SocketFrom", startLBDSocketFrom},
		{"a socket kept across a binary upgrade", startLBDUpgraded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
			p := tc.start(t, b)
			c, br := plainClient(t, p.addr)
			c.Write([]byte("GET /k HTTP/1.1\r\nHost: x\r\n\r\n"))
			if code, _, _ := response(t, br, ""); code != 200 {
				t.Fatalf("status %d", code)
			}
			// The backend connection is pooled now; both sockets are lbd's.
			for _, s := range []struct{ name, local, remote string }{
				{"client socket", procTCPHex(t, p.addr), procTCPHex(t, c.LocalAddr().String())},
				{"backend socket", "", procTCPHex(t, b.addr)},
			} {
				kind, left := keepAliveTimer(t, s.local, s.remote)
				// Within a minute of the kernel's idle time (the sockets
				// are seconds old); Go's default would be 15 s.
				if kind != 2 || left > kernel || left < kernel-60 {
					t.Errorf("%s: timer kind %d firing in %.0f s; want keep-alive (2) in about %.0f s",
						s.name, kind, left, kernel)
				}
			}
		})
	}
}

// startLBDUpgraded starts lbd over b, upgrades it to a new process and
// returns once the old one is gone: the new one serves on the socket it
// inherited.
func startLBDUpgraded(t *testing.T, b *backend) *proc {
	t.Helper()
	cfg := strings.Replace(plainConfig(10, 10, b), "Grace 1\n", "Grace 1\nControl \"{DIR}/ctl.sock\"\n", 1)
	p := startLBD(t, cfg)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	lbctlUpgrade(t, sock)
	waitGone(t, p.cmd.Process.Pid, 10*time.Second)
	return p
}
