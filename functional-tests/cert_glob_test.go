package functionaltests

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lbd/internal/testpki"
)

// servedCN is the subject CN of the certificate lbd presents for sni,
// checked against the test CA and, when it is not the default, sni.
func servedCN(addr, sni string, p *tlsPKI) (string, error) {
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		return "", err
	}
	defer c.Close()
	leaf := c.ConnectionState().PeerCertificates[0]
	if err := leaf.CheckSignatureFrom(p.ca.Cert); err != nil {
		return "", err
	}
	return leaf.Subject.CommonName + "/" + strings.Join(leaf.Subject.Organization, ","), nil
}

// TestCertGlobDirectoryWatched: `Cert "dir/*.pem"` (Pound 4's glob)
// loads every matching file; while lbd runs, a file added to the
// directory is served, a changed file is swapped in, a broken file keeps
// its certificate with an error naming it, and a removed file is no
// longer served. Each change re-reads that file alone.
func TestCertGlobDirectoryWatched(t *testing.T) {
	p := newTLSPKI(t)
	sites := p.path("sites")
	if err := os.Mkdir(sites, 0o700); err != nil {
		t.Fatal(err)
	}
	put := func(name, cn, org string, names ...string) string {
		t.Helper()
		c, err := testpki.Issue(testpki.Spec{CommonName: cn, DNSNames: names, Org: org}, p.ca)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(sites, name)
		// Written aside and renamed in, as deployment tools do.
		if err := testpki.WriteFile(path+".tmp", c.ChainPEM(p.ca)); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	put("a.pem", "a.test", "v1", "a.test")
	put("b.pem", "b.test", "v1", "b.test", "*.b.test")
	if err := os.WriteFile(filepath.Join(sites, "README"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q", filepath.Join(sites, "*.pem")), be))

	expect := func(sni, want string) {
		t.Helper()
		var got string
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got, err = servedCN(lbd.addr, sni, p); err == nil && got == want {
				return
			}
		}
		t.Fatalf("SNI %q: served %q (%v), want %q\n%s", sni, got, err, want, lbd.out.String())
	}
	waitLog := func(text string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(lbd.out.String(), text); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no log line with %q:\n%s", text, lbd.out.String())
			}
		}
	}
	expect("a.test", "a.test/v1")
	expect("www.b.test", "b.test/v1")
	expect("", "a.test/v1") // the first file in name order is the default

	c := put("c.pem", "c.test", "v1", "c.test")
	expect("c.test", "c.test/v1")
	waitLog(c + ": certificate added")

	a := put("a.pem", "a.test", "v2", "a.test")
	expect("a.test", "a.test/v2")
	waitLog(a + ": certificate reloaded")

	b := filepath.Join(sites, "b.pem")
	if err := os.WriteFile(b, []byte("-----BEGIN CERTIFICATE-----\ntruncated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitLog(b + ": keeping the previous certificate")
	expect("b.test", "b.test/v1")

	if err := os.Remove(c); err != nil {
		t.Fatal(err)
	}
	waitLog(c + ": certificate removed")
	expect("c.test", "a.test/v2")

	for _, f := range []string{"b.pem: certificate reloaded", "c.pem: certificate reloaded", "README"} {
		if strings.Contains(lbd.out.String(), f) {
			t.Errorf("a file that did not change (or is outside the glob) was re-read: %q in\n%s", f, lbd.out.String())
		}
	}
}
