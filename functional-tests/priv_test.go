package functionaltests

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The privilege tests start lbd as root with User and Group (and
// RootJail), as Pound's configurations do, and check the process from
// /proc: every thread's ids and capabilities.

// requireRoot skips a test that must start lbd as root; CI runs as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("starts lbd as root to drop privileges: run as root (CI does)")
	}
}

// nobodyIDs returns the uid and gid of nobody and nogroup.
func nobodyIDs(t *testing.T) (int, int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Fatal(err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(g.Gid)
	if err1 != nil || err2 != nil {
		t.Fatalf("ids %q %q", u.Uid, g.Gid)
	}
	return uid, gid
}

// openTempDir returns a temporary directory that nobody can traverse:
// lbd reads the configuration again as nobody at a reload.
func openTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// freeLowPort returns a port below 1024 free on 127.0.0.1 and not in
// avoid (binding it needs root, which the test has).
func freeLowPort(t *testing.T, avoid ...int) int {
	t.Helper()
	for p := 900; p < 1024; p++ {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			ln.Close()
			if !containsInt(avoid, p) {
				return p
			}
		}
	}
	t.Fatal("no free port in 900..1023")
	return 0
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// procFields reads /proc/<pid>/task/<tid>/status of every thread.
func threadStatus(t *testing.T, pid int) []map[string]string {
	t.Helper()
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(paths) == 0 {
		t.Fatalf("pid %d: no threads (%v)", pid, err)
	}
	var out []map[string]string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{"path": p}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				m[k] = strings.TrimSpace(v)
			}
		}
		out = append(out, m)
	}
	return out
}

// Capability sets as /proc prints them.
const (
	capNone = "0000000000000000"
	capBind = "0000000000000400" // CAP_NET_BIND_SERVICE alone
)

// checkDropped checks every thread of pid: real, effective, saved and
// file-system ids are uid and gid, the only group is gid, and no thread
// has a capability but CAP_NET_BIND_SERVICE (permitted as effective).
// It returns how many threads have that one.
func checkDropped(t *testing.T, pid, uid, gid int) int {
	t.Helper()
	ids := func(id int) string { return strings.Repeat(strconv.Itoa(id)+"\t", 3) + strconv.Itoa(id) }
	withBind := 0
	for _, st := range threadStatus(t, pid) {
		if st["Uid"] != ids(uid) || st["Gid"] != ids(gid) || st["Groups"] != strconv.Itoa(gid) {
			t.Errorf("%s: Uid %q Gid %q Groups %q, want %d and %d alone", st["path"], st["Uid"], st["Gid"], st["Groups"], uid, gid)
		}
		eff, prm := st["CapEff"], st["CapPrm"]
		if eff != capNone && eff != capBind || prm != eff {
			t.Errorf("%s: CapEff %s CapPrm %s, want %s or %s (CAP_NET_BIND_SERVICE) in both", st["path"], eff, prm, capNone, capBind)
		}
		if eff == capBind {
			withBind++
		}
	}
	return withBind
}

// privListener is a ListenHTTP on 127.0.0.1:port to be.
func privListener(port int, be *backend, inner string) string {
	return fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n%s\tService\n%s\tEnd\nEnd\n", port, inner, be.block())
}

// getOK fails unless a GET of url answers 200.
func getOK(t *testing.T, url string) {
	t.Helper()
	if code, body := getBody(t, url); code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
}

// writeCfg writes text to path, readable by all.
func writeCfg(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reloadLog runs lbctl reload and returns whether it succeeded, and the
// log lines lbd wrote meanwhile.
func reloadLog(t *testing.T, p *proc, sock string) (bool, string) {
	t.Helper()
	before := len(p.out.String())
	_, _, code := lbctlRun(t, "lbctl", nil, "-s", sock, "reload")
	time.Sleep(100 * time.Millisecond) // the log line follows the answer
	return code == 0, p.out.String()[before:]
}

// waitDropped waits until lbd says it dropped its privileges: it serves
// (and runLBD returns) a moment before, as its control socket and PID
// file must be made first.
func waitDropped(t *testing.T, p *proc) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.out.String(), "running as uid"); {
		if time.Now().After(deadline) {
			t.Fatalf("lbd did not drop its privileges:\n%s", p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
