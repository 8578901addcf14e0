package cluster

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"lbd/adminapi"
	"lbd/config"
)

// Every wait below is a poll with a deadline: a pass is as fast as the
// replication, a failure names what did not happen.
const within = 2 * time.Second

func TestSessionsReplicate(t *testing.T) {
	r := startRedis(t)
	a, b := join(t, r, "a", time.Minute), join(t, r, "b", time.Minute)
	tests := []struct {
		name  string
		do    func()
		check func() bool
	}{
		{name: "new pin", do: func() { a.web.Sessions.Store([]byte("k1"), a.backend("10.0.0.2:80")) },
			check: func() bool { return b.pinnedTo("k1") == "10.0.0.2:80" }},
		{name: "re-pin on the other instance", do: func() { b.web.Sessions.Store([]byte("k1"), b.backend("10.0.0.3:80")) },
			check: func() bool { return a.pinnedTo("k1") == "10.0.0.3:80" }},
		{name: "control API add (static)", do: func() { a.web.Sessions.StoreAt([]byte("k2"), a.backend("10.0.0.1:80"), time.Time{}) },
			check: func() bool { _, last, ok := b.web.Sessions.Get("k2"); return ok && last.IsZero() }},
		{name: "control API move", do: func() { b.web.Sessions.Move("k2", b.backend("10.0.0.2:80"), time.Now()) },
			check: func() bool { return a.pinnedTo("k2") == "10.0.0.2:80" }},
		{name: "control API delete", do: func() { a.web.Sessions.Delete("k2") },
			check: func() bool { return b.pinnedTo("k2") == "" }},
		{name: "flush of one backend", do: func() {
			a.web.Sessions.Store([]byte("k3"), a.backend("10.0.0.1:80"))
			a.web.Sessions.Store([]byte("k4"), a.backend("10.0.0.2:80"))
			waitFor(t, within, "k4 on b", func() bool { return b.pinnedTo("k4") != "" })
			a.web.Sessions.DeleteValue(a.backend("10.0.0.1:80"))
		}, check: func() bool { return b.pinnedTo("k3") == "" && b.pinnedTo("k4") == "10.0.0.2:80" }},
		{name: "flush", do: func() { b.web.Sessions.Flush() },
			check: func() bool { return a.web.Sessions.Len() == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			waitFor(t, within, tt.name+" replicated", tt.check)
		})
	}
	waitFor(t, within, "the flush reached Redis", func() bool { return len(redisKeys(t, a.n, "t:s:*")) == 0 })
	st := b.n.Status()
	if st.SessionsApplied == 0 || st.LagCount == 0 || len(st.Nodes) != 2 || !st.Connected {
		t.Fatalf("status %+v: want applied changes, lag samples, 2 nodes, connected", st)
	}
}

// TestConcurrentPinsConverge: the same key pinned to different backends
// on two instances at once ends pinned to one backend on both.
func TestConcurrentPinsConverge(t *testing.T) {
	r := startRedis(t)
	a, b := join(t, r, "a", time.Minute), join(t, r, "b", time.Minute)
	for i := range 50 {
		key := []byte{'c', byte('0' + i/10), byte('0' + i%10)}
		a.web.Sessions.Store(key, a.backend(testBackends[i%3]))
		b.web.Sessions.Store(key, b.backend(testBackends[(i+1)%3]))
	}
	waitFor(t, within, "both instances agree on every key", func() bool {
		for i := range 50 {
			key := string([]byte{'c', byte('0' + i/10), byte('0' + i%10)})
			if pa := a.pinnedTo(key); pa == "" || pa != b.pinnedTo(key) {
				return false
			}
		}
		return true
	})
}

func TestStateReplicates(t *testing.T) {
	r := startRedis(t)
	a, b := join(t, r, "a", time.Minute), join(t, r, "b", time.Minute)
	off := adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web", Backend: "10.0.0.1-80"}
	a.n.Changed(off)
	waitFor(t, within, "b applied a's change", func() bool {
		return slices.Contains(b.eng.appliedChanges(), off)
	})
	if len(a.eng.appliedChanges()) != 0 {
		t.Fatalf("a's own change came back to it: %v", a.eng.appliedChanges())
	}
	// Concurrent contradicting changes: both end with the same winner.
	on := off
	on.Enabled = true
	a.n.Changed(off)
	b.n.Changed(on)
	winner := func(m *member) stateRecord {
		m.n.overlay.mu.Lock()
		defer m.n.overlay.mu.Unlock()
		return m.n.overlay.m[fieldOf(&off)].rec
	}
	waitFor(t, within, "a and b agree", func() bool { return winner(a) == winner(b) })
}

// TestLateJoinerStartsFromTheState: an instance that starts after the
// changes has them applied when Start returns.
func TestLateJoinerStartsFromTheState(t *testing.T) {
	r := startRedis(t)
	a := join(t, r, "a", time.Minute)
	off := adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web", Backend: "10.0.0.2-80"}
	a.n.Changed(off)
	a.web.Sessions.Store([]byte("early"), a.backend("10.0.0.3:80"))
	waitFor(t, within, "a's changes in Redis", func() bool {
		return len(redisKeys(t, a.n, "t:s:*")) == 1 && a.n.Status().StatePending == 0
	})
	c := join(t, r, "c", time.Minute)
	if c.pinnedTo("early") != "10.0.0.3:80" || !slices.Contains(c.eng.appliedChanges(), off) {
		t.Fatalf("late joiner: session %q, changes %v", c.pinnedTo("early"), c.eng.appliedChanges())
	}
}

// TestRedisRestartConverges: Redis dies and comes back empty; changes
// made meanwhile on either side reach every instance, and Redis gets the
// state back for later joiners.
func TestRedisRestartConverges(t *testing.T) {
	r := startRedis(t)
	a, b := join(t, r, "a", time.Minute), join(t, r, "b", time.Minute)
	a.web.Sessions.Store([]byte("before"), a.backend("10.0.0.1:80"))
	waitFor(t, within, "before on b", func() bool { return b.pinnedTo("before") != "" })
	r.stop()
	waitFor(t, 3*within, "both see Redis down", func() bool { return !a.n.connected() && !b.n.connected() })
	off := adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "front", Service: "web", Backend: "10.0.0.3-80"}
	a.n.Changed(off)
	a.web.Sessions.Store([]byte("during"), a.backend("10.0.0.2:80"))
	if st := a.n.Status(); st.Connected || st.LastError == "" || st.StatePending != 1 {
		t.Fatalf("status while down: %+v", st)
	}
	r.start()
	waitFor(t, 3*within, "b got what a did while Redis was down", func() bool {
		return b.pinnedTo("during") == "10.0.0.2:80" && slices.Contains(b.eng.appliedChanges(), off)
	})
	c := join(t, r, "c", time.Minute)
	for _, key := range []string{"before", "during"} {
		if c.pinnedTo(key) == "" {
			t.Errorf("joiner after the restart lacks session %q", key)
		}
	}
	if !slices.Contains(c.eng.appliedChanges(), off) {
		t.Errorf("joiner after the restart lacks the change")
	}
}

// TestKeptUntilReload: a change for an object this instance lacks is
// kept and applied when a reload brings the object.
func TestKeptUntilReload(t *testing.T) {
	r := startRedis(t)
	a, b := join(t, r, "a", time.Minute), join(t, r, "b", time.Minute)
	c := adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: "back", Service: "api"}
	a.n.Changed(c)
	waitFor(t, within, "b keeps the change", func() bool { return b.n.Status().StateKept == 1 })
	b.eng.mu.Lock()
	b.eng.known["back"] = true
	b.eng.mu.Unlock()
	b.n.Changed(adminapi.Change{Kind: adminapi.ChangeReloaded})
	waitFor(t, within, "b applied it after the reload", func() bool {
		return slices.Contains(b.eng.appliedChanges(), c) && b.n.Status().StateKept == 0
	})
}

// TestTouchesKeepPeerSessionsAlive: a session used only on b stays
// alive on a past its TTL, and expires on both once unused.
func TestTouchesKeepPeerSessionsAlive(t *testing.T) {
	r := startRedis(t)
	const ttl = 2 * time.Second // touches every 500 ms: a margin of 1.5 s
	a, b := join(t, r, "a", ttl), join(t, r, "b", ttl)
	a.web.Sessions.Store([]byte("busy"), a.backend("10.0.0.1:80"))
	waitFor(t, within, "busy on b", func() bool { return b.pinnedTo("busy") != "" })
	end := time.Now().Add(2 * ttl)
	for time.Now().Before(end) {
		if _, ok := b.web.Sessions.Lookup([]byte("busy")); !ok {
			t.Fatal("b lost the session it was using")
		}
		if a.pinnedTo("busy") == "" {
			t.Fatal("a expired a session b kept using")
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, 2*ttl, "the idle session expired on a", func() bool { return a.pinnedTo("busy") == "" })
}

// TestLuaOrderIsGoOrder: the script that keeps Redis's value orders
// stamps exactly as Stamp.After does.
func TestLuaOrderIsGoOrder(t *testing.T) {
	r := startRedis(t)
	n, err := New(&config.Cluster{Node: "x", Redis: r.sock, KeyPrefix: "t"}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer n.rdb.Close()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	ties := []string{"", "a", "b", "ab", "10.0.0.1-80", "10.0.0.10-80", "\xff", "Z"}
	for i := range 300 {
		x := Stamp{TS: uint64(rnd.IntN(4)), Tie: ties[rnd.IntN(len(ties))]}
		y := Stamp{TS: uint64(rnd.IntN(4)), Tie: ties[rnd.IntN(len(ties))]}
		key := "t:order"
		n.rdb.Del(ctx, key)
		vx := storedValue(x.orderKey(), []byte("x"))
		vy := storedValue(y.orderKey(), []byte("y"))
		if err := setScript.Run(ctx, n.rdb, []string{key}, vx, 0).Err(); err != nil {
			t.Fatal(err)
		}
		stored, err := setScript.Run(ctx, n.rdb, []string{key}, vy, 0).Int()
		if err != nil {
			t.Fatal(err)
		}
		if (stored == 1) != y.After(x) {
			t.Fatalf("case %d: Redis stored %+v over %+v: %v, Go says After = %v", i, y, x, stored == 1, y.After(x))
		}
	}
}
