package adminapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// do runs one request through h with an httptest recorder.
func do(h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file\n got: %s\nwant: %s", name, got, want)
	}
}

func TestPoundGolden(t *testing.T) {
	stats := newFake()
	stats.st.BackendStats = true
	noControl := newFake()
	noControl.st.ControlSocket = ""
	extra := newFake()
	extra.st.Listeners = append(extra.st.Listeners, tunnelListener(), filesListener())
	limits := newFake()
	limits.st.Listeners[0].Limits = Limits{PasswordFiles: []PasswordFile{{Path: "/etc/lbd/admins", Generation: 1, Users: 2}}}
	limits.st.Listeners[0].Services[0].Limits = Limits{
		RateLimits: []RateLimit{{Key: "%[jwt sub]", Interval: 100 * time.Millisecond, Burst: 20, Buckets: 3},
			{Key: "%[remoteip 0]", Interval: 2 * time.Second, Burst: 1}},
		PasswordFiles: []PasswordFile{{Path: "/etc/lbd/users", Watched: true, Generation: 4, Users: 12}},
	}
	tests := []struct {
		name, path string
		ctl        *fakeCtl
	}{
		{name: "pound_root", path: "/"},
		{name: "pound_root_indent", path: "/?indent=2"},
		{name: "pound_core", path: "/core"},
		{name: "pound_core_slash", path: "/core/"},
		{name: "pound_listener_all", path: "/listener"},
		{name: "pound_listener_control", path: "/listener/0"},
		{name: "pound_listener_main", path: "/listener/1"},
		{name: "pound_listener_https", path: "/listener/2?indent=4"},
		{name: "pound_service", path: "/listener/1/0"},
		{name: "pound_service_unnamed", path: "/listener/1/1"},
		{name: "pound_service_cookieinsert", path: "/listener/2/0"},
		{name: "pound_backend", path: "/listener/1/0/0"},
		{name: "pound_backend_https", path: "/listener/1/0/1"},
		{name: "pound_backend_emergency", path: "/listener/1/0/2"},
		{name: "pound_backend_redirect", path: "/listener/1/1/0"},
		{name: "pound_backend_error", path: "/listener/2/0/1"},
		{name: "pound_backend_control", path: "/listener/0/0/0"},
		{name: "pound_backend_stats", path: "/listener/1/0/0", ctl: stats},
		{name: "pound_backend_stats_none", path: "/listener/1/0/1", ctl: stats},
		{name: "pound_global_service", path: "/service/0"},
		{name: "pound_global_backend", path: "/service/fallback/0"},
		{name: "pound_no_control_listener", path: "/listener/0", ctl: noControl},
		{name: "pound_listener_tunnel", path: "/listener/3", ctl: extra},
		{name: "pound_listener_files", path: "/listener/4?indent=2", ctl: extra},
		{name: "pound_listener_limits", path: "/listener/1", ctl: limits},
		{name: "pound_service_limits", path: "/listener/1/0?indent=2", ctl: limits},
		{name: "pound_log", path: "/log"},
		{name: "pound_log_index", path: "/log/2"},
		{name: "pound_log_name", path: "/log/main"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctl := tc.ctl
			if ctl == nil {
				ctl = newFake()
			}
			rec := do(NewPoundHandler(ctl), http.MethodGet, tc.path, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d, body %s", rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Errorf("invalid JSON: %s", rec.Body)
			}
			checkGolden(t, tc.name+".json", rec.Body.Bytes())
		})
	}
}

// tunnelListener is a Tunnel with two backends, one of them disabled.
func tunnelListener() Listener {
	be := func(addr string, on bool) Backend {
		return Backend{Address: addr, Port: 22, Tunnel: true, Enabled: on, Alive: true, Priority: 1, Weight: 1,
			ConnTimeout: 15 * time.Second, IOTimeout: 60 * time.Second, WSTimeout: 600 * time.Second}
	}
	return Listener{Name: "ssh", Address: "127.0.0.1", Port: 2222, Tunnel: true, Enabled: true,
		Services: []Service{{Enabled: true, Backends: []Backend{be("127.0.0.2", true), be("127.0.0.3", false)}}}}
}

// filesListener has the special backends that answer from lbd alone.
func filesListener() Listener {
	special := func(name string, b Backend) Service {
		b.Enabled, b.Alive, b.Priority = true, true, 1
		return Service{Name: name, Enabled: true, Backends: []Backend{b}}
	}
	return Listener{Address: "/run/lbd/www.sock", Enabled: true, Services: []Service{
		special("", Backend{Kind: KindACME}),
		special("static", Backend{Kind: KindFile}),
		special("options", Backend{Kind: KindSuccess}),
		special("gone", Backend{Kind: KindError, ErrorStatus: 410}),
		special("scripted", Backend{Kind: KindLua, LuaFunction: "auth.deny"}),
	}}
}

// TestPoundAddressing checks that the alternative spellings Pound accepts
// reach the same object as the canonical path.
func TestPoundAddressing(t *testing.T) {
	tests := []struct{ name, path, same string }{
		{name: "listener by name", path: "/listener/main", same: "/listener/1"},
		{name: "service by name", path: "/listener/main/web", same: "/listener/1/0"},
		{name: "global via dash", path: "/listener/-/0", same: "/service/0"},
		{name: "dash alone is the full listing", path: "/listener/-", same: "/"},
		{name: "slash alone is the full listing", path: "/listener/", same: "/"},
		{name: "global service by name", path: "/service/fallback", same: "/service/0"},
		{name: "https listener by index", path: "/listener/2/api/1", same: "/listener/2/0/1"},
	}
	h := NewPoundHandler(newFake())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sameReply(t, h, tc.path, tc.same)
		})
	}
}

func TestZproxyGolden(t *testing.T) {
	tests := []struct{ name, path string }{
		{name: "zproxy_listeners", path: "/listeners"},
		{name: "zproxy_listener", path: "/listener/0"},
		{name: "zproxy_listener_https", path: "/listener/1"},
		{name: "zproxy_services", path: "/listener/0/services"},
		{name: "zproxy_service", path: "/listener/0/service/web"},
		{name: "zproxy_backends", path: "/listener/0/service/web/backends"},
		{name: "zproxy_backend", path: "/listener/0/service/web/backend/127.0.0.1-8081"},
		{name: "zproxy_backend_cookie", path: "/listener/1/service/api/backend/bck-a"},
		{name: "zproxy_service_sessions", path: "/listener/0/service/web/sessions"},
		{name: "zproxy_sessions", path: "/sessions"},
	}
	h := NewZproxyHandler(newFake())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(h, http.MethodGet, tc.path, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d, body %s", rec.Code, rec.Body)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Errorf("invalid JSON: %s", rec.Body)
			}
			checkGolden(t, tc.name+".json", rec.Body.Bytes())
		})
	}
}

// TestZproxyAddressing checks the tolerated spellings: case, repeated and
// trailing slashes, C++-era numeric ids.
func TestZproxyAddressing(t *testing.T) {
	tests := []struct{ name, path, same string }{
		{name: "upper case keywords", path: "/LISTENERS", same: "/listeners"},
		{name: "repeated and trailing slashes", path: "//listener//0///services/", same: "/listener/0/services"},
		{name: "service by index", path: "/listener/0/service/0", same: "/listener/0/service/web"},
		{name: "backend by index", path: "/listener/0/service/web/backend/1", same: "/listener/0/service/web/backend/127.0.0.1-8082"},
		{name: "mixed case path", path: "/Listener/0/Service/web/Backends", same: "/listener/0/service/web/backends"},
	}
	h := NewZproxyHandler(newFake())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sameReply(t, h, tc.path, tc.same)
		})
	}
}

func TestMetricsGolden(t *testing.T) {
	tests := []struct {
		name  string
		stats bool
		edit  func(st *State)
	}{
		{name: "metrics.txt"},
		{name: "metrics_backendstats.txt", stats: true},
		{name: "metrics_tbf_acl.txt", edit: func(st *State) {
			st.Listeners[1].Services[0].Limits.ACLs = []ACLStats{{Name: "office", Match: 4, NoMatch: 9}, {Match: 1}}
			st.Listeners[0].Limits.RateLimits = []RateLimit{{Key: "%[remoteip 0]", Allowed: 7, Refused: 2}}
			st.Listeners[0].Services[0].Limits.RateLimits = []RateLimit{{Key: "%[jwt sub]", Allowed: 3}, {Key: "%[jwt sub]", Refused: 1}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newFake()
			ctl.st.BackendStats = tc.stats
			if tc.edit != nil {
				tc.edit(ctl.st)
			}
			rec := do(NewPoundHandler(ctl), http.MethodGet, "/metrics", "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			if ct := rec.Header().Get("Content-Type"); ct != MetricsContentType {
				t.Errorf("Content-Type %q", ct)
			}
			if !strings.HasSuffix(rec.Body.String(), "\n# EOF\n") {
				t.Errorf("exposition does not end with # EOF")
			}
			checkGolden(t, tc.name, rec.Body.Bytes())
		})
	}
}

// sameReply checks that two spellings of a path get the same answer.
func sameReply(t *testing.T, h http.Handler, path, same string) {
	t.Helper()
	a, b := do(h, http.MethodGet, path, ""), do(h, http.MethodGet, same, "")
	if a.Code != http.StatusOK || b.Code != http.StatusOK {
		t.Fatalf("status %d / %d", a.Code, b.Code)
	}
	if a.Body.String() != b.Body.String() {
		t.Errorf("%s and %s differ:\n%s\n%s", path, same, a.Body, b.Body)
	}
}
