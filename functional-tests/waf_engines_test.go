package functionaltests

// The two WAFs the differential test compares: nginx with libmodsecurity
// (what zproxy and nginx deployments run) and lbd with Coraza, both on the
// OWASP CRS as Debian ships it (modsecurity-crs), from the same rule files.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	modsecModule  = "/usr/lib/nginx/modules/ngx_http_modsecurity_module.so"
	wafPackages   = "nginx-light libnginx-mod-http-modsecurity modsecurity-crs"
	wafCorpusPath = "../testdata/waf/corpus.jsonl"
)

// wafPrereqs fails the test, naming the Debian packages, when nginx, its
// ModSecurity module or Debian's CRS is missing: CI installs them, so a
// missing one is a broken machine, not a reason to skip.
func wafPrereqs(t *testing.T) string {
	t.Helper()
	var missing []string
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx" // not on a non-root PATH
	}
	for _, f := range []string{nginx, modsecModule, crs3Setup, filepath.Join(crs3Rules, "REQUEST-942-APPLICATION-ATTACK-SQLI.conf")} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("the WAF differential test needs nginx with libmodsecurity and the OWASP CRS: apt-get install %s (missing: %s)",
			wafPackages, strings.Join(missing, ", "))
	}
	return nginx
}

// nginxProc is a private nginx: its own prefix, pid file, logs and temp
// paths, all under one test directory.
type nginxProc struct {
	cmd    *exec.Cmd
	addr   string
	errLog string
	done   chan struct{}
}

// startNginxWAF starts nginx with ModSecurity on rules, proxying to
// backend, on a free loopback port, and stops it (its process group, by
// PID) when the test ends.
func startNginxWAF(t *testing.T, nginx, rules, backend string) *nginxProc {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	n := &nginxProc{addr: fmt.Sprintf("127.0.0.1:%d", port), errLog: filepath.Join(dir, "error.log"), done: make(chan struct{})}
	// Root in CI: workers as root read the rules under t.TempDir(); as
	// another user nginx ignores "user" with a warning and runs as itself.
	conf := fmt.Sprintf(`load_module %s;
user root;
worker_processes 1;
daemon off;
pid %s/nginx.pid;
error_log %s info;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	client_body_buffer_size 1m;
	client_max_body_size 16m;
	# Closed at once, so that ModSecurity's log lines of a request are
	# written before the client sees the end of its connection.
	lingering_close off;
	server {
		listen %[4]s;
		modsecurity on;
		modsecurity_rules_file %[5]s;
		location / {
			proxy_pass http://%[6]s;
		}
	}
}
`, modsecModule, dir, n.errLog, n.addr, rules, backend)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	n.cmd = exec.Command(nginx, "-p", dir, "-e", n.errLog, "-c", path)
	n.cmd.Stdout, n.cmd.Stderr = out, out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(n.stop)
	deadline := time.Now().Add(30 * time.Second) // the CRS takes a while to compile
	for time.Now().Before(deadline) {
		select {
		case <-n.done:
			log, _ := os.ReadFile(n.errLog) // best effort: the error is in out or here
			t.Fatalf("nginx exited early: %s\n%s", out.String(), log)
		default:
		}
		if c, err := net.DialTimeout("tcp", n.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nginx did not listen on %s: %s", n.addr, out.String())
	return nil
}

// stop ends nginx's master and workers: TERM, then KILL to the group.
func (n *nginxProc) stop() {
	pgid := n.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-n.done
	}
}

// wafEntry is one corpus request (testdata/waf/gen writes them).
type wafEntry struct {
	ID       string      `json:"id"`
	Category string      `json:"category"`
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	Proto    string      `json:"proto"`
	Headers  [][2]string `json:"headers"`
	Body     string      `json:"body"`
	BodyB64  string      `json:"body_b64"`
}

func loadWAFCorpus(t *testing.T) []wafEntry {
	t.Helper()
	data, err := os.ReadFile(wafCorpusPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []wafEntry
	seen := map[string]bool{}
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e wafEntry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("corpus line %d: %v", i+1, err)
		}
		if e.ID == "" || seen[e.ID] || e.Method == "" || e.Path == "" {
			t.Fatalf("corpus line %d: empty or repeated id, method or path: %s", i+1, line)
		}
		seen[e.ID] = true
		out = append(out, e)
	}
	return out
}

// raw renders e as the bytes sent to both proxies: the request line, the
// headers as written, Content-Length when there is a body and no framing
// header, Connection: close when no Connection header, then the body.
func (e wafEntry) raw() ([]byte, error) {
	body := []byte(e.Body)
	if e.BodyB64 != "" {
		var err error
		if body, err = base64.StdEncoding.DecodeString(e.BodyB64); err != nil {
			return nil, fmt.Errorf("%s: body_b64: %v", e.ID, err)
		}
	}
	proto := e.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\r\n", e.Method, e.Path, proto)
	framed, conn := false, false
	for _, h := range e.Headers {
		switch strings.ToLower(h[0]) {
		case "content-length", "transfer-encoding":
			framed = true
		case "connection":
			conn = true
		}
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if len(body) > 0 && !framed {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	if !conn {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes(), nil
}

// exchange sends req on a new connection and returns the final status
// (interim 1xx answers skipped; 0 when no response came), then reads on
// until the peer closes, so that its logging for the request is done.
// A connection the response keeps open (the request asked for an
// upgrade) gets a short grace instead.
func exchange(addr string, req []byte, method string, limit time.Duration) int {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(limit))
	if _, err := c.Write(req); err != nil {
		return 0
	}
	br := bufio.NewReader(c)
	status := 0
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			break
		}
		status = resp.StatusCode
		if status >= 200 || status == http.StatusSwitchingProtocols {
			io.Copy(io.Discard, resp.Body) // drained only to reach the close
			resp.Body.Close()
			if !resp.Close {
				c.SetDeadline(time.Now().Add(300 * time.Millisecond))
			}
			break
		}
	}
	io.Copy(io.Discard, br) // until close or the deadline: either ends it
	return status
}
