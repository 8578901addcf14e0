package session

import (
	"context"
	"time"
)

// DefaultSweepInterval is zproxy's expiry sweep period.
const DefaultSweepInterval = time.Second

// sweepBatch bounds the sessions a sweep examines per hold of a shard's
// write lock. A lookup of that shard waits at most one batch (a few
// microseconds), not the whole shard: a sweep of 500,000 expiring
// sessions would otherwise hold each of 64 shards for ~8,000 removals.
var sweepBatch = 256

// betweenBatches runs with the shard unlocked between two batches of a
// sweep; nil outside tests, which use it to show the lock is let go.
var betweenBatches func()

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
		removed += t.sweepShard(&t.shards[i], n)
	}
	t.expiredN.Add(uint64(removed))
	return removed
}

// sweepShard sweeps one shard in batches of sweepBatch, letting the
// lock go between them. left bounds the whole pass by the sessions the
// shard held at its start, so re-listed live ones are not met again.
func (t *Table[V]) sweepShard(s *shard[V], n int64) (removed int) {
	s.mu.Lock()
	left := len(s.m)
	for {
		for batch := sweepBatch; batch > 0; batch-- {
			if left == 0 || s.head == nil || s.head.listedAt+t.ttl >= n {
				s.mu.Unlock()
				return removed
			}
			left--
			e := s.head
			if t.expired(e, n) {
				s.remove(e)
				removed++
			} else {
				s.relist(e, n)
			}
		}
		s.mu.Unlock()
		if betweenBatches != nil {
			betweenBatches()
		}
		s.mu.Lock()
	}
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
