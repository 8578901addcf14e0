package balancer

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"lbd/backend"
)

// setWeight changes the weight the balancer reads in mode m: Pound's
// Priority, or zproxy's Weight.
func setWeight(be *backend.Backend, m Mode, w int) {
	if m == ZproxyMode {
		be.SetWeight(w)
		return
	}
	be.SetPriority(w)
}

// TestWeightChangeShares: backends start with equal weights; the third
// is raised to 6 at runtime, and the next picks share 1/8, 1/8, 6/8 at
// once, without a new balancer, for every weight-proportional algorithm.
// Least connections and pending connections get their share as open
// connections and pending connects held for each pick.
func TestWeightChangeShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind Kind
		mode Mode
		src  rand.Source
		n    int
	}{
		{name: "Pound random", kind: Random, src: rand.NewPCG(5, 6), n: 80_000},
		{name: "zproxy weights, random", kind: Random, mode: ZproxyMode, src: rand.NewPCG(7, 8), n: 80_000},
		{name: "Pound iwrr", kind: IWRR, n: 8000},
		{name: "zproxy round robin", kind: RoundRobin, mode: ZproxyMode, n: 8000},
		{name: "least connections", kind: LeastConnections, mode: ZproxyMode, n: 4000},
		{name: "pending connections", kind: PendingConnections, mode: ZproxyMode, n: 800},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := weights(t, tc.mode, 1, 1, 1)
			b := New(tc.kind, f.bs, testOptions(tc.mode, tc.src)...)
			defer b.Close()
			before := b.snap.Load()
			setWeight(f.bs[2], tc.mode, 6)
			if b.snap.Load() == before {
				t.Fatal("the weight change did not republish the snapshot")
			}
			got := make([]int, 3)
			for range tc.n {
				i := f.index(b.Pick())
				if i < 0 {
					t.Fatal("no backend picked")
				}
				got[i]++
				switch tc.kind {
				case LeastConnections:
					f.hold(i, 1)
				case PendingConnections:
					f.holdPending(i, 1)
				}
			}
			tolerance := 0.01
			if tc.kind == PendingConnections {
				tolerance = 0.02 // fewer picks: each holds a goroutine
			}
			for i, w := range []float64{1, 1, 6} {
				if share := float64(got[i]) / float64(tc.n); math.Abs(share-w/8) > tolerance {
					t.Errorf("backend %d: share %.4f, want %.4f±%.2f (counts %v)", i, share, w/8, tolerance, got)
				}
			}
		})
	}
}

// TestWeightChangeSequences: the ring algorithms lay out the new cycle
// at once, and a weight lowered again brings the old one back.
func TestWeightChangeSequences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		kind        Kind
		mode        Mode
		before, aft string
	}{
		{name: "iwrr", kind: IWRR, before: "ABCABC", aft: "ABCBCCABCBCC"},
		{name: "round robin", kind: RoundRobin, mode: ZproxyMode, before: "ABCABC", aft: "ABBCCCABBCCC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := weights(t, tc.mode, 1, 1, 1)
			b := New(tc.kind, f.bs, WithMode(tc.mode))
			defer b.Close()
			if got := f.sequence(b, len(tc.before)); got != tc.before {
				t.Fatalf("before: %s, want %s", got, tc.before)
			}
			setWeight(f.bs[1], tc.mode, 2)
			setWeight(f.bs[2], tc.mode, 3)
			b.cursors[0].n.Store(0) // the cursor keeps running: start the new cycle
			if got := f.sequence(b, len(tc.aft)); got != tc.aft {
				t.Errorf("after: %s, want %s", got, tc.aft)
			}
			setWeight(f.bs[1], tc.mode, 1)
			setWeight(f.bs[2], tc.mode, 1)
			b.cursors[0].n.Store(0)
			if got := f.sequence(b, len(tc.before)); got != tc.before {
				t.Errorf("weights back: %s, want %s", got, tc.before)
			}
		})
	}
}

// TestWeightChangeResponseTime: response time minimises latency/weight,
// so a heavier weight makes a slower backend the preferred one.
func TestWeightChangeResponseTime(t *testing.T) {
	t.Parallel()
	f := weights(t, ZproxyMode, 1, 1, 1)
	for i, ms := range []int{2, 2, 4} {
		f.bs[i].Done(nil, 200, time.Duration(ms)*time.Millisecond)
	}
	b := New(ResponseTime, f.bs, WithMode(ZproxyMode))
	defer b.Close()
	if got := f.picked(b, 20); got != "A" {
		t.Fatalf("before: picked %s, want A (2 ms, first)", got)
	}
	f.bs[2].SetWeight(4) // 4 ms / 4 beats 2 ms / 1
	if got := f.picked(b, 20); got != "C" {
		t.Errorf("after weight 4: picked %s, want C", got)
	}
}

// TestPoundWeightZero: in Pound's algorithms a Priority set to 0 at
// runtime takes the backend out of the rotation, and back in when it is
// raised again.
func TestPoundWeightZero(t *testing.T) {
	t.Parallel()
	for _, k := range []Kind{Random, IWRR} {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			f := weights(t, PoundMode, 5, 5)
			b := New(k, f.bs)
			defer b.Close()
			f.bs[0].SetPriority(0)
			if got := f.picked(b, 200); got != "B" {
				t.Errorf("priority 0: picked %s, want B", got)
			}
			f.bs[0].SetPriority(5)
			if got := f.picked(b, 200); got != "AB" {
				t.Errorf("priority 5 again: picked %s, want AB", got)
			}
		})
	}
}

// TestPriorityChangeMovesTiers: zproxy's service priority and its
// eligible tier follow priorities changed at runtime, for every
// algorithm (the order by priority is recomputed, not kept from New).
func TestPriorityChangeMovesTiers(t *testing.T) {
	t.Parallel()
	for _, k := range allKinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, spec{prio: 1, weight: 1}, spec{prio: 1, weight: 1}, spec{prio: 2, weight: 1})
			b := New(k, f.bs, WithMode(ZproxyMode))
			defer b.Close()
			steps := []struct {
				name     string
				do       func()
				priority int
				want     string
			}{
				{name: "start", do: func() {}, priority: 1, want: "AB"},
				{name: "C joins tier 1", do: func() { f.bs[2].SetPriority(1) }, priority: 1, want: "ABC"},
				{name: "A leaves for tier 3", do: func() { f.bs[0].SetPriority(3) }, priority: 1, want: "BC"},
				{name: "B and C down: tier 3 serves", do: func() { f.bs[1].SetEnabled(false); f.bs[2].SetAlive(false, "t") }, priority: 3, want: "A"},
			}
			for _, s := range steps {
				s.do()
				if got := letters(f, b.Eligible()); b.Priority() != s.priority || got != s.want {
					t.Errorf("%s: priority %d eligible %s, want %d %s", s.name, b.Priority(), got, s.priority, s.want)
				}
				if k == ResponseTime {
					continue // latencies from the steps before decide which of the tier it picks
				}
				if got := spread(f, b, 60); got != s.want {
					t.Errorf("%s: picked %s, want %s", s.name, got, s.want)
				}
			}
		})
	}
}

// letters names backends by their index in f, in index order.
func letters(f *fixture, bs []*backend.Backend) string {
	s := ""
	for i, be := range f.bs {
		for _, x := range bs {
			if x == be {
				s += string(rune('A' + i))
				break
			}
		}
	}
	return s
}

// TestEmergencyWeightChange: the weights of Emergency backends change
// their shares among themselves once no regular backend is left.
func TestEmergencyWeightChange(t *testing.T) {
	t.Parallel()
	f := newFixture(t, spec{prio: 5, dead: true}, spec{prio: 1, emergency: true}, spec{prio: 1, emergency: true})
	b := New(Random, f.bs, WithSource(rand.NewPCG(9, 10)))
	defer b.Close()
	f.bs[2].SetPriority(3)
	const n = 40_000
	got := f.counts(b, n)
	if got[0] != 0 || got[3] != 0 {
		t.Fatalf("counts %v: the dead regular backend or nothing was picked", got)
	}
	if share := float64(got[2]) / n; math.Abs(share-0.75) > 0.01 {
		t.Errorf("emergency backend with priority 3: share %.4f, want 0.75 (counts %v)", share, got)
	}
}

// TestPickAllocsAfterWeightChange: a republished snapshot is picked from
// without allocating, like the first.
func TestPickAllocsAfterWeightChange(t *testing.T) {
	for _, k := range allKinds {
		t.Run(k.String(), func(t *testing.T) {
			f := weights(t, ZproxyMode, 1, 2, 3, 4)
			for i := range f.bs {
				f.bs[i].Done(nil, 200, time.Duration(1+i)*time.Microsecond)
			}
			b := New(k, f.bs, WithMode(ZproxyMode), WithSource(rand.NewPCG(1, 1)))
			defer b.Close()
			f.bs[0].SetWeight(9)
			f.bs[3].SetPriority(2)
			if n := testing.AllocsPerRun(1000, func() { b.Pick() }); n != 0 {
				t.Errorf("Pick allocates %v after a weight change", n)
			}
		})
	}
}

// TestConcurrentPickAndWeightChange changes weights and priorities on
// some goroutines while others pick; with -race it proves the
// republication sound. Backend 0 keeps priority 1, so a pick never comes
// back empty.
func TestConcurrentPickAndWeightChange(t *testing.T) {
	t.Parallel()
	for _, k := range allKinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			f := weights(t, ZproxyMode, 1, 1, 1, 1)
			b := New(k, f.bs, WithMode(ZproxyMode))
			defer b.Close()
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						be := f.bs[1+(i+g)%3]
						be.SetWeight(1 + i%7)
						be.SetPriority(1 + i%2)
					}
				}()
			}
			for range 20_000 {
				if b.Pick() == nil {
					t.Error("no backend picked")
					break
				}
			}
			close(stop)
			wg.Wait()
		})
	}
}
