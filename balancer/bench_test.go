package balancer

import (
	"fmt"
	"testing"
	"time"
)

// benchFixture builds n backends with zproxy weights 1..5, all in one tier. With busy, every backend
// carries load (one established conn, one pending connect for
// PENDING_CONNECTIONS, a latency sample), so the min-based algorithms
// cannot stop early: their worst case.
func benchFixture(b testing.TB, k Kind, n int, busy bool) *fixture {
	specs := make([]spec, n)
	for i := range specs {
		specs[i] = spec{prio: 1, weight: 1 + i%5} // one zproxy tier: all eligible
	}
	f := newFixture(b, specs...)
	if !busy {
		return f
	}
	for i, be := range f.bs {
		if k == PendingConnections {
			f.holdPending(i, 1)
		} else {
			f.hold(i, 1)
		}
		be.Done(nil, 200, time.Duration(1+i%7)*time.Millisecond)
	}
	return f
}

func BenchmarkPick(b *testing.B) {
	for _, k := range allKinds {
		for _, busy := range []bool{false, true} {
			if busy && (k == Random || k == IWRR || k == RoundRobin) {
				continue // load does not change their cost
			}
			for _, n := range []int{2, 16, 256} {
				name := fmt.Sprintf("%v/n=%d", k, n)
				if busy {
					name = fmt.Sprintf("%v/busy/n=%d", k, n)
				}
				b.Run(name, func(b *testing.B) {
					f := benchFixture(b, k, n, busy)
					bl := New(k, f.bs, WithMode(ZproxyMode))
					defer bl.Close()
					b.ReportAllocs()
					for b.Loop() {
						if bl.Pick() == nil {
							b.Fatal("nil pick")
						}
					}
				})
			}
		}
	}
}

// BenchmarkPickParallel shows the cost of sharing one balancer between all
// Ps: the ring cursor is the only contended write.
func BenchmarkPickParallel(b *testing.B) {
	for _, k := range allKinds {
		b.Run(k.String(), func(b *testing.B) {
			f := benchFixture(b, k, 16, false)
			bl := New(k, f.bs, WithMode(ZproxyMode))
			defer bl.Close()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bl.Pick()
				}
			})
		})
	}
}

// BenchmarkRebuild is the cost of one enabled/alive flip (not hot path).
func BenchmarkRebuild(b *testing.B) {
	for _, k := range []Kind{Random, IWRR} {
		b.Run(fmt.Sprintf("%v/n=256", k), func(b *testing.B) {
			f := benchFixture(b, k, 256, false)
			bl := New(k, f.bs)
			defer bl.Close()
			b.ReportAllocs()
			for b.Loop() {
				bl.Refresh()
			}
		})
	}
}

// BenchmarkWeightChange is the cost of a weight set at runtime (the
// control API; not hot path): the backend's atomic, then one rebuild of
// every balancer that holds it.
func BenchmarkWeightChange(b *testing.B) {
	for _, k := range []Kind{Random, IWRR, RoundRobin, LeastConnections} {
		b.Run(fmt.Sprintf("%v/n=256", k), func(b *testing.B) {
			f := benchFixture(b, k, 256, false)
			bl := New(k, f.bs, WithMode(ZproxyMode))
			defer bl.Close()
			b.ReportAllocs()
			w := 1
			for b.Loop() {
				w = w%5 + 1
				f.bs[7].SetWeight(w)
			}
		})
	}
}
