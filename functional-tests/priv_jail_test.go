package functionaltests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPrivRootJail starts lbd as root with RootJail, User and Group,
// under a NOTIFY_SOCKET outside the jail. lbd serves from the jail as
// nobody and tells systemd it is ready; a reload reads the configuration
// at its path inside the jail (only that copy has the new listener) and
// is framed by RELOADING=1 and READY=1; an upgrade fails, saying where
// to install the binary, while the binary is not in the jail, and the
// running lbd serves on; once it is there (with its libraries), the new
// process starts in the jail as nobody, says READY=1, and reloads from
// the jail too, and the PID file outside the jail follows it and is
// removed at the stop.
func TestPrivRootJail(t *testing.T) {
	requireRoot(t)
	uid, gid := nobodyIDs(t)
	notify := newNotifySocket(t)
	t.Setenv("NOTIFY_SOCKET", notify.path)
	be := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	dir := openTempDir(t)
	jail := filepath.Join(dir, "jail")
	inJail := func(p string) string { return filepath.Join(jail, p) }
	if err := os.MkdirAll(inJail(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run") // outside the jail, nobody's
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, uid, gid); err != nil {
		t.Fatal(err)
	}
	sock, cfgPath, pidFile := filepath.Join(dir, "ctl.sock"), filepath.Join(dir, "lbd.cfg"), filepath.Join(run, "lbd.pid")
	port, port2 := freePort(t), freePort(t)
	base := fmt.Sprintf("RootJail %q\nUser \"nobody\"\nGroup \"nogroup\"\nDaemon 0\nLogLevel 0\nAlive 1\nGrace 2\n"+
		"Control %q\nPIDFile %q\n", jail, sock, pidFile) + privListener(port, be, "")
	writeCfg(t, cfgPath, base)
	writeCfg(t, inJail(cfgPath), base+privListener(port2, be, ""))
	// Named relative to lbd's working directory, which the jail
	// leaves behind: reloads and upgrades must still find the file.
	p := runLBD(t, dir, "lbd.cfg", fmt.Sprintf("127.0.0.1:%d", port))
	waitDropped(t, p)
	pid := p.cmd.Process.Pid
	checkJailed(t, pid, jail)
	checkDropped(t, pid, uid, gid)
	notify.waitFor(t, 0, "READY=1", 10*time.Second)
	getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", port))

	n := len(notify.messages())
	if ok, log := reloadLog(t, p, sock); !ok {
		t.Fatalf("reload in the jail failed:\n%s", log)
	}
	getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", port2))
	i, _ := notify.waitFor(t, n, "RELOADING=1", 10*time.Second)
	notify.waitFor(t, i+1, "READY=1", 10*time.Second)

	exe := binary(t, "lbd")
	_, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "upgrade")
	want := "install the new binary (and the libraries it needs) at " + inJail(exe)
	if code == 0 || !strings.Contains(errOut, "is not in the jail") || !strings.Contains(errOut, want) {
		t.Fatalf("upgrade without the binary in the jail: exit %d, %q; want a failure saying %q", code, errOut, want)
	}
	getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", port))

	copyIntoJail(t, jail, exe)
	n = len(notify.messages())
	newPID := lbctlUpgrade(t, sock)
	waitGone(t, pid, 10*time.Second)
	checkJailed(t, newPID, jail)
	checkDropped(t, newPID, uid, gid)
	if _, msg := notify.waitFor(t, n, "READY=1", 10*time.Second); !strings.Contains(msg, fmt.Sprintf("(pid %d)", newPID)) {
		t.Errorf("READY=1 after the upgrade is not the new process's: %q", msg)
	}
	// The PID file outside the jail follows the new process (through
	// the directory its predecessor kept open).
	if got := readPID(t, pidFile); got != newPID {
		t.Errorf("PID file says %d, want the new process %d", got, newPID)
	}
	port3 := freePort(t)
	writeCfg(t, inJail(cfgPath), base+privListener(port2, be, "")+privListener(port3, be, ""))
	if ok, log := reloadLog(t, p, sock); !ok {
		t.Fatalf("reload in the jail after the upgrade failed:\n%s", log)
	}
	for _, pt := range []int{port, port2, port3} {
		getOK(t, fmt.Sprintf("http://127.0.0.1:%d/", pt))
	}
	syscall.Kill(newPID, syscall.SIGINT)
	waitGone(t, newPID, 10*time.Second)
	if _, err := os.Stat(pidFile); err == nil {
		t.Errorf("PID file %s left behind by the jailed lbd", pidFile)
	}
}

// checkJailed checks that pid's root directory is jail.
func checkJailed(t *testing.T, pid int, jail string) {
	t.Helper()
	root, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid))
	if err != nil || root != jail {
		t.Fatalf("pid %d: root %q (%v), want the jail %s", pid, root, err, jail)
	}
}

// libPath finds the libraries in ldd's output.
var libPath = regexp.MustCompile(`(?m)(/\S+) \(0x`)

// copyIntoJail copies exe and the shared libraries it loads into jail,
// each at its own path there: an upgrade in a jail starts the binary at
// lbd's path inside it.
func copyIntoJail(t *testing.T, jail, exe string) {
	t.Helper()
	files := []string{exe}
	out, err := exec.Command("ldd", exe).Output()
	if err == nil { // a static binary makes ldd fail: nothing to copy
		for _, m := range libPath.FindAllStringSubmatch(string(out), -1) {
			files = append(files, m[1])
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(jail, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
