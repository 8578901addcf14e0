package cluster

import (
	"sync"
	"testing"
	"time"
)

// manualWall is a settable wall clock.
type manualWall struct {
	mu sync.Mutex
	t  time.Time
}

func (w *manualWall) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.t
}

func (w *manualWall) set(t time.Time) {
	w.mu.Lock()
	w.t = t
	w.mu.Unlock()
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestClock(t *testing.T) {
	tests := []struct {
		name string
		// steps: "w+D" sets the wall to t0+D, "o+D" observes a peer's
		// timestamp of t0+D (counter 5); "now" takes a timestamp.
		run  func(c *Clock, w *manualWall) (got, want uint64)
		desc string
	}{
		{name: "wall clock moving on", desc: "a later wall clock gives its own time",
			run: func(c *Clock, w *manualWall) (uint64, uint64) {
				c.Now()
				w.set(t0.Add(time.Second))
				return c.Now(), tsOf(t0.Add(time.Second))
			}},
		{name: "same millisecond", desc: "the counter orders changes within a millisecond",
			run: func(c *Clock, _ *manualWall) (uint64, uint64) {
				a := c.Now()
				return c.Now(), a + 1
			}},
		{name: "wall clock stepping back", desc: "never goes back",
			run: func(c *Clock, w *manualWall) (uint64, uint64) {
				a := c.Now()
				w.set(t0.Add(-time.Hour))
				return c.Now(), a + 1
			}},
		{name: "peer ahead", desc: "a change made after seeing a peer's is later than it",
			run: func(c *Clock, _ *manualWall) (uint64, uint64) {
				peer := tsOf(t0.Add(10*time.Second)) + 5
				c.Observe(peer)
				return c.Now(), peer + 1
			}},
		{name: "peer behind", desc: "an older peer timestamp changes nothing",
			run: func(c *Clock, _ *manualWall) (uint64, uint64) {
				c.Observe(tsOf(t0.Add(-10 * time.Second)))
				return c.Now(), tsOf(t0)
			}},
		{name: "peer far in the future", desc: "beyond maxSkew a peer's clock is not followed",
			run: func(c *Clock, _ *manualWall) (uint64, uint64) {
				c.Observe(tsOf(t0.Add(maxSkew + time.Second)))
				return c.Now(), tsOf(t0)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &manualWall{t: t0}
			c := NewClock(w.now)
			if got, want := tt.run(c, w); got != want {
				t.Fatalf("%s: got %#x, want %#x", tt.desc, got, want)
			}
		})
	}
}

func TestClockConcurrentUnique(t *testing.T) {
	c := NewClock(nil)
	const goroutines, each = 4, 2000
	seen := make(chan uint64, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				seen <- c.Now()
			}
		}()
	}
	wg.Wait()
	close(seen)
	unique := map[uint64]bool{}
	for ts := range seen {
		if unique[ts] {
			t.Fatalf("timestamp %#x handed out twice", ts)
		}
		unique[ts] = true
	}
}

func TestStampOrder(t *testing.T) {
	tests := []struct {
		name string
		a, b Stamp
		want bool // a.After(b)
	}{
		{name: "later time", a: Stamp{TS: 2, Tie: "a"}, b: Stamp{TS: 1, Tie: "z"}, want: true},
		{name: "earlier time", a: Stamp{TS: 1, Tie: "z"}, b: Stamp{TS: 2, Tie: "a"}},
		{name: "tie: greater name", a: Stamp{TS: 5, Tie: "node-b"}, b: Stamp{TS: 5, Tie: "node-a"}, want: true},
		{name: "tie: smaller name", a: Stamp{TS: 5, Tie: "node-a"}, b: Stamp{TS: 5, Tie: "node-b"}},
		{name: "tie: prefix is smaller", a: Stamp{TS: 5, Tie: "node"}, b: Stamp{TS: 5, Tie: "node-a"}},
		{name: "identical", a: Stamp{TS: 5, Tie: "x"}, b: Stamp{TS: 5, Tie: "x"}},
		{name: "high bit of the time", a: Stamp{TS: 1 << 63}, b: Stamp{TS: 1<<63 - 1, Tie: "zzz"}, want: true},
		{name: "bytes, not letters", a: Stamp{TS: 5, Tie: "a"}, b: Stamp{TS: 5, Tie: "B"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.After(tt.b); got != tt.want {
				t.Fatalf("%+v.After(%+v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
