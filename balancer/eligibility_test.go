package balancer

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// picked returns which backends n picks reached, as a string of letters in
// index order ("-" when some pick returned nil).
func (f *fixture) picked(a Algorithm, n int) string {
	got := f.counts(a, n)
	s := ""
	for i, c := range got[:len(f.bs)] {
		if c > 0 {
			s += string(rune('A' + i))
		}
	}
	if got[len(f.bs)] > 0 {
		s += "-"
	}
	return s
}

// kindModes runs every algorithm in both modes.
func kindModes(t *testing.T, fn func(t *testing.T, k Kind, m Mode)) {
	for _, k := range allKinds {
		for _, m := range []Mode{PoundMode, ZproxyMode} {
			t.Run(fmt.Sprintf("%v/mode%d", k, m), func(t *testing.T) {
				t.Parallel()
				fn(t, k, m)
			})
		}
	}
}

// spread makes the min-based algorithms visit every eligible backend: each
// pick adds load (an open connection, or a pending connect for
// PENDING_CONNECTIONS) and a growing latency, so the minimum moves on. The
// load is released at the end. Latency averages persist across calls, and a
// fresh backend must first catch up with the others, so RESPONSE_TIME gets
// ten times the picks (they are cheap). It returns the backends reached as
// letters, "-" if some pick was nil.
func spread(f *fixture, b *Balancer, n int) string {
	if b.Kind() == ResponseTime {
		n *= 10
	}
	seen := map[int]int{}
	var releases []func()
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	for range n {
		be := b.Pick()
		i := f.index(be)
		seen[i]++
		if i < 0 {
			continue
		}
		if b.Kind() == PendingConnections {
			releases = append(releases, f.pend(i, 1))
		} else {
			releases = append(releases, f.open(i))
		}
		// Latency grows with the weight so that latency/weight, the
		// quantity RESPONSE_TIME minimises, grows by 1 ms per pick.
		be.Done(nil, 200, time.Duration(seen[i])*time.Duration(b.weight(be))*time.Millisecond)
	}
	s := ""
	for i := range f.bs {
		if seen[i] > 0 {
			s += string(rune('A' + i))
		}
	}
	if seen[-1] > 0 {
		s += "-"
	}
	return s
}

func TestDownAndDisabledNeverPicked(t *testing.T) {
	t.Parallel()
	kindModes(t, func(t *testing.T, k Kind, m Mode) {
		f := newFixture(t,
			spec{prio: 1, weight: 1},
			spec{prio: 1, weight: 1, dead: true},
			spec{prio: 1, weight: 1, disabled: true},
			spec{prio: 1, weight: 1},
		)
		b := New(k, f.bs, WithMode(m))
		defer b.Close()
		if got := spread(f, b, 200); got != "AD" {
			t.Fatalf("picked %s, want AD", got)
		}
		// Flips republish the snapshot through the OnChange hooks.
		f.bs[1].SetAlive(true, "")
		f.bs[2].SetEnabled(true)
		f.bs[3].SetEnabled(false)
		if got := spread(f, b, 400); got != "ABC" {
			t.Errorf("after flips picked %s, want ABC", got)
		}
	})
}

func TestEmergencyOnlyWhenNoRegular(t *testing.T) {
	t.Parallel()
	kindModes(t, func(t *testing.T, k Kind, m Mode) {
		f := newFixture(t,
			spec{prio: 1, weight: 1},
			spec{prio: 1, weight: 1, emergency: true},
			spec{prio: 1, weight: 1},
		)
		b := New(k, f.bs, WithMode(m))
		defer b.Close()
		steps := []struct {
			name string
			do   func()
			want string
		}{
			{name: "regulars up", do: func() {}, want: "AC"},
			{name: "one regular dead", do: func() { f.bs[0].SetAlive(false, "t") }, want: "C"},
			{name: "other regular disabled", do: func() { f.bs[2].SetEnabled(false) }, want: "B"},
			{name: "emergency dead too", do: func() { f.bs[1].SetAlive(false, "t") }, want: "-"},
			{name: "regular back", do: func() { f.bs[0].SetAlive(true, "") }, want: "A"},
		}
		for _, s := range steps {
			s.do()
			if got := spread(f, b, 100); got != s.want {
				t.Errorf("%s: picked %s, want %s", s.name, got, s.want)
			}
		}
	})
}

// Balancer groups (SRV priorities) are tried in increasing order, after
// the configured backends and before the Emergency ones.
func TestBalancerGroups(t *testing.T) {
	t.Parallel()
	kindModes(t, func(t *testing.T, k Kind, m Mode) {
		f := newFixture(t,
			spec{prio: 1, weight: 1, group: 20},
			spec{prio: 1, weight: 1, emergency: true},
			spec{prio: 1, weight: 1, group: 10},
			spec{prio: 1, weight: 1},
			spec{prio: 1, weight: 1, group: 10},
		)
		b := New(k, f.bs, WithMode(m))
		defer b.Close()
		steps := []struct {
			name string
			do   func()
			want string
		}{
			{name: "group 0 first", do: func() {}, want: "D"},
			{name: "then group 10", do: func() { f.bs[3].SetAlive(false, "t") }, want: "CE"},
			{name: "then group 20", do: func() { f.bs[2].SetEnabled(false); f.bs[4].SetAlive(false, "t") }, want: "A"},
			{name: "emergency last", do: func() { f.bs[0].SetAlive(false, "t") }, want: "B"},
			{name: "group 10 back", do: func() { f.bs[4].SetAlive(true, "") }, want: "E"},
		}
		for _, s := range steps {
			s.do()
			if got := spread(f, b, 100); got != s.want {
				t.Errorf("%s: picked %s, want %s", s.name, got, s.want)
			}
		}
	})
}

func TestConnLimit(t *testing.T) {
	t.Parallel()
	kindModes(t, func(t *testing.T, k Kind, m Mode) {
		f := newFixture(t,
			spec{prio: 5, weight: 5, limit: 1},
			spec{prio: 1, weight: 1},
			spec{prio: 1, weight: 1, limit: 1, emergency: true},
		)
		b := New(k, f.bs, WithMode(m))
		defer b.Close()
		f.hold(0, 1) // at the limit: still allowed (zproxy: over is limit < conns)
		if got := f.picked(b, 200); got != "AB" && got != "B" && got != "A" {
			t.Fatalf("at limit picked %s", got)
		}
		if !f.bs[0].Available() {
			t.Fatal("backend at its limit reported unavailable")
		}
		f.hold(0, 1) // over the limit: skipped
		if got := f.picked(b, 200); got != "B" {
			t.Errorf("over limit picked %s, want B", got)
		}
		f.bs[1].SetAlive(false, "t") // only the full one is left: emergency
		if got := f.picked(b, 50); got != "C" {
			t.Errorf("regular full and dead: picked %s, want C", got)
		}
		f.hold(2, 2) // emergency over its limit as well
		if got := f.picked(b, 50); got != "-" {
			t.Errorf("everything full: picked %s, want none", got)
		}
	})
}

func TestZproxyPriorityTiers(t *testing.T) {
	t.Parallel()
	// Backends A, B (prio 1), C (prio 2), D (prio 3) in the given states.
	scenarios := []struct {
		name      string
		dead, off []int
		zproxy    string
		priority  int
		pound     string
	}{
		{name: "all up: only the first tier", zproxy: "AB", priority: 1, pound: "ABCD"},
		{name: "A dead lets tier 2 in", dead: []int{0}, zproxy: "BC", priority: 2, pound: "BCD"},
		{name: "disabled counts like dead", off: []int{0, 1}, zproxy: "CD", priority: 3, pound: "CD"},
		{name: "walk reaches tier 3", off: []int{1}, dead: []int{2}, zproxy: "AD", priority: 3, pound: "AD"},
		{name: "both of tier 1 down: p = 3", dead: []int{0, 1}, zproxy: "CD", priority: 3, pound: "CD"},
		{name: "tier 2 down too", dead: []int{0, 1, 2}, zproxy: "D", priority: 4, pound: "D"},
	}
	for _, k := range allKinds {
		for _, sc := range scenarios {
			t.Run(k.String()+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, spec{prio: 1}, spec{prio: 1}, spec{prio: 2}, spec{prio: 3})
				for _, i := range sc.dead {
					f.bs[i].SetAlive(false, "t")
				}
				for _, i := range sc.off {
					f.bs[i].SetEnabled(false)
				}
				z := New(k, f.bs, WithMode(ZproxyMode))
				defer z.Close()
				if got := spread(f, z, 300); got != sc.zproxy || z.Priority() != sc.priority {
					t.Errorf("zproxy: picked %s priority %d, want %s %d", got, z.Priority(), sc.zproxy, sc.priority)
				}
				z.Close()
				p := New(k, f.bs) // Pound: priorities are weights, no tiers
				defer p.Close()
				if got := spread(f, p, 600); got != sc.pound || p.Priority() != 0 {
					t.Errorf("pound: picked %s priority %d, want %s 0", got, p.Priority(), sc.pound)
				}
			})
		}
	}
}

// TestPriorityFollowsFlips checks that the hooks recompute the service
// priority and the eligible tier when backends flip.
func TestPriorityFollowsFlips(t *testing.T) {
	t.Parallel()
	f := newFixture(t, spec{prio: 1}, spec{prio: 1}, spec{prio: 2}, spec{prio: 3})
	z := New(RoundRobin, f.bs, WithMode(ZproxyMode))
	defer z.Close()
	steps := []struct {
		name     string
		do       func()
		priority int
		want     string
	}{
		{name: "start", do: func() {}, priority: 1, want: "AB"},
		{name: "A dies", do: func() { f.bs[0].SetAlive(false, "t") }, priority: 2, want: "BC"},
		{name: "B disabled", do: func() { f.bs[1].SetEnabled(false) }, priority: 3, want: "CD"},
		{name: "A back", do: func() { f.bs[0].SetAlive(true, "") }, priority: 2, want: "AC"},
	}
	for _, s := range steps {
		s.do()
		if got := f.picked(z, 40); z.Priority() != s.priority || got != s.want {
			t.Errorf("%s: priority %d picked %s, want %d %s", s.name, z.Priority(), got, s.priority, s.want)
		}
	}
}

func TestPoundPriorityZeroNeverPicked(t *testing.T) {
	t.Parallel()
	kindModes(t, func(t *testing.T, k Kind, m Mode) {
		if m != PoundMode {
			return
		}
		f := newFixture(t, spec{prio: 0}, spec{prio: 3})
		b := New(k, f.bs)
		defer b.Close()
		if got := spread(f, b, 100); got != "B" {
			t.Errorf("picked %s, want B", got)
		}
	})
}

func TestCloseDetachesHooks(t *testing.T) {
	t.Parallel()
	f := weights(t, PoundMode, 1, 1)
	a := New(Random, f.bs)
	b := New(IWRR, f.bs)
	for i, be := range f.bs {
		if be.HookCount() != 2 {
			t.Fatalf("backend %d has %d hooks, want 2", i, be.HookCount())
		}
	}
	a.Close()
	a.Close() // idempotent
	for i, be := range f.bs {
		if be.HookCount() != 1 {
			t.Fatalf("backend %d has %d hooks after Close, want 1", i, be.HookCount())
		}
	}
	f.bs[0].SetEnabled(false)
	if len(a.Eligible()) != 2 || len(b.Eligible()) != 1 {
		t.Errorf("eligible after flip: closed %d (want 2, frozen), open %d (want 1)", len(a.Eligible()), len(b.Eligible()))
	}
	a.Refresh()
	if len(a.Eligible()) != 1 {
		t.Errorf("Refresh did not republish: %d eligible", len(a.Eligible()))
	}
	b.Close()
	if f.bs[0].HookCount() != 0 {
		t.Errorf("hooks left: %d", f.bs[0].HookCount())
	}
}

func TestPickAllocs(t *testing.T) {
	for _, k := range allKinds {
		t.Run(k.String(), func(t *testing.T) {
			specs := make([]spec, 16)
			for i := range specs {
				specs[i] = spec{prio: 1, weight: 1 + i%3, limit: 1}
			}
			specs[15].emergency = true
			f := newFixture(t, specs...)
			f.hold(3, 2) // over its limit: exercises the skip path
			for i := range 14 {
				f.bs[i].Done(nil, 200, time.Duration(1+i%4)*time.Microsecond) // RT samples
			}
			b := New(k, f.bs, WithMode(ZproxyMode), WithSource(rand.NewPCG(1, 1)))
			defer b.Close()
			if n := testing.AllocsPerRun(1000, func() { b.Pick() }); n != 0 {
				t.Errorf("Pick allocates %v", n)
			}
			for i := range 15 {
				f.bs[i].SetAlive(false, "t") // emergency path
			}
			if b.Pick() != f.bs[15] {
				t.Fatal("emergency backend not picked")
			}
			if n := testing.AllocsPerRun(1000, func() { b.Pick() }); n != 0 {
				t.Errorf("emergency Pick allocates %v", n)
			}
		})
	}
}

// TestConcurrentPickAndFlip runs picks on several goroutines while others
// flip backends; with -race it proves the snapshot publication is sound.
// Backend 0 is never flipped, so a pick can never come back empty.
func TestConcurrentPickAndFlip(t *testing.T) {
	t.Parallel()
	for _, k := range allKinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			f := weights(t, PoundMode, 1, 2, 3, 4)
			b := New(k, f.bs)
			defer b.Close()
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 2000 {
						if w == 0 && i%10 == 0 {
							be := f.bs[1+i%3]
							be.SetAlive(!be.Alive(), "flap")
							continue
						}
						if b.Pick() == nil {
							t.Error("nil pick while backend 0 is always up")
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

func TestNoBackends(t *testing.T) {
	t.Parallel()
	for _, k := range allKinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			b := New(k, nil)
			defer b.Close()
			if be := b.Pick(); be != nil || len(b.Eligible()) != 0 {
				t.Errorf("empty balancer picked %v", be)
			}
		})
	}
}

// TestDroppedBalancerIsCollected: a balancer replaced on reload without
// Close must not be kept alive by its backends' hooks, and the leftover
// hook must be harmless.
func TestDroppedBalancerIsCollected(t *testing.T) {
	t.Parallel()
	f := weights(t, PoundMode, 1, 1)
	collected := make(chan struct{})
	func() {
		b := New(IWRR, f.bs)
		runtime.AddCleanup(b, func(ch chan struct{}) { close(ch) }, collected)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-collected:
			done = true
		case <-time.After(10 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the balancer is still reachable through its hooks")
			}
		}
	}
	f.bs[0].SetAlive(false, "t") // runs the orphaned hook: must be a no-op
	if f.bs[0].HookCount() != 1 {
		t.Errorf("hook count %d, want the 1 orphan", f.bs[0].HookCount())
	}
}
