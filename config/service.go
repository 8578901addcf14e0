package config

import (
	"regexp"
	"strings"

	"lbd/parser"
)

// serviceExtra is build-time state of a service.
type serviceExtra struct {
	cond     *condCtx
	nameSpan parser.Span // where the name was written, for "not unique"
	cache    cacheExtra
}

// serviceUnsupported are service directives lbd accepts without
// implementing them.
var serviceUnsupported = func() map[string]string {
	m := canonSet("OrURLS", "DynScale",
		"CompressionAlgorithm", "PinnedConnection", "BackendCookie",
		"ForceHTTP10")
	for k, v := range condUnsupported {
		m[k] = v
	}
	return m
}()

// routingPolicies are zproxy's algorithms; the names are case-sensitive.
var routingPolicies = map[string]bool{"ROUND_ROBIN": true, "LEAST_CONNECTIONS": true, "RESPONSE_TIME": true, "PENDING_CONNECTIONS": true}

// redirectURLRe splits a redirect URL as Pound's LOCATION pattern does:
// scheme, host, and the path that decides has_uri.
var redirectURLRe = regexp.MustCompile(`^(?i)(https?)://([^/]+)(.*)$`)

var svcTable = table[*Service]{}

func initServiceTable() {
	t := svcTable
	for k, d := range condTable {
		fn := d.fn
		e := &directive[*Service]{name: d.name, items: d.items, flags: d.flags, form: d.form, depr: d.depr,
			fn: func(b *builder, s *Service, n *parser.Node, u []unit) { fn(b, b.svcs[s].cond, n, u) }}
		t[k] = e
	}
	t.add("IgnoreCase", "b", func(_ *builder, s *Service, _ *parser.Node, u []unit) { s.IgnoreCase = boolArg(u[0]) }).
		deprecated("use the -icase matching directive flag to request case-insensitive comparison")
	t.add("Disabled", "b", func(_ *builder, s *Service, _ *parser.Node, u []unit) { s.Disabled = boolArg(u[0]) })
	t.add("Authenticate", "s+", svcAuthenticate)
	addServiceBackends(t)
	t.add("Session", "", serviceSession).block()
	addServiceBalancing(t)
	addHeaderDirectives(t, func(s *Service) *HeaderRules { return &s.SetRare().Headers }, func(s *Service) *Rewrites { return &s.SetRare().Rewrites })
	initLangService(t)
	addCacheDirectives(t)
	t.add("RewriteUrl", "ssl?", serviceRewriteURL)
	t.add("RewriteLocation", "nn?", func(b *builder, s *Service, _ *parser.Node, u []unit) {
		if v, _, ok := b.rewriteLocation(u); ok {
			s.SetRare().RewriteLoc = &v
		}
	})
	t.add("StrictTransportSecurity", "n", func(b *builder, s *Service, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, maxInt); ok {
			s.SetRare().STS = int(n)
		}
	})
}

// addServiceBackends adds the statements that give a service its
// backends: regular ones and the special ones lbd answers itself.
func addServiceBackends(t table[*Service]) {
	t.add("Backend", "s?", serviceBackend).block()
	t.add("Emergency", "", func(b *builder, s *Service, n *parser.Node, _ []unit) {
		if be := b.backend(n, true); be != nil {
			s.SetRare().Emergency = append(s.Rare().Emergency, be)
		}
	}).block()
	t.add("UseBackend", "s", func(b *builder, s *Service, n *parser.Node, u []unit) {
		s.Backends = append(s.Backends, b.backendRef(n, u[0].arg.Text))
	})
	t.add("Redirect", "n?s", serviceRedirect)
	t.add("RedirectAppend", "n?s", serviceRedirect)
	t.add("RedirectDynamic", "n?s", serviceRedirect)
	t.add("Error", "ns?", serviceError)
	t.add("LuaBackend", "s+", func(b *builder, s *Service, n *parser.Node, u []unit) {
		if c := b.luaCall(n, u); c != nil {
			be := specialBackend(n, BackendLua)
			be.SetRare().Lua = c
			s.Backends = append(s.Backends, be)
		}
	})
	t.add("ContentCapture", "[nl]", func(b *builder, s *Service, _ *parser.Node, u []unit) {
		if n, ok := b.sizeArg(u[0].arg, 1<<30); ok {
			s.SetRare().ContentCapture = n
		}
	})
	t.add("Metrics", "", func(b *builder, s *Service, n *parser.Node, _ []unit) {
		s.Backends = append(s.Backends, &Backend{Pos: LocusOf(stmtSpan(n)), Kind: BackendMetrics, Priority: 1, Weight: 1})
	})
	t.add("Control", "", func(b *builder, s *Service, n *parser.Node, _ []unit) {
		s.Backends = append(s.Backends, &Backend{Pos: LocusOf(stmtSpan(n)), Kind: BackendControl, Priority: 1, Weight: 1})
	})
	t.add("Dashboard", "", func(b *builder, s *Service, n *parser.Node, _ []unit) {
		s.Backends = append(s.Backends, specialBackend(n, BackendDashboard))
	})
	t.add("SendFile", "s", serviceSendFile)
	t.add("Success", "", func(b *builder, s *Service, n *parser.Node, _ []unit) {
		s.Backends = append(s.Backends, specialBackend(n, BackendSuccess))
	})
}

// errTwoAlgorithms refuses a service with both Pound's and zproxy's
// choice of algorithm.
const errTwoAlgorithms = "Balancer and RoutingPolicy cannot both choose the service's algorithm"

// addServiceBalancing adds Pound's Balancer and zproxy's RoutingPolicy.
func addServiceBalancing(t table[*Service]) {
	t.add("Balancer", "[sl]", func(b *builder, s *Service, n *parser.Node, u []unit) {
		if s.RoutingPolicy != "" {
			b.errorf(stmtSpan(n), errTwoAlgorithms)
			return
		}
		if v, ok := b.balancer(u[0].arg); ok {
			s.Balancer = v
		}
	})
	t.add("RoutingPolicy", "[sl]", func(b *builder, s *Service, n *parser.Node, u []unit) {
		if s.Balancer != "" {
			b.errorf(stmtSpan(n), errTwoAlgorithms)
			return
		}
		if !routingPolicies[u[0].arg.Text] {
			b.errorf(u[0].arg.Span, "unsupported routing policy")
			return
		}
		s.RoutingPolicy = u[0].arg.Text
	})
}

// service builds a Service block and appends it to list.
func (b *builder) service(n *parser.Node, u []unit, list []*Service) []*Service {
	s := &Service{Pos: LocusOf(stmtSpan(n)), Backends: []*Backend{}}
	icase := b.cfg.IgnoreCase || serviceIgnoreCase(n)
	ex := &serviceExtra{cond: &condCtx{conds: &s.Conditions, icase: icase}}
	b.svcs[s] = ex
	if len(u) > 0 {
		s.Name, ex.nameSpan = u[0].arg.Text, u[0].arg.Span
	}
	walk(b, svcTable, serviceUnsupported, s, n.Children)
	b.finishCache(s)
	if s.RoutingPolicy == "" && s.Balancer == "" && b.cfg.Dialect == DialectZproxy {
		s.RoutingPolicy = "ROUND_ROBIN"
	}
	return append(list, s)
}

// serviceIgnoreCase finds a service's IgnoreCase before its patterns are
// compiled, so it applies wherever it is written (classic semantics).
func serviceIgnoreCase(n *parser.Node) bool {
	on := false
	for _, c := range n.Children {
		if keywordIs(c.Keyword, "ignorecase") && len(c.Args) == 1 {
			on = c.Args[0].Text == "1" || boolWords[strings.ToLower(c.Args[0].Text)]
		}
	}
	return on
}

func serviceBackend(b *builder, s *Service, n *parser.Node, u []unit) {
	if len(u) > 0 {
		// Pound's deprecated `Backend "name" ... End` reference form.
		if b.warnDeprecated() {
			b.warnf(u[0].arg.Span, "referring to a named backend by tagged Backend statement is deprecated; use the 'Use %q' statement instead", u[0].arg.Text)
		}
		if ref := b.backendRefBlock(n, u[0].arg.Text); ref != nil {
			s.Backends = append(s.Backends, ref)
		}
		return
	}
	if be := b.backend(n, false); be != nil {
		s.Backends = append(s.Backends, be)
	}
}

// serviceRedirect handles Redirect, RedirectAppend and RedirectDynamic
// [code] "url".
func serviceRedirect(b *builder, s *Service, n *parser.Node, u []unit) {
	code := 302
	if len(u) == 2 {
		c, ok := b.intArg(u[0].arg, 0, maxInt)
		if !ok {
			return
		}
		switch c {
		case 301, 302, 303, 307, 308:
			code = int(c)
		default:
			b.errorf(u[0].arg.Span, "invalid status code")
			return
		}
	}
	url := u[len(u)-1].arg.Text
	m := redirectURLRe.FindStringSubmatch(url)
	if m == nil {
		b.errorf(stmtSpan(n), "Redirect bad URL")
		return
	}
	r := &Redirect{Code: code, URL: url, HasURI: m[3] != "", Append: strings.EqualFold(n.Keyword, "RedirectAppend")}
	if m[3] == "/" && b.cfg.Dialect == DialectPound {
		// Pound drops a lone "/" path and then appends the request's;
		// zproxy sends the URL as written.
		r.URL = strings.TrimSuffix(url, "/")
	}
	be := &Backend{Pos: LocusOf(stmtSpan(n)), Kind: BackendRedirect, Priority: 1, Weight: 1}
	be.SetRare().Redirect = r
	s.Backends = append(s.Backends, be)
}

// serviceError is Pound 4's Error STATUS ["file"] backend.
func serviceError(b *builder, s *Service, n *parser.Node, u []unit) {
	st, ok := b.intArg(u[0].arg, 0, maxInt)
	if !ok {
		return
	}
	if !poundErrorCodes[st] {
		b.errorf(u[0].arg.Span, "unsupported status code")
		return
	}
	be := &Backend{Pos: LocusOf(stmtSpan(n)), Kind: BackendError, Priority: 1, Weight: 1}
	be.SetRare().Status = int(st)
	if len(u) > 1 {
		if be.SetRare().Page, ok = b.errorPage(u[1].arg); !ok {
			return
		}
	}
	s.Backends = append(s.Backends, be)
}

func serviceRewriteURL(b *builder, s *Service, _ *parser.Node, u []unit) {
	r := RewriteURL{Replacement: u[1].arg.Text}
	if len(u) > 2 {
		if !strings.EqualFold(u[2].arg.Text, "last") {
			b.errorf(u[2].arg.Span, "expected last, but found %s", u[2].arg.Text)
			return
		}
		r.Last = true
	}
	if r.Pattern = b.compile(u[0].arg, MatchRegex, false); r.Pattern != nil {
		s.SetRare().RewriteURL = append(s.Rare().RewriteURL, r)
	}
}
