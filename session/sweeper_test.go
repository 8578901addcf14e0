package session

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestSweeperExpiresOnTime(t *testing.T) {
	// Not parallel: goleak.VerifyNone must not see other tests' goroutines.
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable[string](10*time.Second, 0, nil) // time.Now is the bubble's fake clock
		tb.Store([]byte("k"), "b1")
		stop := tb.StartSweeper(context.Background(), time.Second)
		defer stop()

		time.Sleep(10 * time.Second) // idle exactly TTL: alive
		synctest.Wait()
		if tb.Len() != 1 {
			t.Fatalf("at TTL: Len = %d, want 1", tb.Len())
		}
		time.Sleep(time.Second) // next sweep: idle TTL+1s
		synctest.Wait()
		if tb.Len() != 0 {
			t.Fatalf("one sweep after TTL: Len = %d, want 0", tb.Len())
		}
	})
	goleak.VerifyNone(t)
}

func TestSweeperStops(t *testing.T) {
	tests := []struct {
		name string
		stop func(cancel context.CancelFunc, stop func())
	}{
		{name: "stop", stop: func(_ context.CancelFunc, stop func()) { stop() }},
		{name: "context cancelled", stop: func(cancel context.CancelFunc, stop func()) { cancel(); stop() }},
		{name: "stop then cancel", stop: func(cancel context.CancelFunc, stop func()) { stop(); cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tb := NewTable[string](time.Second, 0, nil)
				ctx, cancel := context.WithCancel(context.Background())
				stop := tb.StartSweeper(ctx, 0) // 0: default interval
				time.Sleep(3 * DefaultSweepInterval)
				tt.stop(cancel, stop)
				// synctest.Test fails if a goroutine of the bubble is left.
			})
			goleak.VerifyNone(t)
		})
	}
}

func TestSweeperContextEndsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable[string](time.Second, 0, nil)
		ctx, cancel := context.WithCancel(context.Background())
		tb.StartSweeper(ctx, time.Second)
		cancel()
		// Without stop(), the goroutine must still exit on ctx.Done; the
		// bubble would otherwise report it as leaked and deadlock Wait.
		synctest.Wait()
	})
	goleak.VerifyNone(t)
}

// A sweep works in batches and lets the shard's lock go between them:
// a lookup made between two batches gets through (it would deadlock if
// the sweep held the lock), and the sweep still removes exactly the
// expired sessions and keeps the live ones.
func TestSweepInBatches(t *testing.T) {
	defer func(b int) { sweepBatch, betweenBatches = b, nil }(sweepBatch)
	sweepBatch = 3
	clk := newFakeClock()
	tb := NewTable[string](10*time.Second, 100, clk.Now) // one shard
	for i := range 10 {
		tb.Store([]byte(fmt.Sprintf("old-%d", i)), "b")
	}
	clk.Advance(8 * time.Second)
	for i := range 2 {
		tb.Store([]byte(fmt.Sprintf("new-%d", i)), "b")
	}
	clk.Advance(5 * time.Second) // old-*: idle 13 s, expired; new-*: 5 s
	yields := 0
	betweenBatches = func() {
		yields++
		if _, ok := tb.Lookup([]byte("new-0")); !ok {
			t.Error("a live session missed between two batches")
		}
	}
	if n := tb.Sweep(clk.Now()); n != 10 {
		t.Errorf("Sweep removed %d, want the 10 expired", n)
	}
	// 10 candidates in batches of 3: the lock let go after 3, 6 and 9.
	if yields != 3 {
		t.Errorf("lock let go %d times, want 3", yields)
	}
	if tb.Len() != 2 {
		t.Errorf("Len = %d after the sweep, want the 2 live sessions", tb.Len())
	}
}
