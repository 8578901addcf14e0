// Package cache is lbd's shared HTTP cache (RFC 9111, with the stale-*
// extensions of RFC 5861 and the Cache-Status field of RFC 9211). The
// proxy asks it, per request of a service that has one, what to do
// (Begin), tells it the backend's answer (Tx.Response), feeds it the
// body as it streams to the client (Tx.Write), and ends the transaction
// (Tx.Finish). Storage and eviction are otter's W-TinyLFU under a byte
// budget; what is fresh, what may be stored and what must be validated
// is decided here.
package cache

import (
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// Config is one service's cache.
type Config struct {
	// Budget bounds the memory of the stored objects (bytes).
	Budget int64
	// MaxObject: larger responses are passed through, not stored.
	MaxObject int64
	// DefaultTTL is the freshness given to responses that have no
	// explicit one and may be cached heuristically (0: RFC 9111's
	// heuristic from Last-Modified).
	DefaultTTL time.Duration
	// IgnorePrivate: responses to requests whose path matches are
	// stored although they say Cache-Control: private.
	IgnorePrivate *regexp.Regexp
	// KeyHeaders and KeyCookies extend the key with the request's
	// values of those header fields and cookies.
	KeyHeaders []string
	KeyCookies []string
	// CDNControl: a CDN-Cache-Control field (RFC 9213) takes precedence
	// over Cache-Control for the freshness lbd gives a response.
	CDNControl bool
	// HitForPass is how long a key whose response was not storable is
	// passed straight to the backend without coalescing (0: 2 minutes).
	HitForPass time.Duration
	// Name is the Cache-Status cache name ("lbd").
	Name string
}

// Stats are the counters of one cache.
type Stats struct {
	Hits, Misses, Stale, Revalidations, Passes, Stores, Evictions, Purges atomic.Int64
	Coalesced                                                             atomic.Int64
}

// Cache is one service's store.
type Cache struct {
	cfg   Config
	store *otter.Cache[string, *entry]
	Stats Stats

	mu      sync.Mutex
	flights map[string]*flight
	passes  map[string]time.Time // hit-for-pass: key → until
	// now is the clock (tests set it).
	now func() time.Time
}

// entry is the stored responses of one primary key: one per variant
// (Vary), newest first. It is replaced, never changed.
type entry struct {
	objs []*Object
}

// maxVariants bounds the variants kept for one key.
const maxVariants = 8

// New makes a cache for cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Name == "" {
		cfg.Name = "lbd"
	}
	if cfg.HitForPass == 0 {
		cfg.HitForPass = 2 * time.Minute
	}
	c := &Cache{cfg: cfg, flights: map[string]*flight{}, passes: map[string]time.Time{}, now: time.Now}
	store, err := otter.New(&otter.Options[string, *entry]{
		MaximumWeight: uint64(cfg.Budget),
		Weigher: func(k string, e *entry) uint32 {
			n := int64(len(k)) + 96
			for _, o := range e.objs {
				n += o.size()
			}
			return uint32(min(n, 1<<32-1))
		},
		OnDeletion: func(ev otter.DeletionEvent[string, *entry]) {
			if ev.WasEvicted() {
				c.Stats.Evictions.Add(1)
			}
		},
		// Deletion events are counted on the goroutine that caused them:
		// no goroutine per eviction.
		Executor: func(fn func()) { fn() },
	})
	if err != nil {
		return nil, err
	}
	c.store = store
	return c, nil
}

// Config returns the cache's settings.
func (c *Cache) Config() *Config { return &c.cfg }

// Bytes is the weight of what is stored, and Objects the keys.
func (c *Cache) Bytes() int64 { return int64(c.store.WeightedSize()) }

// Objects counts the stored keys (estimated).
func (c *Cache) Objects() int { return c.store.EstimatedSize() }

// Purge removes the stored responses of keys for which match is true and
// returns how many it removed.
func (c *Cache) Purge(match func(key string) bool) int {
	n := 0
	for k := range c.store.Keys() {
		if match(k) {
			if _, ok := c.store.Invalidate(k); ok {
				n++
			}
		}
	}
	c.mu.Lock()
	for k := range c.passes {
		if match(k) {
			delete(c.passes, k)
		}
	}
	c.mu.Unlock()
	c.Stats.Purges.Add(int64(n))
	return n
}

// PurgeURL removes the responses stored for host and target, with every
// extension of the key (KeyHeaders, KeyCookies); prefix: every target
// that starts with target.
func (c *Cache) PurgeURL(host, target string, prefix bool) int {
	return c.Purge(urlMatcher(host, target, prefix))
}

// StoredURL counts the keys stored for host and target (what PurgeURL
// would remove), changing nothing.
func (c *Cache) StoredURL(host, target string) int {
	match, n := urlMatcher(host, target, false), 0
	for k := range c.store.Keys() {
		if match(k) {
			n++
		}
	}
	return n
}

func urlMatcher(host, target string, prefix bool) func(key string) bool {
	want := strings.ToLower(host) + target
	return func(k string) bool {
		base := keyURL(k)
		if prefix {
			return strings.HasPrefix(base, want)
		}
		return base == want
	}
}

// Close ends the store's background work.
func (c *Cache) Close() { c.store.StopAllGoroutines() }

func (c *Cache) lookup(key string) *entry {
	e, _ := c.store.GetIfPresent(key) // not found is a nil entry: no error to drop
	return e
}

// keySep ends a store key's URL part; the operator's extra key parts
// (CacheKeyHeader, CacheKeyCookie) follow it, each after its own keySep.
const keySep = "\x00"

// keyURL is the URL part of a store key (host and target), which purges
// and invalidations match.
func keyURL(k string) string {
	u, _, _ := strings.Cut(k, keySep) // a key without extra parts is all URL
	return u
}

// put stores o under key, in front of the variants it does not replace;
// drop (nil: none) is a stored response o supersedes whatever its
// variant. One atomic step: a look-up meanwhile finds the old entry or
// the new one, never none.
func (c *Cache) put(key string, o, drop *Object) {
	c.store.Compute(key, func(old *entry, found bool) (*entry, otter.ComputeOp) {
		n := &entry{objs: make([]*Object, 0, 4)}
		n.objs = append(n.objs, o)
		if found {
			for _, x := range old.objs {
				if len(n.objs) < maxVariants && x != drop && !sameVariant(x, o) {
					n.objs = append(n.objs, x)
				}
			}
		}
		return n, otter.WriteOp
	})
	c.Stats.Stores.Add(1)
	c.mu.Lock()
	delete(c.passes, key) // storable again: no longer hit-for-pass
	c.mu.Unlock()
}

// replace swaps old for o under key, if old is still stored.
func (c *Cache) replace(key string, old, o *Object) {
	c.store.ComputeIfPresent(key, func(e *entry) (*entry, otter.ComputeOp) {
		n := &entry{objs: make([]*Object, 0, len(e.objs))}
		for _, x := range e.objs {
			if x == old {
				x = o
			}
			n.objs = append(n.objs, x)
		}
		return n, otter.WriteOp
	})
}

// invalidate drops every stored response of key.
func (c *Cache) invalidate(key string) {
	c.store.Invalidate(key)
}

// sameVariant: o selects the same requests as x (same Vary values).
func sameVariant(x, o *Object) bool {
	if len(x.vary) != len(o.vary) || x.varyAll != o.varyAll {
		return false
	}
	for i := range x.vary {
		a, b := x.vary[i], o.vary[i]
		if a.name != b.name || a.had != b.had || string(a.value) != string(b.value) {
			return false
		}
	}
	return true
}
