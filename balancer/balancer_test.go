package balancer

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var allKinds = []Kind{Random, IWRR, RoundRobin, LeastConnections, ResponseTime, PendingConnections}

func TestParseKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, pound, zproxy string
		want                Kind
		err                 string
	}{
		{name: "default is Pound random", want: Random},
		{name: "random", pound: "random", want: Random},
		{name: "iwrr any case", pound: "IWRR", want: IWRR},
		{name: "round robin", zproxy: "ROUND_ROBIN", want: RoundRobin},
		{name: "least connections", zproxy: "LEAST_CONNECTIONS", want: LeastConnections},
		{name: "response time", zproxy: "RESPONSE_TIME", want: ResponseTime},
		{name: "pending connections", zproxy: "PENDING_CONNECTIONS", want: PendingConnections},
		{name: "zproxy values are case-sensitive", zproxy: "round_robin", err: "RoutingPolicy"},
		{name: "Pound names are not zproxy names", zproxy: "random", err: "RoutingPolicy"},
		{name: "unknown Pound balancer", pound: "leastconn", err: "Balancer"},
		{name: "both given", pound: "random", zproxy: "ROUND_ROBIN", err: "both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKind(tc.pound, tc.zproxy)
			if tc.err != "" {
				if !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrUnknownKind mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			if tc.pound != "" && !strings.EqualFold(got.String(), tc.pound) || tc.zproxy != "" && got.String() != tc.zproxy {
				t.Errorf("String() = %q does not round-trip", got.String())
			}
		})
	}
	if s := Kind(42).String(); s != "Kind(42)" {
		t.Errorf("unknown kind String = %q", s)
	}
}

// TestWeightedShares: 100,000 picks over weights 1/2/5 land within one
// percentage point of 1/8, 2/8, 5/8 for every weight-driven algorithm.
func TestWeightedShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind Kind
		mode Mode
		src  rand.Source
	}{
		{name: "Pound random, seeded", kind: Random, src: rand.NewPCG(1, 2)},
		{name: "Pound random, global source", kind: Random},
		{name: "Pound iwrr", kind: IWRR},
		{name: "zproxy round robin", kind: RoundRobin, mode: ZproxyMode},
		{name: "random on zproxy weights", kind: Random, mode: ZproxyMode, src: rand.NewPCG(3, 4)},
	}
	const n = 100_000
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := weights(t, tc.mode, 1, 2, 5)
			b := New(tc.kind, f.bs, testOptions(tc.mode, tc.src)...)
			defer b.Close()
			got := f.counts(b, n)
			for i, w := range []float64{1, 2, 5} {
				if share := float64(got[i]) / n; math.Abs(share-w/8) > 0.01 {
					t.Errorf("backend %d: share %.4f, want %.4f±0.01 (counts %v)", i, share, w/8, got)
				}
			}
		})
	}
}

// TestLeastConnectionsShares holds every picked connection open, so LC must
// spread the open connections in proportion to the weights.
func TestLeastConnectionsShares(t *testing.T) {
	t.Parallel()
	f := weights(t, ZproxyMode, 1, 2, 5)
	b := New(LeastConnections, f.bs, WithMode(ZproxyMode))
	defer b.Close()
	const n = 8000
	for range n {
		f.hold(f.index(b.Pick()), 1)
	}
	for i, w := range []float64{1, 2, 5} {
		if share := float64(f.bs[i].Active()) / n; math.Abs(share-w/8) > 0.01 {
			t.Errorf("backend %d: %d conns = share %.4f, want %.4f", i, f.bs[i].Active(), share, w/8)
		}
	}
}

func TestExactSequences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kind    Kind
		mode    Mode
		weights []int
		kill    int // backend index to kill after the first run, -1 = none
		want    string
		after   string
	}{
		{name: "iwrr 1,2,5", kind: IWRR, weights: []int{1, 2, 5}, kill: -1, want: "ABCBCCCCABCBCCCC"},
		{name: "iwrr 2,1", kind: IWRR, weights: []int{2, 1}, kill: -1, want: "ABAABAABA"},
		{name: "iwrr equal weights", kind: IWRR, weights: []int{5, 5, 5}, kill: -1, want: "ABCABCABC"},
		{name: "zproxy algorithm_weight: 2,1 over 12 is 8/4", kind: RoundRobin, mode: ZproxyMode,
			weights: []int{2, 1}, kill: -1, want: "AABAABAABAAB"},
		{name: "round robin 1,2,3", kind: RoundRobin, mode: ZproxyMode, weights: []int{1, 2, 3}, kill: -1, want: "ABBCCCABBCCC"},
		{name: "round robin skips a dead backend", kind: RoundRobin, mode: ZproxyMode,
			weights: []int{2, 1, 1}, kill: 1, want: "AABC", after: "AACAAC"},
		{name: "iwrr over the survivors", kind: IWRR, weights: []int{1, 2, 3}, kill: 0, want: "ABCBCC", after: "BCBCCBCBCC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := weights(t, tc.mode, tc.weights...)
			b := New(tc.kind, f.bs, WithMode(tc.mode))
			defer b.Close()
			if got := f.sequence(b, len(tc.want)); got != tc.want {
				t.Fatalf("sequence %s, want %s", got, tc.want)
			}
			if tc.kill < 0 {
				return
			}
			f.bs[tc.kill].SetAlive(false, "test")
			// The cursor keeps running, so align on the new cycle start.
			cycle := len(b.snap.Load().groups[0].ring)
			for b.cursors[0].n.Load()%uint64(cycle) != 0 {
				b.Pick()
			}
			if got := f.sequence(b, len(tc.after)); got != tc.after {
				t.Errorf("after kill: %s, want %s", got, tc.after)
			}
		})
	}
}

func TestConnectionCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		kind            Kind
		weights         []int
		conns, pendings []int
		want            int
	}{
		{name: "LC fewest conns", kind: LeastConnections, weights: []int{1, 1, 1}, conns: []int{3, 1, 2}, want: 1},
		{name: "LC tie keeps the earlier", kind: LeastConnections, weights: []int{1, 1, 1}, conns: []int{2, 1, 1}, want: 1},
		{name: "LC cross-multiplied weights", kind: LeastConnections, weights: []int{1, 4}, conns: []int{1, 3}, want: 1},
		{name: "LC weight does not beat more load", kind: LeastConnections, weights: []int{1, 4}, conns: []int{1, 5}, want: 0},
		{name: "LC idle backend wins", kind: LeastConnections, weights: []int{1, 9, 1}, conns: []int{1, 1, 0}, want: 2},
		{name: "LC counts pending", kind: LeastConnections, weights: []int{1, 1}, pendings: []int{2, 0}, conns: []int{0, 1}, want: 1},
		{name: "PC fewest pending", kind: PendingConnections, weights: []int{1, 1, 1}, pendings: []int{3, 1, 2}, want: 1},
		{name: "PC ignores established", kind: PendingConnections, weights: []int{1, 1}, conns: []int{5, 0}, pendings: []int{0, 1}, want: 0},
		{name: "PC weighted", kind: PendingConnections, weights: []int{1, 3}, pendings: []int{1, 2}, want: 1},
		{name: "PC all idle picks the first", kind: PendingConnections, weights: []int{1, 5}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := weights(t, ZproxyMode, tc.weights...)
			for i, n := range tc.conns {
				f.hold(i, n)
			}
			for i, n := range tc.pendings {
				if n > 0 {
					f.holdPending(i, n)
				}
			}
			b := New(tc.kind, f.bs, WithMode(ZproxyMode))
			defer b.Close()
			if got := f.index(b.Pick()); got != tc.want {
				t.Errorf("picked %d, want %d", got, tc.want)
			}
		})
	}
}

func TestResponseTime(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name    string
		weights []int
		lat     []time.Duration // 0 = no sample
		want    int
	}{
		{name: "unsampled backend first", weights: []int{1, 1, 1}, lat: []time.Duration{ms, 0, 0}, want: 1},
		{name: "slow backend avoided", weights: []int{1, 1, 1}, lat: []time.Duration{20 * ms, 2 * ms, 2 * ms}, want: 1},
		{name: "weights divide latency", weights: []int{1, 4}, lat: []time.Duration{2 * ms, 4 * ms}, want: 1},
		{name: "weight does not hide real slowness", weights: []int{1, 4}, lat: []time.Duration{2 * ms, 20 * ms}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := weights(t, ZproxyMode, tc.weights...)
			for i, l := range tc.lat {
				if l > 0 {
					f.bs[i].Done(nil, 200, l)
				}
			}
			b := New(ResponseTime, f.bs, WithMode(ZproxyMode))
			defer b.Close()
			if got := f.index(b.Pick()); got != tc.want {
				t.Errorf("picked %d, want %d", got, tc.want)
			}
		})
	}
}

// TestResponseTimeMovesTraffic feeds every pick's latency back: a backend
// answering in 20 ms instead of 1 ms gets almost nothing after its first
// sample.
func TestResponseTimeMovesTraffic(t *testing.T) {
	t.Parallel()
	f := weights(t, ZproxyMode, 1, 1)
	lat := []time.Duration{20 * time.Millisecond, time.Millisecond}
	b := New(ResponseTime, f.bs, WithMode(ZproxyMode))
	defer b.Close()
	got := make([]int, 2)
	for range 1000 {
		i := f.index(b.Pick())
		got[i]++
		f.bs[i].Done(nil, 200, lat[i])
	}
	if got[0] > 10 {
		t.Errorf("the 20 ms backend got %d of 1000 picks", got[0])
	}
}

// testOptions are a test case's balancer options: its mode, and its
// random source when it pins one.
func testOptions(mode Mode, src rand.Source) []Option {
	opts := []Option{WithMode(mode)}
	if src != nil {
		opts = append(opts, WithSource(src))
	}
	return opts
}
