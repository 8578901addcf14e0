package session

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxEntries caps a table when NewTable is given no cap, so that a
// flood of distinct keys (a client inventing cookies) cannot exhaust memory.
// At about 170 bytes per session with a 32-byte key (BenchmarkMemory1M)
// it is ~170 MiB.
const DefaultMaxEntries = 1 << 20

const (
	maxShards   = 64   // enough to spread 2 cores' (or 64's) lookups
	minPerShard = 1024 // below this, sharding buys nothing and blurs LRU order
)

// Table maps session keys to the value (the engine's backend) they are
// pinned to, with idle expiry (TTL since last use) and a cap on entries.
//
// It is split into shards, each with its own RWMutex. Those locks are the
// one place lbd's data path takes a lock, deliberately: a table exists only
// for services that configure sessions, a hit takes only the read lock of
// one shard (the last-use stamp is an atomic, so a hit never writes under
// the lock), and a lock-free hash map with expiry and eviction would be a
// lot of subtle code for little gain. Writers (first request of a session,
// re-pin, sweeps, control API) take one shard's write lock.
//
// Eviction when a shard is full is CLOCK-style approximate LRU, chosen so
// that a hit need not move the entry (which would need the write lock):
// entries sit in a list in the order they were inserted. To evict, look at
// the oldest listed entry; if it was used since it was listed, re-list it
// at the back (second chance) and look at the next; otherwise evict it.
// This evicts the least recently used entry whenever re-listing does not
// reorder uses (the common case) and otherwise one not used since it was
// last examined. The same list drives the sweeper, which therefore visits
// only entries listed more than a TTL ago; Lookup checks the TTL exactly,
// so an expired session is never used, only its memory may linger up to one
// more TTL.
//
// Expiry: a session is dead when now - lastUsed > TTL (zproxy's rule, so at
// exactly TTL it still lives). Static sessions (zproxy "last-seen": 0,
// inserted by the control API) never expire but may still be evicted.
type Table[V comparable] struct {
	shards []shard[V]
	mask   uint64
	seed   maphash.Seed
	ttl    int64 // nanoseconds; <= 0 never expires
	clock  func() time.Time
	base   time.Time     // stamps are nanoseconds since base (monotonic with time.Now)
	seq    atomic.Uint64 // numbers sessions in order of creation
	// obs is told of the changes made on purpose (see Observe); nil for
	// a table no cluster shares, which then pays one atomic load per
	// write and nothing per hit.
	obs atomic.Pointer[observed[V]]
	// created and expired count sessions made and sessions dropped for
	// being idle past the TTL (lbd_service_sessions_*_total); the table
	// survives reloads, so they do too.
	created, expiredN atomic.Uint64
}

// Created returns how many sessions were ever added to the table.
func (t *Table[V]) Created() uint64 { return t.created.Load() }

// Expired returns how many sessions were dropped for being idle past
// the TTL (by a sweep, a lookup or an eviction that found them so).
func (t *Table[V]) Expired() uint64 { return t.expiredN.Load() }

type entry[V comparable] struct {
	key      string
	value    V            // guarded by the shard lock
	lastUsed atomic.Int64 // ns since base; hits store it under the read lock
	listedAt int64        // ns since base when (re)listed; write lock only
	prev     *entry[V]
	next     *entry[V]
	static   bool
	seq      uint64 // creation order, which breaks ties in Each's order
	// cl holds what only a cluster needs (observe.go); nil in a table
	// nobody observes, which keeps an entry at 73 bytes, in Go's 80-byte
	// size class instead of the 96-byte one: 16 bytes less per session,
	// 16 MB less for a million (issue 36's bytes-per-session bound).
	cl atomic.Pointer[clustered]
}

// clustered is a session's state in a table a cluster shares.
type clustered struct {
	// ver orders changes to the session across a cluster (see Observe).
	// Written under the shard's write lock only.
	ver uint64
	// shared is the last use a cluster already knows of: published by
	// this table's observer or learned from a peer (see CollectUsed).
	shared atomic.Int64
}

// version is the session's cluster version, 0 when it has none.
func (e *entry[V]) version() uint64 {
	if c := e.cl.Load(); c != nil {
		return c.ver
	}
	return 0
}

// sharedUse is the last use the cluster knows of, 0 when none.
func (e *entry[V]) sharedUse() int64 {
	if c := e.cl.Load(); c != nil {
		return c.shared.Load()
	}
	return 0
}

// clustered returns the session's cluster state, adding it on first
// use. Safe under the read lock: two racing callers install one.
func (e *entry[V]) clustered() *clustered {
	if c := e.cl.Load(); c != nil {
		return c
	}
	e.cl.CompareAndSwap(nil, &clustered{})
	return e.cl.Load()
}

// setVersion records the session's cluster version and the last use
// the cluster now knows of. Write lock held.
func (e *entry[V]) setVersion(ver uint64, used int64) {
	c := e.clustered()
	c.ver = ver
	c.shared.Store(used)
}

type shard[V comparable] struct {
	mu   sync.RWMutex
	m    map[string]*entry[V]
	head *entry[V] // listed first: the eviction and sweep candidate
	tail *entry[V]
	max  int
	_    [64]byte // keep neighbouring shards' locks off one cache line
}

// NewTable makes a table whose sessions expire after ttl of idleness
// (ttl <= 0: never) and which holds at most maxEntries sessions
// (<= 0: DefaultMaxEntries), evicting the least recently used first.
// clock is time.Now when nil; tests inject a fake one.
func NewTable[V comparable](ttl time.Duration, maxEntries int, clock func() time.Time) *Table[V] {
	if clock == nil {
		clock = time.Now
	}
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	n := 1
	for n < maxShards && maxEntries/(n*2) >= minPerShard {
		n *= 2
	}
	t := &Table[V]{
		shards: make([]shard[V], n),
		mask:   uint64(n - 1),
		seed:   maphash.MakeSeed(),
		ttl:    int64(ttl),
		clock:  clock,
		base:   clock(),
	}
	for i := range t.shards {
		s := &t.shards[i]
		s.m = make(map[string]*entry[V])
		// Spread the remainder so the shard caps add up to maxEntries.
		s.max = maxEntries / n
		if i < maxEntries%n {
			s.max++
		}
	}
	return t
}

// TTL returns the idle time after which sessions expire.
func (t *Table[V]) TTL() time.Duration { return time.Duration(t.ttl) }

func (t *Table[V]) now() int64 { return int64(t.clock().Sub(t.base)) }

func (t *Table[V]) stamp(at time.Time) int64 { return int64(at.Sub(t.base)) }

func (t *Table[V]) shardOf(key []byte) *shard[V] {
	if t.mask == 0 {
		return &t.shards[0]
	}
	return &t.shards[maphash.Bytes(t.seed, key)&t.mask]
}

func (t *Table[V]) shardOfString(key string) *shard[V] {
	if t.mask == 0 {
		return &t.shards[0]
	}
	return &t.shards[maphash.String(t.seed, key)&t.mask]
}

func (t *Table[V]) expired(e *entry[V], now int64) bool {
	return t.ttl > 0 && !e.static && now-e.lastUsed.Load() > t.ttl
}

// Lookup returns the value key is pinned to and refreshes its last use. An
// expired session is removed and reported as a miss. A hit takes one
// shard's read lock and does not allocate.
func (t *Table[V]) Lookup(key []byte) (V, bool) {
	s := t.shardOf(key)
	now := t.now()
	s.mu.RLock()
	e := s.m[string(key)]
	if e != nil && !t.expired(e, now) {
		v := e.value
		// Only forward: a concurrent hit with an older clock reading must
		// not move the stamp back.
		if e.lastUsed.Load() < now {
			e.lastUsed.Store(now)
		}
		s.mu.RUnlock()
		return v, true
	}
	s.mu.RUnlock()
	if e != nil {
		s.mu.Lock()
		if e := s.m[string(key)]; e != nil && t.expired(e, now) {
			s.remove(e)
			t.expiredN.Add(1)
		}
		s.mu.Unlock()
	}
	var zero V
	return zero, false
}

// Store pins key to v, inserting the session or re-pointing an existing
// one, and marks it used now. The key is copied (once, on insert). If the
// shard is full, the least recently used session is evicted first.
func (t *Table[V]) Store(key []byte, v V) {
	now := t.now()
	t.put(key, v, now, false, now)
}

// StoreAt is Store with an explicit last use, for sessions added or synced
// through the control API; a zero lastUsed makes a static session that
// never expires (zproxy's "last-seen": 0).
func (t *Table[V]) StoreAt(key []byte, v V, lastUsed time.Time) {
	now := t.now()
	if lastUsed.IsZero() {
		t.put(key, v, now, true, now)
		return
	}
	t.put(key, v, t.stamp(lastUsed), false, now)
}

func (t *Table[V]) put(key []byte, v V, used int64, static bool, now int64) {
	s := t.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[string(key)]
	if e != nil {
		e.value, e.static = v, static
		e.lastUsed.Store(used)
	} else {
		e = t.insert(s, string(key), v, used, static, now)
	}
	t.told(e)
}

// insert adds a new entry, evicting first if the shard is full so that
// the new session is never the victim. Write lock held.
func (t *Table[V]) insert(s *shard[V], key string, v V, used int64, static bool, now int64) *entry[V] {
	if len(s.m) >= s.max {
		t.evict(s, now)
	}
	e := &entry[V]{key: key, value: v, static: static, listedAt: now, seq: t.seq.Add(1)}
	t.created.Add(1)
	e.lastUsed.Store(used)
	s.m[e.key] = e
	s.pushBack(e)
	return e
}

// Move re-points an existing live session to v with the given last use
// (zero: static), as zproxy's PATCH .../session/<K>. It reports false when
// there is no such session.
func (t *Table[V]) Move(key string, v V, lastUsed time.Time) bool {
	s := t.shardOfString(key)
	now := t.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	if e == nil || t.expired(e, now) {
		return false
	}
	e.value, e.static = v, lastUsed.IsZero()
	if !e.static {
		e.lastUsed.Store(t.stamp(lastUsed))
	}
	t.told(e)
	return true
}

// Get returns a live session's value and last use (zero for a static one)
// without refreshing it, for the control API.
func (t *Table[V]) Get(key string) (v V, lastUsed time.Time, ok bool) {
	s := t.shardOfString(key)
	now := t.now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.m[key]
	if e == nil || t.expired(e, now) {
		return v, time.Time{}, false
	}
	return e.value, t.usedTime(e), true
}

func (t *Table[V]) usedTime(e *entry[V]) time.Time {
	if e.static {
		return time.Time{}
	}
	return t.base.Add(time.Duration(e.lastUsed.Load()))
}
