package functionaltests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPrivDropUserGroup starts lbd as root with User "nobody" and Group
// "nogroup" and a run directory owned by nobody (as systemd's
// RuntimeDirectory= makes it). lbd serves as nobody on every thread,
// with no capability but CAP_NET_BIND_SERVICE on one thread; the control
// socket has the mode and owner asked for. A reload as nobody adds a
// listener on a port below 1024; a reload naming a file nobody cannot
// read fails at that statement and the running configuration serves on.
// After an upgrade the new process runs as nobody too, can still add a
// port below 1024, and at a stop removes its socket and PID file.
func TestPrivDropUserGroup(t *testing.T) {
	requireRoot(t)
	uid, gid := nobodyIDs(t)
	be := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	dir := openTempDir(t)
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, uid, gid); err != nil {
		t.Fatal(err)
	}
	sock, pidFile, cfgPath := filepath.Join(run, "ctl.sock"), filepath.Join(run, "lbd.pid"), filepath.Join(dir, "lbd.cfg")
	port := freePort(t)
	head := fmt.Sprintf("User \"nobody\"\nGroup \"nogroup\"\nDaemon 0\nLogLevel 0\nAlive 1\nGrace 2\n"+
		"PIDFile %q\nControl\n\tSocket %q\n\tMode 660\n\tChangeOwner yes\nEnd\n", pidFile, sock)
	base := head + privListener(port, be, "")
	writeCfg(t, cfgPath, base)
	p := runLBD(t, dir, cfgPath, fmt.Sprintf("127.0.0.1:%d", port))
	waitDropped(t, p)
	pid := p.cmd.Process.Pid
	if n := checkDropped(t, pid, uid, gid); n != 1 {
		t.Errorf("%d threads have CAP_NET_BIND_SERVICE, want 1 (the one that binds)", n)
	}
	checkSocketOwner(t, sock, 0o660, uid, gid)
	getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", port))

	low := freeLowPort(t)
	withLow := base + privListener(low, be, "")
	writeCfg(t, cfgPath, withLow)
	if ok, log := reloadLog(t, p, sock); !ok {
		t.Fatalf("reload adding port %d as nobody failed:\n%s", low, log)
	}
	getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", low))

	reloadUnreadable(t, p, sock, dir, cfgPath, head, be, port, low)
	checkDropped(t, pid, uid, gid)

	writeCfg(t, cfgPath, withLow)
	newPID := lbctlUpgrade(t, sock)
	waitGone(t, pid, 10*time.Second)
	// Started on the thread that kept the capability, the new process
	// has it as an ambient one, on every thread.
	checkDropped(t, newPID, uid, gid)
	if got := readPID(t, pidFile); got != newPID {
		t.Errorf("PID file says %d, want the new process %d", got, newPID)
	}
	low2 := freeLowPort(t, low)
	writeCfg(t, cfgPath, withLow+privListener(low2, be, ""))
	if ok, log := reloadLog(t, p, sock); !ok {
		t.Fatalf("reload after the upgrade adding port %d failed:\n%s", low2, log)
	}
	for _, pt := range []int{port, low, low2} {
		getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", pt))
	}
	syscall.Kill(newPID, syscall.SIGINT)
	waitGone(t, newPID, 10*time.Second)
	for _, f := range []string{sock, pidFile} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left behind after the stop", f)
		}
	}
}

// reloadUnreadable reloads a configuration that adds an ErrorFile only
// root can read: the reload fails, naming the file at its statement
// (file:line.col), and both listeners serve on.
func reloadUnreadable(t *testing.T, p *proc, sock, dir, cfgPath, head string, be *backend, port, low int) {
	t.Helper()
	secret := filepath.Join(dir, "secret.html")
	if err := os.WriteFile(secret, []byte("<p>down</p>"), 0o600); err != nil {
		t.Fatal(err)
	}
	listener := privListener(port, be, fmt.Sprintf("\tErrorFile 503 %q\n", secret))
	writeCfg(t, cfgPath, head+listener+privListener(low, be, ""))
	line := strings.Count(head, "\n") + 4 // ListenHTTP, Address, Port, ErrorFile
	ok, log := reloadLog(t, p, sock)
	if ok {
		t.Fatalf("a reload naming %s (mode 0600, root's) succeeded as nobody", secret)
	}
	want := regexp.MustCompile(regexp.QuoteMeta(cfgPath) + fmt.Sprintf(`:%d\.\d+-\d+: can't open `, line) +
		regexp.QuoteMeta(secret) + `: Permission denied`)
	if !want.MatchString(log) || !strings.Contains(log, "keeping the running configuration") {
		t.Fatalf("reload log does not name %s at line %d:\n%s", secret, line, log)
	}
	for _, pt := range []int{port, low} {
		getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", pt))
	}
}

// checkSocketOwner checks a control socket's mode and owner.
func checkSocketOwner(t *testing.T, path string, mode os.FileMode, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != mode || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("%s: mode %o owner %d:%d, want %o %d:%d", path, fi.Mode().Perm(), st.Uid, st.Gid, mode, uid, gid)
	}
}

// TestPrivStartRefused: a User or Group that does not exist, or a
// RootJail that cannot be entered, stops lbd before it serves: exit 1,
// a message at the statement, and nothing listening.
func TestPrivStartRefused(t *testing.T) {
	tests := []struct {
		name, stmt string
		root       bool // the step is reached only when started as root
		daemon     bool // Daemon 1, without -e: the command itself fails
		wantRe     string
	}{
		{name: "unknown user", stmt: `User "lbd-no-such-user"`, wantRe: `lbd\.cfg:1\.6-23: User "lbd-no-such-user": no such user`},
		{name: "unknown user, Daemon 1", stmt: `User "lbd-no-such-user"`, daemon: true,
			wantRe: `lbd\.cfg:1\.6-23: User "lbd-no-such-user": no such user`},
		{name: "unknown group", stmt: `Group "lbd-no-such-group"`, wantRe: `lbd\.cfg:1\.7-25: Group "lbd-no-such-group": no such group`},
		{name: "jail that does not exist", stmt: `RootJail "/nonexistent/jail"`, root: true,
			wantRe: `lbd\.cfg:1\.10-28: RootJail "/nonexistent/jail": chroot: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root {
				requireRoot(t)
			}
			be := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
			dir := t.TempDir()
			port := freePort(t)
			cfgPath := filepath.Join(dir, "lbd.cfg")
			args, daemon := []string{"-e", "-f", cfgPath}, "0"
			if tt.daemon {
				args, daemon = []string{"-f", cfgPath}, "1"
			}
			writeCfg(t, cfgPath, tt.stmt+"\nDaemon "+daemon+"\n"+privListener(port, be, ""))
			p := &proc{out: &syncBuffer{}, done: make(chan struct{})}
			p.cmd = exec.Command(binary(t, "lbd"), args...)
			p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { p.status = p.cmd.Wait(); close(p.done) }()
			t.Cleanup(p.kill)
			if code := p.wait(10 * time.Second); code != 1 {
				t.Fatalf("exit status %d, want 1\n%s", code, p.out.String())
			}
			if !regexp.MustCompile(tt.wantRe).MatchString(p.out.String()) {
				t.Errorf("output does not match %q:\n%s", tt.wantRe, p.out.String())
			}
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				t.Errorf("port %d still accepts after lbd exited", port)
			}
		})
	}
}

// TestPrivSystemdActivation: with socket activation the listening
// socket on a port below 1024 is passed, not bound, and lbd drops to
// nobody after taking it; it says READY=1 through the notification
// socket it opened before the drop (nobody could not reach this one),
// and a reload as nobody is framed by RELOADING=1 and READY=1.
func TestPrivSystemdActivation(t *testing.T) {
	requireRoot(t)
	uid, gid := nobodyIDs(t)
	be := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: freeLowPort(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg := "User \"nobody\"\nGroup \"nogroup\"\nDaemon 0\nLogLevel 0\nAlive 1\n" +
		strings.Replace(privListener(tcpPort(ln), be, ""), "ListenHTTP", `ListenHTTP "web"`, 1)
	p, n := startActivated(t, cfg, []passedSocket{{"web", ln}})
	n.waitFor(t, 0, "READY=1", 10*time.Second)
	checkDropped(t, p.cmd.Process.Pid, uid, gid)
	getOK(t, "http://"+ln.Addr().String()+"/")
	for d := p.dir; d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seen := len(n.messages())
	p.signal(syscall.SIGUSR1)
	i, _ := n.waitFor(t, seen, "RELOADING=1", 5*time.Second)
	if _, msg := n.waitFor(t, i+1, "READY=1", 5*time.Second); strings.Contains(msg, "reload failed") {
		t.Fatalf("reload as nobody: %q\n%s", msg, p.out.String())
	}
	getOK(t, "http://"+ln.Addr().String()+"/")
}
