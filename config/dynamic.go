package config

import (
	"strings"

	"lbd/parser"
)

// resolveModes are Resolve's values; "immediate" is the static default.
var resolveModes = map[string]string{
	"immediate": "", "first": ResolveFirst, "all": ResolveAll, "srv": ResolveSRV,
}

// families are Family's values, stored as written ("any" as "").
var families = map[string]string{"any": "", "inet": "inet", "inet6": "inet6", "unix": "unix"}

// initDynamicBackendTable adds the Pound 4 dynamic backend statements.
func initDynamicBackendTable(t table[*Backend]) {
	t.add("Resolve", "[sl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		m, ok := resolveModes[strings.ToLower(u[0].arg.Text)]
		if !ok {
			b.errorf(u[0].arg.Span, "unsupported resolve mode")
			return
		}
		be.SetRare().Resolve = m
	})
	t.add("Family", "[sl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		f, ok := families[strings.ToLower(u[0].arg.Text)]
		if !ok {
			b.errorf(u[0].arg.Span, "unsupported address family")
			return
		}
		be.SetRare().Family = f
	})
	t.add("IgnoreSRVWeight", "b", func(_ *builder, be *Backend, _ *parser.Node, u []unit) {
		be.SetRare().IgnoreSRVWeight = boolArg(u[0])
	})
	t.add("OverrideTTL", "[nl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			be.SetRare().OverrideTTL = d
		}
	})
	t.add("RetryInterval", "[nl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			be.SetRare().RetryInterval = d
		}
	})
}

// dynamicBackend checks a matrix backend once its address is known.
func (b *builder) dynamicBackend(be *Backend, n *parser.Node) {
	switch {
	case b.opts.NoDNS:
		b.errorf(stmtSpan(n), "Dynamic backend creation is not available: disabled by -Wno-dns")
	case be.Rare().Family == "unix":
		b.errorf(stmtSpan(n), "Family unix cannot be used with Resolve %s", be.Rare().Resolve)
	}
}
