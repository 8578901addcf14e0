package listener

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"lbd/internal/testpki"
)

func issue(t *testing.T, s testpki.Spec, parent *testpki.Cert) *testpki.Cert {
	t.Helper()
	c, err := testpki.Issue(s, parent)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// helloFor is a ClientHello as a modern client sends it.
func helloFor(name string) *tls.ClientHelloInfo {
	return &tls.ClientHelloInfo{
		ServerName:        name,
		SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
		SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256, tls.PSSWithSHA256},
		SupportedCurves:   []tls.CurveID{tls.X25519, tls.CurveP256},
		SupportedPoints:   []uint8{0},
		CipherSuites:      []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
	}
}

func TestCertSetPick(t *testing.T) {
	def := issue(t, testpki.Spec{CommonName: "default.test", DNSNames: []string{"default.test"}}, nil)
	one := issue(t, testpki.Spec{CommonName: "one.test", DNSNames: []string{"one.test", "www.one.test"}}, nil)
	wild := issue(t, testpki.Spec{CommonName: "wild", DNSNames: []string{"*.wild.test"}}, nil)
	cnOnly := issue(t, testpki.Spec{CommonName: "legacy.test"}, nil)
	set := newCertSet([]*tls.Certificate{ptr(def.TLS()), ptr(one.TLS()), ptr(wild.TLS()), ptr(cnOnly.TLS())}, false)
	tests := []struct {
		name, sni string
		want      *testpki.Cert
	}{
		{"no SNI gets the first", "", def},
		{"exact name", "one.test", one},
		{"second SAN", "www.one.test", one},
		{"case and trailing dot", "ONE.test.", one},
		{"wildcard", "a.wild.test", wild},
		{"wildcard is one label only", "a.b.wild.test", def},
		{"CN when no SAN", "legacy.test", cnOnly},
		{"unknown name gets the first", "other.test", def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := set.pick(helloFor(tt.sni))
			if got.Leaf.Subject.CommonName != tt.want.Cert.Subject.CommonName {
				t.Errorf("SNI %q got %s, want %s", tt.sni, got.Leaf.Subject.CommonName, tt.want.Cert.Subject.CommonName)
			}
		})
	}
}

// TestCertSetPickZproxy: zproxy takes the first certificate in Cert
// order whose CN or a SAN matches, "*" standing for any run of
// [-a-z0-9], else the first.
func TestCertSetPickZproxy(t *testing.T) {
	exact := issue(t, testpki.Spec{CommonName: "test.zproxy"}, nil)
	wild := issue(t, testpki.Spec{CommonName: "*.zproxy"}, nil)
	all := issue(t, testpki.Spec{CommonName: "*"}, nil)
	san := issue(t, testpki.Spec{CommonName: "san", DNSNames: []string{"www-*.example.test"}}, nil)
	set := newCertSet([]*tls.Certificate{ptr(exact.TLS()), ptr(wild.TLS()), ptr(all.TLS()), ptr(san.TLS())}, true)
	tests := []struct {
		name, sni string
		want      *testpki.Cert
	}{
		{"no SNI gets the first", "", exact},
		{"exact CN", "test.zproxy", exact},
		{"wildcard CN", "other.zproxy", wild},
		{"a wildcard label may be empty", ".zproxy", wild},
		{"CN * matches a dotless name", "zproxy", all},
		{"CN * does not match dots", "a.b.c", exact},
		{"SAN with a partial wildcard", "www-1.example.test", san},
		{"a wildcard never spans a dot", "www-a.b.example.test", exact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := set.pick(helloFor(tt.sni))
			if got.Leaf.Subject.CommonName != tt.want.Cert.Subject.CommonName {
				t.Errorf("SNI %q got %s, want %s", tt.sni, got.Leaf.Subject.CommonName, tt.want.Cert.Subject.CommonName)
			}
		})
	}
}

func ptr(c tls.Certificate) *tls.Certificate { return &c }

func TestCertStoreReload(t *testing.T) {
	dir := t.TempDir()
	a := issue(t, testpki.Spec{CommonName: "a.test", DNSNames: []string{"a.test"}}, nil)
	b := issue(t, testpki.Spec{CommonName: "b.test", DNSNames: []string{"b.test"}}, nil)
	other := issue(t, testpki.Spec{CommonName: "other.test"}, nil)
	path := filepath.Join(dir, "site.pem")
	if err := os.WriteFile(path, a.ChainPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	st := newCertStore([]string{path}, []tls.Certificate{a.TLS()}, false)
	current := func() string {
		c, err := st.getCertificate(helloFor(""))
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	steps := []struct {
		name    string
		content []byte
		wantCN  string
		wantErr bool
		events  int
	}{
		{"unchanged file is not reloaded", a.ChainPEM(), "a.test", false, 0},
		{"truncated file keeps the old certificate", b.ChainPEM()[:100], "a.test", true, 1},
		{"key of another certificate keeps the old one", append(b.CertPEM(), other.KeyPEM()...), "a.test", true, 1},
		{"good file is swapped in", b.ChainPEM(), "b.test", false, 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := os.WriteFile(path, s.content, 0o600); err != nil {
				t.Fatal(err)
			}
			rs := st.Reload(dir)
			if len(rs) != s.events {
				t.Fatalf("Reload reported %d changes, want %d: %+v", len(rs), s.events, rs)
			}
			if s.events > 0 && (rs[0].Err != nil) != s.wantErr {
				t.Errorf("Reload error = %v, want error %v", rs[0].Err, s.wantErr)
			}
			if got := current(); got != s.wantCN {
				t.Errorf("serving %s, want %s", got, s.wantCN)
			}
		})
	}
	if rs := st.Reload(filepath.Join(dir, "elsewhere")); len(rs) != 0 {
		t.Errorf("reload of another directory touched %+v", rs)
	}
}
