package engine

import (
	"testing"

	"lbd/backend"
)

// TestPlainLayoutIsTheTieredOne: for services of static backends only,
// the short layout lists what the general one does, in the same order
// with the same keys and parents: a backend listed twice, special
// backends among regular ones, a service of special backends only.
func TestPlainLayoutIsTheTieredOne(t *testing.T) {
	cfg := load(t, `ListenHTTP
	Address 127.0.0.1
	Port 0
	Service "twice"
		BackEnd
			Address 127.0.0.1
			Port 81
		End
		BackEnd
			Address 127.0.0.1
			Port 82
		End
		BackEnd
			Address 127.0.0.1
			Port 81
		End
	End
	Service "mixed"
		URL "^/m/"
		Redirect "http://example.org/"
		BackEnd
			Address ::1
			Port 83
		End
	End
	Service "special"
		Redirect 301 "http://example.org/moved"
	End
End
`)
	services := cfg.Listeners[0].Services
	for i, s := range services {
		t.Run(s.Name, func(t *testing.T) {
			if !plainBackends(s) {
				t.Fatal("not a service of plain backends")
			}
			plain := &builder{cfg: cfg, next: &graph{backends: map[string]*backend.Backend{}}}
			tiered := &builder{cfg: cfg, next: &graph{backends: map[string]*backend.Backend{}}}
			pe, pb := plain.plainLayout("l0", i, s)
			te, tb := tiered.tieredLayout("l0", i, s)
			if len(pe) != len(te) || len(pb) != len(tb) || (pe == nil) != (te == nil) || (pb == nil) != (tb == nil) {
				t.Fatalf("plain: %d entries, %d backends; tiered: %d, %d", len(pe), len(pb), len(te), len(tb))
			}
			for j := range pe {
				p, q := pe[j], te[j]
				if p.Backend.Address() != q.Backend.Address() || p.Parent != q.Parent || p.Key != q.Key || p.Matrix != q.Matrix || pb[j].Address() != tb[j].Address() {
					t.Errorf("entry %d: plain %+v, tiered %+v", j, p, q)
				}
			}
			if len(plain.next.backends) != len(tiered.next.backends) {
				t.Errorf("keys: plain %d, tiered %d", len(plain.next.backends), len(tiered.next.backends))
			}
			for k := range tiered.next.backends {
				if plain.next.backends[k] == nil {
					t.Errorf("key %q missing from the plain layout", k)
				}
			}
		})
	}
	if len(services) != 3 {
		t.Errorf("%d services", len(services))
	}
}
