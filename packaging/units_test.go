package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// verify runs systemd-analyze verify on copies of the units whose
// /usr/sbin/lbd is exe, and returns its output and exit error. It works
// offline, as root in a container without a running systemd; the man
// pages named by Documentation= are not installed yet, so they are not
// looked up (the installed package is verified with them by make
// deb-check).
func verify(t *testing.T, exe string, edit func(unit, text string) string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, u := range []string{"lbd.service", "lbd.socket"} {
		b, err := os.ReadFile(filepath.Join("systemd", u))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "/usr/sbin/lbd", exe)
		if edit != nil {
			text = edit(u, text)
		}
		p := filepath.Join(dir, u)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command("systemd-analyze", append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// lbdBinary builds lbd, for the units' Exec lines to point at.
func lbdBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LBD_BIN"); p != "" {
		return p
	}
	p := filepath.Join(t.TempDir(), "lbd")
	if out, err := exec.Command("go", "build", "-o", p, "lbd/cmd/lbd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return p
}

// TestUnitsVerify: systemd-analyze verify accepts the units without a
// word, and does complain about a broken one, so that the check has
// teeth (verify only warns about a bad value, so any output fails).
func TestUnitsVerify(t *testing.T) {
	exe := lbdBinary(t)
	if out, err := verify(t, exe, nil); err != nil || out != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	broken := func(unit, text string) string {
		if unit == "lbd.service" {
			return strings.Replace(text, "\nType=notify\n", "\nType=notifyy\n", 1)
		}
		return text
	}
	if out, err := verify(t, exe, broken); err == nil && out == "" {
		t.Fatal("systemd-analyze verify accepted Type=notifyy: the check proves nothing")
	}
	missing := func(_, text string) string { return strings.ReplaceAll(text, exe, exe+".missing") }
	if out, err := verify(t, exe, missing); err == nil && out == "" {
		t.Fatal("systemd-analyze verify accepted a missing binary")
	}
}

// TestServiceSettings pins the settings the issue asks for, which
// verify cannot judge: notify readiness, a checked start and reload,
// a reload that does not restart, a graceful stop signal.
func TestServiceSettings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("systemd", "lbd.service"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		"\nType=notify\n",
		"\nNotifyAccess=all\n",
		"\nExecStartPre=/usr/sbin/lbd -c -f ${LBD_CONFIG}\n",
		"\nExecReload=/usr/sbin/lbd -c -f ${LBD_CONFIG}\nExecReload=/bin/kill -USR1 $MAINPID\n",
		"\nKillSignal=SIGINT\n",
		"\nWatchdogSec=",
		"\nUser=lbd\n",
		"\nAmbientCapabilities=CAP_NET_BIND_SERVICE\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\nNoNewPrivileges=yes\n",
		"\nProtectSystem=strict\n",
		"\nMemoryDenyWriteExecute=yes\n",
		"\nSystemCallFilter=@system-service\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lbd.service lacks %q", want)
		}
	}
}

// TestServiceSecurity: systemd-analyze security rates lbd.service's
// sandbox at an exposure of 2.0 or less (it was 9.2 without one), and
// the check has teeth: the unit without its sandbox fails it.
func TestServiceSecurity(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("systemd", "lbd.service"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if out, err := security(t, text); err != nil {
		t.Fatalf("systemd-analyze security: %v (exposure above 2.0)\n%s", err, out)
	}
	i, j := strings.Index(text, "\nProtectSystem="), strings.Index(text, "\n[Install]")
	if i < 0 || j < i {
		t.Fatal("lbd.service: no sandbox block before [Install]")
	}
	if _, err := security(t, text[:i+1]+text[j+1:]); err == nil {
		t.Fatal("the unit without its sandbox passed: the check proves nothing")
	}
}

// security runs systemd-analyze security offline on a copy of the unit
// with the given text, failing above an exposure of 2.0.
func security(t *testing.T, text string) (string, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lbd.service")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "security", "--offline=true", "--threshold=20", p).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
