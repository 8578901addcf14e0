package functionaltests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
		{name: "bad config reports every error", bin: lbd, args: []string{"-c", "-f", "bad.cfg"}, code: 1, errLines: 3},
		{name: "as pound", bin: pound, args: []string{"-c", "-f", "bad.cfg"}, code: 1, match: "pound: bad.cfg:", errLines: 3},
		{name: "missing file", bin: lbd, args: []string{"-c", "-f", "nope.cfg"}, code: 1, match: "nope.cfg"},
		{name: "version", bin: lbd, args: []string{"-V"}, match: "lbd"},
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
			b, err := os.ReadFile(pidfile)
			if err != nil || strings.TrimSpace(string(b)) == "" {
				t.Fatalf("PID file: %q %v", b, err)
			}
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
