package config

import (
	"strings"

	"lbd/openssl"
	"lbd/parser"
)

// tlsProtocols in ascending order; Disable X turns off X and all lower
// (Pound, and zproxy but for TLSv1_3: see disable). TLSv1_3 is zproxy's
// addition.
var tlsProtocols = []string{"SSLv2", "SSLv3", "TLSv1", "TLSv1_1", "TLSv1_2", "TLSv1_3"}

// protocolRank returns the index of a protocol name (case-insensitive),
// or -1.
func protocolRank(name string) int {
	for i, p := range tlsProtocols {
		if strings.EqualFold(p, name) {
			return i
		}
	}
	return -1
}

// raiseDisable keeps the highest disabled protocol.
func raiseDisable(cur, name string) string {
	if protocolRank(name) > protocolRank(cur) {
		return tlsProtocols[protocolRank(name)]
	}
	return cur
}

// disable applies one Disable statement of a listener or a backend. In
// Pound it turns off the protocol and every older one. zproxy does the
// same for SSLv2 to TLSv1_2 but turns off TLS 1.3 alone for TLSv1_3
// (its config.cpp; zproxy(8): "Disable TLSv1_3 would disable only
// TLSv1_3"). A statement that leaves no protocol is an error at its own
// position, whichever order the statements come in: zproxy refuses
// Disable TLSv1_2 with TLSv1_3 (only in that order), and Pound does not
// know TLSv1_3 at all; a listener that cannot handshake is no use.
func (b *builder) disable(a parser.Arg, highest *string, noTLS13 *bool) {
	rank := protocolRank(a.Text)
	if rank < 0 {
		b.errorf(a.Span, "unrecognized protocol name")
		return
	}
	// Security level 0 (@SECLEVEL=0 in Ciphers) lowers the floor only,
	// so it cannot change whether anything is left: leave it out. Only
	// the statement that empties the set is reported.
	_, _, before := openssl.Versions(*highest, *noTLS13, false)
	if b.cfg.Dialect == DialectZproxy && rank == len(tlsProtocols)-1 {
		*noTLS13 = true
	} else {
		*highest = raiseDisable(*highest, a.Text)
	}
	if _, _, ok := openssl.Versions(*highest, *noTLS13, false); ok || !before {
		return
	}
	if *noTLS13 {
		b.errorf(a.Span, "Disable TLSv1_2 and Disable TLSv1_3 together leave no protocol enabled (TLSv1_2 turns off TLS 1.2 and older, TLSv1_3 in the zproxy dialect TLS 1.3 alone)")
		return
	}
	b.errorf(a.Span, "Disable TLSv1_3 turns off TLS 1.3 and every older protocol (Pound's meaning): no protocol is left (in the zproxy dialect it turns off TLS 1.3 alone)")
}

// ciphers applies Ciphers [-cipherlist|-ciphersuites] "list" ... to the
// TLS 1.2 list and the TLS 1.3 suites.
func ciphers(u []unit, list, suites *string) {
	for _, x := range u {
		switch {
		case x.code == 'f' && x.arg.Text == "-ciphersuites":
			*suites = x.val.Text
		case x.code == 'f':
			*list = x.val.Text
		default:
			*list = x.arg.Text
		}
	}
}

// addTLSDirectives adds the ListenHTTPS-only statements.
func addTLSDirectives(t table[*Listener]) {
	t.add("Cert", "s", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		b.lst[l].certSeen = true
		l.TLS.Certs = append(l.TLS.Certs, b.certs(u[0].arg)...)
	})
	t.add("ClientCert", "nn?", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		mode, ok := b.intArg(u[0].arg, 0, 3)
		if !ok {
			return
		}
		depth := int64(0)
		switch {
		case mode > 0 && len(u) > 1:
			if depth, ok = b.intArg(u[1].arg, 0, 9); !ok {
				return
			}
		case mode > 0:
			depth = 9
		case len(u) > 1:
			b.warnf(u[1].arg.Span, "superfluous argument ignored")
		}
		l.TLS.ClientCert, l.TLS.ClientCertDepth = int(mode), int(depth)
	})
	t.add("Disable", "[sl]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		b.disable(u[0].arg, &l.TLS.Disable, &l.TLS.NoTLS13)
	})
	t.add("Ciphers", "[fsl]+", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		b.checkCiphers(u)
		ciphers(u, &l.TLS.Ciphers, &l.TLS.CipherSuites)
	}).withFlags("ciphersuites=", "cipherlist=")
	t.add("ECDHCurve", "s", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if b.curve(u[0].arg) {
			l.TLS.ECDHCurve = u[0].arg.Text
		}
	})
	t.add("SSLHonorCipherOrder", "b", func(_ *builder, l *Listener, _ *parser.Node, u []unit) {
		l.TLS.HonorCipherOrder = boolArg(u[0])
	})
	t.add("SSLAllowClientRenegotiation", "n", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, 2); ok {
			l.TLS.Renegotiation = int(n)
		}
	})
	t.add("CAlist", "s", func(b *builder, l *Listener, _ *parser.Node, u []unit) { l.TLS.CAList = b.fileData(u[0].arg) })
	t.add("VerifyList", "s", func(b *builder, l *Listener, _ *parser.Node, u []unit) { l.TLS.VerifyList = b.fileData(u[0].arg) })
	t.add("CRLlist", "s", func(b *builder, l *Listener, _ *parser.Node, u []unit) { l.TLS.CRLList = b.fileData(u[0].arg) })
	t.add("HTTP2", "b", func(_ *builder, l *Listener, _ *parser.Node, u []unit) {
		l.TLS.HTTP2 = boolArg(u[0])
	})
	t.add("NoHTTPS11", "n", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, 2); ok {
			l.TLS.NoHTTPS11 = int(n)
		}
	})
}

// curve checks an ECDHCurve value.
func (b *builder) curve(a parser.Arg) bool {
	if _, err := openssl.Curves(a.Text); err != nil {
		b.errorf(a.Span, "%s", err.Error())
		return false
	}
	return true
}
