package session

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// recorder is an Observer that lists what it was told and numbers
// versions 1, 2, 3...
type recorder struct {
	events []string
	ver    uint64
}

func (r *recorder) Stored(key string, v string, _ time.Time, static bool) uint64 {
	r.ver++
	r.events = append(r.events, fmt.Sprintf("stored %s=%s static=%v v%d", key, v, static, r.ver))
	return r.ver
}
func (r *recorder) Deleted(key string)      { r.events = append(r.events, "deleted "+key) }
func (r *recorder) DeletedValue(v string)   { r.events = append(r.events, "deleted value "+v) }
func (r *recorder) Flushed()                { r.events = append(r.events, "flushed") }
func (r *recorder) reset() []string         { e := r.events; r.events = nil; return e }
func tieNever(string) bool                  { return false }
func tieAlways(string) bool                 { return true }
func observed2(tb *Table[string]) *recorder { r := &recorder{}; tb.Observe(r); return r }

func TestObserverIsToldOfPurposefulChangesOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		do   func(tb *Table[string], c *fakeClock)
		want []string
	}{
		{name: "store new", do: func(tb *Table[string], _ *fakeClock) { tb.Store([]byte("n"), "b2") },
			want: []string{"stored n=b2 static=false v2"}},
		{name: "store re-point", do: func(tb *Table[string], _ *fakeClock) { tb.Store([]byte("k"), "b2") },
			want: []string{"stored k=b2 static=false v2"}},
		{name: "store at static", do: func(tb *Table[string], _ *fakeClock) { tb.StoreAt([]byte("s"), "b1", time.Time{}) },
			want: []string{"stored s=b1 static=true v2"}},
		{name: "move", do: func(tb *Table[string], c *fakeClock) { tb.Move("k", "b3", c.Now()) },
			want: []string{"stored k=b3 static=false v2"}},
		{name: "move missing", do: func(tb *Table[string], c *fakeClock) { tb.Move("nope", "b3", c.Now()) }},
		{name: "delete", do: func(tb *Table[string], _ *fakeClock) { tb.Delete("k") }, want: []string{"deleted k"}},
		{name: "delete missing", do: func(tb *Table[string], _ *fakeClock) { tb.Delete("nope") }},
		{name: "delete value", do: func(tb *Table[string], _ *fakeClock) { tb.DeleteValue("b1") }, want: []string{"deleted value b1"}},
		{name: "flush", do: func(tb *Table[string], _ *fakeClock) { tb.Flush() }, want: []string{"flushed"}},
		{name: "hit", do: func(tb *Table[string], _ *fakeClock) { tb.Lookup([]byte("k")) }},
		{name: "expiry by lookup", do: func(tb *Table[string], c *fakeClock) { c.Advance(2 * testTTL); tb.Lookup([]byte("k")) }},
		{name: "sweep", do: func(tb *Table[string], c *fakeClock) { c.Advance(3 * testTTL); tb.Sweep(c.Now()) }},
		{name: "remap (reload)", do: func(tb *Table[string], _ *fakeClock) {
			tb.Remap(func(v string) (string, bool) { return v + "'", true })
		}},
		{name: "apply from a peer", do: func(tb *Table[string], c *fakeClock) { tb.Apply("p", "b9", 7, c.Now(), false, tieNever) }},
		{name: "apply delete from a peer", do: func(tb *Table[string], _ *fakeClock) { tb.ApplyDelete("k", 99) }},
		{name: "drop older from a peer", do: func(tb *Table[string], _ *fakeClock) { tb.DropOlder(99, nil) }},
		{name: "touch from a peer", do: func(tb *Table[string], c *fakeClock) { tb.Touch("k", "b1", c.Now()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, c := newTestTable(0)
			r := observed2(tb)
			tb.Store([]byte("k"), "b1")
			r.reset()
			tt.do(tb, c)
			if got := r.reset(); !slices.Equal(got, tt.want) {
				t.Fatalf("told %q, want %q", got, tt.want)
			}
		})
	}
}

func TestObserverEviction(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable(1)
	r := observed2(tb)
	tb.Store([]byte("a"), "b1")
	tb.Store([]byte("b"), "b1") // evicts a: not a purposeful delete
	if got, want := r.reset(), []string{"stored a=b1 static=false v1", "stored b=b1 static=false v2"}; !slices.Equal(got, want) {
		t.Fatalf("told %q, want %q", got, want)
	}
	if tb.Len() != 1 {
		t.Fatalf("Len = %d, want 1", tb.Len())
	}
}

// TestApplyOrder: whatever the order changes arrive in, the version
// (then the tie rule) decides which pin stays.
func TestApplyOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		local     string // pinned locally first at version 5 ("" none)
		ver       uint64
		v         string
		tie       func(string) bool
		wantApply bool
		want      string
	}{
		{name: "new key", ver: 1, v: "b2", tie: tieNever, wantApply: true, want: "b2"},
		{name: "newer wins", local: "b1", ver: 6, v: "b2", tie: tieNever, wantApply: true, want: "b2"},
		{name: "older loses", local: "b1", ver: 4, v: "b2", tie: tieAlways, want: "b1"},
		{name: "tie kept when tie says so", local: "b1", ver: 5, v: "b2", tie: tieNever, want: "b1"},
		{name: "tie taken when tie says so", local: "b1", ver: 5, v: "b2", tie: tieAlways, wantApply: true, want: "b2"},
		{name: "nil tie keeps", local: "b1", ver: 5, v: "b2", want: "b1"},
		{name: "same version same value", local: "b1", ver: 5, v: "b1", tie: tieAlways, want: "b1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, c := newTestTable(0)
			if tt.local != "" {
				tb.Apply("k", tt.local, 5, c.Now(), false, nil)
			}
			if got := tb.Apply("k", tt.v, tt.ver, c.Now(), false, tt.tie); got != tt.wantApply {
				t.Fatalf("Apply = %v, want %v", got, tt.wantApply)
			}
			if v, ok := tb.Lookup([]byte("k")); !ok || v != tt.want {
				t.Fatalf("Lookup = %q, %v; want %q", v, ok, tt.want)
			}
		})
	}
}

func TestApplyExpiredAndStatic(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	if tb.Apply("old", "b1", 1, c.Now().Add(-2*testTTL), false, nil) {
		t.Fatal("a session idle for longer than the TTL was applied")
	}
	if !tb.Apply("st", "b1", 1, time.Time{}, true, nil) {
		t.Fatal("static session not applied")
	}
	c.Advance(10 * testTTL)
	if _, ok := tb.Lookup([]byte("st")); !ok {
		t.Fatal("static session learned from a peer expired")
	}
}

func TestApplyDeleteAndDropOlder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		do       func(tb *Table[string]) int
		wantKeys []string
		wantN    int
	}{
		{name: "delete at later version", do: func(tb *Table[string]) int { return b2i(tb.ApplyDelete("a", 11)) },
			wantKeys: []string{"b", "c"}, wantN: 1},
		{name: "delete at same version", do: func(tb *Table[string]) int { return b2i(tb.ApplyDelete("a", 10)) },
			wantKeys: []string{"b", "c"}, wantN: 1},
		{name: "delete before the pin loses", do: func(tb *Table[string]) int { return b2i(tb.ApplyDelete("a", 9)) },
			wantKeys: []string{"a", "b", "c"}},
		{name: "flush keeps later pins", do: func(tb *Table[string]) int { return tb.DropOlder(21, nil) },
			wantKeys: []string{"c"}, wantN: 2},
		{name: "flush of one backend", do: func(tb *Table[string]) int {
			return tb.DropOlder(40, func(v string) bool { return v == "b1" })
		}, wantKeys: []string{"b"}, wantN: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, c := newTestTable(0)
			tb.Apply("a", "b1", 10, c.Now(), false, nil)
			tb.Apply("b", "b2", 20, c.Now(), false, nil)
			tb.Apply("c", "b1", 30, c.Now(), false, nil)
			if n := tt.do(tb); n != tt.wantN {
				t.Fatalf("removed %d, want %d", n, tt.wantN)
			}
			if got := keysOf(tb); !slices.Equal(got, tt.wantKeys) {
				t.Fatalf("keys %q, want %q", got, tt.wantKeys)
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTouchKeepsPeerSessionsAlive(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	tb.Apply("k", "b1", 1, c.Now(), false, nil)
	c.Advance(testTTL - time.Second)
	if tb.Touch("k", "b2", c.Now()) {
		t.Fatal("a touch for another backend was taken")
	}
	if !tb.Touch("k", "b1", c.Now()) {
		t.Fatal("touch not taken")
	}
	tb.Touch("k", "b1", c.Now().Add(-time.Hour)) // older: must not move the last use back
	c.Advance(testTTL - time.Second)
	if _, ok := tb.Lookup([]byte("k")); !ok {
		t.Fatal("touched session expired (an older touch moved its last use back?)")
	}
}

func TestCollectUsedReportsLocalHitsOnce(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	r := observed2(tb)
	tb.Store([]byte("mine"), "b1")
	tb.Apply("peer", "b2", 1, c.Now(), false, nil)
	tb.StoreAt([]byte("static"), "b1", time.Time{})
	r.reset()
	if got := tb.CollectUsed(nil); len(got) != 0 {
		t.Fatalf("nothing was used since it was published, got %v", got)
	}
	c.Advance(time.Second)
	tb.Lookup([]byte("mine"))
	tb.Lookup([]byte("peer"))
	tb.Lookup([]byte("static"))
	got := tb.CollectUsed(nil)
	keys := []string{}
	for _, e := range got {
		keys = append(keys, e.Key)
		if !e.LastUsed.Equal(c.Now()) {
			t.Errorf("%s: last use %v, want %v", e.Key, e.LastUsed, c.Now())
		}
	}
	slices.Sort(keys)
	if want := []string{"mine", "peer"}; !slices.Equal(keys, want) {
		t.Fatalf("collected %q, want %q", keys, want)
	}
	if again := tb.CollectUsed(nil); len(again) != 0 {
		t.Fatalf("collected twice: %v", again)
	}
	// A touch from a peer is known to the cluster: not collected again.
	c.Advance(time.Second)
	tb.Touch("peer", "b2", c.Now())
	if again := tb.CollectUsed(nil); len(again) != 0 {
		t.Fatalf("a peer's touch was collected: %v", again)
	}
}

func TestRangeVersions(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	observed2(tb)
	tb.Store([]byte("a"), "b1")
	tb.Apply("b", "b2", 42, c.Now(), false, nil)
	got := map[string]uint64{}
	tb.Range(func(e Entry[string]) bool { got[e.Key] = e.Version; return true })
	if len(got) != 2 || got["a"] != 1 || got["b"] != 42 {
		t.Fatalf("versions %v, want a:1 b:42", got)
	}
	n := 0
	tb.Range(func(Entry[string]) bool { n++; return false })
	if n != 1 {
		t.Fatalf("Range went on after false: %d calls", n)
	}
}

// TestObservedHitAllocs: an observed table's hit stays free.
func TestObservedHitAllocs(t *testing.T) {
	tb, _ := newTestTable(0)
	observed2(tb)
	key := []byte("k")
	tb.Store(key, "b1")
	if n := testing.AllocsPerRun(1000, func() { tb.Lookup(key) }); n != 0 {
		t.Fatalf("observed hit: %v allocs, want 0", n)
	}
}
