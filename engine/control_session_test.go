package engine

import (
	"strings"
	"testing"
	"time"

	"lbd/adminapi"
)

// TestMoveSessionStatic: zproxy's PATCH with "last-seen": 0 makes the
// moved session static; any other move records a last use.
func TestMoveSessionStatic(t *testing.T) {
	tests := []struct {
		name       string
		spec       adminapi.SessionSpec
		wantStatic bool
	}{
		{name: "static", spec: adminapi.SessionSpec{Key: "k", Backend: 1, Static: true}, wantStatic: true},
		{name: "last use now", spec: adminapi.SessionSpec{Key: "k", Backend: 1}},
		{name: "explicit last use", spec: adminapi.SessionSpec{Key: "k", Backend: 1, LastSeen: time.Now().Add(-time.Second)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(cfgWith(t, "5", ""), Options{})
			if err != nil {
				t.Fatal(err)
			}
			ref := adminapi.Ref{Listener: 0, Service: 0, Backend: -1}
			if err := e.AddSession(ref, adminapi.SessionSpec{Key: "k", Backend: 0}); err != nil {
				t.Fatal(err)
			}
			if err := e.MoveSession(ref, tc.spec); err != nil {
				t.Fatal(err)
			}
			b, last, ok := e.g.services[0][0].Sessions.Get("k")
			if !ok || b != e.g.services[0][0].Backends[1] {
				t.Fatalf("session not moved: ok=%v", ok)
			}
			if last.IsZero() != tc.wantStatic {
				t.Errorf("static = %v, want %v", last.IsZero(), tc.wantStatic)
			}
		})
	}
}

// TestStateShowsCookieKeys: zproxy's API shows each backend's
// COOKIEINSERT key ("cookie-key").
func TestStateShowsCookieKeys(t *testing.T) {
	// twoBackends made a zproxy file with COOKIEINSERT sessions.
	src := strings.Replace(twoBackends, "ListenHTTP\n", "ListenHTTP\n\tName z\n", 1)
	src = strings.Replace(src, "Type HEADER\n\t\t\tID \"X-S\"", "Type COOKIEINSERT\n\t\t\tID \"sid\"", 1)
	cfg := load(t, strings.Replace(src, "PRIO", "1", 1))
	e, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := e.State().Listeners[0].Services[0].Backends[0]
	if b.CookieKey != "4-7f000002-500000" {
		t.Errorf("cookie-key %q, want 4-7f000002-500000", b.CookieKey)
	}
}
