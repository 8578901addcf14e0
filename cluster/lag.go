package cluster

import (
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

// lagHistogram counts replication lags; safe for concurrent use.
type lagHistogram struct {
	buckets [17]atomic.Int64 // one per bound, then +Inf
	count   atomic.Int64
	sum     atomic.Int64 // nanoseconds
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

// quantile estimates the q-quantile as the bound of the bucket it falls
// in (an upper estimate); 0 without samples, and the largest bound when it
// falls beyond them.
func (h *lagHistogram) quantile(q float64) time.Duration {
	total := h.count.Load()
	if total == 0 {
		return 0
	}
	want := int64(q*float64(total) + 0.5)
	want = max(want, 1)
	var n int64
	for i, b := range lagBounds {
		n += h.buckets[i].Load()
		if n >= want {
			return b
		}
	}
	return lagBounds[len(lagBounds)-1]
}
