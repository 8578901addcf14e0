package engine

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"lbd/adminapi"
	"lbd/handoff"
	"lbd/service"
)

func intp(n int) *int { return &n }

// editCfg is a Pound file: a random service (listener 0, service 0,
// with an Emergency backend and sessions), a Redirect first (service 1),
// an iwrr service (service 2) and a global service.
const editCfg = `ListenHTTP
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
		Emergency
			Address 127.0.0.4
			Port 80
		End
		Session
			Type HEADER
			ID "X-S"
			TTL 60
		End
	End
	Service "redir"
		Redirect "http://example.com/"
		BackEnd
			Address 127.0.0.5
			Port 80
		End
	End
	Service "ring"
		Balancer iwrr
		BackEnd
			Address 127.0.0.6
			Port 80
		End
		BackEnd
			Address 127.0.0.7
			Port 80
		End
	End
End
Service "global"
	BackEnd
		Address 127.0.0.9
		Port 80
	End
End
`

// zproxyEditCfg is a zproxy file: its service balances by round robin,
// Priority is a tier and Weight the weight.
const zproxyEditCfg = `ListenHTTP
	Address 127.0.0.1
	Port 0
	Service "zp"
		BackEnd
			Address 127.0.0.6
			Port 80
			Weight 2
		End
		BackEnd
			Address 127.0.0.7
			Port 80
		End
	End
End
`

// zproxyIwrrCfg is a zproxy file whose service is balanced by Pound's
// iwrr: the Priority is the weight, in the file's range of 1-9.
const zproxyIwrrCfg = `ListenHTTP
	Name z
	Address 127.0.0.1
	Port 0
	Service "web"
		Balancer iwrr
		BackEnd
			Address 127.0.0.6
			Port 80
		End
	End
End
`

func newEditEngine(t *testing.T) (*Engine, *feed) {
	t.Helper()
	return newEngineOn(t, editCfg)
}

func newEngineOn(t *testing.T, src string) (*Engine, *feed) {
	t.Helper()
	f := &feed{}
	e, err := New(load(t, src), Options{Log: quiet(), Cluster: f})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, f
}

// TestSetBackend: what each balancing accepts, and the statement a
// weight lands in.
func TestSetBackend(t *testing.T) {
	pound, _ := newEditEngine(t)
	zp, _ := newEngineOn(t, zproxyEditCfg)
	zpIwrr, _ := newEngineOn(t, zproxyIwrrCfg)
	type want struct{ priority, weight, limit int }
	cases := []struct {
		name    string
		zproxy  bool
		iwrr    bool // zpIwrr
		ref     adminapi.Ref
		set     adminapi.BackendSettings
		wantErr error
		errHas  string
		want    want
	}{
		{name: "pound weight is the priority", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(9)}, want: want{9, 1, 0}},
		{name: "pound priority", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Priority: intp(3)}, want: want{3, 1, 0}},
		{name: "pound weight 0 parks it", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(0)}, want: want{0, 1, 0}},
		{name: "pound top of the range", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(65535), ConnLimit: intp(4)}, want: want{65535, 1, 4}},
		{name: "same weight and priority", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(6), Priority: intp(6)}, want: want{6, 1, 4}},
		{name: "emergency backend", ref: ref(0, 0, 2), set: adminapi.BackendSettings{Weight: intp(2)}, want: want{2, 1, 0}},
		{name: "after a special backend", ref: ref(0, 1, 1), set: adminapi.BackendSettings{Priority: intp(8)}, want: want{8, 1, 0}},
		{name: "global service", ref: ref(-1, 0, 0), set: adminapi.BackendSettings{ConnLimit: intp(0)}, want: want{5, 1, 0}},
		{name: "iwrr weight", ref: ref(0, 2, 1), set: adminapi.BackendSettings{Weight: intp(1)}, want: want{1, 1, 0}},
		{name: "zproxy weight", zproxy: true, ref: ref(0, 0, 1), set: adminapi.BackendSettings{Weight: intp(40)}, want: want{1, 40, 0}},
		{name: "zproxy tier", zproxy: true, ref: ref(0, 0, 1), set: adminapi.BackendSettings{Priority: intp(9)}, want: want{9, 40, 0}},
		{name: "pound weight over the range", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(65536)},
			wantErr: adminapi.ErrInvalid, errHas: "weight 65536 out of range 0-65535 (in a service balanced by random the weight is the Priority)"},
		{name: "pound negative priority", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Priority: intp(-1)},
			wantErr: adminapi.ErrInvalid, errHas: "priority -1 out of range 0-65535"},
		{name: "weight and priority differ", ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(2), Priority: intp(3)},
			wantErr: adminapi.ErrInvalid, errHas: "weight 2 and priority 3 differ"},
		{name: "zproxy weight 0", zproxy: true, ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(0)},
			wantErr: adminapi.ErrInvalid, errHas: "weight 0 out of range 1-2147483647 (in a service balanced by ROUND_ROBIN)"},
		{name: "zproxy tier 10", zproxy: true, ref: ref(0, 0, 0), set: adminapi.BackendSettings{Priority: intp(10)},
			wantErr: adminapi.ErrInvalid, errHas: "priority 10 out of range 1-9"},
		{name: "zproxy file, iwrr weight", iwrr: true, ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(9)}, want: want{9, 1, 0}},
		{name: "zproxy file, iwrr weight 10", iwrr: true, ref: ref(0, 0, 0), set: adminapi.BackendSettings{Weight: intp(10)},
			wantErr: adminapi.ErrInvalid, errHas: "weight 10 out of range 1-9 (in a service balanced by iwrr the weight is the Priority)"},
		{name: "zproxy file, iwrr priority 0", iwrr: true, ref: ref(0, 0, 0), set: adminapi.BackendSettings{Priority: intp(0)},
			wantErr: adminapi.ErrInvalid, errHas: "priority 0 out of range 1-9"},
		{name: "negative limit", zproxy: true, ref: ref(0, 0, 0), set: adminapi.BackendSettings{ConnLimit: intp(-1)},
			wantErr: adminapi.ErrInvalid, errHas: "connlimit -1 out of range 0-2147483647"},
		{name: "nothing", ref: ref(0, 0, 0), wantErr: adminapi.ErrInvalid, errHas: "nothing to change"},
		{name: "special backend", ref: ref(0, 1, 0), set: adminapi.BackendSettings{Weight: intp(2)}, wantErr: adminapi.ErrInvalid},
		{name: "no such backend", ref: ref(0, 0, 7), set: adminapi.BackendSettings{Weight: intp(2)}, wantErr: adminapi.ErrNotFound},
		{name: "no such service", ref: ref(0, 9, 0), set: adminapi.BackendSettings{Weight: intp(2)}, wantErr: adminapi.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := pound
			switch {
			case tc.zproxy:
				e = zp
			case tc.iwrr:
				e = zpIwrr
			}
			before := e.State()
			err := e.SetBackend(tc.ref, tc.set)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) || !strings.Contains(errText(err), tc.errHas) {
				t.Fatalf("SetBackend = %v, want %v containing %q", err, tc.wantErr, tc.errHas)
			}
			if tc.wantErr != nil {
				if after := e.State(); !sameSettings(before, after) {
					t.Fatal("a refused change changed something")
				}
				return
			}
			b, err := backendAt(serviceOf(t, e, tc.ref), tc.ref.Backend)
			if err != nil {
				t.Fatal(err)
			}
			if got := (want{b.Priority(), b.Weight(), b.ConnLimit()}); got != tc.want {
				t.Fatalf("priority, weight, limit = %v, want %v", got, tc.want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func serviceOf(t *testing.T, e *Engine, r adminapi.Ref) *service.Service {
	t.Helper()
	s, err := e.lookup(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameSettings compares every backend's settings of two snapshots.
func sameSettings(a, b *adminapi.State) bool {
	type v struct{ p, w, c int }
	collect := func(st *adminapi.State) []v {
		var out []v
		svcs := append([]adminapi.Service(nil), st.Services...)
		for _, l := range st.Listeners {
			svcs = append(svcs, l.Services...)
		}
		for _, s := range svcs {
			for _, b := range s.Backends {
				out = append(out, v{b.Priority, b.Weight, b.ConnLimit})
			}
		}
		return out
	}
	x, y := collect(a), collect(b)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// TestSetBackendLastsUntilReload: a setting is made in place (the same
// backend object, its balancer republished), outlives the rebuilds of
// other runtime changes, and a reload of the file restores the file's.
func TestSetBackendLastsUntilReload(t *testing.T) {
	e, _ := newEditEngine(t)
	b := e.g.services[0][0].Backends[1]
	must(t, e.SetBackend(ref(0, 0, 1), adminapi.BackendSettings{Weight: intp(40)}))
	if b.Priority() != 40 || e.g.services[0][0].Backends[1] != b {
		t.Fatalf("priority %d, same object %v", b.Priority(), e.g.services[0][0].Backends[1] == b)
	}
	must(t, e.SetLogLevel(0, "combined")) // rebuilds the graph
	must(t, e.AddBackend(ref(0, 0, -1), adminapi.BackendSpec{Address: "127.0.0.10", Port: 80, Weight: 1, Priority: 1}))
	if nb := e.g.services[0][0].Backends[1]; nb != b || nb.Priority() != 40 {
		t.Fatalf("after rebuilds: same object %v, priority %d, want 40", nb == b, nb.Priority())
	}
	must(t, e.Apply(load(t, editCfg)))
	if nb := e.g.services[0][0].Backends[1]; nb.Priority() != 5 {
		t.Fatalf("after a reload of the file: priority %d, want the file's 5", nb.Priority())
	}
}

// TestRemoveBackend: the backend leaves the listing and the balancer,
// its sessions go and the others stay, it is retired (its pool closed),
// the prober forgets it, and the service keeps what the operator set.
func TestRemoveBackend(t *testing.T) {
	e, _ := newEditEngine(t)
	svc := e.g.services[0][0]
	gone, kept := svc.Backends[0], svc.Backends[1]
	svc.Sessions.Store([]byte("alice"), gone)
	svc.Sessions.Store([]byte("bob"), kept)
	must(t, e.SetEnabled(ref(0, 0, -1), false))
	must(t, e.RemoveBackend(ref(0, 0, 0)))

	ns := e.g.services[0][0]
	if len(ns.Backends) != 2 || ns.Backends[0] != kept {
		t.Fatalf("backends after removal: %v", ns.Backends)
	}
	if ns.Enabled() {
		t.Error("the service was enabled again by the removal")
	}
	for range 50 {
		if ns.Algo.Pick() == gone {
			t.Fatal("the balancer still picks the removed backend")
		}
	}
	if !gone.Retired() || kept.Retired() {
		t.Errorf("retired: removed %v, kept %v", gone.Retired(), kept.Retired())
	}
	if _, ok := ns.Sessions.Lookup([]byte("alice")); ok {
		t.Error("the removed backend's session survived")
	}
	if b, ok := ns.Sessions.Lookup([]byte("bob")); !ok || b != kept {
		t.Error("another backend's session was lost")
	}
	if e.prober.Watches(gone) || !e.prober.Watches(kept) {
		t.Errorf("prober watches: removed %v, kept %v", e.prober.Watches(gone), e.prober.Watches(kept))
	}
	bs := e.State().Listeners[0].Services[0].Backends
	if len(bs) != 2 || bs[0].Address != "127.0.0.3" || !bs[1].Emergency {
		t.Errorf("the control API lists %+v", bs)
	}
	must(t, e.RemoveBackend(ref(0, 0, 1))) // the Emergency backend
	if bs := e.State().Listeners[0].Services[0].Backends; len(bs) != 1 || bs[0].Address != "127.0.0.3" {
		t.Errorf("after removing the Emergency backend: %+v", bs)
	}
}

func TestRemoveBackendRefusals(t *testing.T) {
	e, _ := newEditEngine(t)
	cases := []struct {
		name    string
		ref     adminapi.Ref
		wantErr error
	}{
		{name: "special backend", ref: ref(0, 1, 0), wantErr: adminapi.ErrInvalid},
		{name: "no such backend", ref: ref(0, 0, 9), wantErr: adminapi.ErrNotFound},
		{name: "no such listener", ref: ref(4, 0, 0), wantErr: adminapi.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.RemoveBackend(tc.ref); !errors.Is(err, tc.wantErr) {
				t.Fatalf("RemoveBackend = %v, want %v", err, tc.wantErr)
			}
		})
	}
	if n := len(e.g.services[0][0].Backends); n != 3 {
		t.Fatalf("a refused removal removed something: %d backends", n)
	}
}

// TestRemoveListedTwice: Pound lets a service list one address twice
// (two backends, two shares); neither listing can be removed at runtime,
// since their state is told apart by rank.
func TestRemoveListedTwice(t *testing.T) {
	twice := strings.ReplaceAll(strings.Replace(twoBackends, "127.0.0.3", "127.0.0.2", 1), "Port 18080", "Port 0")
	e, err := New(load(t, strings.Replace(twice, "PRIO", "5", 1)), Options{Log: quiet()})
	must(t, err)
	must(t, e.Start())
	defer e.Close()
	for i := range 2 {
		if err := e.RemoveBackend(ref(0, 0, i)); !errors.Is(err, adminapi.ErrConflict) {
			t.Fatalf("removing listing %d: %v, want a conflict", i, err)
		}
	}
	if n := len(e.g.services[0][0].Backends); n != 2 {
		t.Fatalf("%d backends left, want 2", n)
	}
}

// TestAddBackendKeepsServiceState: a runtime rebuild keeps what the
// operator set on the services (a backend added used to re-enable a
// disabled service).
func TestAddBackendKeepsServiceState(t *testing.T) {
	e, _ := newEditEngine(t)
	must(t, e.SetEnabled(ref(0, 2, -1), false))
	must(t, e.AddBackend(ref(0, 2, -1), adminapi.BackendSpec{Address: "127.0.0.11", Port: 80, Weight: 1, Priority: 1}))
	if e.State().Listeners[0].Services[2].Enabled {
		t.Fatal("adding a backend enabled the service again")
	}
}

// TestHandoffCarriesBackendEdits: settings on a configured and an added
// backend, a configured backend removed, one added and removed again,
// one removed and added back: a new engine built from the file with the
// handoff has the same backends with the same settings, and journals
// them for the next upgrade.
func TestHandoffCarriesBackendEdits(t *testing.T) {
	old, _ := newEditEngine(t)
	web := ref(0, 0, -1)
	must(t, old.SetBackend(ref(0, 0, 1), adminapi.BackendSettings{Weight: intp(11)}))
	// Added backends come after the regular ones, before Emergency.
	must(t, old.AddBackend(web, adminapi.BackendSpec{Address: "127.0.0.20", Port: 80, Weight: 1, Priority: 1}))
	must(t, old.SetBackend(ref(0, 0, 2), adminapi.BackendSettings{Priority: intp(12), ConnLimit: intp(3)}))
	must(t, old.AddBackend(web, adminapi.BackendSpec{Address: "127.0.0.21", Port: 80, Weight: 1, Priority: 1}))
	must(t, old.RemoveBackend(ref(0, 0, 3))) // added, then removed
	must(t, old.RemoveBackend(ref(0, 0, 0))) // from the file
	must(t, old.RemoveBackend(ref(0, 2, 0))) // from the file, then added back:
	must(t, old.AddBackend(ref(0, 2, -1), adminapi.BackendSpec{Address: "127.0.0.6", Port: 80, Weight: 7, Priority: 4}))
	must(t, old.RemoveBackend(ref(-1, 0, 0))) // a global service's
	want := backendSummary(old.State())

	var buf bytes.Buffer
	must(t, handoff.Encode(&buf, old.Handoff()))
	st, err := handoff.Decode(&buf)
	must(t, err)
	if st.Version != 2 || len(st.Removed) != 3 || len(st.Settings) != 2 || len(st.Added) != 2 {
		t.Fatalf("handoff: version %d, removed %q, settings %+v, added %+v", st.Version, st.Removed, st.Settings, st.Added)
	}
	cfg, skipped := ApplyRuntime(load(t, editCfg), st)
	if len(skipped) != 0 {
		t.Fatalf("skipped: %q", skipped)
	}
	next, err := New(cfg, Options{Log: quiet(), Restore: st})
	must(t, err)
	must(t, next.Start())
	defer next.Close()
	if got := backendSummary(next.State()); got != want {
		t.Fatalf("after the handoff:\n%s\nwant:\n%s", got, want)
	}
	h := next.Handoff()
	if len(h.Removed) != 3 || len(h.Settings) != 2 || len(h.Added) != 2 {
		t.Errorf("the new engine's journal: removed %q, settings %+v, added %+v", h.Removed, h.Settings, h.Added)
	}
}

// backendSummary lists each service's backends with their settings.
func backendSummary(st *adminapi.State) string {
	var b strings.Builder
	svcs := append([]adminapi.Service(nil), st.Services...)
	for _, l := range st.Listeners {
		svcs = append(svcs, l.Services...)
	}
	for _, s := range svcs {
		b.WriteString(s.Name + ":")
		for _, be := range s.Backends {
			if be.Kind != adminapi.KindRegular && be.Kind != "" {
				b.WriteString(" " + string(be.Kind))
				continue
			}
			fmt.Fprintf(&b, " %s/%d/%d/%d", be.ID, be.Priority, be.Weight, be.ConnLimit)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestClusterChangesByBalancing: under a RoutingPolicy the weight and
// the tier travel apart, and a peer's weight lands on each instance's
// own weight: zproxy's Weight here, Pound's Priority under random.
func TestClusterChangesByBalancing(t *testing.T) {
	e, f := newEngineOn(t, zproxyEditCfg)
	must(t, e.SetBackend(ref(0, 0, 1), adminapi.BackendSettings{Weight: intp(6), Priority: intp(2)}))
	want := []adminapi.Change{
		{Kind: adminapi.ChangeBackendWeight, Listener: "#0", Service: "zp", Backend: "127.0.0.7-80", Spec: adminapi.BackendSpec{Weight: 6}},
		{Kind: adminapi.ChangeBackendPriority, Listener: "#0", Service: "zp", Backend: "127.0.0.7-80", Spec: adminapi.BackendSpec{Priority: 2}},
	}
	if got := f.taken(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reported %+v, want %+v", got, want)
	}
	must(t, e.ApplyChange(adminapi.Change{Kind: adminapi.ChangeBackendWeight, Listener: "#0", Service: "zp", Backend: "127.0.0.6-80",
		Spec: adminapi.BackendSpec{Weight: 4}}))
	must(t, e.ApplyChange(adminapi.Change{Kind: adminapi.ChangeBackendPriority, Listener: "#0", Service: "zp", Backend: "127.0.0.6-80",
		Spec: adminapi.BackendSpec{Priority: 3}}))
	b := e.g.services[0][0].Backends[0]
	if b.Weight() != 4 || b.Priority() != 3 {
		t.Fatalf("a peer's weight and tier: weight %d priority %d, want 4 and 3", b.Weight(), b.Priority())
	}
	if err := e.ApplyChange(adminapi.Change{Kind: adminapi.ChangeBackendPriority, Listener: "#0", Service: "zp", Backend: "127.0.0.6-80",
		Spec: adminapi.BackendSpec{Priority: 12}}); !errors.Is(err, adminapi.ErrInvalid) {
		t.Fatalf("a peer's tier 12: %v, want invalid", err)
	}
}
