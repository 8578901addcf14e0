package acmecert

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

// BenchmarkCertificate is the lookup a handshake of an automatic name
// makes (the rest of the handshake is crypto/tls's, as for a Cert file).
func BenchmarkCertificate(b *testing.B) {
	m, err := New(Account{Directory: "https://127.0.0.1:1/dir", StorageDir: b.TempDir()}, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s, err := m.Add(Site{Names: []string{"a.example.com"}, TLSAddr: "127.0.0.1:8443"})
	if err != nil {
		b.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "a.example.com"},
		DNSNames: []string{"a.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.cfg.CacheUnmanagedTLSCertificate(context.Background(), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil); err != nil {
		b.Fatal(err)
	}
	hello := &tls.ClientHelloInfo{ServerName: "a.example.com", SupportedProtos: []string{"h2", "http/1.1"}}
	b.ReportAllocs()
	for b.Loop() {
		if c, err := s.Certificate(hello); c == nil || err != nil {
			b.Fatal("no certificate", err)
		}
	}
}
