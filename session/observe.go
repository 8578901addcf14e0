package session

import "time"

// Observer learns of the changes made to a table on purpose, so that a
// cluster can replicate them: pins by the data path (Store) and edits by
// the control API (StoreAt, Move, Delete, DeleteValue, Flush). It is not
// told of hits, expiry, eviction, Remap (a reload) or of what Apply,
// ApplyDelete, Touch and DropOlder do (changes learned from peers, which
// must not be sent back).
//
// Stored runs under a shard's write lock, on the request path of a new
// session: it must not block, allocate per call or call the table.
type Observer[V comparable] interface {
	// Stored is told that key now points to v, last used at lastUsed
	// (static: never expires). It returns the version to record with the
	// entry, which orders this change against the same key's changes on
	// other instances (see Apply).
	Stored(key string, v V, lastUsed time.Time, static bool) uint64
	// Deleted is told that Delete removed key.
	Deleted(key string)
	// DeletedValue is told that DeleteValue removed v's sessions.
	DeletedValue(v V)
	// Flushed is told that Flush removed every session.
	Flushed()
}

// observed boxes an Observer for an atomic pointer.
type observed[V comparable] struct{ o Observer[V] }

// Observe makes o the table's observer (nil: none). Changes made before
// are not reported; a caller that needs them walks the table with Range.
func (t *Table[V]) Observe(o Observer[V]) {
	if o == nil {
		t.obs.Store(nil)
		return
	}
	t.obs.Store(&observed[V]{o})
}

// told reports an entry just written by put or Move. Write lock held.
func (t *Table[V]) told(e *entry[V]) {
	o := t.obs.Load()
	if o == nil {
		return
	}
	used := e.lastUsed.Load()
	e.setVersion(o.o.Stored(e.key, e.value, t.usedTime(e), e.static), used)
}

// Apply records a pin learned from a peer: key points to v at version
// ver, last used at lastUsed (static: never expires). A session the table
// holds at a later version is kept, and so is one at the same version
// unless tie(current value) says the incoming one wins, so every instance
// that sees the same changes ends with the same pin whatever their order.
// A new key may evict the least recently used session, as Store does; the
// observer is not told. It reports whether the table changed.
func (t *Table[V]) Apply(key string, v V, ver uint64, lastUsed time.Time, static bool, tie func(cur V) bool) bool {
	s := t.shardOfString(key)
	now := t.now()
	used := t.stamp(lastUsed)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	if e != nil && !t.expired(e, now) {
		if cur := e.version(); cur > ver || (cur == ver && (e.value == v || tie == nil || !tie(e.value))) {
			return false
		}
		if e.value == v && !static && !e.static && e.lastUsed.Load() > used {
			used = e.lastUsed.Load() // a re-pin to the same value keeps the later use
		}
		e.value, e.static = v, static
		e.lastUsed.Store(used)
		e.setVersion(ver, used)
		return true
	}
	if e != nil {
		s.remove(e)
	}
	if t.ttl > 0 && !static && now-used > t.ttl {
		return false // already expired here
	}
	e = t.insert(s, key, v, used, static, now)
	e.setVersion(ver, used)
	return true
}

// ApplyDelete removes key if the table holds it at version ver or before
// (a later pin survives a concurrent delete), without telling the
// observer. It reports whether a session was removed.
func (t *Table[V]) ApplyDelete(key string, ver uint64) bool {
	s := t.shardOfString(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	if e == nil || e.version() > ver {
		return false
	}
	s.remove(e)
	return true
}

// DropOlder removes the sessions recorded before version ver whose value
// match accepts (nil: all), a flush learned from a peer. The observer is
// not told. It returns how many were removed.
func (t *Table[V]) DropOlder(ver uint64, match func(V) bool) int {
	dropped := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for e := s.head; e != nil; {
			next := e.next
			if e.version() < ver && (match == nil || match(e.value)) {
				s.remove(e)
				dropped++
			}
			e = next
		}
		s.mu.Unlock()
	}
	return dropped
}

// Touch moves key's last use forward to lastUsed if it still points to v:
// a peer served the session, which must not expire here meanwhile. It
// reports whether the session was found.
func (t *Table[V]) Touch(key string, v V, lastUsed time.Time) bool {
	s := t.shardOfString(key)
	used := t.stamp(lastUsed)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.m[key]
	if e == nil || e.value != v || e.static {
		return false
	}
	// Both stamps only move forward; a race between two touches or a
	// touch and a hit may lose the smaller one, which is the one to lose.
	if e.lastUsed.Load() < used {
		e.lastUsed.Store(used)
	}
	if c := e.clustered(); c.shared.Load() < used {
		c.shared.Store(used)
	}
	return true
}

// Entry is one session as Range and CollectUsed report it.
type Entry[V comparable] struct {
	Key      string
	Value    V
	Version  uint64
	LastUsed time.Time // zero for a static session
}

// Range calls fn for every live session with its version, in no
// particular order, until fn returns false. Sessions are copied shard by
// shard under the shard's read lock and fn runs unlocked.
func (t *Table[V]) Range(fn func(Entry[V]) bool) {
	var buf []Entry[V]
	for i := range t.shards {
		s := &t.shards[i]
		now := t.now()
		buf = buf[:0]
		s.mu.RLock()
		for e := s.head; e != nil; e = e.next {
			if !t.expired(e, now) {
				buf = append(buf, Entry[V]{Key: e.key, Value: e.value, Version: e.version(), LastUsed: t.usedTime(e)})
			}
		}
		s.mu.RUnlock()
		for _, x := range buf {
			if !fn(x) {
				return
			}
		}
	}
}

// CollectUsed appends to buf the live, expiring sessions used since the
// cluster last heard of them (hits on this instance, which are never
// published one by one) and marks them heard of. A cluster calls it a few
// times per TTL to keep the session alive on its peers.
func (t *Table[V]) CollectUsed(buf []Entry[V]) []Entry[V] {
	for i := range t.shards {
		s := &t.shards[i]
		now := t.now()
		s.mu.RLock()
		for e := s.head; e != nil; e = e.next {
			used := e.lastUsed.Load()
			if e.static || t.expired(e, now) || used <= e.sharedUse() {
				continue
			}
			e.clustered().shared.Store(used)
			buf = append(buf, Entry[V]{Key: e.key, Value: e.value, Version: e.version(), LastUsed: t.base.Add(time.Duration(used))})
		}
		s.mu.RUnlock()
	}
	return buf
}
