package lbctl

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"lbd/adminapi"
)

// fakeNow is the clock of the fixture.
var fakeNow = time.Date(2026, 11, 30, 5, 40, 0, 0, time.UTC)

// fixture is the engine state behind the fake server: the control socket
// (Pound listener 0), listener "main" with service "web" (cookie
// sessions; an active, a disabled and an emergency backend), an unnamed
// redirect service, and a global service.
func fixture() *adminapi.State {
	web := adminapi.Service{
		Name: "web", Enabled: true, SessionType: "COOKIE", Priority: 1,
		Backends: []adminapi.Backend{
			{Address: "10.0.0.1", Port: 80, Enabled: true, Alive: true, Priority: 5, Weight: 2,
				Requests: 14, Hits2xx: 13, Hits5xx: 1, Active: 3, ResponseTime: 1500 * time.Microsecond,
				ConnTimeout: 15 * time.Second, IOTimeout: 15 * time.Second, WSTimeout: 600 * time.Second},
			{Address: "10.0.0.2", Port: 80, Enabled: false, Alive: true, Priority: 5, Weight: 1, ResponseTime: -1,
				ConnTimeout: 15 * time.Second, IOTimeout: 15 * time.Second, WSTimeout: 600 * time.Second},
			{Address: "10.0.0.9", Port: 80, Emergency: true, Enabled: true, Alive: false, Priority: 1, Weight: 1, ResponseTime: -1,
				ConnTimeout: 120 * time.Second, IOTimeout: 120 * time.Second, WSTimeout: 120 * time.Second},
		},
		Sessions: []adminapi.Session{{Key: "abc", Backend: 1, LastSeen: fakeNow, Expire: fakeNow.Add(5 * time.Minute)}},
	}
	redirect := adminapi.Service{Enabled: true, RedirectCode: 301, Backends: []adminapi.Backend{
		{Kind: adminapi.KindRedirect, Enabled: true, Alive: true, Priority: 1, RedirectCode: 301,
			RedirectURL: "http://example.org", ResponseTime: -1},
	}}
	return &adminapi.State{
		Core: adminapi.Core{
			Version: "9.9.9", PID: 4242, Timestamp: fakeNow, Uptime: 90 * time.Second,
			Workers: adminapi.Workers{Active: 1, Count: 5, Min: 5, Max: 128, IdleTimeout: 30 * time.Second},
		},
		ControlSocket: "/run/lbd.sock",
		LogLevel:      "regular",
		Listeners: []adminapi.Listener{{
			Name: "main", Address: "127.0.0.1", Port: 8080, Enabled: true, Connections: 4,
			Services: []adminapi.Service{web, redirect},
		}},
		Services: []adminapi.Service{{Name: "fallback", Enabled: true, Backends: []adminapi.Backend{
			{Address: "10.0.1.1", Port: 8080, Enabled: true, Alive: true, Priority: 5, Weight: 1, ResponseTime: -1},
		}}},
	}
}

// fakeController is the engine as the control API sees it: it applies
// changes to its State and records every call.
type fakeController struct {
	mu        sync.Mutex
	st        *adminapi.State
	calls     []string
	reloadErr error
}

func (f *fakeController) State() *adminapi.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cloneState(f.st)
}

// cloneState copies the slices a change may touch, so a snapshot handed
// out never changes afterwards.
func cloneState(st *adminapi.State) *adminapi.State {
	c := *st
	c.Listeners = append([]adminapi.Listener(nil), st.Listeners...)
	for i := range c.Listeners {
		c.Listeners[i].Services = cloneServices(c.Listeners[i].Services)
	}
	c.Services = cloneServices(st.Services)
	return &c
}

func cloneServices(in []adminapi.Service) []adminapi.Service {
	out := append([]adminapi.Service(nil), in...)
	for i := range out {
		out[i].Backends = append([]adminapi.Backend(nil), out[i].Backends...)
		out[i].Sessions = append([]adminapi.Session(nil), out[i].Sessions...)
	}
	return out
}

func (f *fakeController) record(format string, a ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
}

// service returns the service ref names, or ErrNotFound.
func (f *fakeController) service(ref adminapi.Ref) (*adminapi.Service, error) {
	svcs := f.st.Services
	if ref.Listener >= 0 {
		if ref.Listener >= len(f.st.Listeners) {
			return nil, adminapi.ErrNotFound
		}
		svcs = f.st.Listeners[ref.Listener].Services
	}
	if ref.Service < 0 || ref.Service >= len(svcs) {
		return nil, adminapi.ErrNotFound
	}
	return &svcs[ref.Service], nil
}

func (f *fakeController) SetEnabled(ref adminapi.Ref, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("SetEnabled %d/%d/%d %v", ref.Listener, ref.Service, ref.Backend, on)
	if ref.Service < 0 {
		f.st.Listeners[ref.Listener].Enabled = on
		return nil
	}
	s, err := f.service(ref)
	switch {
	case err != nil:
		return err
	case ref.Backend < 0:
		s.Enabled = on
	case ref.Backend >= len(s.Backends):
		return adminapi.ErrNotFound
	default:
		s.Backends[ref.Backend].Enabled = on
	}
	return nil
}

func (f *fakeController) AddBackend(ref adminapi.Ref, spec adminapi.BackendSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AddBackend %d/%d %s:%d w%d p%d", ref.Listener, ref.Service, spec.Address, spec.Port, spec.Weight, spec.Priority)
	s, err := f.service(ref)
	if err != nil {
		return err
	}
	s.Backends = append(s.Backends, adminapi.Backend{ID: spec.ID, Address: spec.Address, Port: spec.Port,
		Enabled: true, Alive: true, Weight: spec.Weight, Priority: spec.Priority, ResponseTime: -1})
	return nil
}

func (f *fakeController) SetBackend(ref adminapi.Ref, set adminapi.BackendSettings) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	f.record("SetBackend %d/%d/%d w%s p%s c%s", ref.Listener, ref.Service, ref.Backend, v(set.Weight), v(set.Priority), v(set.ConnLimit))
	s, err := f.service(ref)
	if err != nil {
		return err
	}
	if ref.Backend < 0 || ref.Backend >= len(s.Backends) {
		return adminapi.ErrNotFound
	}
	if set.Weight != nil && *set.Weight > 65535 {
		return fmt.Errorf("weight %d out of range 0-65535: %w", *set.Weight, adminapi.ErrInvalid)
	}
	b := &s.Backends[ref.Backend]
	if set.Weight != nil {
		b.Priority = *set.Weight // the fixture's services are Pound-balanced
	}
	if set.Priority != nil {
		b.Priority = *set.Priority
	}
	if set.ConnLimit != nil {
		b.ConnLimit = *set.ConnLimit
	}
	return nil
}

func (f *fakeController) RemoveBackend(ref adminapi.Ref) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveBackend %d/%d/%d", ref.Listener, ref.Service, ref.Backend)
	s, err := f.service(ref)
	if err != nil {
		return err
	}
	if ref.Backend < 0 || ref.Backend >= len(s.Backends) {
		return adminapi.ErrNotFound
	}
	s.Backends = append(s.Backends[:ref.Backend], s.Backends[ref.Backend+1:]...)
	return nil
}

func (f *fakeController) SetLogLevel(listener int, level string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("SetLogLevel %d %q", listener, level)
	switch level {
	case "", "null", "regular", "extended", "combined":
	default:
		return fmt.Errorf("unknown format %q: %w", level, adminapi.ErrInvalid)
	}
	if listener < 0 {
		f.st.LogLevel = level
	} else {
		f.st.Listeners[listener].LogLevel = level
	}
	return nil
}

func (f *fakeController) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Reload")
	return f.reloadErr
}

func (f *fakeController) AddSession(ref adminapi.Ref, s adminapi.SessionSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AddSession %d/%d %s->%d", ref.Listener, ref.Service, s.Key, s.Backend)
	svc, err := f.service(ref)
	if err != nil {
		return err
	}
	svc.Sessions = append(svc.Sessions, adminapi.Session{Key: s.Key, Backend: s.Backend, LastSeen: fakeNow, Expire: fakeNow.Add(time.Minute)})
	return nil
}

func (f *fakeController) MoveSession(ref adminapi.Ref, s adminapi.SessionSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MoveSession %d/%d %s->%d", ref.Listener, ref.Service, s.Key, s.Backend)
	return nil
}

func (f *fakeController) DeleteSession(ref adminapi.Ref, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DeleteSession %d/%d %s", ref.Listener, ref.Service, key)
	svc, err := f.service(ref)
	if err != nil {
		return err
	}
	for i := range svc.Sessions {
		if svc.Sessions[i].Key == key {
			svc.Sessions = append(svc.Sessions[:i], svc.Sessions[i+1:]...)
			return nil
		}
	}
	return adminapi.ErrNotFound
}

func (f *fakeController) FlushSessions(ref adminapi.Ref) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("FlushSessions %d/%d/%d", ref.Listener, ref.Service, ref.Backend)
	return nil
}

func (f *fakeController) SyncSessions(ref adminapi.Ref, _ []adminapi.SessionSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("SyncSessions %d/%d", ref.Listener, ref.Service)
	return nil
}

// Calls returns the recorded calls, joined by "; ".
func (f *fakeController) Calls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, "; ")
}

// withoutReload stands for an lbd older than PATCH /config on the Pound
// socket: the endpoint answers 405 like any unknown method.
func withoutReload(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch && r.URL.Path == "/config" {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serve starts a control server for h on a UNIX socket in a short temp
// dir (socket paths are limited to 108 bytes) and returns its path.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lbctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "ctl.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := adminapi.NewServer(h)
	srv.Logger = quietLogger()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return path
}

// poundServer serves the Pound dialect of a fresh fixture; reload adds
// PATCH /config.
func poundServer(t *testing.T, reload bool) (string, *fakeController) {
	t.Helper()
	fc := &fakeController{st: fixture()}
	var h http.Handler = adminapi.NewPoundHandler(fc)
	if !reload {
		h = withoutReload(h)
	}
	return serve(t, h), fc
}

// zproxyServer serves the zproxy dialect of a fresh fixture.
func zproxyServer(t *testing.T) (string, *fakeController) {
	t.Helper()
	fc := &fakeController{st: fixture()}
	return serve(t, adminapi.NewZproxyHandler(fc)), fc
}

// result is one run of the application.
type result struct {
	stdout, stderr string
	code           int
}

// run runs argv (argv[0] selects lbctl or poundctl) in-process with env
// as the environment. The default configuration is env["@config"], or a
// file that does not exist, so the host's /etc/lbd/lbd.cfg never counts;
// without HOME or POUNDCTL_CONF in env no ~/.poundctl is read.
func run(env map[string]string, argv ...string) result {
	var out, errb bytes.Buffer
	def := env["@config"]
	if def == "" {
		def = "/nonexistent/lbd.cfg"
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	code := Main(argv, Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] },
		LookupEnv: lookup, DefaultConfig: def})
	return result{out.String(), errb.String(), code}
}

// quietLogger drops the server's audit lines.
func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// TestMain fails the package if a command leaves goroutines behind (an
// unclosed connection or server).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
