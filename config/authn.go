package config

import (
	"strings"

	"lbd/edgeauth"
	"lbd/parser"
)

// Authentication at the edge (lbd extension, both dialects): named
// top-level blocks JWTAuth, APIKeyAuth and ForwardAuth define checks;
// a service's Authenticate statement requires them (a refused request
// gets the check's answer: 401, 403, a redirect, or the forward
// authentication service's reply), and the conditions JWT and APIKey
// test them anywhere a condition goes. Definitions precede their use, as
// named ACLs do.

// Condition kinds of edge authentication.
const (
	// CondJWT holds when the request carries a token Authn verifies;
	// with Name set, when that claim (or one element of it) matches
	// Pattern too.
	CondJWT CondKind = "jwt"
	// CondAPIKey holds when the request presents a key of Authn's file.
	CondAPIKey CondKind = "apikey"
)

// Authn is one named authentication block.
type Authn struct {
	Pos  Locus  `json:"pos"`
	Name string `json:"name"`
	// Kind is "jwt", "apikey" or "forward".
	Kind    string           `json:"kind"`
	Checker edgeauth.Checker `json:"-"`
}

// authnBuild collects a block's statements until its End.
type authnBuild struct {
	a    *Authn
	node *parser.Node
	jwt  edgeauth.JWTConfig
	// jwksArg is the JWKS statement's URL (errors of the first fetch
	// are reported there); jwksCA the CA file.
	jwksArg *parser.Arg
	key     apiKeyBuild
	fwd     forwardBuild
}

var (
	jwtAuthTable     = table[*authnBuild]{}
	apiKeyAuthTable  = table[*authnBuild]{}
	forwardAuthTable = table[*authnBuild]{}
)

// addAuthnDirectives registers the blocks in the global table.
func addAuthnDirectives() {
	initJWTAuthTable()
	initAPIKeyAuthTable()
	initForwardAuthTable()
	globalTable.add("JWTAuth", "s", func(b *builder, _ *Config, n *parser.Node, u []unit) {
		b.authnBlock(n, u, "jwt", jwtAuthTable)
	}).block()
	globalTable.add("APIKeyAuth", "s", func(b *builder, _ *Config, n *parser.Node, u []unit) {
		b.authnBlock(n, u, "apikey", apiKeyAuthTable)
	}).block()
	globalTable.add("ForwardAuth", "s", func(b *builder, _ *Config, n *parser.Node, u []unit) {
		b.authnBlock(n, u, "forward", forwardAuthTable)
	}).block()
}

// addAuthnConds registers the conditions JWT and APIKey.
func addAuthnConds(t table[*condCtx]) {
	t.add("JWT", ".*", condJWT).withFlags(patternFlags...)
	t.add("APIKey", "s", func(b *builder, c *condCtx, _ *parser.Node, u []unit) {
		if a := b.authnRef(u[0].arg, "apikey"); a != nil {
			*c.conds = append(*c.conds, newCond(Condition{Kind: CondAPIKey}, ConditionRare{Authn: a}))
		}
	})
}

// authnBlock reads one named block and builds its checker.
func (b *builder) authnBlock(n *parser.Node, u []unit, kind string, t table[*authnBuild]) {
	name := u[0].arg
	if b.authns == nil {
		b.authns = map[string]*Authn{}
	}
	if b.authns[name.Text] != nil {
		b.errorf(name.Span, "authentication %q already defined", name.Text)
		return
	}
	ab := &authnBuild{a: &Authn{Pos: LocusOf(stmtSpan(n)), Name: name.Text, Kind: kind}, node: n}
	// Known even when it fails, so references to it add no errors of
	// their own (authnRef).
	b.authns[name.Text] = ab.a
	before := len(b.diags)
	walk(b, t, nil, ab, n.Children)
	if b.hasErrorsSince(before) {
		return
	}
	switch kind {
	case "jwt":
		b.finishJWT(ab)
	case "apikey":
		b.finishAPIKey(ab)
	case "forward":
		b.finishForward(ab)
	}
	if ab.a.Checker != nil {
		b.cfg.Authns = append(b.cfg.Authns, ab.a)
	}
}

// hasErrorsSince reports an error among the diagnostics after the
// first n.
func (b *builder) hasErrorsSince(n int) bool {
	for _, d := range b.diags[n:] {
		if !d.Warning {
			return true
		}
	}
	return false
}

// authnRef resolves a reference to a block defined above; kind "" takes
// any kind.
func (b *builder) authnRef(a parser.Arg, kind string) *Authn {
	x := b.authns[a.Text]
	switch {
	case x == nil:
		b.errorf(a.Span, "no authentication named %q is defined above", a.Text)
		return nil
	case x.Checker == nil:
		return nil // its own errors are reported
	case kind != "" && x.Kind != kind:
		b.errorf(a.Span, "%q is defined by %s, not by %s", a.Text, authnBlockName(x.Kind), authnBlockName(kind))
		return nil
	}
	return x
}

func authnBlockName(kind string) string {
	return map[string]string{"jwt": "JWTAuth", "apikey": "APIKeyAuth", "forward": "ForwardAuth"}[kind]
}

// condJWT is JWT "name" ["CLAIM" [flags] "PATTERN"].
func condJWT(b *builder, c *condCtx, n *parser.Node, u []unit) {
	if len(u) == 0 {
		b.errorf(stmtSpan(n), "required argument missing")
		return
	}
	if u[0].code == 'f' {
		b.errorf(u[0].arg.Span, "expected the name of a JWTAuth block")
		return
	}
	a := b.authnRef(u[0].arg, "jwt")
	if a == nil {
		return
	}
	cond := newCond(Condition{Kind: CondJWT}, ConditionRare{Authn: a})
	rest := u[1:]
	if len(rest) == 0 {
		*c.conds = append(*c.conds, cond)
		return
	}
	if rest[0].code == 'f' {
		b.errorf(rest[0].arg.Span, "expected a claim name before the pattern flags")
		return
	}
	cond.Name = rest[0].arg.Text
	o, pat := b.patternOpts(rest[1:], MatchExact, false)
	switch {
	case o.file != nil:
		b.errorf(rest[1].arg.Span, "-file is not allowed here")
		return
	case len(pat) == 0:
		b.errorf(stmtSpan(n), "a claim needs a pattern")
		return
	case len(pat) > 1:
		b.errorf(pat[1].arg.Span, "superfluous arguments")
		return
	}
	if cond.Pattern = b.compileOpts(pat[0].arg, o); cond.Pattern != nil {
		if o.tag != "" {
			cond.SetRare().Tag = o.tag
		}
		*c.conds = append(*c.conds, cond)
	}
}

// svcAuthenticate is a service's Authenticate "name" ...: every named
// check must pass, in order, before the request goes on.
func svcAuthenticate(b *builder, s *Service, _ *parser.Node, u []unit) {
	for _, x := range u {
		if a := b.authnRef(x.arg, ""); a != nil {
			s.SetRare().Authenticate = append(s.Rare().Authenticate, a)
		}
	}
}

// headerNameArg checks that a is a header field name.
func (b *builder) headerNameArg(a parser.Arg) (string, bool) {
	if a.Text == "" || strings.ContainsFunc(a.Text, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r)
	}) {
		b.errorf(a.Span, "%q is not a header name", a.Text)
		return "", false
	}
	return a.Text, true
}
