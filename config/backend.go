package config

import (
	"net"
	"strconv"
	"strings"

	"lbd/parser"
)

// backendExtra records which backend settings were written, so the rest
// can be inherited once all global values are known.
type backendExtra struct {
	ref                          bool // a reference to a named backend
	prioSet, disabledSet         bool
	timeoutSet, conntoSet, wsSet bool
	portArg, addrArg             *parser.Arg
}

// backendUnsupported are backend directives lbd accepts without
// implementing them (zproxy's ignored settings).
var backendUnsupported = canonSet("Key", "SSLConfigFile",
	"SSLConfigSection")

// backendRefAllowed are the statements a backend reference may contain.
var backendRefAllowed = map[string]bool{"use": true, "priority": true, "disabled": true}

var beTable = table[*Backend]{}

func initBackendTable() {
	t := beTable
	ex := func(b *builder, be *Backend) *backendExtra { return b.bes[be] }
	t.add("Address", "[sl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.Address = u[0].arg.Text
		ex(b, be).addrArg = &u[0].arg
	})
	t.add("Port", "[nls]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		if p, ok := b.port(u[0].arg, 1); ok {
			be.Port = p
			ex(b, be).portArg = &u[0].arg
		}
	})
	t.add("Priority", "n", backendPriority)
	t.add("Weight", "n", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 1, maxInt); ok {
			be.Weight = int(n)
		}
	})
	t.add("ConnLimit", "n", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, maxInt); ok {
			be.ConnLimit = int(n)
		}
	})
	t.add("NfMark", "[nl]", backendNfMark)
	t.add("TimeOut", "[nl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.TimeOut, ex(b, be).timeoutSet = b.durationArg(u[0].arg)
	})
	t.add("ConnTO", "[nl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.ConnTO, ex(b, be).conntoSet = b.durationArg(u[0].arg)
	})
	t.add("WSTimeOut", "[nl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.WSTimeOut, ex(b, be).wsSet = b.durationArg(u[0].arg)
	})
	t.add("HTTPS", "b?", func(_ *builder, be *Backend, _ *parser.Node, u []unit) { be.HTTPS = len(u) == 0 || boolArg(u[0]) })
	t.add("Cert", "s", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.HTTPS = true
		path := b.resolve(u[0].arg.Text)
		c, msg := b.certFile(path, path)
		if msg != "" {
			b.errorf(u[0].arg.Span, "%s", msg)
		}
		be.SetRare().Cert = c
	})
	t.add("ECDHCurve", "s", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		if b.curve(u[0].arg) {
			be.SetRare().ECDHCurve, be.HTTPS = u[0].arg.Text, true
		}
	})
	t.add("Ciphers", "[fsl]+", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		b.checkCiphers(u)
		be.HTTPS = true
		ciphers(u, &be.SetRare().Ciphers, &be.SetRare().CipherSuites)
	}).withFlags("ciphersuites=", "cipherlist=")
	t.add("Disable", "[sl]", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.HTTPS = true
		b.disable(u[0].arg, &be.SetRare().Disable, &be.SetRare().NoTLS13)
	})
	t.add("Disabled", "b", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.Disabled, ex(b, be).disabledSet = boolArg(u[0]), true
	})
	t.add("ServerName", "s", func(_ *builder, be *Backend, _ *parser.Node, u []unit) { be.SetRare().ServerName = u[0].arg.Text })
	t.add("HAport", "[ls]?n", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		h := &HAPort{}
		if len(u) == 2 {
			h.Address = u[0].arg.Text
		}
		if p, ok := b.port(u[len(u)-1].arg, 1); ok {
			h.Port = p
			be.SetRare().HAPort = h
		}
	})
	t.add("Use", "s", func(_ *builder, be *Backend, _ *parser.Node, u []unit) { be.Name = u[0].arg.Text })
	initDynamicBackendTable(t)
	addHTTP2BackendDirectives(t)
}

func backendPriority(b *builder, be *Backend, _ *parser.Node, u []unit) {
	if b.cfg.Dialect == DialectZproxy {
		n, ok := b.intArg(u[0].arg, 1, 9)
		be.Priority, b.bes[be].prioSet = int(n), ok
		return
	}
	n, ok := b.intArg(u[0].arg, 0, maxInt)
	if !ok {
		return
	}
	if n > maxPriority {
		b.warnf(u[0].arg.Span, "backend priority out of allowed range; reset to max. %d", maxPriority)
		n = maxPriority
	}
	be.Priority, b.bes[be].prioSet = int(n), true
}

// maxPriority is Pound 4's PRI_MAX.
const maxPriority = 65535

// backendNfMark accepts a decimal number or 0xHEX (zproxy).
func backendNfMark(b *builder, be *Backend, _ *parser.Node, u []unit) {
	a := u[0].arg
	n, err := strconv.ParseUint(a.Text, 0, 32)
	if err != nil {
		b.errorf(a.Span, "value out of range [0..%d]", uint64(maxUint))
		return
	}
	be.SetRare().NfMark = int(n)
}

// newBackend is a regular backend with the dialect's defaults.
func (b *builder) newBackend(n *parser.Node) *Backend {
	be := &Backend{Pos: LocusOf(stmtSpan(n)), Kind: BackendRegular, Priority: 5, Weight: 1}
	if b.cfg.Dialect == DialectZproxy {
		be.Priority = 1
	}
	b.bes[be] = &backendExtra{}
	return be
}

// backend builds a BackEnd, Emergency or named Backend block. A block
// containing Use is a reference to a named backend.
func (b *builder) backend(n *parser.Node, emergency bool) *Backend {
	for _, c := range n.Children {
		if keywordIs(c.Keyword, "use") {
			if !b.refChildrenOK(n) {
				return nil
			}
			be := b.backendRef(n, "")
			walk(b, beTable, nil, be, n.Children)
			be.Emergency = emergency
			return be
		}
	}
	be := b.newBackend(n)
	be.Emergency = emergency
	walk(b, beTable, backendUnsupported, be, n.Children)
	if be.Address == "" {
		b.errorf(stmtSpan(n), "Backend missing Address declaration")
		return nil
	}
	b.backendAddress(be, n)
	return be
}

// backendAddress classifies the address and applies the default port.
func (b *builder) backendAddress(be *Backend, n *parser.Node) {
	ex := b.bes[be]
	be.Unix = strings.Contains(be.Address, "/")
	switch {
	case be.Unix && ex.portArg != nil:
		b.errorf(stmtSpan(n), "Port is not applicable to this address family")
	case be.Unix:
	case ex.portArg == nil && be.HTTPS:
		be.Port = 443
	case ex.portArg == nil:
		be.Port = 80
	}
	if be.Dynamic() && (be.Unix || net.ParseIP(be.Address) != nil) {
		be.SetRare().Resolve = "" // nothing to resolve: static, as in Pound
	}
	switch {
	case be.Dynamic():
		b.dynamicBackend(be, n)
	case !be.Unix && net.ParseIP(be.Address) == nil && !b.opts.NoDNS:
		// A name that does not resolve yet (a container not started)
		// is not fatal: the backend starts dead and its probe retries.
		if err := lookupHost(be.Address, be.Rare().Family); err != nil {
			b.warnf(ex.addrArg.Span, "cannot resolve host name %s: %s; the backend stays dead until it resolves",
				be.Address, dnsErrText(err))
			be.Unresolved = true
		}
	}
}

// refChildrenOK reports statements not allowed in a backend reference.
func (b *builder) refChildrenOK(n *parser.Node) bool {
	ok := true
	for _, c := range n.Children {
		if !backendRefAllowed[lower(c.Keyword)] {
			b.errorf(stmtSpan(c), "statement cannot be used in backend reference")
			ok = false
		}
	}
	return ok
}

// backendRef is a reference to a named backend, resolved in finish.
func (b *builder) backendRef(n *parser.Node, name string) *Backend {
	be := b.newBackend(n)
	be.Name = name
	b.bes[be].ref = true
	b.refs = append(b.refs, be)
	return be
}

// backendRefBlock is Pound's deprecated `Backend "name" ... End`.
func (b *builder) backendRefBlock(n *parser.Node, name string) *Backend {
	if !b.refChildrenOK(n) {
		return nil
	}
	be := b.backendRef(n, name)
	walk(b, beTable, nil, be, n.Children)
	return be
}

// globalBackend is a top-level named `Backend "name" ... End`.
func globalBackend(b *builder, c *Config, n *parser.Node, u []unit) {
	name := u[0].arg.Text
	if old, ok := b.named[name]; ok {
		b.errorf(stmtSpan(n), "redefinition of named backend %s", name)
		b.followf(old.Pos.Span(), "original definition was here")
		return
	}
	for _, ch := range n.Children {
		if !keywordIs(ch.Keyword, "use") {
			continue
		}
		if b.opts.FirstError {
			b.errorf(ch.Span, "unrecognized keyword") // Pound's wording
		} else {
			b.errorf(ch.Span, "unrecognized keyword %q: a named backend cannot use another", ch.Keyword)
		}
		return
	}
	be := b.backend(n, false)
	if be == nil {
		return
	}
	be.Name = name
	b.named[name] = be
	c.NamedBackends = append(c.NamedBackends, be)
}
