//go:build linux

package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parkedSockets counts the sockets lbd (pid) holds parked: the entries
// of an epoll set registered for EPOLLIN|EPOLLRDHUP|EPOLLONESHOT (shown
// in /proc/PID/fdinfo with the EPOLLERR|EPOLLHUP the kernel adds:
// 40002019), which is how lbd's parker, and only it, registers them;
// Go's poller uses edge-triggered entries (8000201d).
func parkedSockets(t *testing.T, pid int) int {
	t.Helper()
	infos, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range infos {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // a descriptor closed meanwhile
		}
		n += len(parkedEntry.FindAll(b, -1))
	}
	return n
}

var parkedEntry = regexp.MustCompile(`(?m)^tfd:\s+\d+\s+events:\s+40002019\s`)

// waitParked waits until lbd holds want parked sockets (a connection is
// parked after a second without a request).
func waitParked(t *testing.T, p *proc, want int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d parked connections", want), func() bool {
		return parkedSockets(t, p.cmd.Process.Pid) == want
	})
}

// parkConfig: LogLevel 1 access lines, a control socket, one service.
func parkConfig(client int, be *backend) string {
	return fmt.Sprintf("Daemon 0\nLogLevel 1\nAlive 30\nTimeOut 5\nClient %d\nGrace 5\n"+
		"Control \"{DIR}/ctl.sock\"\n"+
		"ListenHTTP \"main\"\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n%s\tEnd\nEnd\n", client, be.block())
}

// dialFrom connects to addr from the loopback address from.
func dialFrom(t *testing.T, from, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// askOn sends GET path on c and returns the status and body.
func askOn(t *testing.T, c net.Conn, br *bufio.Reader, path string) (int, string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestIdleParkedConnectionsResume: two keep-alive clients from two
// addresses go idle and are parked; interleaved requests on them are
// answered right, with each client's own address in X-Forwarded-For and
// in the access log, parked again each time; the listener's connection
// count (lbd_listener_connections) counts them while parked.
func TestIdleParkedConnectionsResume(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, parkConfig(30, be))
	clients := []struct{ from string }{{"127.0.0.3"}, {"127.0.0.4"}}
	conns := make([]net.Conn, len(clients))
	readers := make([]*bufio.Reader, len(clients))
	for i, cl := range clients {
		conns[i], readers[i] = dialFrom(t, cl.from, p.addr)
	}
	ask := func(i int, path string) {
		t.Helper()
		code, body := askOn(t, conns[i], readers[i], path)
		if code != 200 || !strings.Contains(body, "GET "+path+"\n") || !strings.Contains(body, "xff="+clients[i].from+"\n") {
			t.Fatalf("%s from %s: %d %q", path, clients[i].from, code, body)
		}
		waitLog(t, p, "lbd: "+clients[i].from+" GET "+path+" HTTP/1.1 - HTTP/1.1 200 OK", 5*time.Second)
	}
	ask(0, "/a0")
	ask(1, "/b0")
	for round := 1; round <= 2; round++ {
		waitParked(t, p, 2)
		metrics := lbctlOK(t, filepath.Join(p.dir, "ctl.sock"), "metrics")
		if !listenerConns(2).MatchString(metrics) {
			t.Fatalf("parked connections not counted: want 2 in\n%s", grepLines(metrics, "lbd_listener_connections"))
		}
		ask(1, fmt.Sprintf("/b%d", round))
		ask(0, fmt.Sprintf("/a%d", round))
		ask(1, fmt.Sprintf("/b%d-again", round))
	}
}

// listenerConns matches the listener "main" having n connections open.
func listenerConns(n int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`(?m)^lbd_listener_connections\{[^}]*listener_name="main"\} %d$`, n))
}

// TestIdleParkedConnectionTimesOut: the Client timeout closes a parked
// connection in order (EOF, no reset, nothing written), counted from its
// last request; a parked connection whose client leaves is closed by lbd
// at once, not at the timeout; lbd holds no descriptor for either after.
func TestIdleParkedConnectionTimesOut(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, parkConfig(3, be))
	pid := p.cmd.Process.Pid
	baseFDs, _ := procStats(t, pid)

	c, br := dialFrom(t, "127.0.0.3", p.addr)
	if code, _ := askOn(t, c, br, "/t"); code != 200 {
		t.Fatalf("status %d", code)
	}
	last := time.Now()
	waitParked(t, p, 1)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := br.Read(make([]byte, 1))
	idle := time.Since(last)
	if n != 0 || err != io.EOF {
		t.Fatalf("parked connection at its timeout: %d bytes, %v; want EOF", n, err)
	}
	if idle < 2500*time.Millisecond || idle > 6*time.Second {
		t.Fatalf("closed %v after the last request, want about the 3 s Client timeout", idle)
	}

	gone, gbr := dialFrom(t, "127.0.0.4", p.addr)
	if code, _ := askOn(t, gone, gbr, "/g"); code != 200 {
		t.Fatalf("status %d", code)
	}
	waitParked(t, p, 1)
	gone.Close()
	waitFor(t, "the parked connection of a client that left to be closed", func() bool {
		return parkedSockets(t, pid) == 0
	})
	waitFor(t, "lbd's descriptors back to the baseline", func() bool {
		fds, _ := procStats(t, pid)
		return fds <= baseFDs+poolPerBackend
	})
	if code, _ := rawStatus(t, p.addr); code != 200 {
		t.Fatalf("lbd after: %d", code)
	}
}

// rawStatus makes one request on a new connection.
func rawStatus(t *testing.T, addr string) (int, string) {
	t.Helper()
	c, br := dialFrom(t, "127.0.0.5", addr)
	return askOn(t, c, br, "/after")
}

// TestIdleParkedConnectionsOnStop: stopping lbd, gracefully (SIGINT:
// Grace 5, idle connections closed at once) or at once (SIGTERM),
// closes parked connections in order (EOF), and lbd exits well before
// Grace.
func TestIdleParkedConnectionsOnStop(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startLBD(t, parkConfig(30, be))
			c, br := dialFrom(t, "127.0.0.3", p.addr)
			if code, _ := askOn(t, c, br, "/s"); code != 200 {
				t.Fatalf("status %d", code)
			}
			waitParked(t, p, 1)
			p.signal(sig)
			c.SetReadDeadline(time.Now().Add(4 * time.Second))
			if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("parked connection on %v: %d bytes, %v; want EOF", sig, n, err)
			}
			if code := p.wait(4 * time.Second); code != 0 {
				t.Fatalf("lbd exit %d (-1: still running after 4 s, Grace is 5 s):\n%s", code, p.out.String())
			}
		})
	}
}

// TestIdleParkedConnectionAcrossReload: a connection parked before a
// reload (lbctl reload) is served by the new configuration's backend on
// its next request, and counted as open throughout.
func TestIdleParkedConnectionAcrossReload(t *testing.T) {
	one := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	two := startBackend(t, "127.0.0.3", "two", echoHandler("two"))
	p := startLBD(t, parkConfig(30, one))
	c, br := dialFrom(t, "127.0.0.4", p.addr)
	if code, body := askOn(t, c, br, "/before"); code != 200 || !strings.HasPrefix(body, "one ") {
		t.Fatalf("before the reload: %d %q", code, body)
	}
	waitParked(t, p, 1)
	p.replaceInConfig(t, one.block(), two.block())
	lbctlOK(t, filepath.Join(p.dir, "ctl.sock"), "reload")
	if n := parkedSockets(t, p.cmd.Process.Pid); n != 1 {
		t.Fatalf("%d parked connections after the reload, want 1", n)
	}
	if metrics := lbctlOK(t, filepath.Join(p.dir, "ctl.sock"), "metrics"); !listenerConns(1).MatchString(metrics) {
		t.Fatalf("the parked connection is not counted after the reload:\n%s", grepLines(metrics, "lbd_listener_connections"))
	}
	if code, body := askOn(t, c, br, "/after"); code != 200 || !strings.HasPrefix(body, "two ") {
		t.Fatalf("after the reload: %d %q, want the new backend's answer", code, body)
	}
}
