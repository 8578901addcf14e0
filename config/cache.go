package config

import (
	"regexp"

	"lbd/parser"
)

// Cache is a service's shared HTTP cache (RFC 9111), an lbd extension
// of both dialects: "Cache SIZE" turns it on with a memory budget, the
// other Cache* statements tune it.
type Cache struct {
	Pos Locus `json:"pos"`
	// Size is the memory budget of the stored responses, in bytes.
	Size int64 `json:"size"`
	// MaxObject: larger responses are passed through, not stored.
	MaxObject int64 `json:"max_object"`
	// DefaultTTL is the freshness of responses without an explicit one
	// that RFC 9111 lets a cache give a heuristic freshness (0: 10 % of
	// the time since Last-Modified).
	DefaultTTL Duration `json:"default_ttl,omitempty"`
	// IgnorePrivate: responses to paths that match are stored although
	// they say Cache-Control: private.
	IgnorePrivate   *regexp.Regexp `json:"-"`
	IgnorePrivateRe string         `json:"ignore_private,omitempty"`
	// KeyHeaders and KeyCookies add the request's values of these header
	// fields and cookies to the key.
	KeyHeaders []string `json:"key_headers,omitempty"`
	KeyCookies []string `json:"key_cookies,omitempty"`
	// CDNControl: CDN-Cache-Control (RFC 9213) takes precedence over
	// Cache-Control.
	CDNControl bool `json:"cdn_cache_control,omitempty"`
	// Purge: the PURGE method removes the request's URL from the cache
	// (here and in the cluster) for clients in this ACL; others get 403.
	// nil: PURGE is an unknown method, as in Pound.
	Purge *ACL `json:"purge_acl,omitempty"`
}

// DefaultCacheMaxObject is the largest response stored when
// CacheMaxObject is not given (a quarter of a smaller budget).
const DefaultCacheMaxObject = 8 << 20

// cacheExtra is build-time state: the first tuning statement, for
// "Cache settings without Cache".
type cacheExtra struct {
	seen      bool // a Cache statement, valid or not
	tuned     bool
	tunedSpan parser.Span
	maxSet    *parser.Arg
}

func addCacheDirectives(t table[*Service]) {
	t.add("Cache", "[nl]", func(b *builder, s *Service, n *parser.Node, u []unit) {
		b.svcs[s].cache.seen = true
		c := serviceCache(s)
		if c.Size != 0 {
			b.errorf(stmtSpan(n), "Cache redefined")
			return
		}
		if v, ok := b.sizeArg(u[0].arg, 1<<40); ok {
			if v < 64<<10 {
				b.errorf(u[0].arg.Span, "a cache needs at least 64k")
				return
			}
			c.Size, c.Pos = v, LocusOf(stmtSpan(n))
		}
	})
	t.add("CacheMaxObject", "[nl]", func(b *builder, s *Service, n *parser.Node, u []unit) {
		b.noteCache(s, n)
		if v, ok := b.sizeArg(u[0].arg, 1<<40); ok {
			serviceCache(s).MaxObject = v
			b.svcs[s].cache.maxSet = &u[0].arg
		}
	})
	t.add("CacheDefaultTTL", "[nl]", func(b *builder, s *Service, n *parser.Node, u []unit) {
		b.noteCache(s, n)
		if d, ok := b.durationArg(u[0].arg); ok {
			serviceCache(s).DefaultTTL = d
		}
	})
	t.add("CacheIgnorePrivate", "s", func(b *builder, s *Service, n *parser.Node, u []unit) {
		b.noteCache(s, n)
		re, err := regexp.Compile(u[0].arg.Text)
		if err != nil {
			b.errorf(u[0].arg.Span, "%s", err.Error())
			return
		}
		c := serviceCache(s)
		c.IgnorePrivate, c.IgnorePrivateRe = re, u[0].arg.Text
	})
	t.add("CacheKeyHeader", "s", func(b *builder, s *Service, n *parser.Node, u []unit) {
		b.noteCache(s, n)
		c := serviceCache(s)
		c.KeyHeaders = append(c.KeyHeaders, u[0].arg.Text)
	})
	t.add("CacheKeyCookie", "s", func(b *builder, s *Service, n *parser.Node, u []unit) {
		b.noteCache(s, n)
		c := serviceCache(s)
		c.KeyCookies = append(c.KeyCookies, u[0].arg.Text)
	})
	t.add("CachePurge", ".*", cachePurge).either()
	t.add("CacheCDNControl", "b", func(b *builder, s *Service, n *parser.Node, u []unit) {
		b.noteCache(s, n)
		serviceCache(s).CDNControl = boolArg(u[0])
	})
}

// cachePurge is CachePurge: the ACL of the clients that may PURGE, by
// name, -file or as a block, as the ACL condition takes it.
func cachePurge(b *builder, s *Service, n *parser.Node, _ []unit) {
	b.noteCache(s, n)
	spec, ok := b.aclArgs(n)
	if !ok {
		return
	}
	if spec.forwarded {
		b.errorf(stmtSpan(n), "-forwarded makes no sense in CachePurge: the client purging is the peer")
		return
	}
	c := serviceCache(s)
	if c.Purge != nil {
		b.errorf(stmtSpan(n), "CachePurge redefined")
		return
	}
	c.Purge = b.aclRef(n, spec)
}

func serviceCache(s *Service) *Cache {
	if s.Rare().Cache == nil {
		s.SetRare().Cache = &Cache{}
	}
	return s.Rare().Cache
}

func (b *builder) noteCache(s *Service, n *parser.Node) {
	if ex := b.svcs[s]; !ex.cache.tuned {
		ex.cache.tuned, ex.cache.tunedSpan = true, stmtSpan(n)
	}
}

// finishCache checks a service's cache once its block is read.
func (b *builder) finishCache(s *Service) {
	c := s.Rare().Cache
	if c == nil {
		return
	}
	ex := b.svcs[s]
	if c.Size == 0 {
		if !ex.cache.seen { // else Cache's own error was given
			b.errorf(ex.cache.tunedSpan, "cache settings without Cache SIZE")
		}
		s.SetRare().Cache = nil
		return
	}
	if c.MaxObject == 0 {
		c.MaxObject = min(DefaultCacheMaxObject, c.Size/4)
	}
	if c.MaxObject > c.Size {
		b.errorf(ex.cache.maxSet.Span, "CacheMaxObject is larger than the cache (%d bytes)", c.Size)
	}
}
