package session

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"
)

const testTTL = 10 * time.Second

func newTestTable(max int) (*Table[string], *fakeClock) {
	c := newFakeClock()
	return NewTable[string](testTTL, max, c.Now), c
}

func keysOf(tb *Table[string]) []string {
	var keys []string
	tb.Each(func(k, _ string, _ time.Time) bool {
		keys = append(keys, k)
		return true
	})
	slices.Sort(keys)
	return keys
}

func TestTTLBoundary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		idle    time.Duration
		wantHit bool
	}{
		{name: "fresh", idle: 0, wantHit: true},
		{name: "just before ttl", idle: testTTL - time.Nanosecond, wantHit: true},
		{name: "exactly ttl is alive", idle: testTTL, wantHit: true},
		{name: "just past ttl", idle: testTTL + time.Nanosecond, wantHit: false},
		{name: "long past ttl", idle: time.Hour, wantHit: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, c := newTestTable(0)
			tb.Store([]byte("k"), "b1")
			c.Advance(tt.idle)
			v, ok := tb.Lookup([]byte("k"))
			if ok != tt.wantHit || (ok && v != "b1") {
				t.Fatalf("Lookup after %v = %q, %v; want hit %v", tt.idle, v, ok, tt.wantHit)
			}
			// An expired session is removed by the lookup that finds it.
			if wantLen := map[bool]int{true: 1, false: 0}[tt.wantHit]; tb.Len() != wantLen {
				t.Fatalf("Len = %d, want %d", tb.Len(), wantLen)
			}
		})
	}
}

func TestLookupRefreshesLastUse(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	tb.Store([]byte("k"), "b1")
	for i := range 5 {
		c.Advance(testTTL) // never idle longer than the TTL
		if _, ok := tb.Lookup([]byte("k")); !ok {
			t.Fatalf("lookup %d missed a session used every TTL", i)
		}
	}
	c.Advance(testTTL + 1)
	if _, ok := tb.Lookup([]byte("k")); ok {
		t.Fatal("lookup hit after TTL of idleness")
	}
}

func TestGetDoesNotRefresh(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	start := c.Now()
	tb.Store([]byte("k"), "b1")
	c.Advance(testTTL - 1)
	v, used, ok := tb.Get("k")
	if !ok || v != "b1" || !used.Equal(start) {
		t.Fatalf("Get = %q, %v, %v; want b1, %v, true", v, used, ok, start)
	}
	c.Advance(2)
	if _, _, ok := tb.Get("k"); ok {
		t.Fatal("Get found an expired session")
	}
	if _, ok := tb.Lookup([]byte("k")); ok {
		t.Fatal("Get refreshed the session")
	}
}

func TestStoreRepoints(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	tb.Store([]byte("k"), "b1")
	c.Advance(testTTL)
	tb.Store([]byte("k"), "b2")
	c.Advance(testTTL) // alive only if the re-point refreshed the last use
	if v, ok := tb.Lookup([]byte("k")); !ok || v != "b2" || tb.Len() != 1 {
		t.Fatalf("Lookup = %q, %v with Len %d; want b2, true, 1", v, ok, tb.Len())
	}
}

func TestStoreCopiesKey(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable(0)
	buf := []byte("key1")
	tb.Store(buf, "b1")
	copy(buf, "XXXX") // the request buffer is reused for the next request
	if _, ok := tb.Lookup([]byte("key1")); !ok {
		t.Fatal("session lost when the key's buffer was overwritten")
	}
	if _, ok := tb.Lookup([]byte("XXXX")); ok {
		t.Fatal("table aliased the caller's buffer")
	}
}

func TestStoreAtAndStatic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		lastUsed func(now time.Time) time.Time
		advance  time.Duration
		wantHit  bool
		wantZero bool // Get reports last use 0: static
	}{
		{name: "static never expires", lastUsed: func(time.Time) time.Time { return time.Time{} }, advance: 1000 * time.Hour, wantHit: true, wantZero: true},
		{name: "past last use keeps its age", lastUsed: func(n time.Time) time.Time { return n.Add(-testTTL) }, advance: 1, wantHit: false},
		{name: "past last use still alive", lastUsed: func(n time.Time) time.Time { return n.Add(-testTTL / 2) }, advance: testTTL / 2, wantHit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, c := newTestTable(0)
			tb.StoreAt([]byte("k"), "b1", tt.lastUsed(c.Now()))
			c.Advance(tt.advance)
			tb.Sweep(c.Now())
			_, used, ok := tb.Get("k")
			if ok != tt.wantHit || (ok && used.IsZero() != tt.wantZero) {
				t.Fatalf("Get = %v, %v; want hit %v, static %v", used, ok, tt.wantHit, tt.wantZero)
			}
			if _, ok := tb.Lookup([]byte("k")); ok != tt.wantHit {
				t.Fatalf("Lookup hit = %v, want %v", ok, tt.wantHit)
			}
		})
	}
}

func TestMove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		key        string
		lastUsed   bool // false: static
		wantOK     bool
		wantStatic bool
	}{
		{name: "existing", key: "k", lastUsed: true, wantOK: true},
		{name: "existing to static", key: "k", lastUsed: false, wantOK: true, wantStatic: true},
		{name: "missing", key: "nope", lastUsed: true, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, c := newTestTable(0)
			tb.Store([]byte("k"), "b1")
			at := time.Time{}
			if tt.lastUsed {
				at = c.Now().Add(-time.Second)
			}
			if ok := tb.Move(tt.key, "b2", at); ok != tt.wantOK {
				t.Fatalf("Move = %v, want %v", ok, tt.wantOK)
			}
			v, used, _ := tb.Get("k")
			wantV := map[bool]string{true: "b2", false: "b1"}[tt.wantOK]
			if v != wantV || used.IsZero() != tt.wantStatic {
				t.Fatalf("after Move: %q, %v; want %q, static %v", v, used, wantV, tt.wantStatic)
			}
			if tt.wantOK && tt.lastUsed && !used.Equal(at) {
				t.Fatalf("last use = %v, want %v", used, at)
			}
			if _, _, ok := tb.Get(tt.key); !ok && tt.wantOK {
				t.Fatal("moved session missing")
			}
		})
	}
}

func TestMoveExpired(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	tb.Store([]byte("k"), "b1")
	c.Advance(testTTL + 1)
	if tb.Move("k", "b2", c.Now()) {
		t.Fatal("Move revived an expired session")
	}
}

// op is one step of an eviction scenario: store or look up key, after
// advancing the clock by one second.
type op struct {
	store bool
	key   string
}

func TestEvictionOrder(t *testing.T) {
	t.Parallel()
	s := func(k string) op { return op{store: true, key: k} }
	l := func(k string) op { return op{key: k} }
	tests := []struct {
		name string
		max  int
		ops  []op
		want []string
	}{
		{name: "oldest insert goes first", max: 3, ops: []op{s("a"), s("b"), s("c"), s("d")}, want: []string{"b", "c", "d"}},
		{name: "used entry survives", max: 3, ops: []op{s("a"), s("b"), s("c"), l("a"), s("d")}, want: []string{"a", "c", "d"}},
		{name: "least recently used goes", max: 3, ops: []op{s("a"), s("b"), s("c"), l("a"), l("b"), s("d")}, want: []string{"a", "b", "d"}},
		{name: "repeated evictions follow use order", max: 3, ops: []op{s("a"), s("b"), s("c"), l("a"), s("d"), s("e")}, want: []string{"a", "d", "e"}},
		{name: "second chance then evicted", max: 3, ops: []op{s("a"), s("b"), s("c"), l("a"), s("d"), s("e"), s("f")}, want: []string{"d", "e", "f"}},
		{name: "re-point refreshes", max: 3, ops: []op{s("a"), s("b"), s("c"), s("a"), s("d")}, want: []string{"a", "c", "d"}},
		{name: "new entry is never the victim", max: 1, ops: []op{s("a"), l("a"), s("b")}, want: []string{"b"}},
		{name: "below cap nothing evicted", max: 5, ops: []op{s("a"), s("b"), s("c")}, want: []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, c := newTestTable(tt.max)
			for _, o := range tt.ops {
				c.Advance(time.Second)
				if o.store {
					tb.Store([]byte(o.key), "v")
				} else if _, ok := tb.Lookup([]byte(o.key)); !ok {
					t.Fatalf("Lookup(%q) missed", o.key)
				}
			}
			if got := keysOf(tb); !slices.Equal(got, tt.want) {
				t.Fatalf("sessions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEvictionPrefersExpired(t *testing.T) {
	t.Parallel()
	// "old" was used after it was listed, so second chance alone would
	// re-list it and evict "new"; but it has been idle past the TTL.
	tb, c := newTestTable(2)
	tb.Store([]byte("old"), "v")
	c.Advance(time.Second)
	tb.Lookup([]byte("old"))
	c.Advance(time.Second)
	tb.Store([]byte("new"), "v")
	c.Advance(testTTL - time.Second + 1) // old idle TTL+1, new idle TTL-1s+1
	tb.Store([]byte("x"), "v")
	if got := keysOf(tb); !slices.Equal(got, []string{"new", "x"}) {
		t.Fatalf("sessions = %v, want [new x]", got)
	}
}

func TestCapBoundsManyShards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		max     int
		inserts int
	}{
		{name: "one shard", max: 1000, inserts: 5000},
		{name: "several shards, uneven split", max: 10007, inserts: 60000},
		{name: "many shards", max: 200000, inserts: 400000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, _ := newTestTable(tt.max)
			key := make([]byte, 0, 16)
			for i := range tt.inserts {
				key = fmt.Appendf(key[:0], "k%d", i)
				tb.Store(key, "v")
			}
			if tb.Len() != tt.max {
				t.Fatalf("Len = %d after %d inserts, want the cap %d", tb.Len(), tt.inserts, tt.max)
			}
			// The newest session survives whatever its shard.
			if _, ok := tb.Lookup(key); !ok {
				t.Fatalf("newest session %q evicted", key)
			}
		})
	}
}

// An entry must stay within Go's 80-byte size class: one more field
// would put a million sessions 16 MB higher (issue 36 bounds a session
// at 150 bytes beyond its key; BenchmarkMemory1M measures the whole).
func TestEntrySizeClass(t *testing.T) {
	if n := unsafe.Sizeof(entry[*fakeBackend]{}); n > 80 {
		t.Errorf("entry is %d bytes, above the 80-byte size class", n)
	}
}
