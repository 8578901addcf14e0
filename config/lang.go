package config

import (
	"bytes"
	"strings"

	"lbd/parser"
)

// Statements of Pound 4's request language that are not conditions or
// actions: constants, trusted proxies, the forwarded header, detached
// conditions, the regex dialect, and the per-service FallThrough,
// LogSuppress and RewriteErrors.

// constantDirective handles Constant "name" "value" and
// Constant "name" -file|-filewatch "file" [-trim] into the map m returns.
func constantDirective[T any](m func(x T) *map[string]string) func(*builder, T, *parser.Node, []unit) {
	return func(b *builder, x T, n *parser.Node, u []unit) {
		name := u[0].arg.Text
		var file *parser.Arg
		watch, trim := false, false
		value, hasValue := "", false
		for _, v := range u[1:] {
			switch {
			case v.code != 'f':
				value, hasValue = v.arg.Text, true
			case v.arg.Text == "-trim":
				trim = true
			default:
				file, watch = v.val, v.arg.Text == "-filewatch"
			}
		}
		set := func(val string) {
			if *m(x) == nil {
				*m(x) = map[string]string{}
			}
			(*m(x))[name] = val
		}
		switch {
		case file != nil && hasValue:
			b.errorf(stmtSpan(n), "superfluous arguments")
		case file == nil && !hasValue:
			b.errorf(stmtSpan(n), "not enough arguments")
		case file == nil:
			set(value)
		case watch:
			// The constant's value is compiled into the strings that use
			// it, so a change takes effect at the next reload.
			b.errorf(file.Span, "Constant -filewatch is not supported by lbd; use -file and reload")
		default:
			_, data, ok := b.readFile(*file)
			if !ok {
				return
			}
			if trim {
				data = bytes.TrimRight(data, " \t\n\v\f\r")
			}
			set(string(data))
		}
	}
}

var logClasses = map[string]int{"info": 1, "success": 2, "redirect": 3, "clterr": 4, "srverr": 5}

// logSuppress parses LogSuppress class...; "all" is every class.
func logSuppress(b *builder, s *Service, _ *parser.Node, u []unit) {
	for _, v := range u {
		t := strings.ToLower(v.arg.Text)
		switch c, ok := logClasses[t]; {
		case t == "all":
			s.SetRare().LogSuppress = []int{1, 2, 3, 4, 5}
		case ok:
			s.SetRare().LogSuppress = append(s.Rare().LogSuppress, c)
		case len(t) == 1 && t[0] >= '1' && t[0] <= '5':
			s.SetRare().LogSuppress = append(s.Rare().LogSuppress, int(t[0]-'0'))
		default:
			b.errorf(v.arg.Span, "unknown response class")
		}
	}
}

// regexType is RegexType posix|pcre: the dialect of the patterns that
// follow it in the file.
func regexType(b *builder, _ *Config, _ *parser.Node, u []unit) {
	switch strings.ToLower(u[0].arg.Text) {
	case "posix":
		b.pcre = false
	case "pcre", "perl":
		b.pcre = true
	default:
		b.errorf(u[0].arg.Span, "unrecognized regex type")
	}
}

// detachedCondition is a top-level Condition "name" ... End.
func detachedCondition(b *builder, c *Config, n *parser.Node, u []unit) {
	name := u[0].arg.Text
	if b.detached[name] {
		b.errorf(u[0].arg.Span, "condition %s already defined", name)
		return
	}
	d := &Detached{Name: name}
	group := &Condition{Kind: CondMatch}
	if len(u) > 1 {
		switch strings.ToLower(u[1].arg.Text) {
		case "and":
		case "or":
			group.Or = true
		default:
			b.errorf(u[1].arg.Span, "expected AND or OR, but found %s", u[1].arg.Text)
			return
		}
	}
	walk(b, condTable, condUnsupported, &condCtx{conds: &group.Sub, icase: c.IgnoreCase}, n.Children)
	d.Conds = []*Condition{group}
	if at, ok := b.firstRequestCond(n.Children); ok {
		b.requestOnly[name] = at
	}
	b.detached[name] = true
	c.Detached = append(c.Detached, d)
}

// combineHeaders lists the headers whose repeated lines are joined.
func combineHeaders(b *builder, c *Config, n *parser.Node, _ []unit) {
	for _, ch := range n.Children {
		if ch.Keyword != "" || len(ch.Args) != 1 || !isToken(ch.Args[0].Text) {
			b.errorf(ch.Span, "expected a header name")
			continue
		}
		c.CombineHeaders = append(c.CombineHeaders, ch.Args[0].Text)
	}
}

func initLangGlobal(t table[*Config]) {
	t.add("Constant", "sf*s?", constantDirective(func(c *Config) *map[string]string { return &c.Constants })).
		withFlags("file=", "filewatch=", "trim")
	t.add("TrustedIP", ".*", func(b *builder, c *Config, n *parser.Node, _ []unit) { c.TrustedIP = b.trustedIP(n) }).either()
	t.add("ForwardedHeader", "s", func(_ *builder, c *Config, _ *parser.Node, u []unit) { c.ForwardedHeader = u[0].arg.Text })
	t.add("ACL", ".*", globalACL).either()
	t.add("Condition", "sl?", detachedCondition).block()
	t.add("CombineHeaders", "", combineHeaders).block()
	t.add("RegexType", "[sl]", regexType)
	// lbd follows -filewatch files with inotify, so the poll interval of
	// Pound's fallback has nothing to set.
	t.add("WatcherTTL", "[nl]", func(b *builder, _ *Config, _ *parser.Node, u []unit) {
		b.durationArg(u[0].arg)
	})
}

func initLangListener(t table[*Listener]) {
	lr := func(_ *builder, l *Listener) *Rewrites { return &l.Rewrites }
	t.add("Rewrite", "l?", rewriteDirective(lr, func(b *builder, _ *Listener) bool { return b.cfg.IgnoreCase })).block()
	t.add("RewriteErrors", "b", func(_ *builder, l *Listener, _ *parser.Node, u []unit) { l.RewriteErrors = boolArg(u[0]) })
	t.add("Constant", "sf*s?", constantDirective(func(l *Listener) *map[string]string { return &l.Constants })).
		withFlags("file=", "filewatch=", "trim")
	t.add("TrustedIP", ".*", func(b *builder, l *Listener, n *parser.Node, _ []unit) { l.TrustedIP = b.trustedIP(n) }).either()
	t.add("ForwardedHeader", "s", func(_ *builder, l *Listener, _ *parser.Node, u []unit) { l.ForwardedHeader = u[0].arg.Text })
}

func initLangService(t table[*Service]) {
	sr := func(_ *builder, s *Service) *Rewrites { return &s.SetRare().Rewrites }
	t.add("Rewrite", "l?", rewriteDirective(sr, func(b *builder, s *Service) bool { return b.svcs[s].cond.icase })).block()
	t.add("RewriteErrors", "b", func(_ *builder, s *Service, _ *parser.Node, u []unit) {
		v := boolArg(u[0])
		s.SetRare().RewriteErrors = &v
	})
	t.add("FallThrough", "b?", func(_ *builder, s *Service, _ *parser.Node, u []unit) {
		s.FallThrough = len(u) == 0 || boolArg(u[0])
	})
	t.add("LogSuppress", "[sln]+", logSuppress)
	t.add("Constant", "sf*s?", constantDirective(func(s *Service) *map[string]string { return &s.SetRare().Constants })).
		withFlags("file=", "filewatch=", "trim")
	t.add("TrustedIP", ".*", func(b *builder, s *Service, n *parser.Node, _ []unit) { s.SetRare().TrustedIP = b.trustedIP(n) }).either()
	t.add("ForwardedHeader", "s", func(_ *builder, s *Service, _ *parser.Node, u []unit) { s.SetRare().ForwardedHeader = u[0].arg.Text })
}

// firstRequestCond finds the first statement among nodes (inside Match
// and Not too) that only a request has, and so cannot be evaluated on a
// response.
func (b *builder) firstRequestCond(nodes []*parser.Node) (parser.Span, bool) {
	for _, n := range nodes {
		kw := lower(n.Keyword)
		switch kw {
		case "match":
			if at, ok := b.firstRequestCond(n.Children); ok {
				return at, true
			}
			continue
		case "not":
			inner := []*parser.Node{{Keyword: "", Span: n.Span}}
			if len(n.Args) > 0 {
				inner[0] = &parser.Node{Keyword: n.Args[0].Text, Args: n.Args[1:], Span: n.Args[0].Span, Children: n.Children, Block: n.Block}
			} else {
				inner = n.Children
			}
			if at, ok := b.firstRequestCond(inner); ok {
				return at, true
			}
			continue
		case "eval":
			if len(n.Args) > 0 {
				if at, ok := b.requestOnly[n.Args[0].Text]; ok {
					return at, true
				}
			}
			continue
		}
		if respConds[kw] == "" {
			return stmtSpan(n), true
		}
	}
	return parser.Span{}, false
}
