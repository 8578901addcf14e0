package config

import (
	"strings"

	"lbd/parser"
)

// Pound 4's request modifications and Rewrite branches (pound.texi,
// "Request modifications", "Conditional branches", "Modifying
// responses"). A section's plain SetHeader, SetPath... statements join
// its last rule when that rule has no conditions, otherwise a new
// unconditional rule, so statement order is kept (src/config.c
// rewrite_rule_last_uncond).

// actionSink receives the actions a section's statements produce.
type actionSink func(b *builder, a *Action)

// rewriteTarget returns the rules a section collects.
type rewriteTarget[T any] func(b *builder, x T) *Rewrites

// addActionDirectives registers SetHeader and DeleteHeader, and with
// full the URL modifications, on a Rewrite table.
func addActionDirectives[T any](t table[T], sink func(b *builder, x T) actionSink, full bool) {
	t.add("SetHeader", "s", func(b *builder, x T, n *parser.Node, u []unit) {
		if b.headerLine(u[0].arg) {
			sink(b, x)(b, &Action{Pos: LocusOf(stmtSpan(n)), Kind: ActSetHeader, Value: u[0].arg.Text, HasVal: true})
		}
	})
	t.add("DeleteHeader", "f*s", func(b *builder, x T, n *parser.Node, u []unit) {
		if p := b.patternArgs(u, MatchRegex, true); p != nil {
			sink(b, x)(b, &Action{Pos: LocusOf(stmtSpan(n)), Kind: ActDeleteHeader, Pattern: p})
		}
	}).withFlags(patternFlags...)
	addLuaModify(t, sink)
	if full {
		addURLActions(t, sink)
	}
}

// addURLActions registers SetURL, SetPath, SetQuery, DeleteQuery and
// SetQueryParam.
func addURLActions[T any](t table[T], sink func(b *builder, x T) actionSink) {
	act := func(kind ActionKind) func(*builder, T, *parser.Node, []unit) {
		return func(b *builder, x T, n *parser.Node, u []unit) {
			a := &Action{Pos: LocusOf(stmtSpan(n)), Kind: kind}
			for _, v := range u {
				if v.code == 'f' {
					a.Encode = true
					continue
				}
				a.Value, a.HasVal = v.arg.Text, true
			}
			sink(b, x)(b, a)
		}
	}
	t.add("SetURL", "s", act(ActSetURL))
	t.add("SetPath", "f?s", act(ActSetPath)).withFlags("encode")
	t.add("SetQuery", "s", act(ActSetQuery))
	t.add("DeleteQuery", "", act(ActDeleteQuery))
	t.add("SetQueryParam", "sf?s?", func(b *builder, x T, n *parser.Node, u []unit) {
		a := &Action{Pos: LocusOf(stmtSpan(n)), Kind: ActSetQueryParam, Name: u[0].arg.Text}
		for _, v := range u[1:] {
			if v.code == 'f' {
				a.Encode = true
				continue
			}
			a.Value, a.HasVal = v.arg.Text, true
		}
		sink(b, x)(b, a)
	}).withFlags("encode")
}

// sectionSink appends to the last unconditional request rule of r.
func sectionSink(r *Rewrites) actionSink {
	return func(_ *builder, a *Action) {
		if n := len(r.Request); n > 0 && len(r.Request[n-1].Conds) == 0 {
			r.Request[n-1].Actions = append(r.Request[n-1].Actions, a)
			return
		}
		r.Request = append(r.Request, &Rule{Pos: a.Pos, Actions: []*Action{a}})
	}
}

// rwCtx is the branch a Rewrite statement is filling.
type rwCtx struct {
	rule *Rule
	cond *condCtx
}

var (
	rwReqTable  = table[*rwCtx]{}
	rwRespTable = table[*rwCtx]{}
)

// respConds are the conditions Pound allows in Rewrite response: they
// look at the response (pound.texi "Modifying responses").
var respConds = canonSet("Header", "StringMatch", "Match", "Not", "Eval", "LuaMatch")

func initRewriteTables() {
	wrap := func(t table[*rwCtx], only map[string]string) {
		for k, d := range condTable {
			if only != nil && only[k] == "" {
				continue
			}
			fn := d.fn
			t[k] = &directive[*rwCtx]{name: d.name, items: d.items, flags: d.flags, form: d.form, depr: d.depr,
				fn: func(b *builder, r *rwCtx, n *parser.Node, u []unit) { fn(b, r.cond, n, u) }}
		}
		sink := func(_ *builder, r *rwCtx) actionSink {
			return func(_ *builder, a *Action) { r.rule.Actions = append(r.rule.Actions, a) }
		}
		addActionDirectives(t, sink, only == nil)
	}
	wrap(rwReqTable, nil)
	wrap(rwRespTable, respConds)
}

// rewriteDirective handles Rewrite [request|response] ... Else ... End
// in a section whose rules target returns.
func rewriteDirective[T any](target rewriteTarget[T], icase func(b *builder, x T) bool) func(*builder, T, *parser.Node, []unit) {
	return func(b *builder, x T, n *parser.Node, u []unit) {
		resp := false
		if len(u) > 0 {
			switch strings.ToLower(u[0].arg.Text) {
			case "request":
			case "response":
				resp = true
			default:
				b.errorf(u[0].arg.Span, "expected request or response, but found %s", u[0].arg.Text)
				return
			}
		}
		t := rwReqTable
		if resp {
			t = rwRespTable
		}
		rule := b.rewriteRule(n, t, icase(b, x))
		r := target(b, x)
		if resp {
			r.Response = append(r.Response, rule)
		} else {
			r.Request = append(r.Request, rule)
		}
	}
}

// rewriteRule builds the branches of one Rewrite block.
func (b *builder) rewriteRule(n *parser.Node, t table[*rwCtx], icase bool) *Rule {
	first := &Rule{Pos: LocusOf(stmtSpan(n)), Actions: []*Action{}}
	br := first
	resp := t["seturl"] == nil // only request rules may change the URL
	ctx := &rwCtx{rule: br, cond: &condCtx{conds: &br.Conds, icase: icase, resp: resp}}
	for _, c := range n.Children {
		if c.Is("Else") && !c.Block {
			if len(c.Args) > 0 {
				b.errorf(c.Args[0].Span, "extra arguments")
			}
			next := &Rule{Pos: LocusOf(stmtSpan(c)), Actions: []*Action{}}
			br.Else, br = next, next
			ctx = &rwCtx{rule: br, cond: &condCtx{conds: &br.Conds, icase: icase, resp: resp}}
			continue
		}
		dispatch(b, t, condUnsupported, ctx, c)
	}
	return first
}
