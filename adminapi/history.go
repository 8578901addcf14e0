package adminapi

import (
	"context"
	"strconv"
	"sync"
	"time"

	"lbd/internal/metrics"
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

// historyBudget bounds the memory of the rings. A full ring is 900
// points of 32 bytes, which the allocator serves as 32 KiB (ringBytes);
// so at most maxSeries = 256 objects are graphed, the first ones of the
// configuration, and the others are not. With 1,024 rings grown by
// append (40 KiB each once full) the history could take 42 MB at
// 10,000 services, more than the rest of lbd's heap (issue 36).
const (
	historyBudget = 8 << 20
	ringBytes     = 32 << 10
	maxSeries     = historyBudget / ringBytes
)

// Point is one sample of a series.
type Point struct {
	TimeMS int64
	RPS    float32 // requests per second
	EPS    float32 // errors (failures and 5xx) per second
	// MeanMS is the mean latency of the requests answered in the
	// interval (ms; -1: none answered); P50MS and P99MS are the
	// percentiles of the interval's requests, read from the lbd_*
	// duration histogram's buckets as Prometheus' histogram_quantile
	// reads them (-1: no request finished in the interval).
	MeanMS, P50MS, P99MS float32
	Active               float32 // connections to the backends
}

// counters are the cumulative values a point is the delta of.
type counters struct {
	requests, errors, answered, latencyNS, active int64
	// durations is the object's request duration histogram, cumulative
	// per bucket as a snapshot has it, the +Inf bucket last.
	durations buckets
}

// buckets are a histogram's cumulative counts: one per bound of
// metrics.DurationBounds, then the count of all (+Inf).
type buckets [len(metrics.DurationBounds) + 1]uint64

// bucketsOf copies a snapshot's counts; a snapshot without buckets (an
// object that records none) gives zeros.
func bucketsOf(h *metrics.HistogramSnapshot) buckets {
	var b buckets
	copy(b[:], h.Buckets)
	b[len(b)-1] = h.Count
	return b
}

// add sums the rates' counters; the histogram is the object's own.
func (c *counters) add(o counters) {
	c.requests += o.requests
	c.errors += o.errors
	c.answered += o.answered
	c.latencyNS += o.latencyNS
	c.active += o.active
}

// series is one object's ring. It grows to HistoryLen points as they
// come rather than taking its whole 29 kB at the first sample: a
// restart or a reload of thousands of objects does not claim the
// history's full ~30 MB at once (issue 36).
type series struct {
	points []Point
	n      int // points written, ever
	prev   counters
	seen   uint64 // the tick that last saw the object
}

// push adds the point of an interval of dt seconds ending at t with the
// counters now at cur (the first call only records the counters).
func (s *series) push(t time.Time, dt float64, cur counters, first bool) {
	d := counters{requests: cur.requests - s.prev.requests, errors: cur.errors - s.prev.errors,
		answered: cur.answered - s.prev.answered, latencyNS: cur.latencyNS - s.prev.latencyNS, active: cur.active}
	hist, ok := cur.durations.minus(&s.prev.durations)
	s.prev = cur
	if first || dt <= 0 {
		return
	}
	p := Point{TimeMS: t.UnixMilli(), RPS: rate(d.requests, dt), EPS: rate(d.errors, dt),
		MeanMS: -1, Active: float32(cur.active)}
	if d.answered > 0 && d.latencyNS >= 0 {
		p.MeanMS = float32(float64(d.latencyNS) / float64(d.answered) / 1e6)
	}
	p.P50MS, p.P99MS = -1, -1
	if ok {
		p.P50MS, p.P99MS = hist.quantileMS(0.5), hist.quantileMS(0.99)
	}
	if len(s.points) < HistoryLen {
		s.grow()
		s.points = append(s.points, p)
	} else {
		s.points[s.n%HistoryLen] = p
	}
	s.n++
}

// grow makes room for one more point: twice the room, up to HistoryLen
// and no more (append would leave a full ring room for 1,280).
func (s *series) grow() {
	if len(s.points) < cap(s.points) {
		return
	}
	room := min(max(2*cap(s.points), 8), HistoryLen)
	s.points = append(make([]Point, 0, room), s.points...)
}

// rate turns a delta into a rate; a counter that went back (a backend
// replaced by a reload starts again at 0) counts as no traffic.
func rate(d int64, dt float64) float32 {
	if d <= 0 {
		return 0
	}
	return float32(float64(d) / dt)
}

// minus returns the interval's histogram, b less an earlier prev, and
// whether it holds any request. A count that went back (a reload
// replaced the object) holds none: its interval is unknown.
func (b *buckets) minus(prev *buckets) (d buckets, ok bool) {
	for i := range b {
		if b[i] < prev[i] {
			return d, false
		}
		d[i] = b[i] - prev[i]
	}
	return d, d[len(d)-1] > 0
}

// quantileMS estimates the q-quantile of the durations in b, in ms, as
// Prometheus' histogram_quantile does: the bucket holding the rank, and
// a linear interpolation inside it (from 0 for the first bucket). A rank
// in the +Inf bucket reads as the highest bound: past it nothing is
// known but "more".
func (b *buckets) quantileMS(q float64) float32 {
	total := b[len(b)-1]
	rank := q * float64(total)
	bounds := metrics.DurationBounds[:]
	lower, below := 0.0, uint64(0)
	for i, upper := range bounds {
		if float64(b[i]) >= rank && b[i] > below {
			in := float64(b[i] - below)
			ms := lower + (upper.Seconds()*1e3-lower)*(rank-float64(below))/in
			return float32(ms)
		}
		lower, below = upper.Seconds()*1e3, b[i]
	}
	return float32(bounds[len(bounds)-1].Seconds() * 1e3)
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
	key    []byte // record's key, built in place (sampleService)
	tick   uint64
	last   time.Time

	// What the timeline events found by sampling compare with
	// (history_events.go): TBF refusal counters, by scope and index;
	// the cluster members and the Redis link of the last sample (nil
	// before the first sample with a cluster).
	tbfs    map[string]*tbfWatch
	members map[string]bool
	redisUp bool
}

// NewObserver returns an Observer with an empty timeline and history.
func NewObserver() *Observer {
	return &Observer{Events: &Events{}, series: map[string]*series{}, tbfs: map[string]*tbfWatch{}}
}

// Run samples c every second until ctx ends.
func (o *Observer) Run(ctx context.Context, c Controller) {
	t := time.NewTicker(historyStep)
	defer t.Stop()
	w, _ := c.(HistoryWanter) // optional: without it, always sample
	if w == nil || w.HistoryWanted() {
		o.sampleFrom(c, time.Now())
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if w == nil || w.HistoryWanted() {
				o.sampleFrom(c, now)
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

// Streamer is implemented by a Controller that can hand the sampler its
// listeners and services one at a time instead of a State of all of
// them. At 10,000 services and 20,000 backends that State was 28 MB
// built every second, and as the garbage collector runs while one is
// being built, its goal counted it live: twice that in RSS (issue 36).
type Streamer interface {
	// StreamSummary calls listener for each listener (its Services
	// left empty) and then service for each of its services, then
	// service for the global services (li -1), in State's order and
	// with what Summary would hold; it returns Summary's Cluster. The
	// values passed are reused: valid only during the call.
	StreamSummary(listener func(li int, l *Listener), service func(li, si int, s *Service)) *ClusterStatus
}

// sampleFrom takes one sample of c: streamed when c can.
func (o *Observer) sampleFrom(c Controller, now time.Time) {
	s, ok := c.(Streamer)
	if !ok {
		o.Sample(summary(c), now)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	dt := o.begin(now)
	cluster := s.StreamSummary(func(li int, l *Listener) { o.sampleListener(li, l, now) },
		func(li, si int, sv *Service) { o.sampleService(li, si, sv, now, dt) })
	o.end(cluster, now)
}

// Sample adds the point of every service and backend of st, taken at now.
func (o *Observer) Sample(st *State, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	dt := o.begin(now)
	for li := range st.Listeners {
		l := &st.Listeners[li]
		o.sampleListener(li, l, now)
		for si := range l.Services {
			o.sampleService(li, si, &l.Services[si], now, dt)
		}
	}
	for si := range st.Services {
		o.sampleService(-1, si, &st.Services[si], now, dt)
	}
	o.end(st.Cluster, now)
}

// begin starts the sample taken at now; it returns the seconds since
// the previous one (0 for the first).
func (o *Observer) begin(now time.Time) float64 {
	o.tick++
	dt := now.Sub(o.last).Seconds()
	if o.last.IsZero() {
		dt = 0
	}
	o.last = now
	return dt
}

func (o *Observer) sampleListener(li int, l *Listener, now time.Time) {
	o.watchTBFs(strconv.Itoa(li), "listener "+listenerName(l, li), l.Limits.RateLimits, now)
}

func (o *Observer) sampleService(li, si int, s *Service, now time.Time, dt float64) {
	if len(s.Limits.RateLimits) > 0 {
		o.watchTBFs(ServiceKey(li, si), scopeName(li, si, s), s.Limits.RateLimits, now)
	}
	sum := counters{durations: bucketsOf(&s.Requests.Duration)}
	for bi := range s.Backends {
		c := backendCounters(&s.Backends[bi])
		sum.add(c)
		o.key = appendBackendKey(o.key[:0], li, si, &s.Backends[bi], bi)
		o.record(o.key, now, dt, c)
	}
	o.key = appendServiceKey(o.key[:0], li, si)
	o.record(o.key, now, dt, sum)
}

// end finishes a sample: the cluster, and the series and watches of
// objects the sample did not see are dropped.
func (o *Observer) end(cluster *ClusterStatus, now time.Time) {
	o.watchCluster(cluster, now)
	for k, s := range o.series {
		if s.seen != o.tick {
			delete(o.series, k)
		}
	}
	for k, w := range o.tbfs {
		if w.seen != o.tick {
			delete(o.tbfs, k)
		}
	}
}

// record adds the point of the object named key. The key is a scratch
// buffer: a string of it is made only for a new series, so a sample of
// thousands of objects makes no garbage.
func (o *Observer) record(key []byte, now time.Time, dt float64, c counters) {
	s := o.series[string(key)]
	first := s == nil
	if first {
		if len(o.series) >= maxSeries {
			return
		}
		s = &series{}
		o.series[string(key)] = s
	}
	s.seen = o.tick
	s.push(now, dt, c, first)
}

func backendCounters(b *Backend) counters {
	return counters{requests: b.Requests + b.Answered, errors: b.Errors + b.Hits5xx,
		answered:  b.Hits2xx + b.Hits3xx + b.Hits4xx + b.Hits5xx,
		latencyNS: int64(b.LatencyTotal), active: b.Active, durations: bucketsOf(&b.Durations)}
}

// ServiceKey names a service's series: its listener index (-1 for the
// global services) and its index, as api/state numbers them.
func ServiceKey(li, si int) string { return string(appendServiceKey(nil, li, si)) }

func appendServiceKey(dst []byte, li, si int) []byte {
	dst = strconv.AppendInt(dst, int64(li), 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, int64(si), 10)
}

// BackendKey names a backend's series: by its ID, which stays when a
// backend before it goes, or by its index for the special backends.
func BackendKey(li, si int, b *Backend, bi int) string {
	return string(appendBackendKey(nil, li, si, b, bi))
}

func appendBackendKey(dst []byte, li, si int, b *Backend, bi int) []byte {
	dst = appendServiceKey(dst, li, si)
	if b.ID != "" {
		return append(append(dst, '/'), b.ID...)
	}
	return strconv.AppendInt(append(dst, "/#"...), int64(bi), 10)
}

// History returns every series' points newer than ms, by key.
func (o *Observer) History(ms int64) map[string][]Point { return o.HistoryOf(ms, nil) }

// HistoryOf returns the points newer than ms of the series whose key
// keep accepts (nil: all), by key.
func (o *Observer) HistoryOf(ms int64, keep func(key string) bool) map[string][]Point {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string][]Point)
	for k, s := range o.series {
		if keep == nil || keep(k) {
			out[k] = s.since(ms)
		}
	}
	return out
}
