package session

import (
	"testing"
	"time"
)

// TestCreatedExpiredCounters: every insert counts as created, re-pinning
// an existing key does not, and every way an idle session leaves the
// table (sweep, lookup) counts as expired.
func TestCreatedExpiredCounters(t *testing.T) {
	tests := []struct {
		name             string
		run              func(tb *Table[int], clock *time.Time)
		created, expired uint64
	}{
		{name: "store twice is one session", run: func(tb *Table[int], _ *time.Time) {
			tb.Store([]byte("a"), 1)
			tb.Store([]byte("a"), 2)
		}, created: 1},
		{name: "sweep drops the idle", run: func(tb *Table[int], clock *time.Time) {
			tb.Store([]byte("a"), 1)
			tb.Store([]byte("b"), 1)
			*clock = clock.Add(time.Minute)
			tb.Sweep(*clock)
		}, created: 2, expired: 2},
		{name: "lookup drops the idle", run: func(tb *Table[int], clock *time.Time) {
			tb.Store([]byte("a"), 1)
			*clock = clock.Add(time.Minute)
			if _, ok := tb.Lookup([]byte("a")); ok {
				t.Error("expired session found")
			}
		}, created: 1, expired: 1},
		{name: "delete is not expiry", run: func(tb *Table[int], _ *time.Time) {
			tb.Store([]byte("a"), 1)
			tb.Delete("a")
		}, created: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Unix(1000, 0)
			tb := NewTable[int](10*time.Second, 100, func() time.Time { return clock })
			tc.run(tb, &clock)
			if tb.Created() != tc.created || tb.Expired() != tc.expired {
				t.Errorf("created %d expired %d, want %d and %d", tb.Created(), tb.Expired(), tc.created, tc.expired)
			}
		})
	}
}
