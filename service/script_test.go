package service

import (
	"testing"
	"time"

	"lbd/backend"
	"lbd/config"
	"lbd/session"
)

// TestScriptNames checks what Lua's http.service sees, and how a script's
// http.service.name finds a service: listener services by name, global
// ones with a leading slash.
func TestScriptNames(t *testing.T) {
	mk := func(name string, global bool) *Service {
		s, err := New(&config.Service{Name: name, Pos: config.Locus{}}, Options{Global: global})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	own, anon, dup, glob := mk("web", false), mk("", false), mk("web", false), mk("web", true)
	r := &Router{Services: []*Service{own, anon, dup, glob}}
	for _, tc := range []struct {
		s    *Service
		want string
	}{{own, "web"}, {anon, ""}, {glob, "/web"}} {
		if got := tc.s.ScriptName(); got != tc.want {
			t.Errorf("ScriptName = %q, want %q", got, tc.want)
		}
	}
	if s, ok := r.FindService("web", false); !ok || s != own {
		t.Errorf("listener service web: %v %v, want the first one", s, ok)
	}
	if s, ok := r.FindService("web", true); !ok || s != glob {
		t.Errorf("global service web: %v %v", s, ok)
	}
	if _, ok := r.FindService("none", false); ok {
		t.Error("found a service that does not exist")
	}
}

// TestPickMinSessions checks that a session pins only to a backend of the groups
// a script allows.
func TestPickMinSessions(t *testing.T) {
	regular := backend.New(backend.Options{Address: "10.0.0.1:80", Priority: 1})
	emergency := backend.New(backend.Options{Address: "10.0.0.2:80", Priority: 1, Emergency: true})
	tab := session.NewTable[*backend.Backend](time.Minute, 100, time.Now)
	s, err := New(&config.Service{}, Options{Backends: []*backend.Backend{regular, emergency},
		Algo: fixedAlgo{regular, emergency}, Sessions: tab, Extractor: session.Extractor{Type: session.IP}})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("client")
	s.Pin(key, regular)
	if got := s.PickMin(key, 0); got != regular {
		t.Errorf("PickMin(0) = %v, want the pinned backend", got)
	}
	if got := s.PickMin(key, 65535); got != emergency {
		t.Errorf("PickMin(65535) = %v, want the emergency backend", got)
	}
}

// fixedAlgo picks the first backend, or from a group the first of it.
type fixedAlgo []*backend.Backend

func (a fixedAlgo) Pick() *backend.Backend { return a[0] }
func (a fixedAlgo) PickMin(min int) *backend.Backend {
	for _, b := range a {
		if b.Emergency() && min > 0 || !b.Emergency() && min == 0 {
			return b
		}
	}
	return nil
}
