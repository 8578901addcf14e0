package functionaltests

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startTunnel starts lbd with a Tunnel listener of the given backend
// blocks and returns it and the tunnel's address. The first listener,
// which the harness probes for readiness, is a plain HTTP one (Success),
// so that no probe connection is relayed to the test's backends. The
// control socket is {DIR}/ctl.sock: the tunnel is listener 2 there.
func startTunnel(t *testing.T, backends ...string) (*proc, string) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	p := startLBD(t, "Daemon 0\nLogLevel 0\nAlive 1\nControl \"{DIR}/ctl.sock\"\n"+
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n\t\tSuccess\n\tEnd\nEnd\n"+
		"Tunnel \"tcp\"\n\tAddress 127.0.0.1\n\tPort "+port+"\n"+strings.Join(backends, "")+"End\n")
	return p, addr
}

// tunnelBlock is a Tunnel's Backend block for address addr, with extra
// statements.
func tunnelBlock(addr string, extra ...string) string {
	host, port, _ := net.SplitHostPort(addr)
	s := "\tBackend\n\t\tAddress " + host + "\n\t\tPort " + port + "\n"
	for _, e := range extra {
		s += "\t\t" + e + "\n"
	}
	return s + "\tEnd\n"
}

// bannerBackend greets every connection with its name, as a server of a
// server-first protocol (SMTP, SSH) does, then closes.
func bannerBackend(t *testing.T, host, name string) *backend {
	return connBackend(t, host, func(c net.Conn) {
		defer c.Close()
		fmt.Fprintf(c, "220 %s\r\n", name)
	})
}

// TestTunnelCarriesAnyProtocol relays protocols that are not HTTP, in
// both directions, through a Tunnel listener, including half-closes in
// either direction.
func TestTunnelCarriesAnyProtocol(t *testing.T) {
	for _, tc := range protocolCases() {
		t.Run(tc.name, func(t *testing.T) {
			be := connBackend(t, "127.0.0.2", tc.backend)
			_, addr := startTunnel(t, tunnelBlock(be.addr))
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			tc.client(t, c.(*net.TCPConn))
		})
	}
}

// protocolCase is a conversation over a tunnel: what the backend and
// the client each do.
type protocolCase struct {
	name    string
	backend func(c net.Conn)
	client  func(t *testing.T, c *net.TCPConn)
}

// protocolCases are conversations in which each side in turn speaks
// first or closes its half first, with binary data that is not HTTP.
func protocolCases() []protocolCase {
	payload := bytes.Repeat([]byte{0, 1, 2, 0xff, '\r', '\n', 'G', 'E', 'T'}, 200000) // 1.8 MB
	sum := sha256.Sum256(payload)
	late := make(chan string, 1)
	return []protocolCase{{
		name: "server speaks first",
		backend: func(c net.Conn) {
			defer c.Close()
			io.WriteString(c, "220 ready\r\n")
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil && line == "QUIT\r\n" {
				io.WriteString(c, "221 bye\r\n")
			}
		},
		client: func(t *testing.T, c *net.TCPConn) {
			br := bufio.NewReader(c)
			if l, err := br.ReadString('\n'); err != nil || l != "220 ready\r\n" {
				t.Fatalf("banner %q, %v", l, err)
			}
			io.WriteString(c, "QUIT\r\n")
			if rest, err := io.ReadAll(br); err != nil || string(rest) != "221 bye\r\n" {
				t.Fatalf("after QUIT: %q, %v", rest, err)
			}
		},
	}, {
		name: "client half-closes, server answers after EOF",
		backend: func(c net.Conn) {
			defer c.Close()
			got, err := io.ReadAll(c)
			if err == nil {
				s := sha256.Sum256(got)
				fmt.Fprintf(c, "%d %x", len(got), s)
			}
		},
		client: func(t *testing.T, c *net.TCPConn) {
			go func() {
				c.Write(payload)
				c.CloseWrite()
			}()
			if got, err := io.ReadAll(c); err != nil || string(got) != fmt.Sprintf("%d %x", len(payload), sum) {
				t.Fatalf("server saw %q (%v), want %d %x", got, err, len(payload), sum)
			}
		},
	}, {
		name: "server half-closes, client still sends",
		backend: func(c net.Conn) {
			defer c.Close()
			c.Write(payload)
			c.(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(c)
			if err != nil {
				got = []byte(err.Error())
			}
			late <- string(got)
		},
		client: func(t *testing.T, c *net.TCPConn) {
			got, err := io.ReadAll(c)
			if err != nil || sha256.Sum256(got) != sum {
				t.Fatalf("read %d bytes (%v), want the %d-byte payload", len(got), err, len(payload))
			}
			if _, err := io.WriteString(c, "thanks"); err != nil {
				t.Fatalf("write after the server's half-close: %v", err)
			}
			c.CloseWrite()
			select {
			case got := <-late:
				if got != "thanks" {
					t.Fatalf("server read %q after its half-close, want thanks", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the server never saw the client's EOF")
			}
		},
	}}
}

// bannerOf connects to the tunnel and returns the name the backend
// greeted with ("" when the tunnel closed without a byte).
func bannerOf(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(strings.TrimPrefix(line, "220 "), "\r\n")
}

// TestTunnelBalancingHealthAndControl: a tunnel's backends are balanced,
// a dead one is skipped, one disabled through lbctl gets no connection,
// and the control API lists the tunnel as Pound does.
func TestTunnelBalancingHealthAndControl(t *testing.T) {
	one := bannerBackend(t, "127.0.0.2", "one")
	two := bannerBackend(t, "127.0.0.3", "two")
	dead := fmt.Sprintf("127.0.0.4:%d", freePort(t))
	p, addr := startTunnel(t, tunnelBlock(one.addr), tunnelBlock(two.addr), tunnelBlock(dead, "ConnTO 1"))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	count := func(n int) map[string]int {
		seen := map[string]int{}
		for i := 0; i < n; i++ {
			seen[bannerOf(t, addr)]++
		}
		return seen
	}
	if seen := count(40); seen["one"] == 0 || seen["two"] == 0 || seen["one"]+seen["two"] != 40 {
		t.Fatalf("40 connections with one backend dead: %v", seen)
	}
	out, errOut, code := lbctlRun(t, "poundctl", nil, "-s", sock, "list", "/2")
	want := []string{"Listener \"tcp\" tunnel://" + addr + " enabled",
		"0. backend (0) tunnel " + one.addr + " 1 alive active",
		"2. backend (0) tunnel " + dead + " 1 dead active"}
	for _, w := range want {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("poundctl list /2 lacks %q (exit %d):\n%s%s", w, code, out, errOut)
		}
	}
	if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "disable", "/2/0/0"); code != 0 {
		t.Fatalf("disable /2/0/0: exit %d: %s", code, errOut)
	}
	if seen := count(10); seen["two"] != 10 {
		t.Fatalf("with backend one disabled: %v", seen)
	}
	out, errOut, code = lbctlRun(t, "lbctl", nil, "-s", sock, "-j", "list", "/2")
	if code != 0 {
		t.Fatalf("lbctl -j list /2: exit %d %s", code, errOut)
	}
	for _, w := range []string{`"protocol":"tunnel"`, `"address":"` + addr + `"`, `"enabled":false`} {
		if !strings.Contains(out, w) {
			t.Errorf("JSON listing lacks %s:\n%s", w, out)
		}
	}
}

// TestTunnelTimeouts: a tunnel nobody speaks on closes after the
// backend's TimeOut, and one whose every backend is down closes at once.
func TestTunnelTimeouts(t *testing.T) {
	silent := connBackend(t, "127.0.0.2", func(c net.Conn) {
		defer c.Close()
		io.Copy(io.Discard, c)
	})
	down := fmt.Sprintf("127.0.0.3:%d", freePort(t))
	cases := []struct {
		name     string
		block    string
		min, max time.Duration
	}{
		{name: "idle for TimeOut", block: tunnelBlock(silent.addr, "TimeOut 1"), min: 900 * time.Millisecond, max: 5 * time.Second},
		{name: "no backend", block: tunnelBlock(down, "ConnTO 1"), max: 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startTunnel(t, tc.block)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			c.SetReadDeadline(start.Add(10 * time.Second))
			n, err := c.Read(make([]byte, 1))
			took := time.Since(start)
			if n != 0 || err == nil || took < tc.min || took > tc.max {
				t.Fatalf("read %d, %v after %v, want the tunnel closed within [%v, %v]", n, err, took, tc.min, tc.max)
			}
		})
	}
}
