package adminapi

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The dashboard's graphs: a sampler goroutine reads the counters the
// control API already has (one Summary a second, never the request
// path) and keeps, per service and per backend, a fixed-size ring of
// one-second points over the last 15 minutes. Memory is bounded: a
// ring is HistoryLen points of a few words, at most maxSeries rings,
// and a ring whose object left the configuration goes at the next tick.

// HistoryLen is the number of points of a series: 15 minutes of 1 s.
const HistoryLen = 900

// historyStep is the sampling interval.
const historyStep = time.Second

// maxSeries caps the rings (each ~29 kB: 900 points of 32 bytes), so
// the history never takes more than ~30 MB; objects past it (a
// configuration of over a thousand backends) are not graphed.
const maxSeries = 1024

// quantileWindow is how many per-second means the p50/p99 points look
// back over: the backends record a mean latency per interval, not a
// distribution, so the percentiles are those of the last minute's
// per-second means, which the page says.
const quantileWindow = 60

// Point is one sample of a series.
type Point struct {
	TimeMS int64
	RPS    float32 // requests per second
	EPS    float32 // errors (failures and 5xx) per second
	// MeanMS is the mean latency of the requests answered in the
	// interval (ms; -1: none answered); P50MS and P99MS are percentiles
	// of the means of the last quantileWindow intervals (-1: none).
	MeanMS, P50MS, P99MS float32
	Active               float32 // connections to the backends
}

// counters are the cumulative values a point is the delta of.
type counters struct {
	requests, errors, answered, latencyNS, active int64
}

func (c *counters) add(o counters) {
	c.requests += o.requests
	c.errors += o.errors
	c.answered += o.answered
	c.latencyNS += o.latencyNS
	c.active += o.active
}

// series is one object's ring.
type series struct {
	points [HistoryLen]Point
	n      int // points written, ever
	prev   counters
	seen   uint64 // the tick that last saw the object
}

// push adds the point of an interval of dt seconds ending at t with the
// counters now at cur (the first call only records the counters).
func (s *series) push(t time.Time, dt float64, cur counters, first bool) {
	d := counters{cur.requests - s.prev.requests, cur.errors - s.prev.errors,
		cur.answered - s.prev.answered, cur.latencyNS - s.prev.latencyNS, cur.active}
	s.prev = cur
	if first || dt <= 0 {
		return
	}
	p := Point{TimeMS: t.UnixMilli(), RPS: rate(d.requests, dt), EPS: rate(d.errors, dt),
		MeanMS: -1, Active: float32(cur.active)}
	if d.answered > 0 && d.latencyNS >= 0 {
		p.MeanMS = float32(float64(d.latencyNS) / float64(d.answered) / 1e6)
	}
	p.P50MS, p.P99MS = s.quantiles(p.MeanMS)
	s.points[s.n%HistoryLen] = p
	s.n++
}

// rate turns a delta into a rate; a counter that went back (a backend
// replaced by a reload starts again at 0) counts as no traffic.
func rate(d int64, dt float64) float32 {
	if d <= 0 {
		return 0
	}
	return float32(float64(d) / dt)
}

// quantiles returns the p50 and p99 of the last quantileWindow means
// (mean being the newest, not yet pushed), -1 when none is known.
func (s *series) quantiles(mean float32) (p50, p99 float32) {
	var buf [quantileWindow]float32
	v := buf[:0]
	if mean >= 0 {
		v = append(v, mean)
	}
	for i := 1; i < quantileWindow && i <= s.n; i++ {
		if m := s.points[(s.n-i)%HistoryLen].MeanMS; m >= 0 {
			v = append(v, m)
		}
	}
	if len(v) == 0 {
		return -1, -1
	}
	slices.Sort(v)
	at := func(q float64) float32 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	return at(0.5), at(0.99)
}

// since returns the points newer than ms, oldest first.
func (s *series) since(ms int64) []Point {
	var out []Point
	for i := max(0, s.n-HistoryLen); i < s.n; i++ {
		if p := s.points[i%HistoryLen]; p.TimeMS > ms {
			out = append(out, p)
		}
	}
	return out
}

// Observer keeps a Controller's timeline and graph history.
type Observer struct {
	Events *Events

	mu     sync.Mutex
	series map[string]*series
	tick   uint64
	last   time.Time
}

// NewObserver returns an Observer with an empty timeline and history.
func NewObserver() *Observer {
	return &Observer{Events: &Events{}, series: map[string]*series{}}
}

// Run samples c every second until ctx ends.
func (o *Observer) Run(ctx context.Context, c Controller) {
	t := time.NewTicker(historyStep)
	defer t.Stop()
	w, _ := c.(HistoryWanter) // optional: without it, always sample
	if w == nil || w.HistoryWanted() {
		o.Sample(summary(c), time.Now())
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if w == nil || w.HistoryWanted() {
				o.Sample(summary(c), now)
			}
		}
	}
}

// HistoryWanter is implemented by a Controller that knows whether
// anything shows the history (a dashboard is configured); Run samples
// only then.
type HistoryWanter interface {
	HistoryWanted() bool
}

// Sample adds the point of every service and backend of st, taken at now.
func (o *Observer) Sample(st *State, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tick++
	dt := now.Sub(o.last).Seconds()
	if o.last.IsZero() {
		dt = 0
	}
	o.last = now
	visit := func(li int, svcs []Service) {
		for si := range svcs {
			s := &svcs[si]
			var sum counters
			for bi := range s.Backends {
				c := backendCounters(&s.Backends[bi])
				sum.add(c)
				o.record(BackendKey(li, si, &s.Backends[bi], bi), now, dt, c)
			}
			o.record(ServiceKey(li, si), now, dt, sum)
		}
	}
	for li := range st.Listeners {
		visit(li, st.Listeners[li].Services)
	}
	visit(-1, st.Services)
	for k, s := range o.series {
		if s.seen != o.tick {
			delete(o.series, k)
		}
	}
}

func (o *Observer) record(key string, now time.Time, dt float64, c counters) {
	s := o.series[key]
	first := s == nil
	if first {
		if len(o.series) >= maxSeries {
			return
		}
		s = &series{}
		o.series[key] = s
	}
	s.seen = o.tick
	s.push(now, dt, c, first)
}

func backendCounters(b *Backend) counters {
	return counters{requests: b.Requests + b.Answered, errors: b.Errors + b.Hits5xx,
		answered:  b.Hits2xx + b.Hits3xx + b.Hits4xx + b.Hits5xx,
		latencyNS: int64(b.LatencyTotal), active: b.Active}
}

// ServiceKey names a service's series: its listener index (-1 for the
// global services) and its index, as api/state numbers them.
func ServiceKey(li, si int) string { return strconv.Itoa(li) + "/" + strconv.Itoa(si) }

// BackendKey names a backend's series: by its ID, which stays when a
// backend before it goes, or by its index for the special backends.
func BackendKey(li, si int, b *Backend, bi int) string {
	if b.ID != "" {
		return ServiceKey(li, si) + "/" + b.ID
	}
	return ServiceKey(li, si) + "/#" + strconv.Itoa(bi)
}

// History returns every series' points newer than ms, by key.
func (o *Observer) History(ms int64) map[string][]Point {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string][]Point, len(o.series))
	for k, s := range o.series {
		out[k] = s.since(ms)
	}
	return out
}
