// Package functionaltests drives the real lbd binary: each test writes a
// config, starts lbd on 127.0.0.1 with real backends on 127.0.0.x and
// talks to it with real clients and raw sockets.
package functionaltests

import (
	"bufio"
	"bytes"
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

var (
	binMu    sync.Mutex
	binDir   string
	binBuilt = map[string]string{}
)

// binary returns the path of cmd/<name>: $LBD_BIN / $LBCTL_BIN when set
// (make test builds them), else built once into a temp dir.
func binary(t *testing.T, name string) string {
	t.Helper()
	if p := os.Getenv(strings.ToUpper(name) + "_BIN"); p != "" {
		return p
	}
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binBuilt[name]; ok {
		return p
	}
	if binDir == "" {
		d, err := os.MkdirTemp("", "lbd-ft-bin")
		if err != nil {
			t.Fatal(err)
		}
		binDir = d
	}
	p := filepath.Join(binDir, name)
	// Built with Lua, as make builds it: without liblua5.4-dev the
	// build, and so the tests, fail rather than skip Lua.
	out, err := exec.Command("go", "build", "-tags", "lua", "-o", p, "lbd/cmd/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	binBuilt[name] = p
	return p
}

// freePort returns a TCP port that is free on 127.0.0.1 right now.
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for try := 0; ; try++ {
		if try == 1000 {
			t.Fatalf("no port the run has not handed out yet (%d given)", len(portsGiven))
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close() // only its number was wanted
		// The kernel may hand a just-closed port out again; a test that asks
		// for several ports before binding them must get different ones.
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{} // every port freePort returned in this run
)

// proc is a running lbd.
type proc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	addr   string // first listener, host:port
	dir    string
	cfg    string
	done   chan struct{}
	status error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLBD writes cfg (with {PORT} replaced by a free port) and starts
// lbd -e -f on it, waiting until the listener accepts. It is stopped (by
// PID) when the test ends.
func startLBD(t *testing.T, cfg string, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	cfg = strings.ReplaceAll(cfg, "{PORT}", fmt.Sprint(port))
	cfg = strings.ReplaceAll(cfg, "{DIR}", dir)
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", port), args...)
}

// runLBD starts lbd -e -f path in dir and waits until addr accepts.
func runLBD(t *testing.T, dir, path, addr string, args ...string) *proc {
	t.Helper()
	return runBinary(t, binary(t, "lbd"), dir, path, addr, args...)
}

// runBinary is runLBD with the lbd binary at bin (a link named pound, say).
func runBinary(t *testing.T, bin, dir, path, addr string, args ...string) *proc {
	t.Helper()
	p := &proc{out: &syncBuffer{}, addr: addr, dir: dir, cfg: path, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"-e", "-f", path}, args...)...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.status = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	p.waitReady(t)
	// lbd opens its control socket after the listeners: a test that
	// talks to it right away must not find it missing.
	if cfg, err := os.ReadFile(path); err == nil {
		if m := controlSocketRe.FindSubmatch(cfg); m != nil {
			sock := string(m[1])
			if !filepath.IsAbs(sock) {
				sock = filepath.Join(dir, sock)
			}
			waitSocket(t, sock)
		}
	}
	return p
}

// controlSocketRe finds a configuration's Control socket.
var controlSocketRe = regexp.MustCompile(`(?m)^\s*Control\s+"([^"]+)"`)

func (p *proc) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("lbd exited early: %v\n%s", p.status, p.out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("lbd did not listen on %s:\n%s", p.addr, p.out.String())
}

func (p *proc) signal(s syscall.Signal) { p.cmd.Process.Signal(s) }

// replaceInConfig rewrites lbd's configuration file with the first old
// replaced by new (for a reload to pick up).
func (p *proc) replaceInConfig(t *testing.T, old, new string) {
	t.Helper()
	cfg, err := os.ReadFile(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfg, []byte(strings.Replace(string(cfg), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wait waits for exit and returns the exit code (-1 on timeout).
func (p *proc) wait(d time.Duration) int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		return -1
	}
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}

// backend is a real HTTP backend on 127.0.0.1 for the tests.
type backend struct {
	name string
	ln   net.Listener
	srv  *http.Server
	addr string
	port int
}

// startBackend serves h on a free port of host (127.0.0.x).
func startBackend(t *testing.T, host, name string, h http.Handler) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, ln: ln, addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port}
	b.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.srv.Close() })
	return b
}

func (b *backend) stop() { b.srv.Close() }

// rawBackend is a scripted TCP backend on 127.0.0.2 for what a real HTTP
// server would never do (tunnels, truncated or reset responses): serve
// runs for each connection once its request head has been read, and the
// connection is closed when it returns.
func rawBackend(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *backend {
	t.Helper()
	return connBackend(t, "127.0.0.2", func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err == nil {
			serve(c, br)
		}
	})
}

// connBackend runs handle, in its own goroutine, for every connection
// accepted on a free port of host; handle owns (and closes) the conn.
func connBackend(t *testing.T, host string, handle func(c net.Conn)) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return &backend{addr: ln.Addr().String()}
}

// block renders a BackEnd block for b, indented for a service.
func (b *backend) block() string {
	host, port, _ := net.SplitHostPort(b.addr)
	return fmt.Sprintf("\t\tBackEnd\n\t\t\tAddress %s\n\t\t\tPort %s\n\t\tEnd\n", host, port)
}

// rawExchange sends raw bytes and reads the whole answer until the peer
// closes or idle passes; closed reports whether the peer closed.
func rawExchange(t *testing.T, addr string, data []byte, idle time.Duration) (resp []byte, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	buf := make([]byte, 64<<10)
	for {
		c.SetReadDeadline(time.Now().Add(idle))
		n, err := c.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return out.Bytes(), false
			}
			return out.Bytes(), true
		}
	}
}

// statusOf returns the status code of the first response in raw.
func statusOf(raw []byte) int {
	r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		return 0
	}
	r.Body.Close()
	return r.StatusCode
}

// waitLog waits for want in lbd's log: the log reaches the test through a
// pipe and may trail the answer it belongs to.
func waitLog(t *testing.T, lbd *proc, want string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(lbd.out.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in lbd's log after %v:\n%s", want, d, lbd.out.String())
		}
	}
}
