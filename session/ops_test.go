package session

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestDelete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  string
		want bool
		left []string
	}{
		{name: "existing", key: "a", want: true, left: []string{"b"}},
		{name: "missing", key: "c", want: false, left: []string{"a", "b"}},
		{name: "prefix of a key", key: "", want: false, left: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, _ := newTestTable(0) // many shards: Delete must hash like Store
			tb.Store([]byte("a"), "b1")
			tb.Store([]byte("b"), "b1")
			if got := tb.Delete(tt.key); got != tt.want {
				t.Fatalf("Delete(%q) = %v, want %v", tt.key, got, tt.want)
			}
			if got := keysOf(tb); !slices.Equal(got, tt.left) {
				t.Fatalf("sessions = %v, want %v", got, tt.left)
			}
		})
	}
}

func TestDeleteValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value string
		want  int
		left  []string
	}{
		{name: "removed backend", value: "b1", want: 2, left: []string{"k2"}},
		{name: "other backend", value: "b2", want: 1, left: []string{"k1", "k3"}},
		{name: "no sessions", value: "b9", want: 0, left: []string{"k1", "k2", "k3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, _ := newTestTable(0)
			tb.Store([]byte("k1"), "b1")
			tb.Store([]byte("k2"), "b2")
			tb.Store([]byte("k3"), "b1")
			if got := tb.DeleteValue(tt.value); got != tt.want {
				t.Fatalf("DeleteValue = %d, want %d", got, tt.want)
			}
			if got := keysOf(tb); !slices.Equal(got, tt.left) {
				t.Fatalf("sessions = %v, want %v", got, tt.left)
			}
		})
	}
}

func TestRemapOnReload(t *testing.T) {
	t.Parallel()
	// A reload builds new backend objects: b1 is kept (as b1'), b2 is gone.
	tb, c := newTestTable(0)
	tb.Store([]byte("k1"), "b1")
	tb.Store([]byte("k2"), "b2")
	tb.StoreAt([]byte("k3"), "b1", time.Time{})
	c.Advance(time.Second)
	dropped := tb.Remap(func(v string) (string, bool) {
		if v == "b2" {
			return "", false
		}
		return v + "'", true
	})
	if dropped != 1 {
		t.Fatalf("Remap dropped %d, want 1", dropped)
	}
	for _, k := range []string{"k1", "k3"} {
		if v, ok := tb.Lookup([]byte(k)); !ok || v != "b1'" {
			t.Fatalf("Lookup(%s) = %q, %v; want b1', true", k, v, ok)
		}
	}
	if _, used, _ := tb.Get("k3"); !used.IsZero() {
		t.Fatal("Remap lost the static flag")
	}
	if _, ok := tb.Lookup([]byte("k2")); ok {
		t.Fatal("session of the removed backend survived")
	}
}

func TestFlush(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable(0)
	for _, k := range []string{"a", "b", "c"} {
		tb.Store([]byte(k), "b1")
	}
	tb.Flush()
	if tb.Len() != 0 {
		t.Fatalf("Len = %d after Flush", tb.Len())
	}
	if _, ok := tb.Lookup([]byte("a")); ok {
		t.Fatal("Lookup hit after Flush")
	}
	tb.Store([]byte("d"), "b2") // the table stays usable
	if got := keysOf(tb); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("sessions = %v, want [d]", got)
	}
}

func TestEach(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	start := c.Now()
	tb.Store([]byte("dead"), "b1")
	c.Advance(time.Second)
	tb.Store([]byte("live"), "b2")
	tb.StoreAt([]byte("static"), "b3", time.Time{})
	c.Advance(testTTL) // "dead" idle TTL+1s, "live" exactly TTL
	type row struct {
		key, v string
		used   time.Time
	}
	var got []row
	tb.Each(func(k, v string, used time.Time) bool {
		got = append(got, row{k, v, used})
		return true
	})
	slices.SortFunc(got, func(a, b row) int {
		if a.key < b.key {
			return -1
		}
		return 1
	})
	want := []row{{"live", "b2", start.Add(time.Second)}, {"static", "b3", time.Time{}}}
	if len(got) != len(want) {
		t.Fatalf("Each = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].key != want[i].key || got[i].v != want[i].v || !got[i].used.Equal(want[i].used) {
			t.Fatalf("Each = %v, want %v", got, want)
		}
	}
	calls := 0
	tb.Each(func(string, string, time.Time) bool { calls++; return false })
	if calls != 1 {
		t.Fatalf("Each called fn %d times after it returned false, want 1", calls)
	}
}

func TestEachMayCallTable(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable(0)
	tb.Store([]byte("a"), "b1")
	tb.Store([]byte("b"), "b1")
	// fn runs without the shard lock, so it can modify the table.
	tb.Each(func(k, _ string, _ time.Time) bool { return tb.Delete(k) })
	if tb.Len() != 0 {
		t.Fatalf("Len = %d, want 0", tb.Len())
	}
}

func TestSweep(t *testing.T) {
	t.Parallel()
	tb, c := newTestTable(0)
	tb.Store([]byte("a"), "v") // t0
	tb.StoreAt([]byte("s"), "v", time.Time{})
	c.Advance(2 * time.Second)
	tb.Store([]byte("b"), "v") // t0+2s
	c.Advance(5 * time.Second)
	tb.Lookup([]byte("a")) // t0+7s
	tb.Store([]byte("c"), "v")
	tests := []struct {
		name    string
		at      time.Duration // since t0
		removed int
		held    []string // still in memory
		dead    []string // held but expired: never returned
	}{
		{name: "nothing expired yet", at: testTTL, removed: 0, held: []string{"a", "b", "c", "s"}},
		{name: "b expires, used a is re-listed", at: testTTL + 2*time.Second + 1, removed: 1, held: []string{"a", "c", "s"}},
		// a was re-listed by the previous sweep, so its memory waits for
		// the next round; Lookup and Get already treat it as gone.
		{name: "c expires, a waits a round", at: 7*time.Second + testTTL + 1, removed: 1, held: []string{"a", "s"}, dead: []string{"a"}},
		{name: "a removed one TTL after its re-listing", at: 2*testTTL + 2*time.Second + 2, removed: 1, held: []string{"s"}},
		{name: "static never expires", at: 1000 * time.Hour, removed: 0, held: []string{"s"}},
	}
	t0 := c.Now().Add(-7 * time.Second)
	for _, tt := range tests { // sequential: each step sweeps the table left by the previous
		c.Advance(t0.Add(tt.at).Sub(c.Now()))
		if got := tb.Sweep(c.Now()); got != tt.removed {
			t.Fatalf("%s: Sweep removed %d, want %d", tt.name, got, tt.removed)
		}
		var held []string
		for i := range tb.shards {
			for k := range tb.shards[i].m {
				held = append(held, k)
			}
		}
		slices.Sort(held)
		if !slices.Equal(held, tt.held) {
			t.Fatalf("%s: sessions held = %v, want %v", tt.name, held, tt.held)
		}
		for _, k := range tt.dead {
			if _, _, ok := tb.Get(k); ok {
				t.Fatalf("%s: Get(%q) returned an expired session", tt.name, k)
			}
		}
	}
}

func TestSweepNoTTL(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	tb := NewTable[string](0, 0, c.Now)
	tb.Store([]byte("k"), "v")
	c.Advance(1000 * time.Hour)
	if n := tb.Sweep(c.Now()); n != 0 {
		t.Fatalf("Sweep removed %d without a TTL", n)
	}
	if _, ok := tb.Lookup([]byte("k")); !ok {
		t.Fatal("session expired without a TTL")
	}
}

// fakeBackend stands in for *backend.Backend.
type fakeBackend struct {
	name    string
	alive   atomic.Bool
	enabled atomic.Bool
}

func newFakeBackend(name string) *fakeBackend {
	b := &fakeBackend{name: name}
	b.alive.Store(true)
	b.enabled.Store(true)
	return b
}

func nameOf(b *fakeBackend, ok bool) string {
	if !ok || b == nil {
		return ""
	}
	return b.name
}

func usable(b *fakeBackend) bool { return b.alive.Load() && b.enabled.Load() }

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		key       []byte
		stored    bool               // a session k -> b1 exists
		breakB1   func(*fakeBackend) // what happens to b1
		pickOK    bool               // the balancer has a backend (b2)
		want      string             // "" = no backend
		wantPicks int
		wantPin   string // session k afterwards ("" = none)
	}{
		{name: "live pinned backend is used", key: []byte("k"), stored: true, pickOK: true, want: "b1", wantPicks: 0, wantPin: "b1"},
		{name: "dead pinned backend is re-pinned", key: []byte("k"), stored: true, breakB1: func(b *fakeBackend) { b.alive.Store(false) }, pickOK: true, want: "b2", wantPicks: 1, wantPin: "b2"},
		{name: "disabled pinned backend is re-pinned", key: []byte("k"), stored: true, breakB1: func(b *fakeBackend) { b.enabled.Store(false) }, pickOK: true, want: "b2", wantPicks: 1, wantPin: "b2"},
		{name: "new key is pinned", key: []byte("k"), pickOK: true, want: "b2", wantPicks: 1, wantPin: "b2"},
		{name: "no key creates no session", key: nil, pickOK: true, want: "b2", wantPicks: 1},
		{name: "no backend left keeps old pin", key: []byte("k"), stored: true, breakB1: func(b *fakeBackend) { b.alive.Store(false) }, want: "", wantPicks: 1, wantPin: "b1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			tb := NewTable[*fakeBackend](testTTL, 0, c.Now)
			b1, b2 := newFakeBackend("b1"), newFakeBackend("b2")
			if tt.stored {
				tb.Store([]byte("k"), b1)
			}
			if tt.breakB1 != nil {
				tt.breakB1(b1)
			}
			picks := 0
			pick := func() (*fakeBackend, bool) { picks++; return b2, tt.pickOK }
			got, ok := tb.Resolve(tt.key, usable, pick)
			if name := nameOf(got, ok); name != tt.want || picks != tt.wantPicks {
				t.Fatalf("Resolve = %q after %d picks, want %q after %d", name, picks, tt.want, tt.wantPicks)
			}
			pin, ok := tb.Lookup([]byte("k"))
			if name := nameOf(pin, ok); name != tt.wantPin {
				t.Fatalf("session k -> %q, want %q", name, tt.wantPin)
			}
		})
	}
}

func TestRepinThenStick(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	tb := NewTable[*fakeBackend](testTTL, 0, c.Now)
	b1, b2 := newFakeBackend("b1"), newFakeBackend("b2")
	next := b1
	pick := func() (*fakeBackend, bool) { return next, true }
	if got, _ := tb.Resolve([]byte("k"), usable, pick); got != b1 {
		t.Fatalf("first request went to %s, want b1", got.name)
	}
	b1.alive.Store(false)
	next = b2
	if got, _ := tb.Resolve([]byte("k"), usable, pick); got != b2 {
		t.Fatalf("request after b1 died went to %s, want b2", got.name)
	}
	// b1 comes back: the session now belongs to b2 and stays there.
	b1.alive.Store(true)
	next = b1
	if got, _ := tb.Resolve([]byte("k"), usable, pick); got != b2 {
		t.Fatalf("request after b1 revived went to %s, want b2 (re-pinned)", got.name)
	}
}

// TestEachOrder checks the listing order, Pound's: least recently used
// first, ties in order of creation, whatever shards the keys hash to.
func TestEachOrder(t *testing.T) {
	t.Parallel()
	many := make([]string, 40) // enough keys to land in several shards
	for i := range many {
		many[i] = fmt.Sprintf("k%02d", i)
	}
	cases := []struct {
		name string
		run  func(tb *Table[string], c *fakeClock)
		want []string
	}{
		{name: "same instant: creation order", want: many, run: func(tb *Table[string], _ *fakeClock) {
			for _, k := range many {
				tb.Store([]byte(k), "b")
			}
		}},
		{name: "a hit moves a session last", want: []string{"b", "c", "a"}, run: func(tb *Table[string], c *fakeClock) {
			for _, k := range []string{"a", "b", "c"} {
				tb.Store([]byte(k), "b")
				c.Advance(time.Second)
			}
			tb.Lookup([]byte("a"))
		}},
		{name: "re-pinning is a use", want: []string{"b", "a"}, run: func(tb *Table[string], c *fakeClock) {
			tb.Store([]byte("a"), "b1")
			tb.Store([]byte("b"), "b1")
			c.Advance(time.Second)
			tb.Store([]byte("a"), "b2")
		}},
		{name: "an added session goes last", want: []string{"x", "z", "y"}, run: func(tb *Table[string], c *fakeClock) {
			tb.Store([]byte("x"), "b")
			tb.Store([]byte("y"), "b")
			tb.Store([]byte("z"), "b")
			tb.Delete("y")
			tb.StoreAt([]byte("y"), "b", c.Now())
		}},
		{name: "static sessions first", want: []string{"s", "a"}, run: func(tb *Table[string], c *fakeClock) {
			tb.Store([]byte("a"), "b")
			c.Advance(time.Second)
			tb.StoreAt([]byte("s"), "b", time.Time{})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb, c := newTestTable(0)
			tc.run(tb, c)
			var got []string
			tb.Each(func(k, _ string, _ time.Time) bool {
				got = append(got, k)
				return true
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}
