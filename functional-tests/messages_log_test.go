package functionaltests

import (
	"encoding/json"
	"fmt"
	"lbd/internal/testpki"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSplit is startLBD with stdout (the request log with -e) and
// stderr (lbd's messages) kept apart: p.out is stdout, the returned
// buffer stderr.
func startSplit(t *testing.T, cfg string, args ...string) (*proc, *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	cfg = strings.ReplaceAll(cfg, "{PORT}", fmt.Sprint(port))
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &proc{out: &syncBuffer{}, addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, cfg: path, done: make(chan struct{})}
	stderr := &syncBuffer{}
	p.cmd = exec.Command(binary(t, "lbd"), append([]string{"-e", "-f", path}, args...)...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.status = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	p.waitReady(t)
	waitSocket(t, filepath.Join(dir, "ctl.sock"))
	return p, stderr
}

// messagesConfig has a live backend, one nobody listens on (it dies at
// its first request) and a control socket; extra goes before ListenHTTP.
func messagesConfig(live *backend, deadPort int, extra string) string {
	return "Daemon 0\nLogLevel 1\nAlive 60\nControl \"ctl.sock\"\n" + extra +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService \"app\"\n" + live.block() +
		fmt.Sprintf("\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %d\n\t\tEnd\n", deadPort) +
		"\tEnd\nEnd\n"
}

// driveEvents makes lbd log what an operator sees most: requests (one
// reaching the dead backend), a dry-run route, a control API change, a
// reload, a refused reload; it returns when lbd has stopped.
func driveEvents(t *testing.T, p *proc, stderr *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), " dead") {
		if time.Now().After(deadline) {
			t.Fatalf("no backend went down:\n%s", stderr.String())
		}
		if resp, err := http.Get("http://" + p.addr + "/x"); err == nil {
			resp.Body.Close()
		}
	}
	sock := filepath.Join(p.dir, "ctl.sock")
	if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "route", "GET", "/x"); code != 0 {
		t.Fatalf("lbctl route: %d %s", code, errOut)
	}
	lbctlOK(t, sock, "disable", "/1/0/0")
	p.signal(syscall.SIGUSR1)
	waitText(t, stderr, "configuration reloaded")
	cfg, err := os.ReadFile(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfg, append(cfg, "Nonsense 1\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGUSR1)
	waitText(t, stderr, "reload failed")
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("lbd exited %d:\n%s", code, stderr.String())
	}
}

func waitText(t *testing.T, b *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("lbd did not log %q:\n%s", s, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMessageLogJSON: with MessageFormat json every line lbd writes on
// stderr is a JSON object with time, level and msg, and the messages
// about a backend, a reload and a control change carry their source.
// The request log stays Pound's, on stdout.
func TestMessageLogJSON(t *testing.T) {
	for _, how := range []struct{ name, extra, flag string }{
		{"directive", "MessageFormat json\n", ""},
		{"flag", "", "--message-format=json"},
	} {
		t.Run(how.name, func(t *testing.T) {
			live := startBackend(t, "127.0.0.2", "live", echoHandler("live"))
			dead := freePort(t)
			var args []string
			if how.flag != "" {
				args = append(args, how.flag)
			}
			p, stderr := startSplit(t, messagesConfig(live, dead, how.extra), args...)
			driveEvents(t, p, stderr)
			lines := parseJSONLines(t, stderr.String(), 5)
			find := func(msg string) map[string]any {
				t.Helper()
				for _, l := range lines {
					if strings.Contains(l["msg"].(string), msg) {
						return l
					}
				}
				t.Fatalf("no message %q in:\n%s", msg, stderr.String())
				return nil
			}
			cfgRe := regexp.MustCompile(`^` + regexp.QuoteMeta(p.cfg) + `:\d+$`)
			down := find(" dead")
			if down["level"] != "warn" || down["service"] != "app" || down["listener"] != p.addr || down["backend"] != fmt.Sprintf("127.0.0.1:%d", dead) || !cfgRe.MatchString(fmt.Sprint(down["config"])) {
				t.Errorf("backend down: %v", down)
			}
			if l := find("control API change applied: disabled"); l["service"] != "app" || l["backend"] == nil {
				t.Errorf("control change: %v", l)
			}
			if l := find("reload failed"); l["level"] != "error" || !cfgRe.MatchString(fmt.Sprint(l["config"])) {
				t.Errorf("refused reload: %v", l)
			}
			find("configuration reloaded")
			find("starting...")
			for _, l := range lines {
				if l["uri"] == "/route" {
					t.Errorf("a dry-run route was logged as a change: %v", l)
				}
			}
			// The request log: Pound's lines on stdout, untouched.
			for _, line := range strings.Split(strings.TrimSuffix(p.out.String(), "\n"), "\n") {
				if !strings.HasPrefix(line, "lbd: 127.0.0.1 GET /x HTTP/1.1 - ") {
					t.Errorf("stdout line not a request log line: %q", line)
				}
			}
		})
	}
}

// parseJSONLines parses every line of out as a JSON object with the
// three fields every message has; there must be at least least of them.
func parseJSONLines(t *testing.T, out string, least int) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("not a JSON line: %q: %v", line, err)
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"])); err != nil {
			t.Errorf("time: %v in %q", err, line)
		}
		if _, ok := m["msg"].(string); !ok || m["level"] == nil {
			t.Errorf("no msg or level: %q", line)
		}
		lines = append(lines, m)
	}
	if len(lines) < least {
		t.Errorf("only %d lines:\n%s", len(lines), out)
	}
	return lines
}

// TestMessageLogText: without MessageFormat the messages are the lines
// they always were, "lbd: message", with a source the text does not name
// appended as key=value, and nothing in logrus's "time=… level=…" form.
func TestMessageLogText(t *testing.T) {
	live := startBackend(t, "127.0.0.2", "live", echoHandler("live"))
	dead := freePort(t)
	p, stderr := startSplit(t, messagesConfig(live, dead, ""))
	driveEvents(t, p, stderr)
	out := stderr.String()
	exact := []string{
		"lbd: starting...\n",
		"lbd: configuration reloaded\n",
		"lbd: shutting down...\n",
	}
	for _, want := range exact {
		if !strings.Contains(out, want) {
			t.Errorf("no line %q in:\n%s", want, out)
		}
	}
	patterns := []string{
		`(?m)^lbd: Backend 127\.0\.0\.1:` + fmt.Sprint(dead) + ` dead \(.*\) config=` + regexp.QuoteMeta(p.cfg) + `:\d+ listener=` + regexp.QuoteMeta(p.addr) + ` service=app$`,
		`(?m)^lbd: control API change applied: disabled backend=\S+ listener=\S+ service=app$`,
		`(?m)^lbd: reload failed, keeping the running configuration: ` + regexp.QuoteMeta(p.cfg) + `:\d+\.\d+-\d+: `,
	}
	for _, re := range patterns {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no line matching %s in:\n%s", re, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(line, "lbd: ") || strings.Contains(line, "level=") {
			t.Errorf("not an lbd text line: %q", line)
		}
	}
}

// TestMessageLogSectionSources: the messages of an HTTPS listener's
// certificate watcher name the listener and its statement, and the
// cluster's name the Cluster section.
func TestMessageLogSectionSources(t *testing.T) {
	r := startRedisServer(t)
	p := newTLSPKI(t)
	issue := func(org string) []byte {
		c, err := testpki.Issue(testpki.Spec{CommonName: "a.test", DNSNames: []string{"a.test"}, Org: org}, p.ca)
		if err != nil {
			t.Fatal(err)
		}
		return c.ChainPEM(p.ca)
	}
	site := p.write(t, "site.pem", issue("v1"))
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	cfg := fmt.Sprintf("MessageFormat json\nDaemon 0\nControl \"ctl.sock\"\n"+
		"Cluster\n\tNode \"a\"\n\tRedis %q\nEnd\n"+
		"ListenHTTPS \"front\"\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tCert %q\n\tService\n%s\tEnd\nEnd\n", r.sock, site, be.block())
	lbd, stderr := startSplit(t, cfg)
	waitText(t, stderr, "joined through Redis")
	if err := testpki.WriteFile(site, issue("v2")); err != nil {
		t.Fatal(err)
	}
	waitText(t, stderr, "certificate reloaded")
	lbd.signal(syscall.SIGTERM)
	if code := lbd.wait(10 * time.Second); code != 0 {
		t.Fatalf("lbd exited %d:\n%s", code, stderr.String())
	}
	lines := parseJSONLines(t, stderr.String(), 4)
	want := map[string]map[string]any{
		"joined through Redis": {"config": lbd.cfg + ":4"},
		"certificate reloaded": {"config": lbd.cfg + ":8", "listener": "front"},
	}
	for msg, fields := range want {
		found := false
		for _, l := range lines {
			if !strings.Contains(l["msg"].(string), msg) {
				continue
			}
			found = true
			for k, v := range fields {
				if l[k] != v {
					t.Errorf("%q: %s = %v, want %v (%v)", msg, k, l[k], v, l)
				}
			}
		}
		if !found {
			t.Errorf("no message %q in:\n%s", msg, stderr.String())
		}
	}
}
