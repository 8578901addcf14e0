package functionaltests

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests here play systemd: they create the notification socket and
// the listening sockets, start lbd with the variables systemd sets, and
// read what lbd says.

// notifySocket is a NOTIFY_SOCKET: every datagram lbd sends is kept.
type notifySocket struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []string
	got  chan struct{} // pulsed on every datagram
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	n := &notifySocket{path: path, conn: c, got: make(chan struct{}, 1)}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, string(buf[:k]))
			n.mu.Unlock()
			select {
			case n.got <- struct{}{}:
			default:
			}
		}
	}()
	return n
}

// messages returns every datagram received so far.
func (n *notifySocket) messages() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.msgs...)
}

// waitFor waits until a datagram after the first `after` ones has the
// line want (e.g. "READY=1") and returns its index and text.
func (n *notifySocket) waitFor(t *testing.T, after int, want string, d time.Duration) (int, string) {
	t.Helper()
	deadline := time.After(d)
	for {
		for i, m := range n.messages() {
			if i >= after && hasLine(m, want) {
				return i, m
			}
		}
		select {
		case <-n.got:
		case <-deadline:
			t.Fatalf("no %q after datagram %d within %s; got %q", want, after, d, n.messages())
		}
	}
}

func hasLine(msg, line string) bool {
	for _, l := range strings.Split(msg, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// passedSocket is a listening socket handed to lbd as systemd would.
type passedSocket struct {
	name string
	ln   *net.TCPListener
}

// startActivated starts lbd as systemd does for a Type=notify service
// with sockets: they become descriptors 3... and LISTEN_PID is set by a
// shell that then execs lbd, so that it is lbd's own pid.
func startActivated(t *testing.T, cfgText string, socks []passedSocket, env ...string) (*proc, *notifySocket) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "lbd.cfg")
	cfgText = strings.ReplaceAll(cfgText, "{DIR}", dir)
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	n := newNotifySocket(t)
	p := &proc{out: &syncBuffer{}, dir: dir, cfg: cfg, done: make(chan struct{})}
	p.cmd = exec.Command("/bin/sh", "-c", `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`,
		binary(t, "lbd"), "-e", "-f", cfg)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	var names []string
	for _, s := range socks {
		f, err := s.ln.File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p.cmd.ExtraFiles = append(p.cmd.ExtraFiles, f)
		names = append(names, s.name)
	}
	p.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+n.path)
	if len(socks) > 0 {
		p.cmd.Env = append(p.cmd.Env, fmt.Sprintf("LISTEN_FDS=%d", len(socks)), "LISTEN_FDNAMES="+strings.Join(names, ":"))
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.status = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	return p, n
}

func listenTCP(t *testing.T) *net.TCPListener {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func tcpPort(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// TestSystemdNotifyAndSocketActivation: a socket named after a listener
// goes to that listener whatever its address, an unnamed one to the
// listener with its address, and a listener without one binds its own.
// READY=1 comes once all three serve and the first health round has
// marked the backend with a dead HAport down; SIGUSR1 and PATCH /config
// are framed by RELOADING=1 (with MONOTONIC_USEC) and READY=1; the
// watchdog is pinged; SIGTERM says STOPPING=1.
func TestSystemdNotifyAndSocketActivation(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	named, byAddr, taken := listenTCP(t), listenTCP(t), listenTCP(t)
	own := freePort(t)
	deadHA := freePort(t)
	host, bport, _ := net.SplitHostPort(be.addr)
	cfg := fmt.Sprintf(`Daemon 0
LogLevel 0
Alive 1
Control "{DIR}/ctl.sock"
Service
	BackEnd
		Address %s
		Port %s
	End
	BackEnd
		Address %s
		Port %s
		HAport %d
	End
End
ListenHTTP "web"
	Address 127.0.0.1
	Port %d
End
ListenHTTP
	Address 127.0.0.1
	Port %d
End
ListenHTTP
	Address 127.0.0.1
	Port %d
End
`, host, bport, "127.0.0.3", bport, deadHA, tcpPort(taken), tcpPort(byAddr), own)
	p, n := startActivated(t, cfg,
		[]passedSocket{{"web", named}, {"lbd.socket", byAddr}},
		"WATCHDOG_USEC=200000")
	_, ready := n.waitFor(t, 0, "READY=1", 10*time.Second)
	if !regexp.MustCompile(`(?m)^STATUS=serving 3 listeners, 1 of 2 backends up`).MatchString(ready) {
		t.Errorf("READY=1 came with %q, want the first health round's result (1 of 2 backends up)", ready)
	}
	// The named socket serves although the "web" listener's own port is
	// taken (binding it would have failed), and so do the others.
	client := &http.Client{Timeout: 5 * time.Second}
	for _, addr := range []string{named.Addr().String(), byAddr.Addr().String(), fmt.Sprintf("127.0.0.1:%d", own)} {
		if resp, body := get(t, client, "http://"+addr+"/x"); resp.StatusCode != 200 || !strings.HasPrefix(body, "a GET /x") {
			t.Errorf("%s: %d %q", addr, resp.StatusCode, body)
		}
	}

	// Watchdog: pings at half of WATCHDOG_USEC.
	seen := len(n.messages())
	n.waitFor(t, seen, "WATCHDOG=1", 2*time.Second)

	// SIGUSR1: RELOADING=1 with MONOTONIC_USEC, then READY=1.
	seen = len(n.messages())
	p.signal(syscall.SIGUSR1)
	i, msg := n.waitFor(t, seen, "RELOADING=1", 5*time.Second)
	if !regexp.MustCompile(`(?m)^MONOTONIC_USEC=[1-9][0-9]*$`).MatchString(msg) {
		t.Errorf("RELOADING=1 without MONOTONIC_USEC: %q", msg)
	}
	n.waitFor(t, i+1, "READY=1", 5*time.Second)

	// PATCH /config does the same.
	seen = len(n.messages())
	ctl := unixClient(filepath.Join(p.dir, "ctl.sock"))
	if code, body := control(t, ctl, "PATCH", "/config"); code != 200 {
		t.Fatalf("PATCH /config: %d %s", code, body)
	}
	i, _ = n.waitFor(t, seen, "RELOADING=1", 5*time.Second)
	n.waitFor(t, i+1, "READY=1", 5*time.Second)

	// A reload that fails still ends the reload for systemd, and says why.
	if err := os.WriteFile(p.cfg, []byte(cfg+"Bogus 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	seen = len(n.messages())
	p.signal(syscall.SIGUSR1)
	i, _ = n.waitFor(t, seen, "RELOADING=1", 5*time.Second)
	_, msg = n.waitFor(t, i+1, "READY=1", 5*time.Second)
	if !strings.Contains(msg, "reload failed") {
		t.Errorf("failed reload's READY=1 came with %q", msg)
	}

	seen = len(n.messages())
	p.signal(syscall.SIGTERM)
	n.waitFor(t, seen, "STOPPING=1", 5*time.Second)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
}

// TestSystemdSocketWithoutListener: a passed socket no listener takes
// is an error naming it (systemd would keep it open, and its clients
// would wait for an accept that never comes); READY=1 is never sent.
func TestSystemdSocketWithoutListener(t *testing.T) {
	stray := listenTCP(t)
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n\tService\n\t\tError 503\n\tEnd\nEnd\n", freePort(t))
	p, n := startActivated(t, cfg, []passedSocket{{"extra", stray}})
	if code := p.wait(10 * time.Second); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, p.out.String())
	}
	want := fmt.Sprintf(`systemd socket "extra" on %s matches no listener`, stray.Addr())
	if !strings.Contains(p.out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, p.out.String())
	}
	for _, m := range n.messages() {
		if hasLine(m, "READY=1") {
			t.Errorf("READY=1 sent by an lbd that did not start: %q", n.messages())
		}
	}
}

// TestSystemdNoNotifySocket: without NOTIFY_SOCKET (not under systemd)
// nothing changes: lbd starts and serves.
func TestSystemdNoNotifySocket(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	p := startLBD(t, oneService(be))
	if resp, _ := get(t, http.DefaultClient, "http://"+p.addr+"/"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
