package functionaltests

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const goodConfig = "Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort 18999\n\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\t\tPort 80\n\t\tEnd\n\tEnd\nEnd\n"

// badConfig has three errors; all must be reported in one run.
const badConfig = "Daemon 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort 18999\n\tBogus 1\n\txHTTP 9\n\tService\n\t\tBackEnd\n\t\t\tPort 80\n\t\tEnd\n\tEnd\nEnd\n"

// runCLI runs the binary at path with args in dir and returns its
// combined output and exit code.
func runCLI(t *testing.T, path, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatal(err)
	}
	return string(out), 0
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckConfigCommandLine(t *testing.T) {
	lbd := binary(t, "lbd")
	dir := t.TempDir()
	pound := filepath.Join(dir, "pound")
	if err := os.Symlink(lbd, pound); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "good.cfg", goodConfig)
	writeFile(t, dir, "bad.cfg", badConfig)
	writeFile(t, dir, "empty.cfg", "# nothing to serve\nDaemon 0\n")
	writeFile(t, dir, "typo.cfg", strings.Replace(goodConfig, "Port", "Prot", 1))
	writeFile(t, dir, "redis.cfg", "Cluster\n\tRedis \"127.0.0.1:99999\"\nEnd\n"+goodConfig)
	diag := regexp.MustCompile(`^(lbd|pound): bad\.cfg:\d+\.\d+(-\d+(\.\d+)?)?: `)
	cases := []struct {
		name     string
		bin      string
		args     []string
		code     int
		out      string // exact output, unless match is set
		match    string // substring the output must contain
		errLines int    // number of diagnostic lines expected
	}{
		{name: "good config is silent", bin: lbd, args: []string{"-c", "-f", "good.cfg"}},
		{name: "verbose says OK", bin: lbd, args: []string{"-c", "-v", "-f", "good.cfg"}, match: "lbd: Config file good.cfg is OK"},
		{name: "glued -W flags", bin: lbd, args: []string{"-Wno-dns", "-Wno-warn-deprecated", "-W", "include-dir=.", "-c", "-f", "good.cfg"}},
		{name: "unknown -W feature ignored", bin: lbd, args: []string{"-W", "close-extra-fds", "-c", "-f", "good.cfg"}},
		{name: "unknown flag: one line", bin: lbd, args: []string{"-x", "-c", "-f", "good.cfg"}, code: 1, out: "lbd: flag provided but not defined: -x\n"},
		{name: "flag without its value: one line", bin: lbd, args: []string{"-c", "-f"}, code: 1, out: "lbd: flag needs an argument: -f\n"},
		{name: "bad config reports every error", bin: lbd, args: []string{"-c", "-f", "bad.cfg"}, code: 1, errLines: 3},
		// Pound stops at the first error, and so does lbd invoked as pound.
		{name: "as pound: the first error only", bin: pound, args: []string{"-c", "-f", "bad.cfg"}, code: 1, match: "pound: bad.cfg:", errLines: 1},
		{name: "missing file", bin: lbd, args: []string{"-c", "-f", "nope.cfg"}, code: 1, match: "nope.cfg"},
		{name: "version", bin: lbd, args: []string{"-V"}, match: "lbd"},
		{name: "no listener refused", bin: lbd, args: []string{"-c", "-f", "empty.cfg"}, code: 1,
			out: "lbd: empty.cfg: no listeners defined\n"},
		// Pound 4's -c passes a file without listeners; its start refuses it.
		{name: "as pound: no listener passes -c", bin: pound, args: []string{"-c", "-f", "empty.cfg"}},
		{name: "as pound: no listener refused at start", bin: pound, args: []string{"-e", "-f", "empty.cfg"}, code: 1,
			out: "pound: no listeners defined\n"},
		{name: "misspelt keyword names the closest", bin: lbd, args: []string{"-c", "-f", "typo.cfg"}, code: 1,
			match: `: unrecognized keyword "Prot"; did you mean "Port"?`},
		{name: "as pound: Pound's wording", bin: pound, args: []string{"-c", "-f", "typo.cfg"}, code: 1,
			match: ": unrecognized keyword\n"},
		{name: "Redis port out of range, one error", bin: lbd, args: []string{"-c", "-f", "redis.cfg"}, code: 1,
			out: `lbd: redis.cfg:2.15-31: invalid Redis address "127.0.0.1:99999": port "99999" is not a number from 1 to 65535` + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, tc.bin, dir, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			}
			if tc.match == "" && tc.errLines == 0 && out != tc.out {
				t.Fatalf("output %q, want %q", out, tc.out)
			}
			if tc.match != "" && !strings.Contains(out, tc.match) {
				t.Fatalf("output %q lacks %q", out, tc.match)
			}
			if tc.errLines > 0 {
				n := 0
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if diag.MatchString(l) {
						n++
					}
				}
				if n != tc.errLines {
					t.Fatalf("%d diagnostics in %q, want %d", n, out, tc.errLines)
				}
			}
		})
	}
}

func TestDumpConfigIsJSON(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "good.cfg", goodConfig)
	out, code := runCLI(t, binary(t, "lbd"), dir, "--dump-config", "-f", "good.cfg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if _, ok := m["listeners"]; !ok {
		t.Fatalf("no listeners in %s", out)
	}
}

func TestPIDFileAndSignals(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGHUP graceful", syscall.SIGHUP}, {"SIGINT graceful", syscall.SIGINT}, {"SIGTERM immediate", syscall.SIGTERM}, {"SIGQUIT immediate", syscall.SIGQUIT}} {
		t.Run(tc.name, func(t *testing.T) {
			p := startLBD(t, oneService(be), "-p", "lbd.pid")
			pidfile := filepath.Join(p.dir, "lbd.pid")
			// lbd writes its PID file last, once its listeners and
			// control socket serve: the listener may answer just before.
			waitFor(t, "the PID file", func() bool {
				b, err := os.ReadFile(pidfile)
				return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(p.cmd.Process.Pid)
			})
			p.signal(tc.sig)
			if code := p.wait(10 * time.Second); code != 0 {
				t.Fatalf("exit code %d\n%s", code, p.out.String())
			}
			if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
				t.Fatalf("PID file left behind: %v", err)
			}
		})
	}
}

// TestSignalAsSoonAsListening: a stop signal sent the moment the
// listener accepts (what a harness does right after its last reply) is
// handled, exit status 0, never the signal's default action.
func TestSignalAsSoonAsListening(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	dir := t.TempDir()
	port := freePort(t)
	cfg := strings.ReplaceAll(oneService(be), "{PORT}", fmt.Sprint(port))
	path := writeFile(t, dir, "lbd.cfg", cfg)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		for i := 0; i < 5; i++ {
			cmd := exec.Command(binary(t, "lbd"), "-e", "-f", path)
			cmd.Dir = dir
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
					c.Close()
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			cmd.Process.Signal(sig)
			checkHandledExit(t, cmd, fmt.Sprintf("%v on first accept", sig))
		}
	}
}

// TestStopWhileStartupWaits: a stop signal while lbd waits at startup
// for a SocketFrom sender that never sends ends it at once, exit 0.
func TestStopWhileStartupWaits(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "from.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, nothing sent
		}
	}()
	cfg := "Daemon 0\nLogLevel 0\nListenHTTP\n\tSocketFrom \"" + sock + "\"\n\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\t\tPort 80\n\t\tEnd\n\tEnd\nEnd\n"
	path := writeFile(t, dir, "lbd.cfg", cfg)
	cmd := exec.Command(binary(t, "lbd"), "-e", "-f", path)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("lbd never connected to the SocketFrom socket")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	checkHandledExit(t, cmd, "SIGTERM while waiting for SocketFrom")
}

// checkHandledExit waits for cmd and requires exit status 0, not death
// by a signal.
func checkHandledExit(t *testing.T, cmd *exec.Cmd, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: lbd still running", what)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 0 {
		t.Errorf("%s: %v", what, cmd.ProcessState)
	}
}

// TestCheckSaysTheDialect: lbd -c -v names the dialect it chose and why.
func TestCheckSaysTheDialect(t *testing.T) {
	dir := t.TempDir()
	pound := writeFile(t, dir, "pound.cfg", goodConfig)
	zfile := writeFile(t, dir, "z.cfg", strings.Replace(goodConfig, "ListenHTTP\n", "ListenHTTP\n\tName z\n", 1))
	policy := writeFile(t, dir, "policy.cfg", strings.Replace(goodConfig, "\tService\n", "\tService\n\t\tRoutingPolicy LEAST_CONNECTIONS\n", 1))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "pound file", args: []string{"-c", "-v", "-f", pound}, want: "lbd: pound dialect: the file uses no zproxy-only statement\n"},
		{name: "RoutingPolicy alone stays Pound", args: []string{"-c", "-v", "-f", policy}, want: "lbd: pound dialect: the file uses no zproxy-only statement\n"},
		{name: "zproxy statement", args: []string{"-c", "-v", "-f", zfile}, want: "lbd: zproxy dialect: the file uses zproxy's Name (" + zfile + ":4)\n"},
		{name: "-C", args: []string{"-c", "-v", "-C", filepath.Join(dir, "z.sock"), "-f", pound}, want: "lbd: zproxy dialect: started with -C (zproxy's command line)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, binary(t, "lbd"), dir, tc.args...)
			if code != 0 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant a line %q", code, out, tc.want)
			}
		})
	}
}

// TestDeprecationWarningsByDefault: like Pound 4.23, lbd warns about
// deprecated statements of a Pound file unless -W no-warn-deprecated;
// a zproxy file, whose own statements they are, is never warned.
func TestDeprecationWarningsByDefault(t *testing.T) {
	dir := t.TempDir()
	pound := writeFile(t, dir, "pound.cfg", strings.Replace(goodConfig, "\tService\n", "\tHeadRemove \"X-Bar:.*\"\n\tService\n", 1))
	zfile := writeFile(t, dir, "z.cfg", strings.Replace(goodConfig, "ListenHTTP\n", "ListenHTTP\n\tName z\n\tHeadRemove \"X-Bar:.*\"\n", 1))
	const warning = `warning: deprecated statement, use "DeleteHeader" instead`
	tests := []struct {
		name string
		args []string
		warn bool
	}{
		{name: "pound file, default", args: []string{"-c", "-f", pound}, warn: true},
		{name: "pound file, -W no-warn-deprecated", args: []string{"-W", "no-warn-deprecated", "-c", "-f", pound}},
		// As Pound, -W takes its whole argument: one feature, unknown (so ignored), not two.
		{name: "pound file, -W dns,no-warn-deprecated", args: []string{"-W", "dns,no-warn-deprecated", "-c", "-f", pound}, warn: true},
		{name: "zproxy file", args: []string{"-c", "-f", zfile}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, binary(t, "lbd"), dir, tc.args...)
			if code != 0 || strings.Contains(out, warning) != tc.warn {
				t.Errorf("exit %d, output %q; want the warning: %v", code, out, tc.warn)
			}
		})
	}
}
