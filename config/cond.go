package config

import (
	"bufio"
	"bytes"
	"strings"

	"lbd/parser"
)

// condCtx is where service conditions go: the service's list, or the Sub
// list of a Match group. icase is the default case sensitivity of URL-like
// patterns (IgnoreCase, and always for zproxy URLs).
type condCtx struct {
	conds *[]*Condition
	icase bool
	resp  bool // Rewrite response: conditions look at the response
}

// condUnsupported are Pound 4 conditions lbd accepts without implementing
// them; a service using one matches more than it would in Pound.
var condUnsupported = canonSet("ClientCert")

var condTable = table[*condCtx]{}

func initCondTable() {
	t := condTable
	simple := func(kind CondKind, def PatternKind) func(*builder, *condCtx, *parser.Node, []unit) {
		return func(b *builder, c *condCtx, n *parser.Node, u []unit) {
			icase := c.icase || kind == CondURL && b.cfg.Dialect == DialectZproxy
			b.addCond(c, n, &Condition{Kind: kind}, u, patOpts{kind: def, icase: icase})
		}
	}
	t.add("URL", "f*s?", simple(CondURL, MatchRegex)).withFlags(patternFlags...)
	t.add("Path", "f*s?", simple(CondPath, MatchRegex)).withFlags(patternFlags...)
	t.add("Query", "f*s?", simple(CondQuery, MatchRegex)).withFlags(patternFlags...)
	t.add("Method", "f*s?", simple(CondMethod, MatchRegex)).withFlags(patternFlags...)
	t.add("Host", "f*s?", func(b *builder, c *condCtx, n *parser.Node, u []unit) {
		b.addCond(c, n, &Condition{Kind: CondHost}, u, patOpts{kind: MatchExact, icase: true})
	}).withFlags(patternFlags...)
	t.add("QueryParam", "sf*s", func(b *builder, c *condCtx, n *parser.Node, u []unit) {
		b.addCond(c, n, &Condition{Kind: CondQueryParam, Name: u[0].arg.Text}, u[1:], patOpts{kind: MatchRegex, icase: c.icase})
	}).withFlags(patternFlags...)
	t.add("Header", ".*", condHeader).withFlags(patternFlags...)
	t.alias("HeadRequire", "Header", useInstead("Header"))
	t.add("HeadDeny", "f*s?", func(b *builder, c *condCtx, n *parser.Node, u []unit) {
		b.addCond(c, n, &Condition{Kind: CondHeader, Not: true}, u, patOpts{kind: MatchRegex, icase: true})
	}).withFlags(patternFlags...).deprecated(useInstead("Not Header"))
	t.add("StringMatch", "sf*s", func(b *builder, c *condCtx, n *parser.Node, u []unit) {
		b.addCond(c, n, newCond(Condition{Kind: CondStringMatch}, ConditionRare{Subject: u[0].arg.Text}), u[1:], patOpts{kind: MatchRegex, icase: c.icase})
	}).withFlags(patternFlags...)
	t.add("ACL", ".*", condACL).either()
	t.add("Eval", "s", func(b *builder, c *condCtx, n *parser.Node, u []unit) {
		if !b.detached[u[0].arg.Text] {
			b.errorf(u[0].arg.Span, "%s: no such condition", u[0].arg.Text)
			return
		}
		if bad, ok := b.requestOnly[u[0].arg.Text]; ok && c.resp {
			b.errorf(stmtSpan(n), "eval refers to a condition that cannot be used in Rewrite response")
			b.followf(bad, "this is the location of the offending statement")
			return
		}
		*c.conds = append(*c.conds, &Condition{Kind: CondEval, Name: u[0].arg.Text})
	})
	t.add("BasicAuth", "f?s?", condBasicAuth).withFlags("file=", "filewatch=")
	t.add("TBF", "s[nl]n", condTBF)
	t.add("LuaMatch", "s+", func(b *builder, c *condCtx, n *parser.Node, u []unit) {
		if call := b.luaCall(n, u); call != nil {
			*c.conds = append(*c.conds, newCond(Condition{Kind: CondLua}, ConditionRare{Lua: call}))
		}
	})
	t.add("Match", "l?", condMatch).block()
	t.add("Not", ".*", condNot).either()
	addAuthnConds(t)
	for _, d := range t {
		d.fn = stampPos(d.fn)
	}
}

// stampPos wraps a condition directive so that the conditions it adds
// know where they are written (the routing explainer names them); one
// that already knows (a condition inside Not) keeps its own.
func stampPos(fn func(*builder, *condCtx, *parser.Node, []unit)) func(*builder, *condCtx, *parser.Node, []unit) {
	return func(b *builder, c *condCtx, n *parser.Node, u []unit) {
		before := len(*c.conds)
		fn(b, c, n, u)
		for _, x := range (*c.conds)[before:] {
			if x.Pos.Line() == 0 {
				x.Pos = LocusOf(stmtSpan(n))
			}
		}
	}
}

// addCond completes c with the pattern (or -file patterns) in u, whose
// flags override the directive's defaults def, and appends it to ctx.
func (b *builder) addCond(ctx *condCtx, n *parser.Node, c *Condition, u []unit, def patOpts) {
	o, rest := b.patternOpts(u, def.kind, def.icase)
	c.Decode = o.decode
	if o.tag != "" {
		c.SetRare().Tag = o.tag
	}
	switch {
	case o.file != nil && len(rest) > 0:
		b.errorf(rest[0].arg.Span, "superfluous arguments")
		return
	case o.watch:
		c = b.watchedConds(*o.file, c, o)
	case o.file != nil:
		sub := b.fileConds(*o.file, c, o)
		if sub == nil {
			return
		}
		c = &Condition{Kind: CondMatch, Not: c.Not, Or: true, Sub: sub}
	case len(rest) == 0:
		b.errorf(stmtSpan(n), "required argument missing")
		return
	default:
		if c.Pattern = b.compileOpts(rest[0].arg, o); c.Pattern == nil {
			return
		}
	}
	*ctx.conds = append(*ctx.conds, c)
}

// fileConds reads one pattern per line (blank lines and # comments
// skipped) for -file; the conditions are ORed by the caller.
func (b *builder) fileConds(a parser.Arg, proto *Condition, o patOpts) []*Condition {
	path, data, ok := b.readFile(a)
	if !ok {
		return nil
	}
	var out []*Condition
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		at := parser.Arg{Text: text, Span: parser.Span{
			Start: parser.Pos{File: path, Line: line, Col: 1},
			End:   parser.Pos{File: path, Line: line, Col: len(sc.Text())},
		}}
		p := b.compileOpts(at, o)
		if p == nil {
			return nil
		}
		out = append(out, newCond(Condition{Kind: proto.Kind, Name: proto.Name, Decode: proto.Decode, Pattern: p},
			ConditionRare{Tag: proto.Rare().Tag, Subject: proto.Rare().Subject}))
	}
	if len(out) == 0 {
		b.errorf(a.Span, "%s: no patterns", path)
		return nil
	}
	return out
}

var (
	headerOne = parseArgdef("f*s?")
	headerTwo = parseArgdef("sf*s?")
)

// condHeader handles Header [flags] "pat" (whole line) and
// Header "Name" [flags] "pat" (value of one header), as Pound does: the
// one-argument form is tried first.
func condHeader(b *builder, c *condCtx, n *parser.Node, u []unit) {
	switch {
	case checkArgs(headerOne, u, n) == nil:
		b.addCond(c, n, &Condition{Kind: CondHeader}, u, patOpts{kind: MatchRegex, icase: true})
	case checkArgs(headerTwo, u, n) == nil:
		b.addCond(c, n, &Condition{Kind: CondHeader, Name: u[0].arg.Text}, u[1:], patOpts{kind: MatchRegex, icase: true})
	default:
		b.matchArgs(headerTwo, u, n)
	}
}

// condMatch is Match [AND|OR] ... End.
func condMatch(b *builder, c *condCtx, n *parser.Node, u []unit) {
	m := &Condition{Kind: CondMatch}
	if len(u) > 0 {
		switch strings.ToLower(u[0].arg.Text) {
		case "and":
		case "or":
			m.Or = true
		default:
			b.errorf(u[0].arg.Span, "expected AND or OR, but found %s", u[0].arg.Text)
			return
		}
	}
	walk(b, condTable, condUnsupported, &condCtx{conds: &m.Sub, icase: c.icase}, n.Children)
	*c.conds = append(*c.conds, m)
}

// condNot is `Not COND`: the rest of the line (or the block) is a
// condition whose sense is inverted.
func condNot(b *builder, c *condCtx, n *parser.Node, _ []unit) {
	var inner *parser.Node
	switch {
	case len(n.Args) > 0:
		inner = &parser.Node{Keyword: n.Args[0].Text, Args: n.Args[1:], Block: n.Block,
			Children: n.Children, Span: n.Args[0].Span, EndSpan: n.EndSpan}
	case n.Block && len(n.Children) == 1:
		inner = n.Children[0]
	default:
		b.errorf(stmtSpan(n), "not enough arguments")
		return
	}
	var got []*Condition
	dispatch(b, condTable, condUnsupported, &condCtx{conds: &got, icase: c.icase}, inner)
	for _, x := range got {
		x.Not = !x.Not
		x.Pos = Locus{} // stamped with the whole Not statement
	}
	*c.conds = append(*c.conds, got...)
}
