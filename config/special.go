package config

import (
	"lbd/parser"
)

// acmePattern selects ACME HTTP-01 challenge requests; the file name is
// what follows the prefix (Pound matches the same expression).
const acmePattern = `^/\.well-known/acme-challenge/(.+)`

// specialBackend is a Pound 4 special backend of kind k at n.
func specialBackend(n *parser.Node, k BackendKind) *Backend {
	return &Backend{Pos: LocusOf(stmtSpan(n)), Kind: k, Priority: 1, Weight: 1}
}

// serviceSendFile is SendFile "dir": static files from dir.
func serviceSendFile(b *builder, s *Service, n *parser.Node, u []unit) {
	dir, ok := b.directory(u[0].arg)
	if !ok {
		return
	}
	be := specialBackend(n, BackendFile)
	be.SetRare().Dir = dir
	s.Backends = append(s.Backends, be)
}

// listenerACME is the listener's ACME "dir": a service of its own, in
// the place of the statement among the listener's services, that serves
// challenge files from dir.
func listenerACME(b *builder, l *Listener, n *parser.Node, u []unit) {
	dir, ok := b.directory(u[0].arg)
	if !ok {
		return
	}
	pat, err := NewPattern(MatchRegex, acmePattern, false)
	if err != nil {
		panic("config: the ACME pattern does not compile: " + err.Error())
	}
	be := specialBackend(n, BackendACME)
	be.SetRare().Dir = dir
	s := &Service{
		Pos:        LocusOf(stmtSpan(n)),
		Conditions: []*Condition{{Kind: CondURL, Pattern: pat}},
		Backends:   []*Backend{be},
	}
	b.svcs[s] = &serviceExtra{cond: &condCtx{conds: &s.Conditions}}
	l.Services = append(l.Services, s)
}

// directory resolves a directory argument against the include directory
// and checks that it is one, so a typo is a configuration error rather
// than a 404 on every request.
func (b *builder) directory(a parser.Arg) (string, bool) {
	path := b.resolve(a.Text)
	st, err := b.fs.Stat(path)
	switch {
	case err != nil:
		b.errorf(a.Span, "can't open %s: %s", path, parser.ErrText(err))
	case !st.IsDir():
		b.errorf(a.Span, "%s is not a directory", path)
	default:
		return path, true
	}
	return "", false
}
