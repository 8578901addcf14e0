package engine

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net"

	"github.com/sirupsen/logrus"

	"lbd/backend"
	"lbd/config"
	"lbd/listener"
	"lbd/openssl"
)

// TLS in the engine: ListenHTTPS sockets are wrapped by package
// listener (handshakes, SNI, HTTP/2), configured from each loaded
// configuration, and HTTPS backends dial through backend.TLSDial.

// configureTLS hands every TLS socket its listener's settings from cfg
// (servers[i] serves cfg.Listeners[i]), at start and on every reload,
// so certificates, ciphers and client verification follow the file. A
// listener whose settings cannot be applied refuses handshakes and says
// why here, rather than serve without them.
func configureTLS(servers []*server, cfg *config.Config, log *logrus.Logger) {
	for i, s := range servers {
		tl, ok := s.ln.(*listener.TLS)
		if !ok || i >= len(cfg.Listeners) {
			continue
		}
		if err := tl.Configure(cfg, cfg.Listeners[i]); err != nil {
			l := cfg.Listeners[i]
			log.WithFields(listenerSource(l)).Errorf("%s: %v", l.Pos, err)
		}
	}
}

// backendTLS completes o for a backend with ServerName or HTTPS (Pound:
// HTTPS, or implied by Cert, Ciphers, Disable). As in Pound and zproxy
// the backend's certificate is not verified unless lbd's VerifyList is
// given; Cert is the client certificate lbd presents.
func backendTLS(o *backend.Options, cb *config.Backend) {
	o.ServerName = cb.Rare().ServerName
	if !cb.HTTPS {
		return
	}
	tc, err := backendTLSConfig(cb)
	if err != nil {
		// The configuration layer validated these; refuse to connect
		// rather than silently drop a setting.
		o.DialContext = func(context.Context, string, string) (net.Conn, error) { return nil, err }
		return
	}
	o.DialContext = backendTLSDial(o, cb, tc)
	o.HTTPS = true
}

// backendTLSConfig translates a backend's TLS directives.
func backendTLSConfig(cb *config.Backend) (*tls.Config, error) {
	r := cb.Rare()
	tc := &tls.Config{
		ServerName:         r.ServerName,
		InsecureSkipVerify: true, // Pound and zproxy never verify; see VerifyList
		ClientSessionCache: tls.NewLRUClientSessionCache(64),
		NextProtos:         backendALPN(cb),
	}
	lo, hi, ok := openssl.Versions(r.Disable, r.NoTLS13, openssl.LegacyAllowed(r.Ciphers))
	if !ok {
		return nil, errors.New("the Disable directives leave no protocol enabled")
	}
	tc.MinVersion, tc.MaxVersion = lo, hi
	if r.ECDHCurve != "" {
		ids, err := openssl.Curves(r.ECDHCurve)
		if err != nil {
			return nil, err
		}
		tc.CurvePreferences = ids
	}
	if r.Ciphers != "" {
		ids, err := openssl.CipherSuites(r.Ciphers)
		if err != nil {
			return nil, err
		}
		tc.CipherSuites = ids
	}
	if r.Cert != nil {
		tc.Certificates = []tls.Certificate{r.Cert.Cert}
	}
	if r.VerifyList != nil {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(r.VerifyList.Data)
		tc.VerifyConnection = verifyBackend(roots, r.ServerName)
	}
	return tc, nil
}

// verifyBackend checks the backend's chain against roots and, when the
// backend has a ServerName, the certificate's name against it (the
// address alone names no host a certificate could be issued to).
func verifyBackend(roots *x509.CertPool, name string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("backend sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			Roots: roots, Intermediates: inter, DNSName: name,
		})
		return err
	}
}

// tlsTag distinguishes backends by their TLS settings in backendKey, so
// a reload that changes them builds a new backend (with a new dialer)
// instead of reusing the old one.
func tlsTag(cb *config.Backend) string {
	r := cb.Rare()
	if !cb.HTTPS && r.ServerName == "" {
		return ""
	}
	h := sha256.New()
	for _, s := range []string{r.ServerName, r.Ciphers, r.CipherSuites, r.Disable, r.ECDHCurve} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if cb.HTTPS {
		h.Write([]byte("https"))
	}
	if r.NoTLS13 {
		h.Write([]byte("no_tls13"))
	}
	if r.Cert != nil {
		for _, der := range r.Cert.Cert.Certificate {
			h.Write(der)
		}
	}
	if r.VerifyList != nil {
		h.Write(r.VerifyList.Data)
	}
	return "!tls:" + hex.EncodeToString(h.Sum(nil)[:8])
}
