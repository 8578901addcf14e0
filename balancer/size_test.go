package balancer

import (
	"runtime"
	"testing"

	"lbd/backend"
)

// balancerBudget is what a balancer of two backends may keep live, its
// hooks in the backends included: 10,000 services have 10,000 of them
// (issue 36; 656 bytes before: a cursor that Random never reads, 80
// bytes, and a remover closure per backend).
const balancerBudget = 520

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
				budget += 96 // the ring and its cursor, padded to its cache line
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
