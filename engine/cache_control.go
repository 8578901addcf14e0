package engine

import (
	"lbd/adminapi"
	"lbd/service"
)

var _ adminapi.CacheController = (*Engine)(nil)

// PurgeCache removes a URL (or every URL under a prefix) from the cache
// of every service that has one, here and, in a cluster, on every
// instance.
func (e *Engine) PurgeCache(host, target string, prefix bool) (int, error) {
	n := e.PurgeCacheLocal(host, target, prefix)
	if p, ok := e.opts.Cluster.(interface {
		Purged(host, target string, prefix bool)
	}); ok {
		p.Purged(host, target, prefix)
	}
	return n, nil
}

// PurgeCacheLocal is PurgeCache on this instance only (a peer's purge).
func (e *Engine) PurgeCacheLocal(host, target string, prefix bool) int {
	n := 0
	e.eachCached(func(_, _ int, s *service.Service) { n += s.Cache.PurgeURL(host, target, prefix) })
	return n
}

// CacheStats lists the cached services' counters.
func (e *Engine) CacheStats() []adminapi.CacheStat {
	var out []adminapi.CacheStat
	e.eachCached(func(l, i int, s *service.Service) { out = append(out, *cacheStat(l, i, s)) })
	return out
}

// cacheStat reads the counters of a service's cache.
func cacheStat(l, i int, s *service.Service) *adminapi.CacheStat {
	c := s.Cache
	st := &c.Stats
	return &adminapi.CacheStat{
		Listener: l, Service: i, Name: s.Name, Budget: c.Config().Budget,
		Bytes: c.Bytes(), Objects: c.Objects(),
		Hits: st.Hits.Load(), Misses: st.Misses.Load(), Stale: st.Stale.Load(),
		Revalidations: st.Revalidations.Load(), Passes: st.Passes.Load(), Stores: st.Stores.Load(),
		Evictions: st.Evictions.Load(), Purged: st.Purges.Load(), Coalesced: st.Coalesced.Load(),
	}
}

// eachCached calls fn for every service with a cache: listener index
// (-1 for the global services) and service index.
func (e *Engine) eachCached(fn func(l, i int, s *service.Service)) {
	e.mu.Lock()
	g := e.g
	e.mu.Unlock()
	for i, s := range g.global {
		if s.Cache != nil {
			fn(-1, i, s)
		}
	}
	for l, list := range g.services {
		for i, s := range list {
			if s.Cache != nil {
				fn(l, i, s)
			}
		}
	}
}
