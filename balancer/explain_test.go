package balancer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"lbd/explain"
)

// countingSource counts the numbers drawn from it.
type countingSource struct {
	src rand.Source
	n   int
}

func (c *countingSource) Uint64() uint64 { c.n++; return c.src.Uint64() }

// TestExplainMovesNothing checks, for every algorithm, that any number of
// dry runs leaves the real picks exactly as they would have been: the
// same sequence as a twin balancer that was never explained, and not one
// draw from the real random source.
func TestExplainMovesNothing(t *testing.T) {
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			mode := PoundMode
			if kind >= RoundRobin {
				mode = ZproxyMode
			}
			f := weights(t, mode, 1, 2, 3)
			g := weights(t, mode, 1, 2, 3)
			src := &countingSource{src: rand.NewPCG(7, 7)}
			b := New(kind, f.bs, WithMode(mode), WithSource(src))
			twin := New(kind, g.bs, WithMode(mode), WithSource(rand.NewPCG(7, 7)))
			defer b.Close()
			defer twin.Close()
			for round := range 3 {
				before := src.n
				for range 5 {
					b.Explain(uint64(round), f.index)
				}
				if src.n != before {
					t.Fatalf("the dry runs drew %d numbers from the real source", src.n-before)
				}
				if got, want := f.sequence(b, 3), g.sequence(twin, 3); got != want {
					t.Fatalf("round %d: picks %s after dry runs, %s without", round, got, want)
				}
			}
			if kind == Random && src.n != 9 {
				t.Fatalf("9 real random picks drew %d numbers", src.n)
			}
		})
	}
}

// TestExplainAgreesWithPick checks that the deterministic algorithms'
// dry run names the backend the next real pick returns.
func TestExplainAgreesWithPick(t *testing.T) {
	for _, kind := range []Kind{IWRR, RoundRobin, LeastConnections, ResponseTime, PendingConnections} {
		t.Run(kind.String(), func(t *testing.T) {
			mode := PoundMode
			if kind >= RoundRobin {
				mode = ZproxyMode
			}
			f := weights(t, mode, 2, 1, 3)
			f.hold(0, 2)
			f.bs[0].Done(nil, 200, 3*time.Millisecond)
			f.bs[1].Done(nil, 200, time.Millisecond)
			f.bs[2].Done(nil, 200, 2*time.Millisecond)
			b := New(kind, f.bs, WithMode(mode))
			defer b.Close()
			for i := range 12 {
				e := b.Explain(0, f.index)
				if e.Chosen == nil {
					t.Fatalf("pick %d: nothing chosen: %s", i, e.Why)
				}
				if got := f.index(b.Pick()); got != *e.Chosen {
					t.Fatalf("pick %d: Explain chose %d, Pick %d (%s)", i, *e.Chosen, got, e.Why)
				}
			}
		})
	}
}

// TestExplainRandomIsRepeatable checks that the same seed gives the same
// answer and that the answer is one of the eligible backends.
func TestExplainRandomIsRepeatable(t *testing.T) {
	f := weights(t, PoundMode, 1, 0, 4)
	b := New(Random, f.bs)
	defer b.Close()
	for seed := range uint64(20) {
		e1, e2 := b.Explain(seed, f.index), b.Explain(seed, f.index)
		if e1.Chosen == nil || e2.Chosen == nil || *e1.Chosen != *e2.Chosen {
			t.Fatalf("seed %d: %v then %v", seed, e1.Chosen, e2.Chosen)
		}
		if *e1.Chosen == 1 {
			t.Fatalf("seed %d chose the priority-0 backend", seed)
		}
	}
	e := b.Explain(0, f.index)
	shares := []float64{e.Groups[0].Candidates[0].Share, e.Groups[0].Candidates[1].Share, e.Groups[0].Candidates[2].Share}
	if shares[0] != 0.2 || shares[1] != 0 || shares[2] != 0.8 {
		t.Fatalf("shares %v, want [0.2 0 0.8]", shares)
	}
	if r := e.Groups[0].Candidates[1].Reason; !strings.Contains(r, "priority 0") {
		t.Fatalf("reason for the priority-0 backend %q", r)
	}
}

// TestExplainInputs checks the reasons and inputs shown: disabled, dead,
// above the zproxy service priority, at the ConnLimit, emergency group.
func TestExplainInputs(t *testing.T) {
	cases := []struct {
		name   string
		kind   Kind
		mode   Mode
		specs  []spec
		setup  func(f *fixture)
		chosen int // -1: none
		want   []string
		why    string
	}{
		{name: "disabled and dead", kind: Random, specs: []spec{{prio: 1, disabled: true}, {prio: 1, dead: true}, {prio: 1}},
			chosen: 2, want: []string{"0 disabled", "1 dead", "2 eligible available"}},
		{name: "zproxy tiers", kind: RoundRobin, mode: ZproxyMode,
			specs:  []spec{{prio: 1, weight: 1}, {prio: 2, weight: 1}},
			chosen: 0, want: []string{"0 eligible available", "1 priority 2 above the service priority 1"}},
		{name: "a dead tier-1 backend lets tier 2 in", kind: RoundRobin, mode: ZproxyMode,
			specs:  []spec{{prio: 1, weight: 1, dead: true}, {prio: 2, weight: 1}},
			chosen: 1, want: []string{"0 dead", "1 eligible available"}},
		{name: "connlimit", kind: LeastConnections, mode: ZproxyMode,
			specs: []spec{{prio: 1, weight: 1, limit: 1}, {prio: 1, weight: 1}},
			setup: func(f *fixture) { f.hold(0, 2); f.hold(1, 3) }, chosen: 1,
			want: []string{"0 eligible at its ConnLimit score 2/1", "1 eligible available score 3/1"}},
		{name: "emergency when the regular ones are dead", kind: IWRR,
			specs:  []spec{{prio: 1, dead: true}, {prio: 1, emergency: true}},
			chosen: 1, want: []string{"0 dead", "1 eligible available"}, why: "iwrr: next is slot 0"},
		{name: "nothing available", kind: Random, specs: []spec{{prio: 1, dead: true}},
			chosen: -1, want: []string{"0 dead"}, why: "503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.specs...)
			if tc.setup != nil {
				tc.setup(f)
			}
			b := New(tc.kind, f.bs, WithMode(tc.mode))
			defer b.Close()
			e := b.Explain(0, f.index)
			var got []string
			for _, g := range e.Groups {
				for _, c := range g.Candidates {
					got = append(got, candidateText(c))
				}
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Fatalf("candidates\n%s\nwant\n%s", strings.Join(got, "; "), strings.Join(tc.want, "; "))
			}
			switch {
			case tc.chosen < 0 && e.Chosen != nil:
				t.Fatalf("chose %d, want none", *e.Chosen)
			case tc.chosen >= 0 && (e.Chosen == nil || *e.Chosen != tc.chosen):
				t.Fatalf("chose %v, want %d (%s)", e.Chosen, tc.chosen, e.Why)
			}
			if !strings.Contains(e.Why, tc.why) {
				t.Fatalf("why %q, want it to say %q", e.Why, tc.why)
			}
		})
	}
}

func candidateText(c explain.Candidate) string {
	s := []string{string(rune('0' + c.Backend))}
	if c.Eligible {
		s = append(s, "eligible")
	}
	if c.Available {
		s = append(s, "available")
	}
	if c.Reason != "" {
		s = append(s, c.Reason)
	}
	if c.Score != "" {
		s = append(s, "score "+c.Score)
	}
	return strings.Join(s, " ")
}

// TestExplainTree covers the tournament tree the least-* algorithms keep
// for large groups: the dry run reads the root as Pick does.
func TestExplainTree(t *testing.T) {
	ws := make([]int, treeMin+2)
	for i := range ws {
		ws[i] = 1
	}
	for _, kind := range []Kind{LeastConnections, PendingConnections} {
		f := weights(t, ZproxyMode, ws...)
		for i := range treeMin {
			f.hold(i, 1)
		}
		b := New(kind, f.bs, WithMode(ZproxyMode))
		if kind == LeastConnections && b.snap.Load().groups[0].tree == nil {
			t.Fatal("no tree at this size")
		}
		e := b.Explain(0, f.index)
		if got := f.index(b.Pick()); e.Chosen == nil || *e.Chosen != got {
			t.Fatalf("%s: Explain chose %v, Pick %d", kind, e.Chosen, got)
		}
		b.Close()
	}
}
