package engine

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"lbd/adminapi"
)

// feed records what the engine tells a cluster.
type feed struct {
	mu      sync.Mutex
	changes []adminapi.Change
}

func (f *feed) Changed(c adminapi.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, c)
}

func (f *feed) Status() *adminapi.ClusterStatus { return &adminapi.ClusterStatus{Node: "test"} }

// taken returns the changes reported since the last call, reloads left out.
func (f *feed) taken() []adminapi.Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []adminapi.Change
	for _, c := range f.changes {
		if c.Kind != adminapi.ChangeReloaded {
			out = append(out, c)
		}
	}
	f.changes = nil
	return out
}

func (f *feed) reloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.changes {
		if c.Kind == adminapi.ChangeReloaded {
			n++
		}
	}
	return n
}

// clusterCfg has a named and an unnamed listener, a global service, a
// service with a special backend first and a UNIX-socket backend.
const clusterCfg = `ListenHTTP "front"
	Address 127.0.0.1
	Port 0
	Service "web"
		BackEnd
			Address 127.0.0.2
			Port 80
		End
		BackEnd
			Address 127.0.0.3
			Port 80
		End
		Session
			Type HEADER
			ID "X-S"
			TTL 60
		End
	End
	Service
		Redirect "http://example.com/"
		BackEnd
			Address "/run/app.sock"
		End
	End
End
ListenHTTP
	Address 127.0.0.2
	Port 0
	Service "other"
		BackEnd
			Address 127.0.0.4
			Port 80
		End
	End
End
Service "global"
	BackEnd
		Address 127.0.0.5
		Port 80
	End
	Session
		Type IP
		TTL 60
	End
End
`

func newClusterEngine(t *testing.T) (*Engine, *feed) {
	t.Helper()
	f := &feed{}
	e, err := New(load(t, clusterCfg), Options{Cluster: f})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, f
}

func ref(l, s, b int) adminapi.Ref { return adminapi.Ref{Listener: l, Service: s, Backend: b} }

// TestControlChangesAreNamed: each control change reaches the cluster
// with the names every instance knows the object by.
func TestControlChangesAreNamed(t *testing.T) {
	e, f := newClusterEngine(t)
	tests := []struct {
		name string
		do   func() error
		want adminapi.Change
	}{
		{name: "named listener", do: func() error { return e.SetEnabled(ref(0, -1, -1), false) },
			want: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front"}},
		{name: "unnamed listener", do: func() error { return e.SetEnabled(ref(1, -1, -1), true) },
			want: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "#1", Enabled: true}},
		{name: "service", do: func() error { return e.SetEnabled(ref(0, 0, -1), false) },
			want: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web"}},
		{name: "backend", do: func() error { return e.SetEnabled(ref(0, 0, 1), false) },
			want: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web", Backend: "127.0.0.3-80"}},
		{name: "unix backend after a special one", do: func() error { return e.SetEnabled(ref(0, 1, 1), false) },
			want: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "#1", Backend: "/run/app.sock"}},
		{name: "global service", do: func() error { return e.SetEnabled(ref(-1, 0, -1), false) },
			want: adminapi.Change{Kind: adminapi.ChangeEnabled, Service: "global"}},
		{name: "listener log level", do: func() error { return e.SetLogLevel(0, "combined") },
			want: adminapi.Change{Kind: adminapi.ChangeLogLevel, Listener: "front", Level: "combined"}},
		{name: "global log level", do: func() error { return e.SetLogLevel(-1, "detailed") },
			want: adminapi.Change{Kind: adminapi.ChangeLogLevel, Level: "detailed"}},
		{name: "backend added", do: func() error {
			return e.AddBackend(ref(1, 0, -1), adminapi.BackendSpec{Address: "127.0.0.9", Port: 81, Weight: 3, Priority: 1})
		}, want: adminapi.Change{Kind: adminapi.ChangeBackendAdded, Listener: "#1", Service: "other", Backend: "127.0.0.9-81",
			Spec: adminapi.BackendSpec{Address: "127.0.0.9", Port: 81, Weight: 3, Priority: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			if got := f.taken(); !slices.Equal(got, []adminapi.Change{tt.want}) {
				t.Fatalf("reported %+v, want %+v", got, tt.want)
			}
		})
	}
	if err := e.SetEnabled(ref(0, 0, 7), false); err == nil || len(f.taken()) != 0 {
		t.Fatalf("a failed change: err %v, reported %v", err, f.taken())
	}
}

// TestApplyChange: a peer's change lands on the object of that name, is
// not reported back, and does nothing when already in effect.
func TestApplyChange(t *testing.T) {
	e, f := newClusterEngine(t)
	tests := []struct {
		name    string
		c       adminapi.Change
		wantErr error
		check   func(st *adminapi.State) bool
	}{
		{name: "disable backend", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web", Backend: "127.0.0.3-80"},
			check: func(st *adminapi.State) bool { return !st.Listeners[0].Services[0].Backends[1].Enabled }},
		{name: "disable unix backend", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "#1", Backend: "/run/app.sock"},
			check: func(st *adminapi.State) bool { return !st.Listeners[0].Services[1].Backends[1].Enabled }},
		{name: "disable listener", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "#1"},
			check: func(st *adminapi.State) bool { return !st.Listeners[1].Enabled }},
		{name: "disable global service", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Service: "global"},
			check: func(st *adminapi.State) bool { return !st.Services[0].Enabled }},
		{name: "log level", c: adminapi.Change{Kind: adminapi.ChangeLogLevel, Listener: "front", Level: "combined"},
			check: func(st *adminapi.State) bool { return st.Listeners[0].LogLevel == "combined" }},
		{name: "add backend", c: adminapi.Change{Kind: adminapi.ChangeBackendAdded, Listener: "#1", Service: "other",
			Backend: "127.0.0.9-81", Spec: adminapi.BackendSpec{Address: "127.0.0.9", Port: 81, Weight: 2, Priority: 1}},
			check: func(st *adminapi.State) bool {
				bs := st.Listeners[1].Services[0].Backends
				return len(bs) == 2 && bs[1].Address == "127.0.0.9" && bs[1].Weight == 2
			}},
		{name: "unknown listener", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "nope"}, wantErr: adminapi.ErrNotFound},
		{name: "unknown service", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "nope"}, wantErr: adminapi.ErrNotFound},
		{name: "unknown backend", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web", Backend: "10.0.0.1-1"}, wantErr: adminapi.ErrNotFound},
		{name: "nothing named", c: adminapi.Change{Kind: adminapi.ChangeEnabled}, wantErr: adminapi.ErrInvalid},
		{name: "unknown kind", c: adminapi.Change{Kind: 99, Listener: "front"}, wantErr: adminapi.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.ApplyChange(tt.c)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("ApplyChange = %v, want %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(e.State()) {
				t.Fatalf("change not in effect: %+v", tt.c)
			}
			if got := f.taken(); len(got) != 0 {
				t.Fatalf("a peer's change was reported back: %+v", got)
			}
		})
	}
	// Applying again what is in effect rebuilds nothing.
	before := f.reloads()
	for _, c := range []adminapi.Change{
		{Kind: adminapi.ChangeLogLevel, Listener: "front", Level: "combined"},
		{Kind: adminapi.ChangeBackendAdded, Listener: "#1", Service: "other", Backend: "127.0.0.9-81",
			Spec: adminapi.BackendSpec{Address: "127.0.0.9", Port: 81, Weight: 2, Priority: 1}},
	} {
		if err := e.ApplyChange(c); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.reloads() - before; n != 0 {
		t.Fatalf("%d rebuilds for changes already in effect", n)
	}
}

func TestSessionServicesByName(t *testing.T) {
	e, _ := newClusterEngine(t)
	got := e.SessionServices()
	if len(got) != 2 || got[[2]string{"front", "web"}] == nil || got[[2]string{"", "global"}] == nil {
		t.Fatalf("session services %v, want front/web and the global one", got)
	}
	if e.State().Cluster == nil || e.State().Cluster.Node != "test" {
		t.Fatal("State does not carry the cluster status")
	}
}

// TestApplyChangeBeforeStart: backends and services take a peer's state
// before the listeners are bound; what needs them (or a rebuild, which
// would bind them) waits, reported as not found.
func TestApplyChangeBeforeStart(t *testing.T) {
	e, err := New(load(t, clusterCfg), Options{Cluster: &feed{}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		c       adminapi.Change
		wantErr error
	}{
		{name: "backend", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web", Backend: "127.0.0.2-80"}},
		{name: "service", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web"}},
		{name: "listener", c: adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front"}, wantErr: adminapi.ErrNotFound},
		{name: "runtime backend", c: adminapi.Change{Kind: adminapi.ChangeBackendAdded, Listener: "front", Service: "web",
			Backend: "127.0.0.9-81", Spec: adminapi.BackendSpec{Address: "127.0.0.9", Port: 81}}, wantErr: adminapi.ErrNotFound},
		{name: "log level", c: adminapi.Change{Kind: adminapi.ChangeLogLevel, Level: "detailed"}, wantErr: adminapi.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.ApplyChange(tt.c)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("ApplyChange = %v, want %v", err, tt.wantErr)
			}
		})
	}
	st := e.State()
	if st.Listeners[0].Services[0].Enabled || st.Listeners[0].Services[0].Backends[0].Enabled {
		t.Fatal("the service and backend states were not applied before Start")
	}
	if len(e.Addrs()) != 0 {
		t.Fatal("a change before Start bound a listener")
	}
}
