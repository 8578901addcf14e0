package functionaltests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeDemo starts the demo as `make run` does (scripts/run-demo.sh,
// with ports and paths of its own so that it can run beside another
// demo), runs every command of README.md's sh blocks on it, as written but
// for those ports and paths, and checks that each succeeds, that the demo
// survives the upgrade, and that stopping the script stops every process.
func TestReadmeDemo(t *testing.T) {
	repo := repoRoot(t)
	cmds := readmeCommands(t, filepath.Join(repo, "README.md"))
	root := demoTree(t, repo)
	dir := t.TempDir()
	port, dash := freePort(t), freePort(t)
	be1, be2 := freePort(t), freePort(t)
	sock, pidfile := filepath.Join(dir, "demo.sock"), filepath.Join(dir, "demo.pid")
	subst := strings.NewReplacer("/tmp/lbd-demo.sock", sock, "/tmp/lbd-demo.pid", pidfile,
		"127.0.0.1:8080", fmt.Sprintf("127.0.0.1:%d", port), "127.0.0.1:8099", fmt.Sprintf("127.0.0.1:%d", dash))

	demo := exec.Command("bash", filepath.Join(root, "scripts", "run-demo.sh"))
	demo.Env = append(os.Environ(), fmt.Sprintf("LBD_DEMO_PORT=%d", port), fmt.Sprintf("LBD_DEMO_BACKENDS=%d %d", be1, be2),
		"LBD_DEMO_SOCK="+sock, "LBD_DEMO_PID="+pidfile)
	out := &syncBuffer{}
	demo.Stdout, demo.Stderr = out, out
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- demo.Wait() }()
	t.Cleanup(func() {
		// Whatever failed, nothing of the demo is left behind.
		if pid := demoPID(pidfile); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		demo.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			demo.Process.Kill()
		}
	})
	poll(t, 15*time.Second, "the demo says lbd is running:\n"+out.String(), func() bool {
		return strings.Contains(out.String(), "lbd is running")
	})

	for _, c := range cmds {
		line := subst.Replace(c)
		t.Run(c, func(t *testing.T) {
			if strings.Contains(line, " dashboard") {
				runDashboard(t, root, line)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-ec", line)
			cmd.Dir = root
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s\ndemo:\n%s", line, err, b, out.String())
			}
			// A signal or an upgrade hands over to a new process: the next
			// command needs it serving.
			waitDemoServes(t, pidfile, sock)
		})
	}

	t.Run("the demo goes on after the upgrade, and its stop stops everything", func(t *testing.T) {
		select {
		case err := <-done:
			t.Fatalf("the demo script ended (%v):\n%s", err, out.String())
		default:
		}
		pid := demoPID(pidfile)
		if pid <= 0 || !strings.Contains(out.String(), "handed over") {
			t.Fatalf("no upgraded lbd (PID file %d):\n%s", pid, out.String())
		}
		demo.Process.Signal(syscall.SIGINT) // Ctrl-C
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatalf("the demo did not stop on SIGINT:\n%s", out.String())
		}
		poll(t, 5*time.Second, fmt.Sprintf("lbd %d has exited", pid), func() bool {
			return syscall.Kill(pid, 0) != nil
		})
		for _, p := range []int{port, be1, be2} {
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second); err == nil {
				c.Close()
				t.Errorf("port %d still accepts after the demo stopped", p)
			}
		}
	})
}

// repoRoot is the checkout this test file is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Dir(filepath.Dir(file))
}

// readmeCommands returns the command lines of README.md's sh blocks
// (without their comments), leaving out make (the test plays make run).
func readmeCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			in = !in && strings.TrimPrefix(line, "```") == "sh"
			continue
		case !in:
			continue
		}
		line = strings.TrimSpace(stripComment(line))
		if line != "" && !strings.HasPrefix(line, "make ") {
			cmds = append(cmds, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 10 {
		t.Fatalf("only %d commands in %s's sh blocks: the parser or the README changed", len(cmds), path)
	}
	return cmds
}

// stripComment drops a shell comment: a # after a space, outside quotes.
func stripComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return line[:i]
		}
	}
	return line
}

// demoTree is a directory laid out as the checkout for the demo: bin/
// with the binaries under test, demo/lbd.cfg and scripts/run-demo.sh.
func demoTree(t *testing.T, repo string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"bin", "demo", "scripts"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	backend := filepath.Join(root, "bin", "demo-backend")
	if b, err := exec.Command("go", "build", "-o", backend, "lbd/demo/backend").CombinedOutput(); err != nil {
		t.Fatalf("go build demo/backend: %v\n%s", err, b)
	}
	for name, target := range map[string]string{
		"bin/lbd": binary(t, "lbd"), "bin/lbctl": binary(t, "lbctl"),
		"demo/lbd.cfg": filepath.Join(repo, "demo", "lbd.cfg"), "scripts/run-demo.sh": filepath.Join(repo, "scripts", "run-demo.sh"),
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// demoPID is the PID in path, 0 when there is none (yet).
func demoPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		return 0
	}
	return pid
}

// waitDemoServes waits until the PID file names a live lbd whose control
// socket answers.
func waitDemoServes(t *testing.T, pidfile, sock string) {
	t.Helper()
	poll(t, 10*time.Second, "the demo's lbd serves", func() bool {
		pid := demoPID(pidfile)
		if pid <= 0 || syscall.Kill(pid, 0) != nil {
			return false
		}
		_, _, err := unixTry(sock, http.MethodGet, "/", "")
		return err == nil
	})
}

var dashboardURL = regexp.MustCompile(`http://\S+/\?key=\S+`)

// runDashboard starts the lbctl dashboard line, loads the page it names
// and stops it by its PID.
func runDashboard(t *testing.T, root, line string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = root
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait() // killed: its exit status says so
	}()
	var url string
	poll(t, 10*time.Second, "lbctl dashboard prints its URL", func() bool {
		url = dashboardURL.FindString(out.String())
		return url != ""
	})
	// The URL's key becomes a cookie, with a redirect to the page.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second, Jar: jar}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
}
