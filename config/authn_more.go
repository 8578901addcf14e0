package config

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"time"

	"lbd/edgeauth"
	"lbd/parser"
)

// apiKeyBuild is what an APIKeyAuth block states.
type apiKeyBuild struct {
	cfg   edgeauth.APIKeyConfig
	file  *parser.Arg
	watch bool
	realm string
}

// forwardBuild is what a ForwardAuth block states.
type forwardBuild struct {
	cfg    edgeauth.ForwardConfig
	urlArg *parser.Arg
}

// The statements of an APIKeyAuth block.
func initAPIKeyAuthTable() {
	t := apiKeyAuthTable
	t.add("KeyFile", "f?s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.key.watch = true
		if len(u) == 2 {
			ab.key.watch = u[0].arg.Text[1:] == "filewatch"
		}
		ab.key.file = &u[len(u)-1].arg
	}).withFlags("file", "filewatch")
	t.add("Header", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if name, ok := b.headerNameArg(u[0].arg); ok {
			ab.key.cfg.Sources = append(ab.key.cfg.Sources, edgeauth.TokenSource{Kind: "header", Name: name})
		}
	})
	t.add("Query", "s", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.key.cfg.Sources = append(ab.key.cfg.Sources, edgeauth.TokenSource{Kind: "query", Name: u[0].arg.Text})
	})
	t.add("ForwardName", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if name, ok := b.headerNameArg(u[0].arg); ok {
			ab.key.cfg.ForwardName = name
		}
	})
	t.add("Realm", "s", func(_ *builder, ab *authnBuild, _ *parser.Node, u []unit) { ab.key.realm = u[0].arg.Text })
}

// finishAPIKey reads the key file, or follows it with -filewatch (the
// default, as BasicAuth's): a file that changes to something unreadable
// keeps the keys it had.
func (b *builder) finishAPIKey(ab *authnBuild) {
	k := &ab.key
	if k.file == nil {
		b.errorf(stmtSpan(ab.node), "APIKeyAuth %q has no KeyFile", ab.a.Name)
		return
	}
	k.cfg.Name, k.cfg.Realm = ab.a.Name, k.realm
	keys := edgeauth.NewAPIKeys(k.cfg)
	path := b.resolve(k.file.Text)
	if k.watch {
		b.watch(path, *k.file, func(data []byte) error {
			m, err := edgeauth.ParseAPIKeys(data)
			if err == nil {
				keys.Set(m)
			}
			return err
		})
	} else {
		data, err := b.readRegular(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b.errorf(k.file.Span, "file %s does not exist", k.file.Text)
			return
		case err != nil:
			b.errorf(k.file.Span, "can't open %s: %s", k.file.Text, parser.ErrText(err))
			return
		}
		m, err := edgeauth.ParseAPIKeys(data)
		if err != nil {
			b.errorf(k.file.Span, "%s: %s", k.file.Text, err.Error())
			return
		}
		keys.Set(m)
	}
	ab.a.Checker = keys
}

// The statements of a ForwardAuth block.
func initForwardAuthTable() {
	t := forwardAuthTable
	t.add("URL", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.fwd.urlArg = &u[0].arg
		ab.fwd.cfg.URL = u[0].arg.Text
	})
	t.add("CAFile", "s", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		ab.fwd.cfg.Roots = b.caFileArg(u[0].arg)
	})
	t.add("Timeout", "[nl]", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			ab.fwd.cfg.Timeout = d.D()
		}
	})
	t.add("RequestHeaders", "s+", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		for _, x := range u {
			if name, ok := b.headerNameArg(x.arg); ok {
				ab.fwd.cfg.RequestHeaders = append(ab.fwd.cfg.RequestHeaders, name)
			}
		}
	})
	t.add("ResponseHeaders", "s+", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		for _, x := range u {
			if name, ok := b.headerNameArg(x.arg); ok {
				ab.fwd.cfg.ResponseHeaders = append(ab.fwd.cfg.ResponseHeaders, name)
			}
		}
	})
	t.add("OnError", "n", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if u[0].arg.Text != "503" && u[0].arg.Text != "401" {
			b.errorf(u[0].arg.Span, "OnError is 503 or 401")
			return
		}
		n, _ := b.intArg(u[0].arg, 401, 503) // checked just above: cannot fail
		ab.fwd.cfg.OnError = int(n)
	})
	t.add("CacheTTL", "[nl]", func(b *builder, ab *authnBuild, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			ab.fwd.cfg.CacheTTL = d.D()
		}
	})
}

// finishForward checks the URL: http or https, with a host that
// resolves (unless -W no-dns), so a mistyped name fails at load and not
// on every request.
func (b *builder) finishForward(ab *authnBuild) {
	f := &ab.fwd
	if f.urlArg == nil {
		b.errorf(stmtSpan(ab.node), "ForwardAuth %q has no URL", ab.a.Name)
		return
	}
	u, err := url.Parse(f.cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		b.errorf(f.urlArg.Span, "%q is not an http:// or https:// URL", f.cfg.URL)
		return
	}
	if !b.opts.NoDNS && net.ParseIP(u.Hostname()) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := net.DefaultResolver.LookupHost(ctx, u.Hostname())
		cancel()
		if err != nil {
			b.errorf(f.urlArg.Span, "%s: the host does not resolve: %s", f.cfg.URL, err.Error())
			return
		}
	}
	if len(f.cfg.RequestHeaders) == 0 {
		f.cfg.RequestHeaders = []string{"Cookie", "Authorization"}
	}
	f.cfg.Name = ab.a.Name
	ab.a.Checker = edgeauth.NewForward(f.cfg)
}
