package session

import (
	"container/heap"
	"slices"
	"strings"
)

// Page returns, in key order, the first limit live sessions whose keys
// sort after after ("" for the first page), and whether more follow.
// The control API lists a table of a million sessions this way, a page
// at a time, instead of copying it whole: a page costs one pass over the
// table under each shard's read lock in turn and keeps only limit+1
// sessions (a bounded heap), whatever the table's size. Key order is the
// one stable across pages; last-use order changes with every request.
func (t *Table[V]) Page(after string, limit int) (page []Entry[V], more bool) {
	if limit <= 0 {
		return nil, t.hasAfter(after)
	}
	h := &lastKeys[V]{}
	for i := range t.shards {
		s := &t.shards[i]
		now := t.now()
		s.mu.RLock()
		for e := s.head; e != nil; e = e.next {
			if e.key <= after || t.expired(e, now) {
				continue
			}
			if h.Len() <= limit {
				heap.Push(h, Entry[V]{Key: e.key, Value: e.value, Version: e.version(), LastUsed: t.usedTime(e)})
			} else if e.key < (*h)[0].Key {
				(*h)[0] = Entry[V]{Key: e.key, Value: e.value, Version: e.version(), LastUsed: t.usedTime(e)}
				heap.Fix(h, 0)
			}
		}
		s.mu.RUnlock()
	}
	page = []Entry[V](*h)
	slices.SortFunc(page, func(a, b Entry[V]) int { return strings.Compare(a.Key, b.Key) })
	if len(page) > limit {
		return page[:limit], true
	}
	return page, false
}

// hasAfter tells whether a live session's key sorts after after.
func (t *Table[V]) hasAfter(after string) bool {
	found := false
	t.Range(func(e Entry[V]) bool {
		found = e.Key > after
		return !found
	})
	return found
}

// lastKeys is a max-heap of entries by key: its top is the greatest of
// the smallest keys kept so far, the one a smaller key replaces.
type lastKeys[V comparable] []Entry[V]

func (h lastKeys[V]) Len() int           { return len(h) }
func (h lastKeys[V]) Less(i, j int) bool { return h[i].Key > h[j].Key }
func (h lastKeys[V]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lastKeys[V]) Push(x any)        { *h = append(*h, x.(Entry[V])) }
func (h *lastKeys[V]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
