package backend

import (
	"sync/atomic"
	"time"

	"lbd/internal/metrics"
)

// ewmaShift sets the response-time smoothing to 1/8 per sample, the TCP
// SRTT gain: a 20 ms outlier moves the average by 2.5 ms, a persistent
// change is followed within a few dozen requests.
const ewmaShift = 3

// Active returns the connections currently checked out to requests
// (zproxy "connections"); idle pooled connections are not load.
func (b *Backend) Active() int64 { return int64(b.active.Load()) }

// Pending returns the connects in progress (zproxy "pending-connections").
func (b *Backend) Pending() int64 { return int64(b.pending.Load()) }

// Requests returns the number of finished requests (Done calls).
func (b *Backend) Requests() int64 { return b.requests.Load() }

// StatusCount returns how many responses of class n (1..5, i.e. 1xx..5xx)
// this backend sent; other n yield 0.
func (b *Backend) StatusCount(class int) int64 {
	if class < 1 || class > 5 {
		return 0
	}
	return b.status[class-1].Load()
}

// Errors returns the requests that ended without a valid response status.
func (b *Backend) Errors() int64 { return b.errors.Load() }

// LatencyTotal returns the sum of the response times of the requests
// that got a valid status: two readings and the StatusCount sums between
// them give the exact mean latency over any interval (the dashboard),
// which the moving average cannot.
func (b *Backend) LatencyTotal() time.Duration { return time.Duration(b.latencySum.Load()) }

// Latency returns the moving average response time, or -1 before the first
// sample (the value zproxy's API prints for "no data").
func (b *Backend) Latency() time.Duration { return time.Duration(b.latency.Load()) }

// ConnectTime returns the average connect latency (dials and health probes),
// or -1 before the first sample.
func (b *Backend) ConnectTime() time.Duration { return time.Duration(b.connectTime.Load()) }

// Durations reads the histogram of the response times of the requests
// that got a valid status (the ones LatencyTotal sums).
func (b *Backend) Durations() metrics.HistogramSnapshot { return b.duration.Snapshot() }

// ConnectDurations reads the histogram of connect times (dials and
// health probes, the samples ConnectTime averages).
func (b *Backend) ConnectDurations() metrics.HistogramSnapshot { return b.connect.Snapshot() }

// probeStats counts health checks, [0] passed and [1] failed, and
// their durations.
type probeStats struct {
	n    [2]atomic.Uint64
	time metrics.LazyHistogram
}

// Probes returns how many health checks passed and failed.
func (b *Backend) Probes() (passed, failed uint64) {
	if p := b.probes.Load(); p != nil {
		return p.n[0].Load(), p.n[1].Load()
	}
	return 0, 0
}

// ProbeDurations reads the histogram of health check durations.
func (b *Backend) ProbeDurations() metrics.HistogramSnapshot {
	if p := b.probes.Load(); p != nil {
		return p.time.Snapshot()
	}
	return neverProbed.Snapshot()
}

// neverProbed is the durations of a backend never probed: never observed,
// its snapshot is the shared empty one.
var neverProbed metrics.LazyHistogram

// probed records a health check that took d.
func (b *Backend) probed(d time.Duration, ok bool) {
	p := b.probes.Load()
	if p == nil {
		b.probes.CompareAndSwap(nil, new(probeStats))
		p = b.probes.Load()
	}
	i := 1
	if ok {
		i = 0
	}
	p.n[i].Add(1)
	p.time.Observe(d)
}

// connected records a connect that took d.
func (b *Backend) connected(d time.Duration) {
	ewma(&b.connectTime, int64(d), connectShift)
	b.connect.Observe(d)
}

// Done records a finished request: status is the backend's response code,
// or a value outside 100..599 (use 0) when no valid response arrived, which
// counts as an error and leaves the latency average alone. c may be nil.
func (b *Backend) Done(c *Conn, status int, latency time.Duration) {
	b.requests.Add(1)
	if c != nil {
		c.requests++
	}
	if status < 100 || status > 599 {
		b.errors.Add(1)
		return
	}
	b.status[status/100-1].Add(1)
	b.latencySum.Add(int64(max(latency, 0)))
	b.duration.Observe(latency)
	ewma(&b.latency, int64(max(latency, 0)), ewmaShift)
	b.loadChanged()
}

// ewma folds sample into *p with gain 1/2^shift; a negative *p means "no
// sample yet" and is replaced outright. Lock-free: a CAS loop.
func ewma(p *atomic.Int64, sample int64, shift uint) {
	for {
		old := p.Load()
		next := sample
		if old >= 0 {
			next = old + (sample-old)>>shift
		}
		if p.CompareAndSwap(old, next) {
			return
		}
	}
}
