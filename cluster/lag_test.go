package cluster

import (
	"testing"
	"time"
)

func TestLagQuantiles(t *testing.T) {
	ms := time.Millisecond
	// many is 2000 samples: 1000 of 100 ms, then 1000 from 1 to 1000 µs;
	// only the last 1024 count: 24 of 100 ms (above the p99's rank,
	// 1014) and the 1000 small ones (the p50's rank, 512, is 512 µs).
	var many []time.Duration
	for range 1000 {
		many = append(many, 100*ms)
	}
	for i := 1; i <= 1000; i++ {
		many = append(many, time.Duration(i)*time.Microsecond)
	}
	tests := []struct {
		name       string
		samples    []time.Duration
		p50, p99   time.Duration
		wantWindow int
	}{
		{name: "none"},
		{name: "one", samples: []time.Duration{3 * ms}, p50: 3 * ms, p99: 3 * ms, wantWindow: 1},
		{name: "measured, not a bucket bound", samples: []time.Duration{1100 * time.Microsecond, 1200 * time.Microsecond, 1300 * time.Microsecond},
			p50: 1200 * time.Microsecond, p99: 1300 * time.Microsecond, wantWindow: 3},
		{name: "one outlier in a hundred", samples: append(repeat(99, ms), 900*ms), p50: ms, p99: ms, wantWindow: 100},
		{name: "two outliers in a hundred", samples: append(repeat(98, ms), 900*ms, 900*ms), p50: ms, p99: 900 * ms, wantWindow: 100},
		{name: "old samples leave the window", samples: many, p50: 512 * time.Microsecond, p99: 100 * ms, wantWindow: lagWindow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h lagHistogram
			for _, d := range tc.samples {
				h.observe(d)
			}
			q, n := h.recent.quantiles(0.5, 0.99)
			if q[0] != tc.p50 || q[1] != tc.p99 || n != tc.wantWindow {
				t.Errorf("p50 %v p99 %v over %d, want %v %v over %d", q[0], q[1], n, tc.p50, tc.p99, tc.wantWindow)
			}
		})
	}
}

func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}
