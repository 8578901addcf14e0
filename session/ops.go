package session

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Delete removes the session key and reports whether it existed.
func (t *Table[V]) Delete(key string) bool {
	s := t.shardOfString(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	if e != nil {
		s.remove(e)
		if o := t.obs.Load(); o != nil {
			o.o.Deleted(key)
		}
	}
	return e != nil
}

// DeleteValue removes every session pinned to v (a backend removed by a
// reload or by the control API) and returns how many there were.
func (t *Table[V]) DeleteValue(v V) int {
	n := t.Remap(func(old V) (V, bool) { return old, old != v })
	if o := t.obs.Load(); o != nil {
		o.o.DeletedValue(v)
	}
	return n
}

// Remap replaces each session's value by f(value), dropping the sessions
// for which f reports false, and returns the number dropped. A reload uses
// it to carry sessions over to the new configuration's backend objects and
// to forget those of backends that are gone.
func (t *Table[V]) Remap(f func(V) (V, bool)) int {
	dropped := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for e := s.head; e != nil; {
			next := e.next
			if v, keep := f(e.value); keep {
				e.value = v
			} else {
				s.remove(e)
				dropped++
			}
			e = next
		}
		s.mu.Unlock()
	}
	return dropped
}

// Flush removes every session (zproxy's DELETE .../sessions and the first
// step of a session sync).
func (t *Table[V]) Flush() {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		// A new map rather than clear(): clear keeps the buckets of a
		// table that may have held a million sessions.
		s.m = make(map[string]*entry[V])
		s.head, s.tail = nil, nil
		s.mu.Unlock()
	}
	if o := t.obs.Load(); o != nil {
		o.o.Flushed()
	}
}

// Len returns the number of sessions held, including expired ones the
// sweeper has not removed yet.
func (t *Table[V]) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

type snapshot[V comparable] struct {
	key   string
	v     V
	used  time.Time
	stamp int64 // last use; static sessions sort first
	seq   uint64
}

// Each calls fn for every live session, with its last use (zero for a
// static session), until fn returns false. Sessions come in Pound's order,
// the order of its expiry list: least recently used first, sessions used
// at the same instant in order of creation (static ones first). The
// sessions are copied shard by shard under its read lock, then sorted,
// and fn runs unlocked, so fn may call the table.
func (t *Table[V]) Each(fn func(key string, v V, lastUsed time.Time) bool) {
	var buf []snapshot[V]
	for i := range t.shards {
		s := &t.shards[i]
		now := t.now()
		s.mu.RLock()
		for e := s.head; e != nil; e = e.next {
			if t.expired(e, now) {
				continue
			}
			stamp := e.lastUsed.Load()
			if e.static {
				stamp = math.MinInt64
			}
			buf = append(buf, snapshot[V]{e.key, e.value, t.usedTime(e), stamp, e.seq})
		}
		s.mu.RUnlock()
	}
	slices.SortFunc(buf, func(a, b snapshot[V]) int {
		if c := cmp.Compare(a.stamp, b.stamp); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, x := range buf {
		if !fn(x.key, x.v, x.used) {
			return
		}
	}
}

// Resolve is the sticky-session step of backend selection. With a nil key
// (the request has none) it only picks. Otherwise a session whose value is
// usable (alive and enabled) is used; a missing or expired session, or one
// pinned to an unusable value, gets pick()'s choice and is (re-)pointed to
// it (zproxy only refreshes the stale pin, so the client bounces between
// backends until it expires; the issue asks for the re-point). Resolve
// itself does not allocate on a hit.
func (t *Table[V]) Resolve(key []byte, usable func(V) bool, pick func() (V, bool)) (V, bool) {
	if key == nil {
		return pick()
	}
	if v, ok := t.Lookup(key); ok && usable(v) {
		return v, true
	}
	v, ok := pick()
	if ok {
		t.Store(key, v)
	}
	return v, ok
}

// pushBack lists e last. Write lock held.
func (s *shard[V]) pushBack(e *entry[V]) {
	e.prev, e.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = e
	} else {
		s.head = e
	}
	s.tail = e
}

// unlink takes e out of the list. Write lock held.
func (s *shard[V]) unlink(e *entry[V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// remove forgets e. Write lock held.
func (s *shard[V]) remove(e *entry[V]) {
	s.unlink(e)
	delete(s.m, e.key)
}

// relist gives e its second chance: listed last, as of now.
func (s *shard[V]) relist(e *entry[V], now int64) {
	s.unlink(e)
	e.listedAt = now
	s.pushBack(e)
}

// evict removes one session from a full shard: an expired one or the
// first listed that was not used since it was listed (see Table). It
// gives up after one pass and takes the head, so it always terminates even
// if the clock stepped back. Write lock held.
func (t *Table[V]) evict(s *shard[V], now int64) {
	for n := len(s.m); n > 0; n-- {
		e := s.head
		if t.expired(e, now) {
			s.remove(e)
			t.expiredN.Add(1)
			return
		}
		if e.lastUsed.Load() <= e.listedAt {
			s.remove(e)
			return
		}
		s.relist(e, now)
	}
	if s.head != nil {
		s.remove(s.head)
	}
}
