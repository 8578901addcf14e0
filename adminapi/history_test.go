package adminapi

import (
	"testing"
	"time"
)

// snap is a State with one listener, one service and backends with
// the given cumulative counters.
func snap(bs ...Backend) *State {
	return &State{Listeners: []Listener{{Services: []Service{{Name: "web", Backends: bs}}}}}
}

func be(id string, requests, errors, ok2xx int64, latency time.Duration, active int64) Backend {
	return Backend{ID: id, Requests: requests, Errors: errors, Hits2xx: ok2xx, LatencyTotal: latency, Active: active}
}

func TestObserverSample(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name  string
		snaps []*State
		key   string
		want  []Point // the points of key after the snapshots, 1 s apart
	}{
		{"first sample has no point", []*State{snap(be("a", 5, 0, 5, 0, 1))}, "0/0/a", nil},
		{"rates and mean latency", []*State{
			snap(be("a", 10, 1, 9, 90*time.Millisecond, 0)),
			snap(be("a", 20, 3, 17, 170*time.Millisecond, 2)),
		}, "0/0/a", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 10, EPS: 2, MeanMS: 10, P50MS: 10, P99MS: 10, Active: 2}}},
		{"no answers: no mean, percentiles of the earlier means", []*State{
			snap(be("a", 0, 0, 0, 0, 0)),
			snap(be("a", 1, 0, 1, 4*time.Millisecond, 0)),
			snap(be("a", 1, 0, 1, 4*time.Millisecond, 0)),
		}, "0/0/a", []Point{
			{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 1, MeanMS: 4, P50MS: 4, P99MS: 4},
			{TimeMS: t0.Add(2 * time.Second).UnixMilli(), MeanMS: -1, P50MS: 4, P99MS: 4},
		}},
		{"a counter that went back counts as no traffic", []*State{
			snap(be("a", 50, 0, 50, 0, 0)),
			snap(be("a", 3, 0, 3, 0, 0)),
		}, "0/0/a", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), MeanMS: -1, P50MS: -1, P99MS: -1}}},
		{"the service sums its backends", []*State{
			snap(be("a", 0, 0, 0, 0, 0), be("b", 0, 0, 0, 0, 0)),
			snap(be("a", 4, 0, 4, 8*time.Millisecond, 1), be("b", 6, 1, 6, 32*time.Millisecond, 2)),
		}, "0/0", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 10, EPS: 1, MeanMS: 4, P50MS: 4, P99MS: 4, Active: 3}}},
		{"a special backend's answered requests", []*State{
			snap(Backend{Kind: KindRedirect, Answered: 2}),
			snap(Backend{Kind: KindRedirect, Answered: 9}),
		}, "0/0/#0", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 7, MeanMS: -1, P50MS: -1, P99MS: -1}}},
		{"a backend that left is forgotten", []*State{
			snap(be("a", 0, 0, 0, 0, 0)),
			snap(be("b", 0, 0, 0, 0, 0)),
		}, "0/0/a", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver()
			for i, st := range tc.snaps {
				o.Sample(st, t0.Add(time.Duration(i)*time.Second))
			}
			got := o.History(0)[tc.key]
			if len(got) != len(tc.want) {
				t.Fatalf("%s: %d points %+v, want %d", tc.key, len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("point %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// The ring keeps the last HistoryLen points, oldest first, and since
// returns only the newer ones.
func TestSeriesRing(t *testing.T) {
	var s series
	t0 := time.Unix(0, 0)
	s.push(t0, 0, counters{}, true)
	total := HistoryLen + 25
	for i := 1; i <= total; i++ {
		s.push(t0.Add(time.Duration(i)*time.Second), 1, counters{requests: int64(i * i)}, false)
	}
	all := s.since(0)
	if len(all) != HistoryLen {
		t.Fatalf("the ring holds %d points, want %d", len(all), HistoryLen)
	}
	first := int64(total-HistoryLen+1) * 1000
	if all[0].TimeMS != first || all[len(all)-1].TimeMS != int64(total)*1000 {
		t.Errorf("ring spans %d..%d ms, want %d..%d", all[0].TimeMS, all[len(all)-1].TimeMS, first, total*1000)
	}
	for i := 1; i < len(all); i++ {
		if all[i].TimeMS <= all[i-1].TimeMS {
			t.Fatalf("points out of order at %d", i)
		}
	}
	if got := s.since(int64(total-3) * 1000); len(got) != 3 {
		t.Errorf("since the last 3 s: %d points, want 3", len(got))
	}
}

// p50/p99 are percentiles of the per-second means of the window.
func TestSeriesQuantiles(t *testing.T) {
	var s series
	for i := 1; i <= 100; i++ {
		s.points[s.n%HistoryLen] = Point{MeanMS: float32(i)}
		s.n++
	}
	// The window is the new mean (1000) and the 59 before it (42..100).
	p50, p99 := s.quantiles(1000)
	if p50 != 72 || p99 != 1000 {
		t.Errorf("p50, p99 = %v, %v; want 72, 1000", p50, p99)
	}
	var empty series
	if p50, p99 := empty.quantiles(-1); p50 != -1 || p99 != -1 {
		t.Errorf("no means: %v, %v", p50, p99)
	}
}

// The rings are capped: a configuration of many backends cannot make
// the history grow without bound.
func TestSampleBoundedMemory(t *testing.T) {
	o := NewObserver()
	var bs []Backend
	for i := 0; i < maxSeries+10; i++ {
		bs = append(bs, be(string(rune('a'+i%26))+string(rune(i)), 0, 0, 0, 0, 0))
	}
	o.Sample(snap(bs...), time.Unix(0, 0))
	if n := len(o.History(0)); n > maxSeries {
		t.Errorf("%d series kept, the cap is %d", n, maxSeries)
	}
}
