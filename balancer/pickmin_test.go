package balancer

import "testing"

// TestPickMin checks the start of the group walk a Lua script asks for
// with http.balancer: groups below the weight are skipped, the walk goes
// on to later groups when one has no live backend, and Tier names each
// backend's group.
func TestPickMin(t *testing.T) {
	f := newFixture(t,
		spec{prio: 1}, // 0: group 0
		spec{prio: 1, group: 10},
		spec{prio: 1, group: 10, dead: true},
		spec{prio: 1, emergency: true}, // 3: group 65535
	)
	b := New(Random, f.bs)
	defer b.Close()
	cases := []struct {
		name string
		min  int
		want []int // the backends a pick may return
	}{
		{"from the start", 0, []int{0}},
		{"from group 1", 1, []int{1}},
		{"from group 10", 10, []int{1}},
		{"between groups", 11, []int{3}},
		{"emergency", 65535, []int{3}},
		{"past every group", 65536, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 50; i++ {
				got := b.PickMin(tc.min)
				ok := got == nil && tc.want == nil
				for _, w := range tc.want {
					ok = ok || got == f.bs[w]
				}
				if !ok {
					t.Fatalf("PickMin(%d) = %v, want one of %v", tc.min, got, tc.want)
				}
			}
		})
	}
	for i, want := range []int{0, 10, 10, 65535} {
		if got := Tier(f.bs[i]); got != want {
			t.Errorf("Tier(backend %d) = %d, want %d", i, got, want)
		}
	}
}
