package functionaltests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
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

// lbctlRun runs the lbctl binary under the name prog ("lbctl", or
// "poundctl" through a symlink) with extra environment variables and
// returns its stdout, stderr and exit status.
func lbctlRun(t *testing.T, prog string, env []string, args ...string) (string, string, int) {
	t.Helper()
	path := binary(t, "lbctl")
	if prog == "poundctl" {
		path = poundctlLink(t, path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(withoutEnv(os.Environ(), "LBCTL_SOCKET"), env...)
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns stdout, stderr and the exit status.
func runCmd(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	return out.String(), errb.String(), 0
}

// poundctlLink returns a "poundctl" symlink to the lbctl binary.
func poundctlLink(t *testing.T, lbctl string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "poundctl")
	if err := os.Symlink(lbctl, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// waitSocket waits until lbd has created its control socket (it does so
// after the listeners accept).
func waitSocket(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("control socket %s did not appear", path)
}

// whoAnswered sends n requests (cookie "" = none), each on a new
// connection, and counts the backends that answered (echoHandler names).
func whoAnswered(t *testing.T, addr string, n int, cookie string) map[string]int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	seen := map[string]int{}
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/who", nil)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen[strings.Fields(string(body) + " ?")[0]]++
	}
	return seen
}

// eventually polls whoAnswered until want says yes, for backends whose
// state changes asynchronously (a re-enabled zproxy backend is probed
// first).
func eventually(t *testing.T, addr string, want func(map[string]int) bool) {
	t.Helper()
	var seen map[string]int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if seen = whoAnswered(t, addr, 10, ""); want(seen) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("traffic never matched: %v", seen)
}

// lbctlStep is one command in a sequence against a running lbd; check,
// when set, verifies the effect on real traffic.
type lbctlStep struct {
	name   string
	prog   string // "" = lbctl
	env    []string
	args   []string
	code   int
	outHas []string
	outRe  []string // regular expressions stdout must match (tables)
	errHas string   // "" = stderr must be empty
	check  func(t *testing.T)
}

// runSteps runs the steps in order; they share one lbd.
func runSteps(t *testing.T, steps []lbctlStep) {
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			prog := st.prog
			if prog == "" {
				prog = "lbctl"
			}
			out, errOut, code := lbctlRun(t, prog, st.env, st.args...)
			if code != st.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, st.code, out, errOut)
			}
			for _, s := range st.outHas {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, re := range st.outRe {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("stdout does not match %s:\n%s", re, out)
				}
			}
			if (st.errHas == "") != (errOut == "") || !strings.Contains(errOut, st.errHas) {
				t.Errorf("stderr %q, want %q", errOut, st.errHas)
			}
			if st.check != nil {
				st.check(t)
			}
		})
	}
}

// poundCtlConfig has a Control socket, and a Control service over TCP
// before the balanced service "web" (cookie sessions).
const poundCtlConfig = "Daemon 0\nLogLevel 0\nAlive 1\nControl \"{DIR}/ctl.sock\"\n" +
	"ListenHTTP \"main\"\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 1\n" +
	"\tService \"ctl\"\n\t\tURL \"^/(listener|core|log|session|metrics)\"\n\t\tControl\n\tEnd\n" +
	"\tService \"web\"\n%s\t\tSession\n\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 300\n\t\tEnd\n\tEnd\nEnd\n"

// TestLbctlPoundSocket drives every Pound-dialect command of lbctl and
// poundctl against the real lbd and checks the effect on real traffic.
func TestLbctlPoundSocket(t *testing.T) {
	one := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	two := startBackend(t, "127.0.0.3", "two", echoHandler("two"))
	p := startLBD(t, fmt.Sprintf(poundCtlConfig, one.block()+two.block()))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	s := []string{"-s", sock}
	onlyTwo := func(t *testing.T) {
		if seen := whoAnswered(t, p.addr, 10, ""); seen["two"] != 10 {
			t.Errorf("with backend one disabled: %v", seen)
		}
	}
	bothServe := func(t *testing.T) {
		eventually(t, p.addr, func(m map[string]int) bool { return m["one"] > 0 && m["two"] > 0 })
	}
	pinnedToOne := func(t *testing.T) {
		if seen := whoAnswered(t, p.addr, 6, "sid=k1"); seen["one"] != 6 {
			t.Errorf("session k1 -> backend 0: %v", seen)
		}
	}
	steps := []lbctlStep{
		{name: "table", args: s, outRe: []string{`\n/0 +listener +- +http://` + regexp.QuoteMeta(sock) + ` +enabled`,
			`\n/1/1 +service +web +- +enabled( +-){5} +0\n`,
			`\n/1/1/0 +backend +- +http://` + regexp.QuoteMeta(one.addr) + ` +active +5 +0 +- +0 +- +-\n`}},
		{name: "poundctl listing", prog: "poundctl", args: s, outHas: []string{
			"  1. Listener \"main\" http://" + p.addr + " enabled\n",
			"     1. Service \"web\" active\n        0. backend (0) http " + one.addr + " 5 alive active\n",
			"     Session type: COOKIE\n"}},
		{name: "socket from config", args: []string{"-f", p.cfg, "-q", "list", "/main/web"}, outHas: []string{"/main/web\n/main/web/0\n/main/web/1\n"}},
		{name: "socket from environment", env: []string{"LBCTL_SOCKET=" + sock}, args: []string{"-j", "list", "/1/1/1"},
			outHas: []string{`"address":"` + two.addr + `"`}},
		{name: "control service over http", args: []string{"-s", "http://" + p.addr, "-q", "list", "/1/1"}, outHas: []string{"/1/1\n/1/1/0\n/1/1/1\n"}},
		{name: "core", args: append(s, "core"), outHas: []string{fmt.Sprintf("PID: %d\n", p.cmd.Process.Pid)}},
		{name: "disable backend", args: append(s, "disable", "/main/web/0"), check: onlyTwo},
		{name: "listing shows disabled", args: append(s, "list", "/1/1/0"), outHas: []string{"disabled"}},
		{name: "enable backend", args: append(s, "on", "/1/1/0"), check: bothServe},
		{name: "add session", args: append(s, "add", "/1/1/0", "k1"), outRe: []string{`\n/1/1 +service +web +- +enabled( +-){5} +1\n`}, check: pinnedToOne},
		{name: "session list", args: append(s, "session", "list", "/1/1"), outHas: []string{"k1", "0 (" + one.addr + ")"}},
		{name: "poundctl delete session", prog: "poundctl", args: append(s, "delete", "/1/1", "k1"), outHas: []string{"Service \"web\" active\n"}},
		{name: "session list empty", args: append(s, "-q", "session", "list", "/1/1")},
		{name: "session flush", args: append(s, "session", "add", "/1/1/1", "k2")},
		{name: "session flush backend", args: append(s, "session", "flush", "/1/1/1")},
		{name: "flushed", args: append(s, "-q", "session", "list")},
		{name: "log set", args: append(s, "log", "/1", "combined"), outHas: []string{"Listener 1 log level: combined"}},
		{name: "log get", args: append(s, "log", "/main"), outHas: []string{"Global log level: null\nListener \"main\" log level: combined\n"}},
		{name: "log clear", args: append(s, "log", "-d", "/1"), outHas: []string{"Listener 1 log level: (global)"}},
		{name: "metrics", args: append(s, "metrics"), outHas: []string{`pound_backend_requests_total{listener="1",listener_name="main",service="1",service_name="web",backend="0"} `}},
		{name: "version", args: append(s, "version"), outHas: []string{"lbctl: ", "server: "}},
		{name: "unknown backend", args: append(s, "disable", "/1/1/7"), code: 1, errHas: "lbctl: backend 7 not found in service 1 of listener 1"},
		{name: "poundctl unknown listener", prog: "poundctl", args: append(s, "list", "/9"), code: 1, errHas: "poundctl: Not Found\n"},
		{name: "control socket cannot be disabled", args: append(s, "off", "/0"), code: 1, errHas: "lbctl: listener 0 is the control socket itself: it cannot be changed\n"},
		{name: "backend add refused", args: append(s, "backend", "add", "/1/1", "127.0.0.9:80"), code: 1, errHas: "cannot add backends"},
	}
	runSteps(t, steps)
}

// zproxyCtlConfig is a zproxy-dialect configuration (listener Name,
// RoutingPolicy) with cookie sessions.
const zproxyCtlConfig = "Daemon 0\nLogLevel 0\nAlive 1\n" +
	"ListenHTTP\n\tName main\n\tAddress 127.0.0.1\n\tPort %s\n\txHTTP 1\n" +
	"\tService \"web\"\n\t\tRoutingPolicy ROUND_ROBIN\n%s\t\tSession\n\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 300\n\t\tEnd\n\tEnd\nEnd\n"

// TestLbctlZproxySocket drives the zproxy-dialect commands, reload
// included, against lbd -C.
func TestLbctlZproxySocket(t *testing.T) {
	one := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	two := startBackend(t, "127.0.0.3", "two", echoHandler("two"))
	three := startBackend(t, "127.0.0.4", "three", echoHandler("three"))
	zsock := filepath.Join(t.TempDir(), "z.sock")
	p := startLBD(t, fmt.Sprintf(zproxyCtlConfig, "{PORT}", one.block()+two.block()), "-C", zsock)
	waitSocket(t, zsock)
	_, port, _ := net.SplitHostPort(p.addr)
	id := func(b *backend) string { return strings.Replace(b.addr, ":", "-", 1) }
	rewrite := func(text string) func(*testing.T) {
		return func(t *testing.T) {
			if err := os.WriteFile(p.cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := []string{"-s", zsock}
	steps := []lbctlStep{
		{name: "table", args: s, outRe: []string{`\n/0 +listener +main +http://` + regexp.QuoteMeta(p.addr) + ` +enabled +- +- +\d+ `,
			`\n/0/0/0 +backend +` + regexp.QuoteMeta(id(one)) + ` +http://` + regexp.QuoteMeta(one.addr) + ` +active +1 +1 +\d+ +\d+ `,
			`\n/0/0/1 +backend +` + regexp.QuoteMeta(id(two)) + ` `}},
		{name: "disable by id", args: append(s, "disable", "/0/web/"+id(one)), check: func(t *testing.T) {
			if seen := whoAnswered(t, p.addr, 6, ""); seen["two"] != 6 {
				t.Errorf("with one disabled: %v", seen)
			}
		}},
		{name: "enable by index", args: append(s, "enable", "/0/web/0"), check: func(t *testing.T) {
			eventually(t, p.addr, func(m map[string]int) bool { return m["one"] > 0 && m["two"] > 0 })
		}},
		{name: "service cannot be disabled", args: append(s, "disable", "/0/web"), code: 1, errHas: "only backends"},
		{name: "add session", args: append(s, "-q", "add", "/0/web/"+id(two), "k1"), check: func(t *testing.T) {
			if seen := whoAnswered(t, p.addr, 6, "sid=k1"); seen["two"] != 6 {
				t.Errorf("session k1 -> two: %v", seen)
			}
		}},
		{name: "session list", args: append(s, "session", "list", "/0/web"), outHas: []string{"k1", "1 (" + id(two) + ")"}},
		{name: "session flush", args: append(s, "session", "flush", "/0/web")},
		{name: "session list empty", args: append(s, "-q", "session", "list")},
		{name: "backend add", args: append(s, "backend", "add", "--weight", "2", "/0/web", three.addr), check: func(t *testing.T) {
			eventually(t, p.addr, func(m map[string]int) bool { return m["three"] > 0 })
		}},
		{name: "added backend listed", args: append(s, "list", "/0/web/2"), outRe: []string{`\n/0/web/2 +backend +` + regexp.QuoteMeta(id(three)) + ` +http://\S+ +active +1 +2 `}},
		{name: "reload drops runtime backend", args: append(s, "reload"), check: func(t *testing.T) {
			if out, _, _ := lbctlRun(t, "lbctl", nil, append(s, "-q", "list", "/0/web")...); out != "/0/web\n/0/web/0\n/0/web/1\n" {
				t.Errorf("after reload: %q", out)
			}
		}},
		{name: "reload applies the file", args: append(s, "reload"),
			check: func(t *testing.T) {
				rewrite(fmt.Sprintf(zproxyCtlConfig, port, one.block()+two.block()+three.block()))(t)
				if _, errOut, code := lbctlRun(t, "lbctl", nil, append(s, "reload")...); code != 0 {
					t.Fatalf("reload: %s", errOut)
				}
				eventually(t, p.addr, func(m map[string]int) bool { return m["three"] > 0 })
			}},
		{name: "reload refuses a broken file", args: append(s, "-q", "list", "/0/web/2"), outHas: []string{"/0/web/2\n"},
			check: func(t *testing.T) {
				rewrite("ListenHTTP\n\tBogus 1\nEnd\n")(t)
				_, errOut, code := lbctlRun(t, "lbctl", nil, append(s, "reload")...)
				if want := "lbctl: Failed to reload configuration:\n  " + p.cfg + ":2.9-13: unrecognized keyword \"Bogus\"\n"; code != 1 || errOut != want {
					t.Errorf("broken reload: %d %q", code, errOut)
				}
				if seen := whoAnswered(t, p.addr, 3, ""); seen["?"] > 0 {
					t.Errorf("lbd stopped serving after a failed reload: %v", seen)
				}
			}},
		{name: "unknown backend", args: append(s, "off", "/0/web/9"), code: 1, errHas: "lbctl: Backend 9 in service web in listener 0 not found.\n"},
		{name: "core refused", args: append(s, "core"), code: 1, errHas: "core: not available on the zproxy control socket"},
		{name: "version", args: append(s, "version"), outHas: []string{"server: zproxy dialect on " + zsock}},
	}
	runSteps(t, steps)
}

// TestLbctlConnectionErrors: a missing socket, a socket the caller may
// not open, and a socket that is not lbd's all fail with status 1 and a
// clear message.
func TestLbctlConnectionErrors(t *testing.T) {
	sockDir := worldReadableDir(t)
	one := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	sock := filepath.Join(sockDir, "ctl.sock")
	cfg := "Daemon 0\nLogLevel 0\nControl \"" + sock + "\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n" + one.block() + "\tEnd\nEnd\n"
	startLBD(t, cfg)
	waitSocket(t, sock)
	missing := filepath.Join(sockDir, "missing.sock")
	t.Run("no socket", func(t *testing.T) {
		_, errOut, code := lbctlRun(t, "lbctl", nil, "-s", missing, "list")
		want := "lbctl: control socket " + missing + ": dial unix " + missing + ": connect: no such file or directory"
		if code != 1 || !strings.HasPrefix(errOut, want) {
			t.Errorf("got %d %q, want prefix %q", code, errOut, want)
		}
	})
	t.Run("no control statement", func(t *testing.T) {
		cfgPath := writeFile(t, t.TempDir(), "plain.cfg", "Daemon 0\n")
		_, errOut, code := lbctlRun(t, "lbctl", nil, "-f", cfgPath, "list")
		if code != 1 || !strings.Contains(errOut, "no Control statement; use the -s option") {
			t.Errorf("got %d %q", code, errOut)
		}
	})
	t.Run("permission denied", func(t *testing.T) {
		_, errOut, code := lbctlDenied(t, sock, sockDir)
		if code != 1 || !regexp.MustCompile(`^lbctl: control socket .*: connect: permission denied \(`).MatchString(errOut) {
			t.Errorf("got %d %q", code, errOut)
		}
	})
}

// worldReadableDir is a temp dir (mode 0755) whose parents others can
// traverse too (t.TempDir's are 0700).
func worldReadableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lbctl-ft")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// lbctlDenied runs lbctl on a socket (mode 0600, owned by this user) so
// that opening it is refused: as root, whom permissions do not stop, by
// running a copy of lbctl as nobody; otherwise by taking the owner's write
// permission away.
func lbctlDenied(t *testing.T, sock, dir string) (string, string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(sock, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(sock, 0o600)
		return lbctlRun(t, "lbctl", nil, "-s", sock, "list")
	}
	data, err := os.ReadFile(binary(t, "lbctl"))
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "lbctl")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-s", sock, "list")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return runCmd(t, cmd)
}
