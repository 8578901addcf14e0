package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSocketFrom hands lbd an already listening socket over a UNIX socket
// (SCM_RIGHTS with one data byte), as Pound 4's test harness does.
func TestSocketFrom(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBDSocketFrom(t, be)
	resp, body := get(t, http.DefaultClient, "http://"+p.addr+"/sf")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "one GET /sf") {
		t.Fatalf("via SocketFrom: %d %q", resp.StatusCode, body)
	}
}

// startLBDSocketFrom starts lbd with one listener whose socket it gets
// through SocketFrom, and one service over be.
func startLBDSocketFrom(t *testing.T, be *backend) *proc {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	sock := filepath.Join(t.TempDir(), "lst0.sock")
	us, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { us.Close() })
	go func() {
		c, err := us.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		f, _ := tcp.(*net.TCPListener).File()
		defer f.Close()
		c.(*net.UnixConn).WriteMsgUnix([]byte{0}, syscall.UnixRights(int(f.Fd())), nil)
	}()
	cfg := "Daemon 0\nLogLevel 0\nListenHTTP\n\tSocketFrom \"" + sock + "\"\n\tService\n" + be.block() + "\tEnd\nEnd\n"
	return startLBDAt(t, cfg, tcp.Addr().String())
}

// startLBDAt starts lbd on cfg whose listener address is already known.
func startLBDAt(t *testing.T, cfg, addr string) *proc {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return runLBD(t, dir, path, addr)
}

func TestIPv6ListenerAndUnixBackend(t *testing.T) {
	ln6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("IPv6 loopback: %v", err)
	}
	port := ln6.Addr().(*net.TCPAddr).Port
	ln6.Close()
	sock := filepath.Join(t.TempDir(), "be.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: echoHandler("unix")}
	go srv.Serve(uln)
	defer srv.Close()
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress ::1\n\tPort %d\n\tService\n\t\tBackEnd\n\t\t\tAddress \"%s\"\n\t\tEnd\n\tEnd\nEnd\n", port, sock)
	p := startLBDAt(t, cfg, fmt.Sprintf("[::1]:%d", port))
	resp, body := get(t, http.DefaultClient, "http://"+p.addr+"/v6")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "unix GET /v6") || !strings.Contains(body, "xff=[::1]") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
}

func TestRoutingFirstMatchWins(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "url", echoHandler("url"))
	h := startBackend(t, "127.0.0.3", "head", echoHandler("head"))
	host := startBackend(t, "127.0.0.4", "host", echoHandler("host"))
	dis := startBackend(t, "127.0.0.5", "disabled", echoHandler("disabled"))
	def := startBackend(t, "127.0.0.6", "default", echoHandler("default"))
	cfg := "Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" +
		"\tService\n\t\tURL \"^/api/\"\n\t\tHeadDeny \"^X-Block:\"\n" + a.block() + "\tEnd\n" +
		"\tService\n\t\tHeadRequire \"^X-Svc: *head$\"\n" + h.block() + "\tEnd\n" +
		"\tService\n\t\tHost \"example.org\"\n" + host.block() + "\tEnd\n" +
		"\tService\n\t\tDisabled 1\n" + dis.block() + "\tEnd\n" +
		"End\n" +
		"Service\n\tURL \"\\.html$\"\n" + def.block() + "End\n"
	p := startLBD(t, cfg)
	cases := []struct {
		name, path string
		headers    map[string]string
		want       string
	}{
		{"url regex", "/api/x", nil, "url"},
		{"head deny skips url service", "/api/x.html", map[string]string{"X-Block": "1"}, "default"},
		{"head require", "/other", map[string]string{"X-Svc": "head"}, "head"},
		{"host exact, case-insensitive", "/h", map[string]string{"Host": "EXAMPLE.org"}, "host"},
		{"global service after listener's", "/page.html", nil, "default"},
		{"disabled skipped, nothing matches", "/nothing", nil, "503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+p.addr+tc.path, nil)
			for k, v := range tc.headers {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := resp.Header.Get("X-Backend")
			if resp.StatusCode == 503 {
				got = "503"
			}
			if got != tc.want {
				t.Fatalf("served by %q, want %q (%s)", got, tc.want, body)
			}
		})
	}
}

func TestClientTimeoutClosesIdleConnection(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	cfg := strings.Replace(oneService(be), "Client 5", "Client 1", 1)
	p := startLBD(t, cfg)
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // never finished
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	n, err := c.Read(buf)
	if err == nil || (err != nil && strings.Contains(err.Error(), "timeout")) {
		t.Fatalf("connection not closed by the Client timeout: n=%d err=%v", n, err)
	}
}

// TestListenerIsPlainTCP: lbd listens with plain TCP, as Pound and
// HAProxy do, not with Go's default MPTCP, so a client that offers MPTCP
// gets an ordinary TCP connection, the kind the raw loop, splice and the
// options lbd sets on its listeners are written for.
func TestListenerIsPlainTCP(t *testing.T) {
	var d net.Dialer
	d.SetMultipathTCP(true)
	// The control: on this kernel an MPTCP listener and this dialer do
	// speak MPTCP, or there is nothing to tell apart.
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	ctl, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctl.Close()
	if on, err := ctl.(*net.TCPConn).MultipathTCP(); err != nil || !on {
		t.Skipf("this kernel does not speak MPTCP on loopback (net.mptcp.enabled): %v", err)
	}

	b := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, plainConfig(10, 10, b))
	c, err := d.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if on, err := c.(*net.TCPConn).MultipathTCP(); err != nil || on {
		t.Fatalf("the connection to lbd is MPTCP (%v, %v), want plain TCP", on, err)
	}
	c.SetReadDeadline(time.Now().Add(4 * time.Second))
	fmt.Fprintf(c, "GET /mp HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(string(body), "one GET /mp") {
		t.Fatalf("%d %q %v", resp.StatusCode, body, err)
	}
}
