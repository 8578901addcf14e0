package balancer

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestTreeAgreesWithScan drives random load changes through backends of a
// group large enough for the tournament tree and checks after every change
// that the tree's pick is exactly the scan's (same minimum, same tie-break
// to the earlier backend).
func TestTreeAgreesWithScan(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		n    int
	}{
		{"least connections, 128 backends", LeastConnections, 128},
		{"least connections, 200 backends", LeastConnections, 200},
		{"response time, 256 backends", ResponseTime, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs := make([]spec, tc.n)
			for i := range specs {
				specs[i] = spec{prio: 1, weight: 1 + i%4}
			}
			f := newFixture(t, specs...)
			b := New(tc.kind, f.bs, WithMode(ZproxyMode))
			defer b.Close()
			if b.snap.Load().groups[0].tree == nil {
				t.Fatal("no tree was built: the test would only test the scan")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			open := make([][]func(), tc.n)
			for step := 0; step < 2000; step++ {
				i := rng.IntN(tc.n)
				switch {
				case tc.kind == ResponseTime:
					f.bs[i].Done(nil, 200, time.Duration(rng.IntN(50)+1)*time.Millisecond)
				case len(open[i]) > 0 && rng.IntN(2) == 0:
					open[i][len(open[i])-1]()
					open[i] = open[i][:len(open[i])-1]
				default:
					open[i] = append(open[i], f.open(i))
				}
				g := &b.snap.Load().groups[0]
				if got, want := b.Pick(), g.scan(tc.kind); got != want {
					t.Fatalf("step %d: tree picked %d, scan %d", step, f.index(got), f.index(want))
				}
			}
			for _, list := range open {
				for _, release := range list {
					release()
				}
			}
		})
	}
}

// TestTreeSettlesAfterConcurrentChanges opens and closes connections from
// several goroutines; once they stop, the root must be the exact minimum.
func TestTreeSettlesAfterConcurrentChanges(t *testing.T) {
	const n = 128
	specs := make([]spec, n)
	for i := range specs {
		specs[i] = spec{prio: 1, weight: 1}
	}
	f := newFixture(t, specs...)
	b := New(LeastConnections, f.bs, WithMode(ZproxyMode))
	defer b.Close()
	var mu sync.Mutex
	var held []func()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			var mine []func()
			for k := 0; k < 400; k++ {
				if len(mine) > 0 && rng.IntN(3) == 0 {
					mine[0]()
					mine = mine[1:]
					continue
				}
				c, err := f.bs[rng.IntN(n)].Dial(time.Time{})
				if err != nil {
					t.Error(err)
					return
				}
				mine = append(mine, func() { c.Close() })
			}
			mu.Lock()
			held = append(held, mine...)
			mu.Unlock()
		}(uint64(w))
	}
	wg.Wait()
	g := &b.snap.Load().groups[0]
	if got, want := b.Pick(), g.scan(LeastConnections); got != want {
		t.Fatalf("after concurrent changes the tree picks %d, the scan %d", f.index(got), f.index(want))
	}
	for _, release := range held {
		release()
	}
}

func TestTreePickDoesNotAllocate(t *testing.T) {
	b := New(LeastConnections, benchFixture(t, LeastConnections, 256, true).bs, WithMode(ZproxyMode))
	defer b.Close()
	if n := testing.AllocsPerRun(1000, func() { b.Pick() }); n != 0 {
		t.Fatalf("tree pick allocates %.1f times", n)
	}
}

func TestReplacedBalancerKeepsItsSuccessorsWatchers(t *testing.T) {
	f := benchFixture(t, LeastConnections, treeMin, false)
	old := New(LeastConnections, f.bs, WithMode(ZproxyMode))
	next := New(LeastConnections, f.bs, WithMode(ZproxyMode))
	old.Close() // a reload closes the old balancer after building the new
	defer next.Close()
	release := f.open(0) // backend 0 becomes the busiest: the root must move
	defer release()
	g := &next.snap.Load().groups[0]
	if got, want := next.Pick(), g.scan(LeastConnections); got != want || f.index(got) == 0 {
		t.Fatalf("successor's tree was detached: picks %d, scan %d", f.index(got), f.index(want))
	}
}

// BenchmarkTreeChange is what a load change costs the backends of a
// tree-keeping balancer (a request makes two to four of them): the price
// of the O(1) pick.
func BenchmarkTreeChange(b *testing.B) {
	for _, n := range []int{treeMin, 256} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			bal := New(LeastConnections, benchFixture(b, LeastConnections, n, true).bs, WithMode(ZproxyMode))
			defer bal.Close()
			tree := bal.snap.Load().groups[0].tree
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tree.changed(i % n)
				i += 7
			}
		})
	}
}
