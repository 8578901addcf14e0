// Package testpki issues throw-away ECDSA P-256 certificates for tests:
// a CA, server certificates for given names, client certificates, and
// CRLs, written as the PEM files Pound's Cert, CAlist, VerifyList and
// CRLlist directives read. It is for tests only; nothing in lbd imports it.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// serial numbers stay small so Pound's X-SSL-serial (a C long) shows them.
var serial atomic.Int64

// Cert is an issued certificate with its key.
type Cert struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	DER  []byte
}

// Spec describes a certificate to issue.
type Spec struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP // IP address SANs (a Redis dialled as 127.0.0.1:port)
	Org        string
	CA         bool
	Client     bool // client-auth usage instead of server-auth
	NotBefore  time.Time
	NotAfter   time.Time
}

// Issue signs s with parent (nil = self-signed).
func Issue(s Spec, parent *Cert) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if s.NotBefore.IsZero() {
		s.NotBefore = time.Now().Add(-time.Hour).Truncate(time.Second)
	}
	if s.NotAfter.IsZero() {
		s.NotAfter = time.Now().Add(24 * time.Hour).Truncate(time.Second)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1) + 1000),
		Subject:      pkix.Name{CommonName: s.CommonName},
		DNSNames:     s.DNSNames,
		IPAddresses:  s.IPs,
		NotBefore:    s.NotBefore,
		NotAfter:     s.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if s.Org != "" {
		tmpl.Subject.Organization = []string{s.Org}
	}
	switch {
	case s.CA:
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	case s.Client:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Cert{Cert: c, Key: key, DER: der}, nil
}

// CertPEM is the certificate alone.
func (c *Cert) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.DER})
}

// KeyPEM is the private key.
func (c *Cert) KeyPEM() []byte {
	der, err := x509.MarshalECPrivateKey(c.Key)
	if err != nil {
		panic(err) // a key this package generated always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// ChainPEM is a Pound Cert file: the certificate, then the issuers
// given, then the key.
func (c *Cert) ChainPEM(issuers ...*Cert) []byte {
	out := c.CertPEM()
	for _, i := range issuers {
		out = append(out, i.CertPEM()...)
	}
	return append(out, c.KeyPEM()...)
}

// TLS is the certificate as a tls.Certificate (for Go clients/servers).
func (c *Cert) TLS(issuers ...*Cert) tls.Certificate {
	tc := tls.Certificate{Certificate: [][]byte{c.DER}, PrivateKey: c.Key, Leaf: c.Cert}
	for _, i := range issuers {
		tc.Certificate = append(tc.Certificate, i.DER)
	}
	return tc
}

// Pool is a CertPool holding c.
func (c *Cert) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Cert)
	return p
}

// CRL is a PEM CRL issued by ca that revokes the given certificates.
func CRL(ca *Cert, revoked ...*Cert) ([]byte, error) {
	var entries []x509.RevocationListEntry
	for _, r := range revoked {
		entries = append(entries, x509.RevocationListEntry{SerialNumber: r.Cert.SerialNumber, RevocationTime: time.Now().Add(-time.Minute)})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(serial.Add(1)), ThisUpdate: time.Now().Add(-time.Hour),
		NextUpdate: time.Now().Add(24 * time.Hour), RevokedCertificateEntries: entries,
	}, ca.Cert, ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), nil
}

// WriteFile writes data to path, replacing it atomically (as certbot
// and secret mounts do), so a reader never sees half a file.
func WriteFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
