package balancer

import (
	"slices"
	"testing"

	"lbd/backend"
)

// FuzzPick builds a balancer from arbitrary backend states and checks every
// pick against an independent oracle: the pick is available, belongs to the
// regular group when any regular backend can take it, lies within the zproxy
// tier, and is nil only when nothing can take the request.
func FuzzPick(f *testing.F) {
	f.Add(byte(0), byte(0), []byte{5, 0, 0, 2, 0, 1, 5, 1, 4})
	f.Add(byte(2), byte(1), []byte{1, 2, 1, 1, 1, 0, 2, 1, 8, 3, 1, 0})
	f.Add(byte(3), byte(1), []byte{1, 1, 16, 1, 2, 2, 1, 1, 0})
	f.Add(byte(5), byte(0), []byte{0, 0, 0, 3, 3, 2})
	f.Fuzz(func(t *testing.T, kind, mode byte, raw []byte) {
		k := allKinds[int(kind)%len(allKinds)]
		m := Mode(mode % 2)
		var specs []spec
		var over []bool
		for i := 0; i+2 < len(raw) && len(specs) < 12; i += 3 {
			fl := raw[i+2]
			specs = append(specs, spec{
				prio: int(raw[i] % 4), weight: int(raw[i+1] % 4),
				dead: fl&1 != 0, disabled: fl&2 != 0, emergency: fl&4 != 0,
				limit: int(fl>>3) & 1,
			})
			over = append(over, fl&16 != 0)
		}
		fx := newFixture(t, specs...)
		for i, o := range over {
			if o {
				fx.hold(i, 2) // with limit 1 this is over it
			}
		}
		b := New(k, fx.bs, WithMode(m))
		defer b.Close()
		regular, emergency, prio := oracle(fx.bs, m)
		if m == ZproxyMode && b.Priority() != prio {
			t.Fatalf("Priority() = %d, oracle %d", b.Priority(), prio)
		}
		for range 20 {
			got := b.Pick()
			switch {
			case len(regular) > 0:
				if !slices.Contains(regular, got) {
					t.Fatalf("%v picked %v, want one of the regular %v", k, got, regular)
				}
			case len(emergency) > 0:
				if !slices.Contains(emergency, got) {
					t.Fatalf("%v picked %v, want one of the emergency %v", k, got, emergency)
				}
			case got != nil:
				t.Fatalf("%v picked %v, want none", k, got)
			}
		}
	})
}

// oracle lists the backends that may take a request, per group, written
// directly from the rules rather than from the implementation.
func oracle(bs []*backend.Backend, m Mode) (regular, emergency []*backend.Backend, prio int) {
	weight := func(be *backend.Backend) int {
		if m == ZproxyMode {
			return be.Weight()
		}
		return be.Priority()
	}
	prio = 1
	if m == ZproxyMode {
		var byPrio []*backend.Backend
		for _, be := range bs {
			if !be.Emergency() {
				byPrio = append(byPrio, be)
			}
		}
		slices.SortStableFunc(byPrio, func(x, y *backend.Backend) int { return x.Priority() - y.Priority() })
		for _, be := range byPrio {
			if be.Priority() > prio {
				break
			}
			if !be.Alive() || !be.Enabled() {
				prio++
			}
		}
	}
	for _, be := range bs {
		if !be.Available() || weight(be) <= 0 {
			continue
		}
		if be.Emergency() {
			emergency = append(emergency, be)
		} else if m == PoundMode || be.Priority() <= prio {
			regular = append(regular, be)
		}
	}
	return regular, emergency, prio
}
