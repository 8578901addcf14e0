package config

import (
	"net/url"
	"slices"
	"strings"

	"lbd/parser"
)

// ACMEAccount is lbd's ACMEAccount section (an extension of both
// dialects): the account automatic certificates are ordered with, and
// where lbd keeps it and them. Pound's listener statement ACME "dir"
// (challenge files written by another program) is unrelated and
// unchanged.
type ACMEAccount struct {
	Pos Locus `json:"pos"`
	// Directory is the CA's ACME directory URL (https, or http to a
	// loopback address).
	Directory string `json:"directory"`
	// Email is the account's contact address ("" = none).
	Email string `json:"email,omitempty"`
	// EABKeyID and EABMACKey are an External Account Binding; the key is
	// a secret and is never dumped.
	EABKeyID  string `json:"eab_key_id,omitempty"`
	EABMACKey string `json:"-"`
	// CARoots verifies the CA's HTTPS server (nil: the system's roots).
	CARoots *FileData `json:"ca_roots,omitempty"`
	// Storage is the directory of the account and the certificates,
	// created 0700 (unused with a Cluster section: Redis holds them).
	Storage string `json:"storage"`
}

// DefaultACMEStorage is where lbd keeps ACME state without a Storage.
const DefaultACMEStorage = "/var/lib/lbd/acme"

// ListenerACME is a ListenHTTPS's automatic certificates.
type ListenerACME struct {
	Pos Locus `json:"-"`
	// Names are the host names to obtain certificates for: those listed
	// by ACMECert, then (ACMECertFromServices) the exact Host
	// conditions of the listener's services.
	Names        []string `json:"names"`
	FromServices bool     `json:"from_services,omitempty"`
	// Challenge restricts the validation method: "http-01" or
	// "tls-alpn-01" ("" = either).
	Challenge string `json:"challenge,omitempty"`
	// ChallengePos is where ACMEChallenge is written.
	ChallengePos Locus `json:"-"`
}

var acmeTable = table[*ACMEAccount]{}

func initACMETable() {
	t := acmeTable
	t.add("Directory", "s", func(b *builder, a *ACMEAccount, _ *parser.Node, u []unit) {
		if b.acmeDirectory(u[0].arg) {
			a.Directory = u[0].arg.Text
		}
	})
	t.add("Email", "s", func(b *builder, a *ACMEAccount, _ *parser.Node, u []unit) {
		if e := u[0].arg.Text; strings.Count(e, "@") != 1 || strings.HasPrefix(e, "@") || strings.HasSuffix(e, "@") || strings.ContainsAny(e, " \t<>") {
			b.errorf(u[0].arg.Span, "invalid e-mail address %q", e)
			return
		}
		a.Email = u[0].arg.Text
	})
	t.add("EAB", "ss", func(b *builder, a *ACMEAccount, _ *parser.Node, u []unit) {
		if u[0].arg.Text == "" || u[1].arg.Text == "" {
			b.errorf(u[0].arg.Span, "EAB needs a key identifier and a MAC key")
			return
		}
		a.EABKeyID, a.EABMACKey = u[0].arg.Text, u[1].arg.Text
	})
	t.add("CARoots", "s", func(b *builder, a *ACMEAccount, _ *parser.Node, u []unit) {
		a.CARoots = b.fileData(u[0].arg)
	})
	t.add("Storage", "s", func(b *builder, a *ACMEAccount, _ *parser.Node, u []unit) {
		if u[0].arg.Text == "" {
			b.errorf(u[0].arg.Span, "empty Storage directory")
			return
		}
		a.Storage = b.resolve(u[0].arg.Text)
	})
}

// acmeDirectory checks a Directory URL: https, or plain http only to a
// loopback host (a test CA), never a secret-carrying request in clear
// text across a network.
func (b *builder) acmeDirectory(a parser.Arg) bool {
	u, err := url.Parse(a.Text)
	switch {
	case err != nil || u.Host == "":
		b.errorf(a.Span, "invalid ACME directory URL %q: want https://host/path", a.Text)
		return false
	case u.Scheme == "https":
		return true
	case u.Scheme == "http" && (u.Hostname() == "localhost" || strings.HasPrefix(u.Hostname(), "127.") || u.Hostname() == "::1"):
		return true
	}
	b.errorf(a.Span, "ACME directory URL %q: the scheme must be https (http only to a loopback address)", a.Text)
	return false
}

// globalACME builds the ACMEAccount section.
func globalACME(b *builder, c *Config, n *parser.Node, _ []unit) {
	if c.ACME != nil {
		b.errorf(stmtSpan(n), "ACMEAccount redefined")
		b.followf(c.ACME.Pos.Span(), "original definition was here")
		return
	}
	a := &ACMEAccount{Pos: LocusOf(stmtSpan(n)), Storage: DefaultACMEStorage}
	walk(b, acmeTable, nil, a, n.Children)
	dir := a.Directory != ""
	for _, ch := range n.Children {
		dir = dir || ch.Is("Directory")
	}
	if !dir {
		b.errorf(stmtSpan(n), "ACMEAccount section has no Directory")
		return
	}
	c.ACME = a
}

// addACMEDirectives registers the ListenHTTPS statements of automatic
// certificates.
func addACMEDirectives(t table[*Listener]) {
	t.add("ACMECert", "s+", func(b *builder, l *Listener, n *parser.Node, u []unit) {
		la := autoCerts(l, n)
		for _, x := range u {
			name := strings.ToLower(strings.TrimSuffix(x.arg.Text, "."))
			if why := badHostName(name); why != "" {
				b.errorf(x.arg.Span, "ACMECert %q: %s", x.arg.Text, why)
				continue
			}
			la.Names = append(la.Names, name)
			b.acmeNames = append(b.acmeNames, acmeName{name: name, span: x.arg.Span})
		}
	})
	t.add("ACMECertFromServices", "b", func(_ *builder, l *Listener, n *parser.Node, u []unit) {
		if boolArg(u[0]) {
			autoCerts(l, n).FromServices = true
		}
	})
	t.add("ACMEChallenge", "s", func(b *builder, l *Listener, n *parser.Node, u []unit) {
		switch c := strings.ToLower(u[0].arg.Text); c {
		case "http-01", "tls-alpn-01":
			la := autoCerts(l, n)
			la.Challenge, la.ChallengePos = c, LocusOf(stmtSpan(n))
		default:
			b.errorf(u[0].arg.Span, "unknown ACME challenge %q: want \"http-01\" or \"tls-alpn-01\" (DNS-01 is not supported)", u[0].arg.Text)
		}
	})
}

func autoCerts(l *Listener, n *parser.Node) *ListenerACME {
	if l.TLS.ACME == nil {
		l.TLS.ACME = &ListenerACME{Pos: LocusOf(stmtSpan(n))}
	}
	return l.TLS.ACME
}

// acmeName is an automatic name with where it was written.
type acmeName struct {
	name string
	span parser.Span
}

// badHostName says why name cannot be an automatic certificate's name
// ("" when it can): a DNS name of letters, digits and hyphens, with a
// dot, no wildcard (that needs DNS-01) and no IP address.
func badHostName(name string) string {
	switch {
	case name == "" || len(name) > 253:
		return "not a DNS name (1 to 253 characters)"
	case strings.HasPrefix(name, "*."):
		return "wildcard names need the DNS-01 challenge, which lbd does not offer"
	case !strings.Contains(name, "."):
		return "not a fully qualified DNS name"
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "not a valid DNS name (empty, over-long or hyphen-edged label)"
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "not a valid DNS name (letters, digits and hyphens only; IDNs in their xn-- form)"
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] >= '0' && last[0] <= '9' {
		return "an IP address or numeric top-level label: certificates are for DNS names"
	}
	return ""
}

// finishACME runs once the file is read: it adds the services' Host
// names where asked, refuses a name on two listeners, and requires the
// ACMEAccount section.
func (b *builder) finishACME() {
	var first *ListenerACME
	seen := map[string]parser.Span{}
	for _, an := range b.acmeNames {
		if at, dup := seen[an.name]; dup {
			b.errorf(an.span, "%s is already an automatic name", an.name)
			b.followf(at, "first listed here")
			continue
		}
		seen[an.name] = an.span
	}
	for _, l := range b.cfg.Listeners {
		if l.TLS == nil || l.TLS.ACME == nil {
			continue
		}
		la := l.TLS.ACME
		if first == nil {
			first = la
		}
		if la.FromServices {
			for _, s := range append(slices.Clone(l.Services), b.cfg.Services...) {
				for _, name := range exactHosts(s.Conditions) {
					if _, dup := seen[name]; !dup && badHostName(name) == "" {
						seen[name] = la.Pos.Span()
						la.Names = append(la.Names, name)
					}
				}
			}
		}
		if len(la.Names) == 0 {
			b.errorf(la.Pos.Span(), "no automatic names on this listener (ACMECertFromServices found no exact Host condition)")
		}
		if la.Challenge == "http-01" && !b.hasPlainHTTP() {
			b.errorf(la.ChallengePos.Span(), "ACMEChallenge \"http-01\" needs a ListenHTTP on a TCP port to answer on")
		}
	}
	if first != nil && b.cfg.ACME == nil {
		b.errorf(first.Pos.Span(), "automatic certificates need an ACMEAccount section")
	}
	if a := b.cfg.ACME; a != nil && b.cfg.RootJail != "" && b.cfg.Cluster == nil {
		// Renewals write the storage long after lbd entered the jail,
		// where the directory's path no longer leads to it.
		b.errorf(a.Pos.Span(), "ACMEAccount's Storage cannot be used with RootJail: run without RootJail, or in a Cluster (the certificates are then kept in Redis)")
	}
}

// hasPlainHTTP reports whether a ListenHTTP on a TCP port exists: lbd
// answers HTTP-01 on the first one.
func (b *builder) hasPlainHTTP() bool {
	for _, l := range b.cfg.Listeners {
		if l.TLS == nil && !l.Tunnel && !l.Unix {
			return true
		}
	}
	return false
}

// exactHosts are the names of a service's exact, non-negated Host
// conditions (also inside an AND Match block).
func exactHosts(conds []*Condition) []string {
	var out []string
	for _, c := range conds {
		switch {
		case c.Not:
		case c.Kind == CondHost && c.Pattern != nil && c.Pattern.Kind == MatchExact:
			out = append(out, strings.ToLower(c.Pattern.Text))
		case c.Kind == CondMatch && !c.Or:
			out = append(out, exactHosts(c.Sub)...)
		}
	}
	return out
}
