package engine

import (
	"fmt"
	"reflect"

	"lbd/cache"
	"lbd/config"
	"lbd/service"
)

// serviceCache gives a service its cache: the previous generation's when
// the service (by position and name) had one configured alike, so a
// reload keeps what is stored; a new one otherwise.
func serviceCache(old *service.Service, s *config.Service) (*cache.Cache, error) {
	if s.Cache == nil {
		return nil, nil
	}
	if old != nil && old.Cache != nil && old.Cfg.Cache != nil && sameCache(old.Cfg.Cache, s.Cache) {
		return old.Cache, nil
	}
	c, err := cache.New(CacheConfig(s.Cache))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Cache.Pos, err)
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

func sameCache(a, b *config.Cache) bool {
	x, y := *a, *b
	x.Pos, y.Pos = config.Locus{}, config.Locus{}
	x.IgnorePrivate, y.IgnorePrivate = nil, nil
	return reflect.DeepEqual(x, y)
}
