package cluster

import (
	"testing"
	"time"

	"lbd/adminapi"
)

func enable(l, s, b string, on bool) adminapi.Change {
	return adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: l, Service: s, Backend: b, Enabled: on}
}

func rec(ts uint64, node string, c adminapi.Change) stateRecord {
	return stateRecord{Stamp: Stamp{TS: ts, Tie: node}, Change: c}
}

// permutations calls fn with every order of n items.
func permutations(n int, fn func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k == n {
			fn(append([]int(nil), p...))
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			gen(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	gen(0)
}

// TestOverlayMergeRules: whatever order the changes arrive in, every
// instance ends with the same value per field: the one with the later
// stamp, ties going to the greater node name.
func TestOverlayMergeRules(t *testing.T) {
	be := func(on bool) adminapi.Change { return enable("front", "web", "10.0.0.1-80", on) }
	tests := []struct {
		name string
		recs []stateRecord
		want map[string]stateRecord // field -> winner
	}{
		{name: "later disable wins", recs: []stateRecord{rec(10, "a", be(true)), rec(20, "b", be(false))},
			want: map[string]stateRecord{fieldOf(ptr(be(false))): rec(20, "b", be(false))}},
		{name: "later enable wins", recs: []stateRecord{rec(30, "a", be(true)), rec(20, "b", be(false)), rec(10, "c", be(false))},
			want: map[string]stateRecord{fieldOf(ptr(be(true))): rec(30, "a", be(true))}},
		{name: "same millisecond: greater node", recs: []stateRecord{rec(7, "lb-a", be(true)), rec(7, "lb-b", be(false))},
			want: map[string]stateRecord{fieldOf(ptr(be(false))): rec(7, "lb-b", be(false))}},
		{name: "fields are independent", recs: []stateRecord{
			rec(10, "a", enable("front", "web", "", false)), rec(5, "b", be(false)),
			rec(12, "b", adminapi.Change{Kind: adminapi.ChangeLogLevel, Listener: "front", Level: "combined"}),
			rec(11, "a", adminapi.Change{Kind: adminapi.ChangeLogLevel, Listener: "front", Level: "detailed"}),
		}, want: map[string]stateRecord{
			fieldOf(ptr(enable("front", "web", "", false))): rec(10, "a", enable("front", "web", "", false)),
			fieldOf(ptr(be(false))):                         rec(5, "b", be(false)),
			fieldOf(&adminapi.Change{Kind: adminapi.ChangeLogLevel, Listener: "front"}): rec(12, "b",
				adminapi.Change{Kind: adminapi.ChangeLogLevel, Listener: "front", Level: "combined"}),
		}},
		{name: "names cannot alias", recs: []stateRecord{
			rec(1, "a", enable("ab", "c", "", false)), rec(2, "a", enable("a", "bc", "", true)),
		}, want: map[string]stateRecord{
			fieldOf(ptr(enable("ab", "c", "", false))): rec(1, "a", enable("ab", "c", "", false)),
			fieldOf(ptr(enable("a", "bc", "", true))):  rec(2, "a", enable("a", "bc", "", true)),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			permutations(len(tt.recs), func(order []int) {
				o := newOverlay()
				for _, i := range order {
					o.merge(tt.recs[i], false)
				}
				if len(o.m) != len(tt.want) {
					t.Fatalf("order %v: %d fields, want %d", order, len(o.m), len(tt.want))
				}
				for f, want := range tt.want {
					got := o.m[f]
					if got == nil || got.rec != want {
						t.Fatalf("order %v: field %q = %+v, want %+v", order, f, got, want)
					}
				}
			})
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestOverlayDirtyAndSorted(t *testing.T) {
	o := newOverlay()
	a := rec(30, "a", enable("l", "s", "b1", false))
	b := rec(10, "b", enable("l", "s", "b2", false))
	o.merge(a, true)
	o.merge(b, false)
	if d := o.dirtyRecords(); len(d) != 1 || d[0] != a {
		t.Fatalf("dirty %+v, want only the local change", d)
	}
	newer := rec(40, "b", enable("l", "s", "b1", true))
	o.merge(newer, false)
	o.markSent(a) // a was replaced meanwhile: nothing to clear
	if d := o.dirtyRecords(); len(d) != 0 {
		t.Fatalf("dirty %+v after a peer's later change replaced ours", d)
	}
	if s := o.sorted(); len(s) != 2 || s[0] != b || s[1] != newer {
		t.Fatalf("sorted %+v, want stamp order", s)
	}
	o.markAllDirty()
	if d, _ := o.counts(); d != 2 {
		t.Fatalf("%d dirty after markAllDirty, want 2", d)
	}
}

func TestTombstones(t *testing.T) {
	k := tombKey{"l", "s", "key"}
	tests := []struct {
		name  string
		delTS uint64
		pinTS uint64
		after time.Duration
		want  bool
	}{
		{name: "pin older than the delete", delTS: 10, pinTS: 9, want: true},
		{name: "pin of the same stamp", delTS: 10, pinTS: 10, want: true},
		{name: "pin after the delete", delTS: 10, pinTS: 11},
		{name: "tombstone expired", delTS: 10, pinTS: 9, after: tombstoneTTL + time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTombstones()
			ts.add(k, tt.delTS, t0)
			if got := ts.buries(k, tt.pinTS, t0.Add(tt.after)); got != tt.want {
				t.Fatalf("buries = %v, want %v", got, tt.want)
			}
		})
	}
	bounded := newTombstones()
	bounded.max = 8
	for i := range 100 {
		bounded.add(tombKey{key: string(rune('a' + i))}, uint64(i), t0)
	}
	if len(bounded.m) > bounded.max {
		t.Fatalf("%d tombstones kept, bound %d", len(bounded.m), bounded.max)
	}
}
