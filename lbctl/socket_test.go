package lbctl

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSocketResolution checks where the socket comes from: -s, the
// Control statement of -f (line, block, Include), $LBCTL_SOCKET, the
// default configuration, in that order.
func TestSocketResolution(t *testing.T) {
	good, _ := poundServer(t, false)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	line := write("line.cfg", "# comment\nDaemon 0\nControl \""+good+"\"\nListenHTTP\nEnd\n")
	block := write("block.cfg", "Control\n\tSocket \""+good+"\"\n\tMode 600\nEnd\n")
	write("ctl.inc", "Control \""+good+"\"\n")
	include := write("include.cfg", "Include \"ctl.inc\"\n")
	none := write("none.cfg", "Daemon 0\n")
	bad := "/nonexistent/dir/lbd.sock"
	cases := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		errHas string
	}{
		{name: "socket flag", args: []string{"-s", good}},
		{name: "config line", args: []string{"-f", line}},
		{name: "config block", args: []string{"-f", block}},
		{name: "config include", args: []string{"-f", include}},
		{name: "environment", env: map[string]string{"LBCTL_SOCKET": good}},
		{name: "default config", env: map[string]string{"@config": line}},
		{name: "socket flag beats environment", args: []string{"-s", good}, env: map[string]string{"LBCTL_SOCKET": bad}},
		{name: "config beats environment", args: []string{"-f", line}, env: map[string]string{"LBCTL_SOCKET": bad}},
		{name: "environment beats default config", env: map[string]string{"LBCTL_SOCKET": bad, "@config": line},
			code: 1, errHas: "no such file or directory (is lbd running with this control socket?)"},
		{name: "config without control", args: []string{"-f", none}, code: 1, errHas: "none.cfg: no Control statement; use the -s option"},
		{name: "config missing", args: []string{"-f", filepath.Join(dir, "missing.cfg")}, code: 1, errHas: "can't open "},
		{name: "nothing configured", code: 1, errHas: "lbctl: can't determine control socket name; use the -s option\n"},
		{name: "no socket", args: []string{"-s", bad}, code: 1, errHas: "lbctl: control socket " + bad + ": dial unix " + bad + ": connect: no such file or directory"},
		{name: "not a socket", args: []string{"-s", line}, code: 1, errHas: "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			argv := append(append([]string{"lbctl", "-q"}, tc.args...), "list", "/1")
			r := run(tc.env, argv...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			if tc.code == 0 && r.stdout != "/1\n/1/0\n/1/0/0\n/1/0/1\n/1/0/2\n/1/1\n/1/1/0\n" {
				t.Errorf("stdout %q", r.stdout)
			}
			if !strings.Contains(r.stderr, tc.errHas) || (tc.errHas == "") != (r.stderr == "") {
				t.Errorf("stderr %q, want %q", r.stderr, tc.errHas)
			}
		})
	}
}

// TestFriendlyErrors checks the hints added to the two usual connection
// failures; the real permission case runs in functional-tests (as an
// unprivileged user).
func TestFriendlyErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{name: "permission denied", err: &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)},
			want: "dial unix: connect: permission denied (the socket is mode 0600 by default: run as its owner, or set Control's Mode)"},
		{name: "missing socket", err: &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ENOENT)},
			want: "dial unix: connect: no such file or directory (is lbd running with this control socket?)"},
		{name: "other error", err: errors.New("boom"), want: "boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := friendly(tc.err).Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVersionWithoutSocket: version works on a host without lbd.
func TestVersionWithoutSocket(t *testing.T) {
	cases := []struct {
		name string
		argv []string
		out  string
	}{
		{name: "version command", argv: []string{"lbctl", "version"}, out: "lbctl: " + Version + "\n"},
		{name: "V flag", argv: []string{"lbctl", "-V"}, out: "lbctl (lbd) " + Version + "\n"},
		{name: "poundctl V flag", argv: []string{"/usr/sbin/poundctl", "-V"}, out: "poundctl (lbd) " + Version + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(nil, tc.argv...)
			if r.code != 0 || r.stdout != tc.out || r.stderr != "" {
				t.Errorf("got %d %q %q, want 0 %q", r.code, r.stdout, r.stderr, tc.out)
			}
		})
	}
}

// TestUsageErrors: bad options are reported once, cli's help is not
// dumped, and the exit status is 1.
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown global flag", args: []string{"-x"}, want: "lbctl: flag provided but not defined: -x\n"},
		{name: "unknown command flag", args: []string{"-s", "/x", "backend", "add", "--bogus", "/0/0", "a:1"}, want: "lbctl: flag provided but not defined: -bogus\n"},
		{name: "bad dialect", args: []string{"--dialect", "nginx", "list"}, want: "lbctl: unknown dialect \"nginx\" (want auto, pound or zproxy)\n"},
		{name: "bad indent", args: []string{"-i", "99", "list"}, want: "lbctl: indent 99 out of range [0..80]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(nil, append([]string{"lbctl"}, tc.args...)...)
			if r.code != 1 || r.stderr != tc.want || r.stdout != "" {
				t.Errorf("got %d stdout %q stderr %q, want 1 and %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}

func TestParsePath(t *testing.T) {
	cases := []struct {
		name, in string
		segs     []string
		pound    string
		zproxy   string
		err      string
	}{
		{name: "everything", in: "", pound: ""},
		{name: "slash", in: "/", pound: ""},
		{name: "listener", in: "/1", segs: []string{"1"}, pound: "/1", zproxy: "/listener/1"},
		{name: "trailing slash", in: "/1/0/", segs: []string{"1", "0"}, pound: "/1/0", zproxy: "/listener/1/service/0"},
		{name: "names escaped", in: "/main/my svc/2", segs: []string{"main", "my svc", "2"}, pound: "/main/my%20svc/2",
			err: `zproxy: bad uri: the zproxy control API addresses listeners by number, not "main"`},
		{name: "zproxy backend id", in: "/0/web/10.0.0.1-80", segs: []string{"0", "web", "10.0.0.1-80"}, pound: "/0/web/10.0.0.1-80",
			zproxy: "/listener/0/service/web/backend/10.0.0.1-80"},
		{name: "relative", in: "1/0", err: "bad uri: should start with a /"},
		{name: "empty component", in: "/1//2", err: "bad uri: empty component in /1//2"},
		{name: "too deep", in: "/1/2/3/4", err: "bad uri: too many components in /1/2/3/4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parsePath(tc.in)
			if err != nil {
				if err.Error() != tc.err {
					t.Fatalf("error %q, want %q", err, tc.err)
				}
				return
			}
			if strings.Join(p.segs, "|") != strings.Join(tc.segs, "|") || p.pound() != tc.pound {
				t.Errorf("segs %q pound %q", p.segs, p.pound())
			}
			z, err := p.zproxy()
			if err != nil {
				if "zproxy: "+err.Error() != tc.err {
					t.Errorf("zproxy error %q, want %q", err, tc.err)
				}
				return
			}
			if z != tc.zproxy || tc.err != "" {
				t.Errorf("zproxy %q, want %q (error %q)", z, tc.zproxy, tc.err)
			}
		})
	}
}
