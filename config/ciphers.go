package config

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"lbd/openssl"
	"lbd/parser"
)

// TLS checks that make a bad cipher string or a CA file without
// certificates a configuration error (Pound found these only when OpenSSL refused them at
// startup, or never: OpenSSL skips unknown cipher names silently).

func init() {
	// VerifyList in a backend is an lbd extension: Pound and zproxy never
	// verify backend certificates; with it lbd checks the backend's chain
	// against these CAs (and its name against ServerName, when set).
	beTable.add("VerifyList", "s", func(b *builder, be *Backend, _ *parser.Node, u []unit) {
		be.HTTPS = true
		if fd := b.fileData(u[0].arg); fd != nil && b.checkPEMCerts(u[0].arg.Span, fd) {
			be.SetRare().VerifyList = fd
		}
	})
}

// checkCiphers validates the arguments of a Ciphers statement: the
// OpenSSL cipher list (every name must be known and at least one suite
// must be usable) and the TLS 1.3 -ciphersuites list.
func (b *builder) checkCiphers(u []unit) {
	for _, x := range u {
		arg := x.arg
		if x.code == 'f' {
			if x.val == nil {
				continue
			}
			arg = *x.val
		}
		var err error
		var ignored []string
		if x.code == 'f' && x.arg.Text == "-ciphersuites" {
			err = openssl.CheckTLS13Suites(arg.Text)
		} else {
			_, ignored, err = openssl.CipherSuitesIgnoring(arg.Text)
		}
		if err != nil {
			b.errorf(arg.Span, "%s", err.Error())
			continue
		}
		for _, name := range ignored {
			b.warnf(arg.Span, "cipher %q selects nothing and is ignored, as OpenSSL does", name)
		}
	}
}

// finishTLS checks the CA files of a ListenHTTPS block: each must hold
// certificates, or client verification would silently refuse everyone.
// (CRL lists are parsed when the listener is built.)
func (b *builder) finishTLS(l *Listener) {
	if l.TLS == nil {
		return
	}
	at := l.Pos.Span()
	for _, fd := range []*FileData{l.TLS.CAList, l.TLS.VerifyList} {
		if fd != nil {
			b.checkPEMCerts(at, fd)
		}
	}
}

// checkPEMCerts reports whether fd holds at least one PEM certificate.
func (b *builder) checkPEMCerts(at parser.Span, fd *FileData) bool {
	if !x509.NewCertPool().AppendCertsFromPEM(fd.Data) {
		b.errorf(at, "%s: no PEM certificate found", fd.Path)
		return false
	}
	return true
}

// ParseCRLs decodes every "X509 CRL" PEM block of a CRLlist file.
func ParseCRLs(data []byte) ([]*x509.RevocationList, error) {
	var out []*x509.RevocationList
	for {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			break
		}
		if blk.Type != "X509 CRL" {
			continue
		}
		crl, err := x509.ParseRevocationList(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bad CRL: %w", err)
		}
		out = append(out, crl)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM CRL found")
	}
	return out, nil
}
