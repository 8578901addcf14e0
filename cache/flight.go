package cache

import "time"

// A flight is a request on its way to the backend for a key; the misses
// of that key that come meanwhile wait for it instead of going too
// (coalescing). A key whose response turned out not storable is
// remembered for HitForPass ("hit-for-pass"): its misses then go to the
// backend at once, in parallel, rather than one after the other.
type flight struct {
	key  string
	done chan struct{}
}

// coalesceWait bounds a waiter's wait: a slow backend then costs the
// waiters one request each, not an unbounded stall.
const coalesceWait = 30 * time.Second

// maxPasses bounds the hit-for-pass memory; past it the oldest
// knowledge is dropped as a whole.
const maxPasses = 100000

func (f *flight) wait() {
	t := time.NewTimer(coalesceWait)
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
	}
}

// join returns the flight of key, or nil when there is none.
func (c *Cache) join(key string) *flight {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flights[key]
}

// lead registers the caller's flight for key (or returns nil when
// another started meanwhile: the caller then goes uncoalesced).
func (c *Cache) lead(key string) *flight {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[key] != nil {
		return nil
	}
	f := &flight{key: key, done: make(chan struct{})}
	c.flights[key] = f
	return f
}

// land ends a flight: its waiters look again.
func (c *Cache) land(f *flight) {
	c.mu.Lock()
	if c.flights[f.key] == f {
		delete(c.flights, f.key)
	}
	c.mu.Unlock()
	close(f.done)
}

// claimRefresh returns the flight of a background revalidation of key,
// or nil when one is already under way.
func (c *Cache) claimRefresh(key string) *flight {
	return c.lead("\x01" + key)
}

// rememberPass records that key's response was not storable.
func (c *Cache) rememberPass(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.passes) >= maxPasses {
		clear(c.passes)
	}
	c.passes[key] = now.Add(c.cfg.HitForPass)
}

// passing reports whether key is in hit-for-pass.
func (c *Cache) passing(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.passes[key]
	if ok && now.After(until) {
		delete(c.passes, key)
		return false
	}
	return ok
}
