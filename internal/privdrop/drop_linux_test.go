package privdrop

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// childEnv makes the test binary run dropInChild instead of the tests:
// a drop cannot be undone, so it happens in a process of its own.
const childEnv = "LBD_PRIVDROP_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := dropInChild(); err != nil {
			fmt.Println("FAIL:", err)
			os.Exit(1)
		}
		fmt.Println("OK")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDropThreads drops from root to nobody in a child process and
// checks every thread: all ids are nobody's, no thread has a capability
// but CAP_NET_BIND_SERVICE, exactly one has that one, and a port below
// 1024 binds on it and on no other.
func TestDropThreads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop privileges (CI runs as root)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func dropInChild() error {
	port, err := freeLowPort()
	if err != nil {
		return err
	}
	c, err := Resolve(Spec{User: "nobody", Group: "nogroup"}, OS, nil)
	if err != nil {
		return err
	}
	b, err := Drop(c, Current(nil))
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("no binder after leaving root")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		return fmt.Errorf("%s bound outside the binder's thread", addr)
	}
	var ln net.Listener
	b.Do(func() { ln, err = net.Listen("tcp", addr) })
	if err != nil {
		return fmt.Errorf("binder: %w", err)
	}
	ln.Close()
	return checkThreads(c.UID, c.GID)
}

// freeLowPort finds a port below 1024 free on 127.0.0.1 (as root).
func freeLowPort() (int, error) {
	for p := 900; p < 1024; p++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			ln.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port in 900..1023")
}

// checkThreads reads /proc/self/task/*/status.
func checkThreads(uid, gid int) error {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		return fmt.Errorf("no threads in /proc: %v", err)
	}
	withBind := 0
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f := statusFields(string(b))
		ids := fmt.Sprintf("%d\t%d\t%d\t%d", uid, uid, uid, uid)
		if f["Uid"] != ids || f["Gid"] != strings.ReplaceAll(ids, fmt.Sprint(uid), fmt.Sprint(gid)) {
			return fmt.Errorf("%s: Uid %q Gid %q", p, f["Uid"], f["Gid"])
		}
		if f["Groups"] != fmt.Sprint(gid) {
			return fmt.Errorf("%s: Groups %q", p, f["Groups"])
		}
		switch f["CapEff"] {
		case "0000000000000000":
		case "0000000000000400":
			withBind++
		default:
			return fmt.Errorf("%s: CapEff %s", p, f["CapEff"])
		}
		if f["CapPrm"] != f["CapEff"] {
			return fmt.Errorf("%s: CapPrm %s, CapEff %s", p, f["CapPrm"], f["CapEff"])
		}
	}
	if withBind != 1 {
		return fmt.Errorf("%d threads of %d have CAP_NET_BIND_SERVICE, want 1", withBind, len(tasks))
	}
	return nil
}

// statusFields splits /proc/.../status into its fields.
func statusFields(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
