package cluster

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// lagBounds are the histogram's bucket upper bounds: fine below the
// 100 ms the cluster promises, coarse above.
var lagBounds = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// lagHistogram counts replication lags for the metrics, and keeps the
// most recent ones for the quantiles lbctl shows; safe for concurrent use.
type lagHistogram struct {
	buckets [17]atomic.Int64 // one per bound, then +Inf
	count   atomic.Int64
	sum     atomic.Int64 // nanoseconds
	recent  lagRing
}

func (h *lagHistogram) observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(lagBounds) && d > lagBounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.count.Add(1)
	h.sum.Add(int64(d))
	h.recent.add(d)
}

// cumulative returns the cumulative count at each bound.
func (h *lagHistogram) cumulative() []int64 {
	out := make([]int64, len(lagBounds))
	var n int64
	for i := range lagBounds {
		n += h.buckets[i].Load()
		out[i] = n
	}
	return out
}

// lagWindow is how many recent lags the quantiles are measured over: a
// few seconds of a busy cluster, and what Redis down an hour ago did to
// the lag no longer weighs on them.
const lagWindow = 1024

// lagRing holds the last lagWindow lags. Changes are applied in the
// background, never on the request path, so a mutex costs nothing there.
type lagRing struct {
	mu   sync.Mutex
	buf  [lagWindow]time.Duration
	n    int // samples held
	next int // where the next one goes
}

func (r *lagRing) add(d time.Duration) {
	r.mu.Lock()
	r.buf[r.next] = d
	r.next = (r.next + 1) % lagWindow
	r.n = min(r.n+1, lagWindow)
	r.mu.Unlock()
}

// quantiles returns the nearest-rank q-quantiles of the samples held, and
// their number (0, with zero quantiles, without samples).
func (r *lagRing) quantiles(qs ...float64) ([]time.Duration, int) {
	r.mu.Lock()
	s := slices.Clone(r.buf[:r.n])
	r.mu.Unlock()
	out := make([]time.Duration, len(qs))
	if len(s) == 0 {
		return out, 0
	}
	slices.Sort(s)
	for i, q := range qs {
		rank := int(q*float64(len(s)) + 0.999999) // ceil, without float noise
		out[i] = s[min(max(rank, 1), len(s))-1]
	}
	return out, len(s)
}
