package config

import (
	"strings"

	"lbd/parser"
)

// Header edit directives, shared by listeners and services. Pound 4 has
// SetHeader/DeleteHeader (AddHeader and HeadRemove are its deprecated
// aliases); zproxy has Add/Remove Request/Response Header and
// ReplaceHeader. A removal pattern matches the whole "Name: value" line,
// case-insensitively unless -case is given.

// addHeaderDirectives registers the header edits on a section table; hr
// gives the HeaderRules of the section's value.
//
// In the Pound dialect SetHeader and DeleteHeader (and their aliases) are
// request modifications of the section's rules (rw), run in statement
// order with SetURL, Rewrite and the rest; zproxy's header edits keep
// their fixed order.
func addHeaderDirectives[T any](t table[T], hr func(T) *HeaderRules, rw func(T) *Rewrites) {
	set := func(b *builder, x T, n *parser.Node, u []unit) {
		if !b.headerLine(u[0].arg) {
			return
		}
		if b.cfg.Dialect == DialectPound {
			sectionSink(rw(x))(b, &Action{Pos: LocusOf(stmtSpan(n)), Kind: ActSetHeader, Value: u[0].arg.Text, HasVal: true})
			return
		}
		h := hr(x)
		h.RequestSet = append(h.RequestSet, u[0].arg.Text)
	}
	del := func(b *builder, x T, n *parser.Node, p *Pattern) {
		if b.cfg.Dialect == DialectPound {
			sectionSink(rw(x))(b, &Action{Pos: LocusOf(stmtSpan(n)), Kind: ActDeleteHeader, Pattern: p})
			return
		}
		h := hr(x)
		h.RequestRemove = append(h.RequestRemove, p)
	}
	addURLActions(t, func(_ *builder, x T) actionSink { return sectionSink(rw(x)) })
	addLuaModify(t, func(_ *builder, x T) actionSink { return sectionSink(rw(x)) })
	addReq := func(b *builder, x T, n *parser.Node, u []unit) {
		// Pound 4 made AddHeader an alias of SetHeader; zproxy appends.
		if b.cfg.Dialect == DialectPound {
			set(b, x, n, u)
			return
		}
		if b.headerLine(u[0].arg) {
			h := hr(x)
			h.RequestAdd = append(h.RequestAdd, u[0].arg.Text)
		}
	}
	t.add("SetHeader", "s", set)
	t.add("AddHeader", "s", addReq).deprecated(useInstead("SetHeader"))
	t.alias("HeaderAdd", "AddHeader", useInstead("SetHeader"))
	t.add("AddRequestHeader", "s", addReq)
	t.add("AddResponseHeader", "s", func(b *builder, x T, _ *parser.Node, u []unit) {
		if b.headerLine(u[0].arg) {
			h := hr(x)
			h.ResponseAdd = append(h.ResponseAdd, u[0].arg.Text)
		}
	})
	t.add("DeleteHeader", "f*s", func(b *builder, x T, n *parser.Node, u []unit) {
		if p := b.patternArgs(u, MatchRegex, true); p != nil {
			del(b, x, n, p)
		}
	}).withFlags(patternFlags...)
	remove := func(b *builder, x T, n *parser.Node, u []unit) {
		if p := b.compile(u[0].arg, MatchRegex, true); p != nil {
			del(b, x, n, p)
		}
	}
	t.add("HeaderRemove", "s", remove).deprecated(useInstead("DeleteHeader"))
	t.alias("HeadRemove", "HeaderRemove", useInstead("DeleteHeader"))
	t.add("RemoveRequestHeader", "s", func(b *builder, x T, _ *parser.Node, u []unit) {
		if p := b.compile(u[0].arg, MatchRegex, true); p != nil {
			h := hr(x)
			h.RequestRemove = append(h.RequestRemove, p)
		}
	})
	t.add("RemoveResponseHeader", "s", func(b *builder, x T, _ *parser.Node, u []unit) {
		if p := b.compile(u[0].arg, MatchRegex, true); p != nil {
			h := hr(x)
			h.ResponseRemove = append(h.ResponseRemove, p)
		}
	})
	t.add("ReplaceHeader", "[sl]sss", func(b *builder, x T, _ *parser.Node, u []unit) {
		if r, ok := b.replaceHeader(u); ok {
			h := hr(x)
			h.Replace = append(h.Replace, r)
		}
	})
}

// headerLine checks that a header to add is "Name: value" with a valid
// field name, so a typo cannot produce malformed requests.
func (b *builder) headerLine(a parser.Arg) bool {
	name, _, ok := strings.Cut(a.Text, ":")
	if !ok || name == "" || !isToken(name) {
		b.errorf(a.Span, "invalid header: expected \"Name: value\"")
		return false
	}
	return true
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

func (b *builder) replaceHeader(u []unit) (ReplaceHeader, bool) {
	var r ReplaceHeader
	switch strings.ToLower(u[0].arg.Text) {
	case "request":
	case "response":
		r.Response = true
	default:
		b.errorf(u[0].arg.Span, "expected Request or Response, but found %s", u[0].arg.Text)
		return r, false
	}
	r.Name = b.compile(u[1].arg, MatchRegex, true)
	r.Match = b.compile(u[2].arg, MatchRegex, false)
	r.Replacement = u[3].arg.Text
	return r, r.Name != nil && r.Match != nil
}
