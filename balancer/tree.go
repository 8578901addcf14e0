package balancer

import (
	"sync/atomic"

	"lbd/backend"
)

// treeMin is the group size from which the least-connections family keeps
// a tournament tree instead of scanning. A request changes its backend's
// load two to four times and each change costs a walk to the root (78 ns
// at 32 backends, 127 ns at 256, BenchmarkTreeChange), while a scan costs
// about 1.7 ns per backend (430 ns at 256): the tree pays from about 128.
const treeMin = 128

// updateTries bounds how often one update re-computes a node that a
// concurrent update changed under it; a later update repairs what is left.
const updateTries = 4

// minTree is a tournament tree over a group's backends for
// LEAST_CONNECTIONS, PENDING_CONNECTIONS and RESPONSE_TIME: each internal
// node holds the better of its two children, so the root is the exact
// answer of the scan (same rules, ties to the earlier backend, since left
// subtrees hold the earlier indexes). Backends report load changes
// (backend.LoadWatcher) and each change re-plays the matches on its path
// to the root: O(log n) per change, O(1) per pick.
//
// Nodes pack a version with the winner (version<<32 | index+1) and a leaf's
// version moves on every change of its load, so an update that computed a
// node from children that changed meanwhile sees it and computes again:
// the tree is exact whenever updates have settled.
type minTree struct {
	g    *group
	kind Kind
	size int             // leaves: a power of two >= len(g.bs)
	node []atomic.Uint64 // 1-based heap; leaves at [size, 2*size)
}

func newMinTree(g *group, kind Kind) *minTree {
	size := 1
	for size < len(g.bs) {
		size *= 2
	}
	t := &minTree{g: g, kind: kind, size: size, node: make([]atomic.Uint64, 2*size)}
	for i := range g.bs {
		t.node[size+i].Store(uint64(i + 1))
	}
	for p := size - 1; p >= 1; p-- {
		t.node[p].Store(uint64(t.winner(idx(t.node[2*p].Load()), idx(t.node[2*p+1].Load())) + 1))
	}
	return t
}

func idx(v uint64) int { return int(uint32(v)) - 1 }

// winner plays a match between backends i < j (either may be -1: none).
func (t *minTree) winner(i, j int) int {
	switch {
	case j < 0:
		return t.availableOr(i)
	case i < 0:
		return t.availableOr(j)
	}
	ai, aj := t.g.bs[i].Available(), t.g.bs[j].Available()
	switch {
	case !aj:
		return t.availableOr(i)
	case !ai || t.g.beats(t.kind, j, i):
		return j
	}
	return i
}

func (t *minTree) availableOr(i int) int {
	if i >= 0 && t.g.bs[i].Available() {
		return i
	}
	return -1
}

// changed replays the matches on the path of leaf i.
func (t *minTree) changed(i int) {
	leaf := &t.node[t.size+i]
	leaf.Add(1 << 32) // new version: concurrent updates above notice
	for p := (t.size + i) / 2; p >= 1; p /= 2 {
		for try := 0; try < updateTries; try++ {
			l, r := t.node[2*p].Load(), t.node[2*p+1].Load()
			old := t.node[p].Load()
			w := uint64(t.winner(idx(l), idx(r)) + 1)
			if !t.node[p].CompareAndSwap(old, (old>>32+1)<<32|w) {
				continue
			}
			if t.node[2*p].Load() == l && t.node[2*p+1].Load() == r {
				break
			}
		}
	}
}

// pick returns the root's backend if it can still take a request (a
// ConnLimit reached since its last match is caught here), else falls back
// to the scan.
func (t *minTree) pick() *backend.Backend {
	if i := idx(t.node[1].Load()); i >= 0 {
		if be := t.g.bs[i]; be.Available() {
			return be
		}
	}
	return t.g.scan(t.kind)
}

// leafWatcher forwards one backend's load changes to its leaf.
type leafWatcher struct {
	t *minTree
	i int
}

// LoadChanged implements backend.LoadWatcher.
func (w *leafWatcher) LoadChanged() { w.t.changed(w.i) }
