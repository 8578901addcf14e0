package engine

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/handoff"
)

// upgradeCfg is twoBackends on a free port with a log format name.
func upgradeCfg(t *testing.T, port int) *config.Config {
	src := strings.Replace(twoBackends, "PRIO", "5", 1)
	src = strings.Replace(src, "Port 18080", fmt.Sprintf("Port %d", port), 1)
	return load(t, src)
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func quiet() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(&bytes.Buffer{})
	return l
}

// TestHandoffRoundTrip: what an operator and the traffic changed in one
// engine (a disabled backend, a dead one, a disabled listener and
// service, sessions static and dated, a backend added at runtime, a log
// format) is in its handoff, and a new engine built from the same file
// with that handoff has all of it before it accepts anything.
func TestHandoffRoundTrip(t *testing.T) {
	port := freeTCPPort(t)
	old, err := New(upgradeCfg(t, port), Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	svc := adminapi.Ref{Listener: 0, Service: 0, Backend: -1}
	if err := old.AddBackend(svc, adminapi.BackendSpec{Address: "127.0.0.9", Port: 81, Weight: 4, Priority: 2}); err != nil {
		t.Fatal(err)
	}
	if err := old.SetLogLevel(0, "combined"); err != nil {
		t.Fatal(err)
	}
	must(t, old.SetEnabled(adminapi.Ref{Listener: 0, Service: 0, Backend: 0}, false))
	must(t, old.SetEnabled(adminapi.Ref{Listener: 0, Service: -1}, false))
	old.g.services[0][0].Backends[1].SetAlive(false, "test")
	seen := time.Now().Add(-10 * time.Second).Round(time.Second) // within TTL 60
	must(t, old.AddSession(svc, adminapi.SessionSpec{Key: "dated", Backend: 1, LastSeen: seen}))
	must(t, old.AddSession(svc, adminapi.SessionSpec{Key: "static", Backend: 2, Static: true}))
	must(t, old.AddSession(svc, adminapi.SessionSpec{Key: "\xffbin", Backend: 1}))

	// Through the wire format, as the upgrade sends it.
	var buf bytes.Buffer
	if err := handoff.Encode(&buf, old.Handoff()); err != nil {
		t.Fatal(err)
	}
	st, err := handoff.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}

	cfg, skipped := ApplyRuntime(upgradeCfg(t, port), st)
	if len(skipped) != 0 {
		t.Fatalf("skipped: %q", skipped)
	}
	inh := NewInherited()
	for _, s := range old.Sockets() {
		inh.Add(s.Ln, s.Name, s.Key, "test")
	}
	next, err := New(cfg, Options{Log: quiet(), Inherit: inh, Restore: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if u := inh.Unused(); len(u) != 0 {
		t.Errorf("sockets not taken: %q", u)
	}
	state := next.State()
	if !state.Core.StartedByUpgrade || old.State().Core.StartedByUpgrade {
		t.Errorf("started by upgrade: new %v, old %v; want true and false", state.Core.StartedByUpgrade, old.State().Core.StartedByUpgrade)
	}
	l := state.Listeners[0]
	if l.Enabled || l.LogLevel != "combined" {
		t.Errorf("listener enabled=%v log=%q, want disabled and combined", l.Enabled, l.LogLevel)
	}
	bes := l.Services[0].Backends
	if len(bes) != 3 || bes[2].Address != "127.0.0.9" || bes[2].Weight != 4 || bes[2].Priority != 2 {
		t.Fatalf("backends after the handoff: %+v", bes)
	}
	if bes[0].Enabled || !bes[1].Enabled || bes[1].Alive || !bes[2].Alive {
		t.Errorf("backend states: %+v", bes)
	}
	got := map[string]adminapi.Session{}
	for _, s := range l.Services[0].Sessions {
		got[s.Key] = s
	}
	if s, ok := got["dated"]; !ok || s.Backend != 1 || !s.LastSeen.Equal(seen) {
		t.Errorf("dated session: %+v (want backend 1, last seen %v)", s, seen)
	}
	if s, ok := got["static"]; !ok || s.Backend != 2 || !s.LastSeen.IsZero() {
		t.Errorf("static session: %+v", s)
	}
	if _, ok := got["\xffbin"]; !ok {
		t.Errorf("binary session key lost: %+v", l.Services[0].Sessions)
	}
	// The journal goes on, so a second upgrade carries the same changes.
	if h := next.Handoff(); len(h.Added) != 1 || len(h.LogLevels) != 1 {
		t.Errorf("the new engine's journal: added %v, levels %v", h.Added, h.LogLevels)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReloadForgetsRuntimeChanges: reading the file again drops what
// the control API added (as the running process does), so an upgrade
// after a reload does not bring it back.
func TestReloadForgetsRuntimeChanges(t *testing.T) {
	port := freeTCPPort(t)
	e, err := New(upgradeCfg(t, port), Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	must(t, e.AddBackend(adminapi.Ref{Listener: 0, Service: 0, Backend: -1}, adminapi.BackendSpec{Address: "127.0.0.9", Port: 81}))
	if h := e.Handoff(); len(h.Added) != 1 {
		t.Fatalf("added: %v", h.Added)
	}
	must(t, e.Apply(upgradeCfg(t, port)))
	if h := e.Handoff(); len(h.Added) != 0 {
		t.Fatalf("after a reload, added: %v", h.Added)
	}
}

// TestApplyRuntimeSkipsWhatIsGone: changes whose service or listener
// the file no longer has are reported, the rest applied.
func TestApplyRuntimeSkipsWhatIsGone(t *testing.T) {
	st := &handoff.State{
		Added: []handoff.AddedBackend{
			{Service: "l0/0:web", Address: "127.0.0.9", Port: 81, Weight: 1, Priority: 1},
			{Service: "l0/0:other", Address: "127.0.0.9", Port: 82, Weight: 1, Priority: 1},
			{Service: "l7/0:web", Address: "127.0.0.9", Port: 83, Weight: 1, Priority: 1},
			{Service: "garbage", Address: "127.0.0.9", Port: 84, Weight: 1, Priority: 1},
		},
		LogLevels: []handoff.LogLevel{{Listener: "addr:10.0.0.1:1", Level: "combined"}, {Level: "nosuchformat"}},
	}
	cfg, skipped := ApplyRuntime(upgradeCfg(t, 18080), st)
	if n := len(cfg.Listeners[0].Services[0].Backends); n != 3 {
		t.Errorf("%d backends, want the two configured and one added", n)
	}
	if len(skipped) != 5 {
		t.Errorf("skipped %d, want 5: %q", len(skipped), skipped)
	}
}

func TestParseServiceKey(t *testing.T) {
	cases := []struct {
		key, scope, name string
		idx              int
		ok               bool
	}{
		{"l0/1:web", "l0", "web", 1, true},
		{"g/0:", "g", "", 0, true},
		{"l2/3:a:b", "l2", "a:b", 3, true},
		{"l0", "", "", 0, false},
		{"l0/x:web", "", "", 0, false},
		{"l0/-1:web", "", "", 0, false},
		{"l0/1", "", "", 0, false},
	}
	for _, c := range cases {
		scope, idx, name, ok := parseServiceKey(c.key)
		if ok != c.ok || ok && (scope != c.scope || idx != c.idx || name != c.name) {
			t.Errorf("parseServiceKey(%q) = %q %d %q %v", c.key, scope, idx, name, ok)
		}
		if ok && serviceKey(scope, idx, name) != c.key {
			t.Errorf("serviceKey does not rebuild %q", c.key)
		}
	}
}

// TestInheritedMatching: a socket goes to the listener of its bind key
// (upgrade), else of its name (systemd FileDescriptorName), else of its
// address; names shared by several sockets fall back to addresses; what
// no listener takes is reported and closed.
func TestInheritedMatching(t *testing.T) {
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	port := func(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }
	byKey, byName, byAddr, dupA, dupB, stray := listen(), listen(), listen(), listen(), listen(), listen()
	in := NewInherited()
	keyed := &config.Listener{Address: "127.0.0.1", Port: 9}
	in.Add(byKey, "", bindKey(keyed), "pid 1")
	in.Add(byName, "web", "", "systemd")
	in.Add(byAddr, "lbd.socket", "", "systemd")
	in.Add(dupA, "dup", "", "systemd")
	in.Add(dupB, "dup", "", "systemd")
	in.Add(stray, "stray", "", "systemd")
	cases := []struct {
		name string
		l    *config.Listener
		want net.Listener
	}{
		{"bind key", keyed, byKey},
		{"name", &config.Listener{Name: "web", Address: "127.0.0.1", Port: 1}, byName},
		{"address", &config.Listener{Address: "127.0.0.1", Port: port(byAddr)}, byAddr},
		{"shared name falls back to address", &config.Listener{Name: "dup", Address: "127.0.0.1", Port: port(dupB)}, dupB},
		{"last of a shared name", &config.Listener{Name: "dup", Address: "127.0.0.1", Port: 2}, dupA},
		{"nothing", &config.Listener{Address: "127.0.0.1", Port: 3}, nil},
		{"socket from", &config.Listener{SocketFrom: "/x"}, nil},
	}
	for _, c := range cases {
		if got := in.take(c.l, bindKey(c.l)); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, addrOf(got), addrOf(c.want))
		}
	}
	unused := in.Unused()
	if len(unused) != 1 || !strings.Contains(unused[0], `systemd socket "stray"`) {
		t.Errorf("unused: %q", unused)
	}
	if _, err := stray.Accept(); err == nil {
		t.Error("an unused socket was left open")
	}
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return "none"
	}
	return ln.Addr().String()
}

func TestSameAddress(t *testing.T) {
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	cases := []struct {
		name string
		a    net.Addr
		l    config.Listener
		want bool
	}{
		{"same", tcp("127.0.0.1", 80), config.Listener{Address: "127.0.0.1", Port: 80}, true},
		{"other port", tcp("127.0.0.1", 81), config.Listener{Address: "127.0.0.1", Port: 80}, false},
		{"other ip", tcp("127.0.0.2", 80), config.Listener{Address: "127.0.0.1", Port: 80}, false},
		{"v6 wildcard for v4 wildcard", tcp("::", 80), config.Listener{Address: "0.0.0.0", Port: 80}, true},
		{"v4 wildcard for v6 wildcard", tcp("0.0.0.0", 80), config.Listener{Address: "::", Port: 80}, true},
		{"empty address is the wildcard", tcp("::", 80), config.Listener{Port: 80}, true},
		{"wildcard is not a host", tcp("::", 80), config.Listener{Address: "127.0.0.1", Port: 80}, false},
		{"unix path", &net.UnixAddr{Name: "/run/a.sock", Net: "unix"}, config.Listener{Address: "/run/a.sock"}, true},
		{"other unix path", &net.UnixAddr{Name: "/run/b.sock", Net: "unix"}, config.Listener{Address: "/run/a.sock"}, false},
		{"unix for tcp", &net.UnixAddr{Name: "/run/a.sock", Net: "unix"}, config.Listener{Address: "127.0.0.1", Port: 80}, false},
		{"tcp for unix", tcp("127.0.0.1", 0), config.Listener{Address: "/run/a.sock"}, false},
	}
	for _, c := range cases {
		if got := sameAddress(c.a, &c.l); got != c.want {
			t.Errorf("%s: sameAddress = %v, want %v", c.name, got, c.want)
		}
	}
}
