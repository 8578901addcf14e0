package metrics

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		// first is the index of the first bound the sample counts under
		// (len(DurationBounds) for +Inf only).
		first int
	}{
		{name: "negative counts as zero", d: -time.Second, first: 0},
		{name: "zero", d: 0, first: 0},
		{name: "exactly the first bound", d: 50 * time.Microsecond, first: 0},
		{name: "just above the first bound", d: 51 * time.Microsecond, first: 1},
		{name: "one millisecond", d: time.Millisecond, first: 4},
		{name: "exactly the last bound", d: 30 * time.Second, first: len(DurationBounds) - 1},
		{name: "above every bound", d: time.Minute, first: len(DurationBounds)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			h.Observe(tc.d)
			s := h.Snapshot()
			for i, n := range s.Buckets {
				want := uint64(0)
				if i >= tc.first {
					want = 1
				}
				if n != want {
					t.Errorf("bucket le=%v: %d, want %d", s.Bounds[i], n, want)
				}
			}
			if s.Count != 1 || s.Sum != max(tc.d, 0) {
				t.Errorf("count %d sum %v, want 1 and %v", s.Count, s.Sum, max(tc.d, 0))
			}
		})
	}
}

func TestBoundsIncrease(t *testing.T) {
	for i := 1; i < len(DurationBounds); i++ {
		if DurationBounds[i] <= DurationBounds[i-1] {
			t.Fatalf("bound %d (%v) not above bound %d (%v)", i, DurationBounds[i], i-1, DurationBounds[i-1])
		}
	}
}

func TestClasses(t *testing.T) {
	tests := []struct {
		name   string
		status int
		class  int // 0: not counted
	}{
		{name: "no status", status: 0},
		{name: "below 100", status: 99},
		{name: "continue", status: 100, class: 1},
		{name: "ok", status: 200, class: 2},
		{name: "redirect", status: 302, class: 3},
		{name: "not found", status: 404, class: 4},
		{name: "last 5xx", status: 599, class: 5},
		{name: "above 599", status: 600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Requests
			r.Observe(tc.status, time.Millisecond)
			got := r.Codes.Counts()
			for i, n := range got {
				want := uint64(0)
				if i == tc.class && tc.class != 0 {
					want = 1
				}
				if n != want {
					t.Errorf("class %d: %d, want %d", i, n, want)
				}
			}
			if c := r.Duration.Snapshot().Count; c != 1 {
				t.Errorf("duration count %d, want 1 (every request is timed)", c)
			}
		})
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	var r Requests
	if n := testing.AllocsPerRun(1000, func() { r.Observe(200, 3*time.Millisecond) }); n != 0 {
		t.Fatalf("Observe allocates %.1f times, want 0", n)
	}
}

func TestLazyHistogram(t *testing.T) {
	var l LazyHistogram
	var h Histogram
	if got, want := l.Snapshot(), h.Snapshot(); !equalSnapshots(got, want) {
		t.Fatalf("unobserved: %+v, want the empty histogram's %+v", got, want)
	}
	for _, d := range []time.Duration{0, time.Millisecond, time.Minute} {
		l.Observe(d)
		h.Observe(d)
	}
	if got, want := l.Snapshot(), h.Snapshot(); !equalSnapshots(got, want) {
		t.Fatalf("observed: %+v, want %+v", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { l.Observe(time.Second) }); n != 0 {
		t.Errorf("Observe after the first: %v allocations, want 0", n)
	}
}

func equalSnapshots(a, b HistogramSnapshot) bool {
	if a.Count != b.Count || a.Sum != b.Sum || len(a.Buckets) != len(b.Buckets) || len(a.Bounds) != len(b.Bounds) {
		return false
	}
	for i := range a.Buckets {
		if a.Buckets[i] != b.Buckets[i] || a.Bounds[i] != b.Bounds[i] {
			return false
		}
	}
	return true
}
