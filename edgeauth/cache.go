package edgeauth

import (
	"hash/maphash"
	"sync"
	"time"
)

// tokenCache remembers verified tokens until they expire, so a client
// that sends the same token again costs a hash and a map lookup instead
// of a signature check. It is sharded like the TBF limiter so that
// concurrent lookups rarely meet on one lock, and bounded: a full shard
// first drops its expired entries, then an arbitrary one (Go's map order
// is random, so no client can aim the eviction).
type tokenCache struct {
	seed   maphash.Seed
	per    int
	shards [cacheShards]cacheShard
}

const cacheShards = 16

// maxUnexpiring bounds how long a token without "exp" stays cached; it
// is verified again after that, which also notices a key rotation.
const maxUnexpiring = 5 * time.Minute

type cacheShard struct {
	mu sync.RWMutex
	m  map[string]cacheEntry
	_  [40]byte // keeps neighbouring shards' locks a cache line apart
}

type cacheEntry struct {
	id      *Identity
	expires int64 // unix ns
	gen     uint64
}

func newTokenCache(size int) *tokenCache {
	c := &tokenCache{seed: maphash.MakeSeed(), per: max(1, size/cacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]cacheEntry)
	}
	return c
}

func (c *tokenCache) shard(tok []byte) *cacheShard {
	return &c.shards[maphash.Bytes(c.seed, tok)%cacheShards]
}

// get returns the identity of a token verified with key generation gen
// that has not expired at now. The lookup does not allocate.
func (c *tokenCache) get(tok []byte, now int64, gen uint64) (*Identity, bool) {
	s := c.shard(tok)
	s.mu.RLock()
	e, ok := s.m[string(tok)]
	s.mu.RUnlock()
	if !ok || e.gen != gen || now >= e.expires {
		return nil, false
	}
	return e.id, true
}

// put stores a verified token; expires zero means the token has no
// expiry (it is kept maxUnexpiring).
func (c *tokenCache) put(tok string, id *Identity, expires time.Time, now int64, gen uint64) {
	exp := now + int64(maxUnexpiring)
	if !expires.IsZero() {
		exp = min(exp, expires.UnixNano())
	}
	s := c.shard([]byte(tok))
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= c.per {
		for k, e := range s.m {
			if now >= e.expires {
				delete(s.m, k)
			}
		}
		for k := range s.m {
			if len(s.m) < c.per {
				break
			}
			delete(s.m, k)
		}
	}
	s.m[tok] = cacheEntry{id: id, expires: exp, gen: gen}
}

// len counts the cached tokens (tests).
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}
