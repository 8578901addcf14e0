// Package metrics holds the lock-free, allocation-free recorders behind
// lbd's lbd_* metric families: fixed-bucket histograms and status-class
// counters that the proxy updates on every request. Each recorder is a
// plain struct of atomics embedded in (or allocated with) the object it
// measures at build or reload time, so recording touches no map, builds
// no label and takes no lock.
package metrics

import (
	"sync/atomic"
	"time"
)

// DurationBounds are the upper bounds of the request and connect time
// buckets: 50 µs to 30 s, about three per decade, so a loopback backend
// and a slow report both land in a bucket of their own.
var DurationBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second, 30 * time.Second,
}

// Histogram counts durations in the DurationBounds buckets. Buckets are
// stored per bucket (not cumulative) so Observe adds to one counter only;
// Snapshot makes them cumulative. The zero value is ready to use.
type Histogram struct {
	// counts[i] is the observations in (bound[i-1], bound[i]]; the last
	// one is those above every bound (+Inf).
	counts [len(DurationBounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// Observe records one duration; negative ones count as 0.
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	// A linear scan: 18 compares at most, most requests stop in the
	// first few, and it is branch-predictable; no slice, no allocation.
	i := 0
	for i < len(DurationBounds) && d > DurationBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// HistogramSnapshot is a histogram's state at one instant, as
// OpenMetrics prints it: Buckets[i] counts the observations <= Bounds[i]
// (cumulative), Count all of them (the +Inf bucket). Bounds and Buckets
// are read-only: an unobserved LazyHistogram's snapshot shares them.
type HistogramSnapshot struct {
	Bounds  []time.Duration
	Buckets []uint64
	Count   uint64
	Sum     time.Duration
}

// Snapshot reads the histogram. Concurrent Observes may be half seen (a
// count without its sum); each counter read only ever grows, which is
// all a scrape needs.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: DurationBounds[:], Buckets: make([]uint64, len(DurationBounds))}
	var n uint64
	for i := range DurationBounds {
		n += h.counts[i].Load()
		s.Buckets[i] = n
	}
	s.Count = n + h.counts[len(DurationBounds)].Load()
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// Classes counts responses by status class: index 1..5 for 1xx..5xx.
type Classes [6]atomic.Uint64

// Add counts one response with the given status; statuses outside
// 100..599 are not counted.
func (c *Classes) Add(status int) {
	if status >= 100 && status <= 599 {
		c[status/100].Add(1)
	}
}

// Counts returns the counts of 1xx..5xx at index 1..5.
func (c *Classes) Counts() [6]uint64 {
	var r [6]uint64
	for i := 1; i < len(c); i++ {
		r[i] = c[i].Load()
	}
	return r
}

// Requests is what a listener or a service records per request: its
// duration and the status class of its response. The histogram is
// allocated by the first request (thousands of services, most idle).
type Requests struct {
	Duration LazyHistogram
	Codes    Classes
}

// Observe records one finished request.
func (r *Requests) Observe(status int, d time.Duration) {
	r.Duration.Observe(d)
	r.Codes.Add(status)
}
