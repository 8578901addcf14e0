package adminapi

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"lbd/internal/metrics"
)

// snap is a State with one listener, one service and backends with
// the given cumulative counters.
func snap(bs ...Backend) *State {
	return &State{Listeners: []Listener{{Services: []Service{{Name: "web", Backends: bs}}}}}
}

// durations is the snapshot of a histogram that observed each of ds.
func durations(ds ...time.Duration) metrics.HistogramSnapshot {
	var h metrics.Histogram
	for _, d := range ds {
		h.Observe(d)
	}
	return h.Snapshot()
}

// repeat returns n copies of d.
func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
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
		}, "0/0/a", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 10, EPS: 2, MeanMS: 10, P50MS: -1, P99MS: -1, Active: 2}}},
		{"percentiles of the interval's requests, from the histogram", []*State{
			snap(withDurations(be("a", 0, 0, 0, 0, 0))),
			// 10 requests of 1.2 ms: bucket (1 ms, 2.5 ms].
			snap(withDurations(be("a", 10, 0, 10, 12*time.Millisecond, 0), repeat(10, 1200*time.Microsecond)...)),
			// then one of 40 ms: bucket (25 ms, 50 ms] alone.
			snap(withDurations(be("a", 11, 0, 11, 52*time.Millisecond, 0), append(repeat(10, 1200*time.Microsecond), 40*time.Millisecond)...)),
			// no request: no mean, no percentiles.
			snap(withDurations(be("a", 11, 0, 11, 52*time.Millisecond, 0), append(repeat(10, 1200*time.Microsecond), 40*time.Millisecond)...)),
		}, "0/0/a", []Point{
			{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 10, MeanMS: 1.2, P50MS: 1.75, P99MS: 2.485},
			{TimeMS: t0.Add(2 * time.Second).UnixMilli(), RPS: 1, MeanMS: 40, P50MS: 37.5, P99MS: 49.75},
			{TimeMS: t0.Add(3 * time.Second).UnixMilli(), MeanMS: -1, P50MS: -1, P99MS: -1},
		}},
		{"a counter that went back counts as no traffic", []*State{
			snap(be("a", 50, 0, 50, 0, 0)),
			snap(be("a", 3, 0, 3, 0, 0)),
		}, "0/0/a", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), MeanMS: -1, P50MS: -1, P99MS: -1}}},
		{"the service sums its backends' rates", []*State{
			snap(be("a", 0, 0, 0, 0, 0), be("b", 0, 0, 0, 0, 0)),
			snap(be("a", 4, 0, 4, 8*time.Millisecond, 1), be("b", 6, 1, 6, 32*time.Millisecond, 2)),
		}, "0/0", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 10, EPS: 1, MeanMS: 4, P50MS: -1, P99MS: -1, Active: 3}}},
		{"the service's percentiles are its own histogram's", []*State{
			serviceDurations(snap(be("a", 0, 0, 0, 0, 0))),
			// A redirect answered by lbd is in the service's histogram,
			// not in a backend's.
			serviceDurations(snap(be("a", 0, 0, 0, 0, 0)), 70*time.Microsecond, 70*time.Microsecond),
		}, "0/0", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), MeanMS: -1, P50MS: 0.05 + 0.05*1/2, P99MS: 0.05 + 0.05*1.98/2}}},
		{"a histogram that went back gives no percentiles", []*State{
			snap(withDurations(be("a", 5, 0, 5, 5*time.Millisecond, 0), repeat(5, time.Millisecond)...)),
			snap(withDurations(be("a", 6, 0, 6, 6*time.Millisecond, 0), time.Millisecond)),
		}, "0/0/a", []Point{{TimeMS: t0.Add(time.Second).UnixMilli(), RPS: 1, MeanMS: 1, P50MS: -1, P99MS: -1}}},
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
				if !samePoint(got[i], tc.want[i]) {
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

// withDurations gives b a request duration histogram of ds.
func withDurations(b Backend, ds ...time.Duration) Backend {
	b.Durations = durations(ds...)
	return b
}

// serviceDurations gives st's service a histogram of ds.
func serviceDurations(st *State, ds ...time.Duration) *State {
	st.Listeners[0].Services[0].Requests.Duration = durations(ds...)
	return st
}

// samePoint compares points, the float32 measures to within 1e-4
// (interpolation in float64, stored in float32).
func samePoint(a, b Point) bool {
	near := func(x, y float32) bool { return x-y < 1e-4 && y-x < 1e-4 }
	return a.TimeMS == b.TimeMS && near(a.RPS, b.RPS) && near(a.EPS, b.EPS) && near(a.MeanMS, b.MeanMS) &&
		near(a.P50MS, b.P50MS) && near(a.P99MS, b.P99MS) && near(a.Active, b.Active)
}

// quantileMS reads a histogram as Prometheus' histogram_quantile does.
func TestBucketsQuantile(t *testing.T) {
	tests := []struct {
		name string
		ds   []time.Duration
		q    float64
		want float32
	}{
		{"first bucket interpolates from 0", repeat(4, 10*time.Microsecond), 0.5, 0.025},
		{"median inside one bucket", repeat(10, 3*time.Millisecond), 0.5, 3.75},
		{"median of two buckets is the lower one's top", append(repeat(5, 200*time.Microsecond), repeat(5, 20*time.Millisecond)...), 0.5, 0.25},
		{"p99 lands in the upper bucket", append(repeat(98, 200*time.Microsecond), repeat(2, 20*time.Millisecond)...), 0.99, 17.5},
		{"above every bound reads as the highest", repeat(3, time.Minute), 0.99, 30000},
		{"a bound's own value is in its bucket", repeat(2, time.Millisecond), 0.5, 0.75},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := durations(tc.ds...)
			b := bucketsOf(&h)
			if got := b.quantileMS(tc.q); got-tc.want > 1e-4 || tc.want-got > 1e-4 {
				t.Errorf("q%v = %v ms, want %v", tc.q, got, tc.want)
			}
		})
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

// TestSampleAllocations: a sample makes no garbage for the objects it
// reads, graphed or past the cap: the series keys are built in one
// buffer and a string is made only for a new series. At 10,000
// services the sampler made ~5 MB of garbage a second, which grew
// lbd's RSS by 40 MB in the ten seconds after start (issue 36).
func TestSampleAllocations(t *testing.T) {
	graphed := Service{Backends: []Backend{be("127.0.0.1-80", 1, 0, 1, 0, 0), be("", 1, 0, 1, 0, 0)}}
	past := Service{Backends: []Backend{be("127.0.0.2-80", 1, 0, 1, 0, 0)}}
	o := NewObserver()
	now := time.Unix(1000, 0)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sampleService(0, 0, &graphed, now, 0)
	for i := len(o.series); i < maxSeries; i++ { // fill up to the cap
		o.series[BackendKey(9, i, &Backend{ID: "x"}, 0)] = &series{points: make([]Point, 0, HistoryLen)}
	}
	for k, s := range o.series {
		if s.points == nil { // the graphed service's rings, grown once
			o.series[k].points = make([]Point, 0, HistoryLen)
		}
	}
	tests := []struct {
		name string
		li   int
		svc  *Service
	}{
		{"graphed service and backends (ID and index keys)", 0, &graphed},
		{"service past the series cap", 1, &past},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			allocs := testing.AllocsPerRun(100, func() {
				i++
				o.sampleService(tc.li, 0, tc.svc, now.Add(time.Duration(i)*time.Second), 1)
			})
			if allocs != 0 {
				t.Errorf("%v allocations a sample, want 0", allocs)
			}
		})
	}
	if got := o.series[ServiceKey(0, 0)]; got == nil || got.n == 0 {
		t.Error("the graphed service's series got no points")
	}
	if _, ok := o.series[ServiceKey(1, 0)]; ok {
		t.Error("a series past the cap was made")
	}
	for _, k := range []string{"0/0/127.0.0.1-80", "0/0/#1", "0/0"} {
		if o.series[k] == nil {
			t.Errorf("no series %q", k)
		}
	}
}

// TestHistoryMemoryBudget: full rings for more objects than are graphed
// stay within historyBudget (plus the series' bookkeeping). 1,024 rings
// grown by append took 42 MB.
func TestHistoryMemoryBudget(t *testing.T) {
	var bs []Backend
	for i := range maxSeries + 100 {
		bs = append(bs, be("10.0.0."+strconv.Itoa(i)+"-80", int64(i), 0, 0, 0, 0))
	}
	st := snap(bs...)
	before := heapInUse()
	o := NewObserver()
	now := time.Unix(1000, 0)
	for i := range HistoryLen + 10 {
		o.Sample(st, now.Add(time.Duration(i)*time.Second))
	}
	used := heapInUse() - before
	t.Logf("%d series of %d points: %d bytes", len(o.series), HistoryLen, used)
	const bookkeeping = 1 << 20 // series values, keys, the map
	if used > historyBudget+bookkeeping {
		t.Errorf("the history takes %d bytes for %d objects, budget %d", used, len(bs)+1, historyBudget+bookkeeping)
	}
	if n := len(o.History(0)); n != maxSeries {
		t.Errorf("%d series, want %d", n, maxSeries)
	}
	for k, s := range o.series {
		if cap(s.points) != HistoryLen {
			t.Fatalf("series %s: room for %d points, want %d", k, cap(s.points), HistoryLen)
		}
	}
	runtime.KeepAlive(o)
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
