package session

import (
	"context"
	"time"
)

// DefaultSweepInterval is zproxy's expiry sweep period.
const DefaultSweepInterval = time.Second

// Sweep removes the sessions expired at now and returns how many. It
// visits only sessions listed more than a TTL before now (nothing listed
// later can have been idle that long, except ones given a second chance,
// which wait for the next round); live ones among them are re-listed.
func (t *Table[V]) Sweep(now time.Time) int {
	if t.ttl <= 0 {
		return 0
	}
	n := t.stamp(now)
	removed := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for left := len(s.m); left > 0 && s.head != nil && s.head.listedAt+t.ttl < n; left-- {
			e := s.head
			if t.expired(e, n) {
				s.remove(e)
				removed++
			} else {
				s.relist(e, n)
			}
		}
		s.mu.Unlock()
	}
	t.expiredN.Add(uint64(removed))
	return removed
}

// StartSweeper runs Sweep every interval (<= 0: DefaultSweepInterval) in a
// goroutine until ctx is done or stop is called. stop waits for the
// goroutine to exit, so nothing outlives a reload that drops the table.
func (t *Table[V]) StartSweeper(ctx context.Context, interval time.Duration) (stop func()) {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.Sweep(t.clock())
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
