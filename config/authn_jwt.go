package config

import (
	"crypto/x509"
	"fmt"
	"time"

	"lbd/edgeauth"
	"lbd/parser"
)

// The statements of a JWTAuth block.
func initJWTAuthTable() {
	t := jwtAuthTable
	t.add("KeyFile", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		_, data, ok := b.readFile(u[0].arg)
		if !ok {
			return
		}
		keys, err := edgeauth.ParseKeys(data)
		if err != nil {
			b.errorf(u[0].arg.Span, "%s: %s", u[0].arg.Text, err.Error())
			return
		}
		ab.jwt.Keys = append(ab.jwt.Keys, keys...)
	})
	t.add("JWKS", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if ab.jwksArg != nil {
			b.errorf(u[0].arg.Span, "JWKS given twice")
			return
		}
		ab.jwksArg = &u[0].arg
		ab.jwtJWKS().URL = u[0].arg.Text
	})
	t.add("JWKSCAFile", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if roots := b.caFileArg(u[0].arg); roots != nil {
			ab.jwtJWKS().Roots = roots
		}
	})
	t.add("JWKSRefresh", "[nl]", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			ab.jwtJWKS().Refresh = d.D()
		}
	})
	t.add("JWKSMinRefresh", "[nl]", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			ab.jwtJWKS().MinInterval = d.D()
		}
	})
	t.add("JWKSTimeout", "[nl]", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			ab.jwtJWKS().Timeout = d.D()
		}
	})
	t.add("Algorithms", "s+", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		for _, x := range u {
			if !validAlg(x.arg.Text) {
				b.errorf(x.arg.Span, "unknown algorithm %q (lbd accepts %v)", x.arg.Text, edgeauth.Algorithms())
				continue
			}
			ab.jwt.Algorithms = append(ab.jwt.Algorithms, x.arg.Text)
		}
	})
	t.add("Issuer", "s", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) { ab.jwt.Issuer = u[0].arg.Text })
	t.add("Audience", "s+", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		for _, x := range u {
			ab.jwt.Audiences = append(ab.jwt.Audiences, x.arg.Text)
		}
	})
	t.add("Leeway", "n", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, 3600); ok {
			ab.jwt.Leeway = time.Duration(n) * time.Second
		}
	})
	t.add("RequireClaim", "s+", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		for _, x := range u {
			ab.jwt.Required = append(ab.jwt.Required, x.arg.Text)
		}
	})
	t.add("Claim", ".*", jwtClaimCheck).withFlags(patternFlags...)
	t.add("TokenHeader", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if name, ok := b.headerNameArg(u[0].arg); ok {
			ab.jwt.Tokens = append(ab.jwt.Tokens, edgeauth.TokenSource{Kind: "header", Name: name})
		}
	})
	t.add("TokenCookie", "s", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.jwt.Tokens = append(ab.jwt.Tokens, edgeauth.TokenSource{Kind: "cookie", Name: u[0].arg.Text})
	})
	t.add("TokenQuery", "s", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.jwt.Tokens = append(ab.jwt.Tokens, edgeauth.TokenSource{Kind: "query", Name: u[0].arg.Text})
	})
	t.add("ForwardClaim", "ss", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if name, ok := b.headerNameArg(u[1].arg); ok {
			ab.jwt.Forward = append(ab.jwt.Forward, edgeauth.ClaimHeader{Claim: u[0].arg.Text, Header: name})
		}
	})
	t.add("Realm", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.jwt.Realm = u[0].arg.Text
	})
	t.add("LoginRedirect", "s", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.jwt.Redirect = u[0].arg.Text
	})
	t.add("CacheSize", "n", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 1, 10_000_000); ok {
			ab.jwt.CacheSize = int(n)
		}
	})
}

func validAlg(name string) bool {
	for _, a := range edgeauth.Algorithms() {
		if a == name {
			return true
		}
	}
	return false
}

func (ab *authnBuild) jwtJWKS() *edgeauth.JWKSConfig {
	if ab.jwt.JWKS == nil {
		ab.jwt.JWKS = &edgeauth.JWKSConfig{}
	}
	return ab.jwt.JWKS
}

// jwtClaimCheck is Claim "NAME" [flags] "PATTERN": the verified claim
// (or one element of an array claim) must match; the default is an
// exact comparison.
func jwtClaimCheck(b *builder, ab *authnBuild, n *parser.Node, u []unit) {
	if len(u) < 2 || u[0].code == 'f' {
		b.errorf(stmtSpan(n), "expected a claim name and a pattern")
		return
	}
	o, pat := b.patternOpts(u[1:], MatchExact, false)
	if o.file != nil || len(pat) != 1 {
		b.errorf(stmtSpan(n), "expected a claim name, pattern flags and one pattern")
		return
	}
	p := b.compileOpts(pat[0].arg, o)
	if p == nil {
		return
	}
	ab.jwt.Checks = append(ab.jwt.Checks, edgeauth.ClaimCheck{Claim: u[0].arg.Text,
		Desc: fmt.Sprintf("%s %q", p.Kind, p.Text), Match: p.Match})
}

// finishJWT builds the verifier once the block is read; with a JWKS
// URL that fetches the key set, and a failure is reported at the URL.
func (b *builder) finishJWT(ab *authnBuild) {
	cfg := ab.jwt
	cfg.Name = ab.a.Name
	if len(cfg.Keys) == 0 && cfg.JWKS == nil {
		b.errorf(stmtSpan(ab.node), "JWTAuth %q has no keys: give KeyFile or JWKS", cfg.Name)
		return
	}
	if cfg.JWKS != nil {
		if ab.jwksArg == nil {
			b.errorf(stmtSpan(ab.node), "JWKS settings without a JWKS URL")
			return
		}
		cfg.JWKS.Logf = b.opts.authLog(cfg.Name)
	}
	j, err := edgeauth.NewJWT(cfg)
	if err != nil {
		at := stmtSpan(ab.node)
		if ab.jwksArg != nil {
			at = ab.jwksArg.Span
		}
		b.errorf(at, "%s", err.Error())
		return
	}
	ab.a.Checker = j
}

// caFileArg reads a PEM bundle of CA certificates.
func (b *builder) caFileArg(a parser.Arg) *x509.CertPool {
	_, data, ok := b.readFile(a)
	if !ok {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		b.errorf(a.Span, "%s: no PEM certificate", a.Text)
		return nil
	}
	return pool
}

// authLog is how a JWKS refresh failure is reported: through the
// loader's logger when the caller gave one.
func (o LoadOptions) authLog(name string) func(string, ...any) {
	return func(format string, a ...any) {
		if o.AuthLog != nil {
			o.AuthLog("JWTAuth " + name + ": " + fmt.Sprintf(format, a...))
		}
	}
}
