package listener

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lbd/config"
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
	exactUnderWild := issue(t, testpki.Spec{CommonName: "x.wild.test", DNSNames: []string{"x.wild.test"}}, nil)
	oneAgain := issue(t, testpki.Spec{CommonName: "one-again", DNSNames: []string{"one.test"}}, nil)
	wildAgain := issue(t, testpki.Spec{CommonName: "wild-again", DNSNames: []string{"*.wild.test"}}, nil)
	set := newCertSet([]*tls.Certificate{ptr(def.TLS()), ptr(one.TLS()), ptr(wild.TLS()), ptr(cnOnly.TLS()),
		ptr(exactUnderWild.TLS()), ptr(oneAgain.TLS()), ptr(wildAgain.TLS())}, false)
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
		{"an exact name beats an earlier wildcard", "x.wild.test", exactUnderWild},
		{"of two exact matches the first in Cert order", "one.test", one},
		{"of two wildcard matches the first in Cert order", "b.wild.test", wild},
		{"the bare parent of a wildcard is not covered", "wild.test", def},
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

// certFile is a CertFile as the configuration loads it from path.
func certFile(t *testing.T, source, path string, c *testpki.Cert) *config.CertFile {
	t.Helper()
	return &config.CertFile{Path: path, Source: source, Sum: sha256.Sum256(c.ChainPEM()), Cert: c.TLS()}
}

func TestCertStoreReload(t *testing.T) {
	dir := t.TempDir()
	a := issue(t, testpki.Spec{CommonName: "a.test", DNSNames: []string{"a.test"}}, nil)
	b := issue(t, testpki.Spec{CommonName: "b.test", DNSNames: []string{"b.test"}}, nil)
	other := issue(t, testpki.Spec{CommonName: "other.test"}, nil)
	path := filepath.Join(dir, "site.pem")
	if err := os.WriteFile(path, a.ChainPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	st := newCertStore([]*config.CertFile{certFile(t, path, path, a)}, false)
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
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if rs, _ := st.ReloadFiles([]string{path}); len(rs) != 1 || rs[0].Err == nil || current() != "b.test" {
		t.Errorf("a removed Cert file: %+v, serving %s; want an error and b.test kept", rs, current())
	}
}

// TestCertStoreGlobIncremental: under Cert "dir/*.pem" a file added,
// changed, broken or removed is applied alone; the other certificates
// are not parsed again (same pointers), and names outside the glob are
// left to the caller.
func TestCertStoreGlobIncremental(t *testing.T) {
	dir := t.TempDir()
	glob := filepath.Join(dir, "*.pem")
	pki := map[string]*testpki.Cert{}
	for _, n := range []string{"a", "b", "c"} {
		pki[n] = issue(t, testpki.Spec{CommonName: n + ".test", DNSNames: []string{n + ".test"}}, nil)
	}
	pki["b2"] = issue(t, testpki.Spec{CommonName: "b2.test", DNSNames: []string{"b.test", "b2.test"}}, nil)
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pa, pb := write("a.pem", pki["a"].ChainPEM()), write("b.pem", pki["b"].ChainPEM())
	st := newCertStore([]*config.CertFile{certFile(t, glob, pa, pki["a"]), certFile(t, glob, pb, pki["b"])}, false)
	serves := func(sni string) string {
		c, err := st.getCertificate(helloFor(sni))
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	certOf := func(p string) *tls.Certificate {
		for _, e := range st.entries {
			if e.path == p {
				return e.cert
			}
		}
		return nil
	}
	steps := []struct {
		name   string
		change func() string // returns the path the event names
		want   reloaded      // Path checked; Err checked for presence
		sni    map[string]string
	}{
		{"a new file is added", func() string { return write("c.pem", pki["c"].ChainPEM()) },
			reloaded{Path: filepath.Join(dir, "c.pem"), Added: true}, map[string]string{"c.test": "c.test", "": "a.test"}},
		{"a broken file keeps its certificate", func() string { return write("b.pem", []byte("-----BEGIN nonsense")) },
			reloaded{Path: pb, Err: errNoCert}, map[string]string{"b.test": "b.test"}},
		{"a changed file is replaced", func() string { return write("b.pem", pki["b2"].ChainPEM()) },
			reloaded{Path: pb}, map[string]string{"b.test": "b2.test"}},
		{"a removed file is dropped and the next is the default", func() string { os.Remove(pa); return pa },
			reloaded{Path: pa, Removed: true}, map[string]string{"a.test": "b2.test", "": "b2.test"}},
		{"a broken new file is not added", func() string { return write("d.pem", []byte("junk")) },
			reloaded{Path: filepath.Join(dir, "d.pem"), Added: true, Err: errNoCert}, map[string]string{"d.test": "b2.test"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cc := certOf(filepath.Join(dir, "c.pem"))
			p := s.change()
			rs, stray := st.ReloadFiles([]string{p})
			if len(rs) != 1 || len(stray) != 0 {
				t.Fatalf("ReloadFiles(%s) = %+v, stray %v; want one report", p, rs, stray)
			}
			r := rs[0]
			if r.Path != s.want.Path || r.Added != s.want.Added || r.Removed != s.want.Removed || (r.Err != nil) != (s.want.Err != nil) {
				t.Errorf("report %+v, want %+v", r, s.want)
			}
			if r.Err != nil && !strings.Contains(r.Err.Error(), "certificate") {
				t.Errorf("error %q does not say what is wrong", r.Err)
			}
			for sni, want := range s.sni {
				if got := serves(sni); got != want {
					t.Errorf("SNI %q served %s, want %s", sni, got, want)
				}
			}
			if cc != nil && p != filepath.Join(dir, "c.pem") && certOf(filepath.Join(dir, "c.pem")) != cc {
				t.Error("an unchanged file was parsed again")
			}
		})
	}
	if rs, stray := st.ReloadFiles([]string{filepath.Join(dir, "x.tmp")}); len(rs) != 0 || len(stray) != 1 {
		t.Errorf("a name outside the glob: %+v, stray %v", rs, stray)
	}
	if rs, _ := st.ReloadFiles([]string{pb}); len(rs) != 0 {
		t.Errorf("an unchanged file was reported: %+v", rs)
	}
}

// BenchmarkCertSetPick: choosing among 10,000 certificates costs what
// choosing among one does (a map lookup), for exact and wildcard names.
func BenchmarkCertSetPick(b *testing.B) {
	key := issue(&testing.T{}, testpki.Spec{CommonName: "k"}, nil).TLS()
	for _, n := range []int{1, 100, 10000} {
		certs := make([]*tls.Certificate, n)
		for i := range certs {
			c := key
			c.Leaf = &x509.Certificate{DNSNames: []string{fmt.Sprintf("site%d.test", i), fmt.Sprintf("*.w%d.test", i)}, PublicKey: key.Leaf.PublicKey}
			certs[i] = &c
		}
		set := newCertSet(certs, false)
		for _, sni := range []string{fmt.Sprintf("site%d.test", n-1), fmt.Sprintf("www.w%d.test", n-1)} {
			hello := helloFor(sni)
			b.Run(fmt.Sprintf("%d/%s", n, sni[:4]), func(b *testing.B) {
				for b.Loop() {
					if set.pick(hello) != certs[n-1] {
						b.Fatal("wrong certificate")
					}
				}
			})
		}
	}
}
