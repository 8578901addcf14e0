package listener

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	"lbd/acmecert"
	"lbd/config"
	"lbd/h2"
	"lbd/openssl"
	"lbd/proxy"
)

// defaultHandshake bounds a handshake when the listener has no Client
// timeout (Pound applies Client to the handshake too).
const defaultHandshake = 10 * time.Second

// settings is what a TLS listener needs for each new connection, built
// from the configuration on every (re)load and swapped atomically, so a
// reload changes ciphers, protocols or client verification for new
// connections without touching established ones.
type settings struct {
	tls       *tls.Config
	timeout   time.Duration // handshake deadline
	sslHdr    bool          // HeaderOption ssl: send X-SSL-* to backends
	clientHdr bool          // ClientCert > 0: also the client-certificate lines
	noHTTPS11 int
	nossl     []byte // answer to plain HTTP on this port; nil = just close
	h2        bool   // offer HTTP/2 by ALPN
	h2srv     *h2.Server
	store     *certStore
}

// newSettings builds the settings of a ListenHTTPS block. Problems the
// configuration layer cannot see (a CRL file that does not parse) are
// returned with settings that fail every handshake, so the listener
// fails closed instead of serving without the checks.
func newSettings(cfg *config.Config, l *config.Listener, auto Automatic) (*settings, error) {
	t := l.TLS
	s := &settings{timeout: time.Duration(l.Client), noHTTPS11: t.NoHTTPS11, clientHdr: t.ClientCert > 0}
	if s.timeout <= 0 {
		s.timeout = defaultHandshake
	}
	// zproxy 0.9.5 never sends X-SSL-* lines (its header table names them,
	// no code adds them); Pound adds them unless HeaderOption drops ssl.
	s.sslHdr = cfg.Dialect != config.DialectZproxy && (l.HeaderOption == nil || slices.Contains(l.HeaderOption, "ssl"))
	if l.ErrNoSSL != nil || cfg.Dialect == config.DialectZproxy {
		s.nossl = proxy.NoSSLReply(l.ErrNoSSL)
	}
	s.store = newCertStore(t.Certs, cfg.Dialect == config.DialectZproxy)
	s.store.auto = auto
	tc, err := serverConfig(t, s.store)
	if err != nil {
		tc = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return nil, err }}
	}
	s.tls = tc
	// HTTP/2 needs TLS 1.2+ with an AEAD suite (RFC 9113 §9.2.2); with
	// NoHTTPS11 1 Pound forces HTTP/1.0 semantics, which h2 cannot give.
	s.h2 = t.HTTP2 && t.NoHTTPS11 != 1 && h2Capable(tc.CipherSuites)
	if s.h2 {
		tc.NextProtos = []string{"h2", "http/1.1"}
	} else {
		tc.NextProtos = []string{"http/1.1"}
	}
	if auto != nil {
		// Last: only a client offering nothing else gets it (RFC 8737).
		tc.NextProtos = append(tc.NextProtos, acmecert.ALPN)
	}
	return s, err
}

// serverConfig translates the ListenHTTPS directives.
func serverConfig(t *config.ListenerTLS, store *certStore) (*tls.Config, error) {
	tc := &tls.Config{GetCertificate: store.getCertificate}
	lo, hi, ok := openssl.Versions(t.Disable, t.NoTLS13, openssl.LegacyAllowed(t.Ciphers))
	if !ok {
		return nil, errors.New("the Disable directives leave no protocol enabled")
	}
	tc.MinVersion, tc.MaxVersion = lo, hi
	if t.ECDHCurve != "" {
		ids, err := openssl.Curves(t.ECDHCurve)
		if err != nil {
			return nil, err
		}
		tc.CurvePreferences = ids
	}
	if t.Ciphers != "" {
		ids, err := openssl.CipherSuites(t.Ciphers)
		if err != nil {
			return nil, err
		}
		tc.CipherSuites = ids
	}
	if t.ClientCert == 0 {
		return tc, nil
	}
	v, err := newClientVerifier(t)
	if err != nil {
		return nil, err
	}
	tc.ClientAuth = tls.RequestClientCert
	if t.ClientCert == 2 {
		tc.ClientAuth = tls.RequireAnyClientCert
	}
	if t.ClientCert != 3 {
		tc.VerifyPeerCertificate = v.verify
	}
	if t.CAList != nil {
		tc.ClientCAs = x509.NewCertPool()
		tc.ClientCAs.AppendCertsFromPEM(t.CAList.Data)
	}
	return tc, nil
}

// h2Capable reports whether a suite list (nil = Go's defaults) leaves a
// suite HTTP/2 accepts; TLS 1.3 suites always qualify.
func h2Capable(ids []uint16) bool {
	if ids == nil {
		return true
	}
	for _, id := range ids {
		switch id {
		case tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:
			return true
		}
	}
	return false
}

// headers returns the X-SSL-* lines for a finished handshake (Pound 4
// add_ssl_headers), nil when HeaderOption has no "ssl".
func (s *settings) headers(cs *tls.ConnectionState) []byte {
	if !s.sslHdr {
		return nil
	}
	h := openssl.CipherHeader(cs.Version, cs.CipherSuite)
	if s.clientHdr && len(cs.PeerCertificates) > 0 {
		h += openssl.ClientCertHeaders(cs.PeerCertificates[0])
	}
	return []byte(h)
}

// clientVerifier checks client certificates for ClientCert 1 and 2 the
// way Pound's OpenSSL setup did: chain to a VerifyList CA (the system
// roots without one), at most depth intermediates, client-auth usage,
// and with a CRLlist every certificate below the root must have a
// current CRL from its issuer that does not list it (CRL_CHECK_ALL).
type clientVerifier struct {
	depth int
	roots *x509.CertPool // nil: system roots
	crls  []*x509.RevocationList
	now   func() time.Time
}

func newClientVerifier(t *config.ListenerTLS) (*clientVerifier, error) {
	v := &clientVerifier{depth: t.ClientCertDepth, now: time.Now}
	if t.VerifyList != nil {
		v.roots = x509.NewCertPool()
		v.roots.AppendCertsFromPEM(t.VerifyList.Data)
	}
	if t.CRLList != nil {
		crls, err := config.ParseCRLs(t.CRLList.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.CRLList.Path, err)
		}
		v.crls = crls
	}
	return v, nil
}

var errBadCert = errors.New("bad certificate")

// verify is the tls.Config VerifyPeerCertificate hook.
func (v *clientVerifier) verify(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return nil // ClientCert 1: a client without a certificate is let in
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("%w: %v", errBadCert, err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{
		Roots: v.roots, Intermediates: inter, CurrentTime: v.now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return fmt.Errorf("%w: %v", errBadCert, err)
	}
	for _, ch := range chains {
		// OpenSSL's depth counts the CAs above the leaf, not the anchor.
		if len(ch)-2 <= v.depth && v.notRevoked(ch) == nil {
			return nil
		}
	}
	if err := v.notRevoked(chains[0]); err != nil {
		return err
	}
	return fmt.Errorf("%w: chain longer than depth %d", errBadCert, v.depth)
}

// notRevoked checks a verified chain against the CRLs.
func (v *clientVerifier) notRevoked(chain []*x509.Certificate) error {
	if len(v.crls) == 0 {
		return nil
	}
	now := v.now()
	for i := 0; i+1 < len(chain); i++ {
		cert, issuer := chain[i], chain[i+1]
		crl := v.crlOf(issuer, now)
		if crl == nil {
			return fmt.Errorf("%w: no current CRL for %s", errBadCert, issuer.Subject)
		}
		for _, e := range crl.RevokedCertificateEntries {
			if e.SerialNumber.Cmp(cert.SerialNumber) == 0 {
				return fmt.Errorf("%w: %s is revoked", errBadCert, cert.Subject)
			}
		}
	}
	return nil
}

// crlOf returns a CRL issued and signed by issuer that is current.
func (v *clientVerifier) crlOf(issuer *x509.Certificate, now time.Time) *x509.RevocationList {
	for _, crl := range v.crls {
		if !bytes.Equal(crl.RawIssuer, issuer.RawSubject) || crl.CheckSignatureFrom(issuer) != nil {
			continue
		}
		if now.Before(crl.ThisUpdate) || (!crl.NextUpdate.IsZero() && now.After(crl.NextUpdate)) {
			continue
		}
		return crl
	}
	return nil
}
