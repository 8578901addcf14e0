package engine

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"

	"lbd/cache"
	"lbd/config"
	"lbd/service"
)

// serviceCache gives a service its cache: the previous generation's when
// the service (by position and name) had one configured alike, so a
// reload keeps what is stored; a new one otherwise.
func serviceCache(old *service.Service, s *config.Service) (*cache.Cache, error) {
	if s.Rare().Cache == nil {
		return nil, nil
	}
	if old != nil && old.Cache != nil && old.Cfg.Rare().Cache != nil && sameCache(old.Cfg.Rare().Cache, s.Rare().Cache) {
		return old.Cache, nil
	}
	c, err := cache.New(CacheConfig(s.Rare().Cache))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Rare().Cache.Pos, err)
	}
	return c, nil
}

// CacheConfig translates the configuration's cache settings.
func CacheConfig(c *config.Cache) cache.Config {
	return cache.Config{
		Budget:        c.Size,
		MaxObject:     c.MaxObject,
		DefaultTTL:    c.DefaultTTL.D(),
		IgnorePrivate: c.IgnorePrivate,
		KeyHeaders:    c.KeyHeaders,
		KeyCookies:    c.KeyCookies,
		CDNControl:    c.CDNControl,
	}
}

// takesPurge reports whether one of a listener's services answers the
// PURGE method (CachePurge): the listener's parser then knows it.
func takesPurge(services []*service.Service) bool {
	for _, s := range services {
		if s.Cfg != nil && s.Cfg.Rare().Cache != nil && s.Cfg.Rare().Cache.Purge != nil {
			return true
		}
	}
	return false
}

// sameCache: whether a reload may keep the cache (who may PURGE does not
// change what is stored).
func sameCache(a, b *config.Cache) bool {
	x, y := *a, *b
	x.Pos, y.Pos = config.Locus{}, config.Locus{}
	x.IgnorePrivate, y.IgnorePrivate = nil, nil
	x.Purge, y.Purge = nil, nil
	return reflect.DeepEqual(x, y)
}

// The Go runtime's heap may grow to twice what is live before a
// collection (GOGC=100): a cache filled to its budget would then cost
// up to twice the budget. With caches configured, and no GOMEMLIMIT
// given, lbd sets the runtime's soft memory limit to what the process
// used without them plus their budgets and a margin, so the collector
// works harder rather than let the heap double.
const (
	cacheMemMargin = 0.10    // of the budgets: index, bookkeeping, garbage
	cacheMemFloor  = 8 << 20 // for the rest of lbd's heap
)

// setCacheMemoryLimit applies the limit for the caches of g.
func setCacheMemoryLimit(g *graph) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	var total int64
	seen := map[*cache.Cache]bool{}
	add := func(list []*service.Service) {
		for _, s := range list {
			if s.Cache != nil && !seen[s.Cache] {
				seen[s.Cache] = true
				total += s.Cache.Config().Budget
			}
		}
	}
	add(g.global)
	for _, l := range g.services {
		add(l)
	}
	if total == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := int64(ms.Sys-ms.HeapReleased) + cacheMemFloor
	debug.SetMemoryLimit(base + total + int64(float64(total)*cacheMemMargin))
}
