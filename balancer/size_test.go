package balancer

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"lbd/backend"
)

// balancerBudget is what a balancer of two backends may keep live, its
// hooks in the backends included: 10,000 services have 10,000 of them
// (issue 36; 656 bytes before: a cursor that Random never reads, 80
// bytes, a remover closure per backend, and an alias table for equal
// weights; 456 with a copy of its backends as the group and a slice of
// tiers of its own).
const balancerBudget = 432

// ringBalancerBudget is the same for a ring kind (IWRR), with its ring
// and cursor: 688 bytes before, 600 before the shared group and tiers.
const ringBalancerBudget = 576

// TestBalancerSize: the live heap per balancer of two backends, for a
// kind without a ring (Random, Pound's default) and one with (IWRR).
func TestBalancerSize(t *testing.T) {
	const n = 2000
	for _, kind := range []Kind{Random, IWRR} {
		t.Run(kind.String(), func(t *testing.T) {
			bs := make([][]*backend.Backend, n)
			for i := range bs {
				bs[i] = []*backend.Backend{
					backend.New(backend.Options{Address: "127.0.0.1:1", Priority: 5}),
					backend.New(backend.Options{Address: "127.0.0.1:2", Priority: 5}),
				}
			}
			before := liveBytes()
			bals := make([]*Balancer, n)
			for i := range bals {
				bals[i] = New(kind, bs[i])
			}
			per := (liveBytes() - before) / n
			t.Logf("%s: %d bytes a balancer", kind, per)
			budget := uint64(balancerBudget)
			if usesRing(kind) {
				budget = ringBalancerBudget
			}
			if per > budget {
				t.Errorf("%d bytes a balancer, budget %d", per, budget)
			}
			runtime.KeepAlive(bals)
			runtime.KeepAlive(bs)
		})
	}
}

func liveBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestEqualWeightsNeedNoTable: a Random group of equal weights keeps no
// alias table, and picks exactly what the table would have picked.
func TestEqualWeightsNeedNoTable(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		bs := make([]*backend.Backend, n)
		w := make([]int64, n)
		for i := range bs {
			bs[i] = backend.New(backend.Options{Address: "127.0.0.1:" + strconv.Itoa(i+1), Priority: 5})
			w[i] = 5
		}
		g := New(Random, bs).snap.Load().groups[0]
		if g.thr != nil || g.alias != nil {
			t.Fatalf("%d equal weights: an alias table of %d entries", n, len(g.thr))
		}
		table := g
		table.thr, table.alias = aliasTable(w)
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		for range 10000 {
			r := rng.Uint64()
			if got, want := g.pickRandom(r), table.pickRandom(r); got != want {
				t.Fatalf("%d equal weights, draw %#x: picked %s, the table picks %s", n, r, got, want)
			}
		}
		for _, r := range []uint64{0, math.MaxUint64} {
			if got, want := g.pickRandom(r), table.pickRandom(r); got != want {
				t.Fatalf("%d equal weights, draw %#x: picked %s, the table picks %s", n, r, got, want)
			}
		}
	}
}

// newGarbageBudget is what New may allocate for a Random balancer of two
// backends beyond what it keeps: a load builds one per service, and what
// it drops is left among what the build keeps (issue 36). It was 216
// bytes: a first snapshot made before the hooks and replaced after them,
// and slices grown by append; 0 now.
const newGarbageBudget = 64

// TestNewMakesLittleGarbage: a Random balancer of two backends allocates
// little more than it keeps.
func TestNewMakesLittleGarbage(t *testing.T) {
	const n = 2000
	bs := make([][]*backend.Backend, n)
	for i := range bs {
		bs[i] = []*backend.Backend{
			backend.New(backend.Options{Address: "127.0.0.1:1", Priority: 5}),
			backend.New(backend.Options{Address: "127.0.0.1:2", Priority: 5}),
		}
	}
	var before, after runtime.MemStats
	live := liveBytes()
	runtime.ReadMemStats(&before)
	bals := make([]*Balancer, n)
	for i := range bals {
		bals[i] = New(Random, bs[i])
	}
	runtime.ReadMemStats(&after)
	kept := int64(liveBytes()-live) / n
	made := int64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%d bytes allocated a balancer, %d kept", made, kept)
	if made-kept > newGarbageBudget {
		t.Errorf("%d bytes of garbage a balancer, budget %d", made-kept, newGarbageBudget)
	}
	runtime.KeepAlive(bals)
	runtime.KeepAlive(bs)
}

// TestGroupSharesAllWhenEveryBackendIsIn: a balancer whose backends are
// all in its one group lists them without a copy, and one that leaves a
// backend out does not touch the list of all.
func TestGroupSharesAllWhenEveryBackendIsIn(t *testing.T) {
	bs := []*backend.Backend{
		backend.New(backend.Options{Address: "127.0.0.1:1", Priority: 5}),
		backend.New(backend.Options{Address: "127.0.0.1:2", Priority: 5}),
	}
	b := New(Random, bs)
	g := b.snap.Load().groups
	if len(g) != 1 || len(g[0].bs) != 2 || &g[0].bs[0] != &b.all[0] {
		t.Fatalf("the group is not the list of all: %d groups", len(g))
	}
	bs[0].SetEnabled(false)
	g = b.snap.Load().groups
	if len(g[0].bs) != 1 || g[0].bs[0] != bs[1] {
		t.Errorf("with the first disabled the group is %v", g[0].bs)
	}
	if b.all[0] != bs[0] || b.all[1] != bs[1] {
		t.Error("the list of all changed")
	}
}
