package balancer

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"lbd/backend"
)

// maxRing bounds a round-robin ring (64 KiB of uint32). Real weights are far
// below it (Pound's default Priority 5 × 256 backends = 1280 slots); larger
// weight sums are scaled down proportionally, which keeps the shares but not
// the exact interleaving.
const maxRing = 1 << 14

// maxWeight caps a weight (Pound 4 allows Priority up to 65535).
const maxWeight = 1 << 20

// snapshot is the immutable eligible set published to Pick.
type snapshot struct {
	// groups are Pound's balancer groups in the order they are tried,
	// one per entry of Balancer.tiers: regular backends, groups made by
	// SRV records, Emergency backends last.
	groups   []group
	priority int // zproxy service priority; 0 in PoundMode
}

// group holds the eligible backends of one tier, in config order, plus the
// tables the algorithm needs: a ring for iwrr/round robin, an alias table for
// weighted random.
type group struct {
	bs    []*backend.Backend
	w     []int64
	ring  []uint32 // indexes into bs, one cycle of the sequence
	thr   []uint64 // alias method: keep index i if the coin < thr[i]
	alias []uint32 // ... else take alias[i]
	tree  *minTree // least-connections family with >= treeMin backends
}

// emergencyTier is the balancer group of Emergency backends (Pound's
// weight 65535: after every other group).
const emergencyTier = 65535

// tierOf is the balancer group a backend belongs to.
func tierOf(be *backend.Backend) int {
	if be.Emergency() {
		return emergencyTier
	}
	return be.Group()
}

// onlyTierZero is the tiers of the usual balancer, all of whose backends
// are regular ones in group 0, shared by every such balancer.
var onlyTierZero = []int{0}

// tiersOf returns the distinct tiers of bs in increasing order.
func tiersOf(bs []*backend.Backend) []int {
	if len(bs) > 0 && !slices.ContainsFunc(bs, func(be *backend.Backend) bool { return tierOf(be) != 0 }) {
		return onlyTierZero // read only
	}
	ts := make([]int, 0, len(bs))
	for _, be := range bs {
		ts = append(ts, tierOf(be))
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// rebuild computes and publishes a new snapshot from the backends' current
// enabled/alive state, weights and priorities. Serialised by mu, and every
// flip or change calls it after its store, so the last rebuild always sees
// the latest state.
func (b *Balancer) rebuild() {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &snapshot{groups: make([]group, len(b.tiers))}
	if b.mode == ZproxyMode {
		// Sorted here, not once: priorities change at runtime.
		s.priority = servicePriority(sortedByPriority(b.all))
	}
	var room [4][]*backend.Backend
	members := room[:0]
	if len(b.tiers) > len(room) {
		members = make([][]*backend.Backend, len(b.tiers))
	}
	members = members[:len(b.tiers)]
	eligible := func(be *backend.Backend) bool {
		switch {
		case !be.Enabled() || !be.Alive() || b.weight(be) <= 0:
			return false
		case !be.Emergency() && b.mode == ZproxyMode && be.Priority() > s.priority:
			return false
		}
		return true
	}
	if len(members) == 1 && !slices.ContainsFunc(b.all, func(be *backend.Backend) bool { return !eligible(be) }) {
		// The usual single group, every backend in it: the group lists
		// them in all (neither is ever written), instead of a copy.
		members[0] = b.all
	} else {
		for _, be := range b.all {
			if eligible(be) {
				i, _ := slices.BinarySearch(b.tiers, tierOf(be)) // every tier is in b.tiers
				members[i] = append(members[i], be)
			}
		}
	}
	for i := range s.groups {
		s.groups[i] = b.newGroup(members[i])
	}
	if usesTree(b.kind, len(b.all)) {
		for _, be := range b.all {
			be.Unwatch(b) // ineligible now; eligible ones are re-pointed below
		}
	}
	for i := range s.groups {
		b.watch(&s.groups[i])
	}
	b.snap.Store(s)
}

// weight returns the weight of be in this balancer's mode.
func (b *Balancer) weight(be *backend.Backend) int64 {
	if b.mode == ZproxyMode {
		return int64(be.Weight())
	}
	return int64(be.Priority())
}

func (b *Balancer) newGroup(bs []*backend.Backend) group {
	g := group{bs: bs, w: make([]int64, len(bs))}
	for i, be := range bs {
		// Clamped so that the alias and cross-multiplication arithmetic
		// cannot overflow whatever the config says.
		g.w[i] = min(b.weight(be), maxWeight)
	}
	if len(bs) == 0 {
		return g
	}
	switch b.kind {
	case Random:
		if !equalWeights(g.w) { // equal ones need no table (pickRandom)
			g.thr, g.alias = aliasTable(g.w)
		}
	case IWRR:
		g.ring = iwrrRing(ringWeights(g.w))
	case RoundRobin:
		g.ring = runRing(ringWeights(g.w))
	}
	return g
}

// equalWeights reports whether every weight of w is the first's.
func equalWeights(w []int64) bool {
	return !slices.ContainsFunc(w, func(x int64) bool { return x != w[0] })
}

// usesTree reports whether the kind keeps a tournament tree at size n.
func usesTree(k Kind, n int) bool {
	return (k == LeastConnections || k == PendingConnections || k == ResponseTime) && n >= treeMin
}

// watch builds the group's tree when its kind uses one and points the
// backends' load watchers at its leaves (replacing the previous
// snapshot's).
func (b *Balancer) watch(g *group) {
	if !usesTree(b.kind, len(g.bs)) {
		return
	}
	g.tree = newMinTree(g, b.kind)
	for i, be := range g.bs {
		be.Watch(&leafWatcher{t: g.tree, i: i}, b)
	}
}

// servicePriority is zproxy's monitor rule (§3.7): walk the regular
// backends by ascending Priority starting with p = 1, stop at the first
// whose Priority exceeds p, and raise p for each unavailable one met. A dead
// prio-1 backend thus lets the prio-2 tier in.
func servicePriority(byPrio []*backend.Backend) int {
	p := 1
	for _, be := range byPrio {
		if be.Priority() > p {
			break
		}
		if !be.Enabled() || !be.Alive() {
			p++
		}
	}
	return p
}

// sortedByPriority returns the regular backends stably sorted by Priority.
func sortedByPriority(all []*backend.Backend) []*backend.Backend {
	var out []*backend.Backend
	for _, be := range all {
		if !be.Emergency() {
			out = append(out, be)
		}
	}
	slices.SortStableFunc(out, func(x, y *backend.Backend) int { return cmp.Compare(x.Priority(), y.Priority()) })
	return out
}

// ringWeights scales w down when its sum exceeds maxRing; every backend
// keeps at least one slot.
func ringWeights(w []int64) []int64 {
	var sum int64
	for _, x := range w {
		sum += x
	}
	if sum <= maxRing {
		return w
	}
	out := make([]int64, len(w))
	for i, x := range w {
		out[i] = max(1, x*maxRing/sum)
	}
	return out
}

// iwrrRing lays out one cycle of Pound 4's iwrr_select: in round r each
// backend with weight > r is used once, in config order. Weights 1,2,5 give
// A B C B C C C C.
func iwrrRing(w []int64) []uint32 {
	idx := make([]uint32, len(w))
	for i := range idx {
		idx[i] = uint32(i)
	}
	var ring []uint32
	for r := int64(1); len(idx) > 0; r++ {
		keep := idx[:0]
		for _, i := range idx {
			ring = append(ring, i)
			if w[i] > r {
				keep = append(keep, i)
			}
		}
		idx = keep
	}
	return ring
}

// runRing lays out zproxy's ROUND_ROBIN: each backend weight times in a row,
// in config order. Weights 2,1 give A A B.
func runRing(w []int64) []uint32 {
	var ring []uint32
	for i, x := range w {
		for range x {
			ring = append(ring, uint32(i))
		}
	}
	return ring
}

// aliasTable builds Vose's alias method for exact O(1) weighted random
// choice. Probabilities are kept as 64-bit fixed-point fractions: entry i is
// kept with probability thr[i]/2^64, else alias[i] is taken.
func aliasTable(w []int64) ([]uint64, []uint32) {
	n := uint64(len(w))
	var total uint64
	for _, x := range w {
		total += uint64(x)
	}
	q := make([]uint64, n) // scaled so that the average is total
	var small, large []uint32
	for i, x := range w {
		q[i] = uint64(x) * n
		if q[i] < total {
			small = append(small, uint32(i))
		} else {
			large = append(large, uint32(i))
		}
	}
	thr := make([]uint64, n)
	alias := make([]uint32, n)
	for len(small) > 0 && len(large) > 0 {
		l := small[len(small)-1]
		small = small[:len(small)-1]
		g := large[len(large)-1]
		thr[l], _ = bits.Div64(q[l], 0, total) // q[l] < total: no overflow
		alias[l] = g
		q[g] -= total - q[l]
		if q[g] < total {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	// Whatever is left has probability 1 (up to rounding): always keep it.
	for _, i := range append(small, large...) {
		thr[i] = math.MaxUint64
		alias[i] = i
	}
	return thr, alias
}
