package functionaltests

import (
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Automatic certificates (ACMEAccount, ACMECert) against Pebble: see
// acme_helpers_test.go for the CA and the counting front.

var (
	alpnNames = []string{"t1.example.com", "t2.example.com", "t3.example.com"}
	httpNames = []string{"h1.example.com", "h2.example.com", "h3.example.com"}
)

// acmeSite is one lbd with a ListenHTTP (HTTP-01), a ListenHTTPS whose
// names are validated by TLS-ALPN-01 and one by HTTP-01 that also has a
// Cert file (a.test).
type acmeSite struct {
	dir, cfgPath, store, sock   string
	httpPort, alpnPort, h01Port int
}

func newACMESite(t *testing.T) *acmeSite {
	s := &acmeSite{dir: t.TempDir(), httpPort: freePort(t), alpnPort: freePort(t), h01Port: freePort(t)}
	s.store = filepath.Join(s.dir, "acme")
	s.sock = filepath.Join(s.dir, "ctl.sock")
	s.cfgPath = filepath.Join(s.dir, "lbd.cfg")
	return s
}

func (s *acmeSite) write(t *testing.T, e *pebbleEnv, pki *tlsPKI, be *backend) {
	t.Helper()
	svc := fmt.Sprintf("\tService\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %d\n\t\tEnd\n\tEnd\n", be.port)
	quoted := func(names []string) string { return `"` + strings.Join(names, `" "`) + `"` }
	cfg := e.account(s.store) + fmt.Sprintf("Control %q\n", s.sock) +
		fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n%sEnd\n", s.httpPort, svc) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert %s\n\tACMEChallenge \"tls-alpn-01\"\n%sEnd\n", s.alpnPort, quoted(alpnNames), svc) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tCert %q\n\tACMECert %s\n\tACMEChallenge \"http-01\"\n%sEnd\n", s.h01Port, pki.path("a.pem"), quoted(httpNames), svc)
	if err := os.WriteFile(s.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *acmeSite) start(t *testing.T) *proc {
	t.Helper()
	return runLBD(t, s.dir, s.cfgPath, fmt.Sprintf("127.0.0.1:%d", s.httpPort))
}

// addrOf is the HTTPS listener serving name.
func (s *acmeSite) addrOf(name string) string {
	if strings.HasPrefix(name, "t") {
		return fmt.Sprintf("127.0.0.1:%d", s.alpnPort)
	}
	return fmt.Sprintf("127.0.0.1:%d", s.h01Port)
}

// waitServed polls until every name is served with a chain Pebble's root
// verifies, within d; it returns the serials.
func (s *acmeSite) waitServed(t *testing.T, roots *x509.CertPool, names []string, d time.Duration) map[string]string {
	t.Helper()
	serials := map[string]string{}
	var last error
	poll(t, d, "every name served with a verified Pebble chain", func() bool {
		for _, n := range names {
			if serials[n] != "" {
				continue
			}
			sn, err := servedSerial(s.addrOf(n), n, roots)
			if err != nil {
				last = fmt.Errorf("%s: %w", n, err)
				return false
			}
			serials[n] = sn
		}
		return true
	})
	if last != nil {
		t.Logf("(before all were served: %v)", last)
	}
	return serials
}

// TestACMEObtainServeRestart: three names through HTTP-01 and three
// through TLS-ALPN-01 within 20 s of start, each served by SNI with a
// chain Pebble's root verifies, one order each; the listeners serve at
// once (the Cert file beside the automatic names); a challenge path lbd
// has no token for goes to the services; a restart places no new order.
func TestACMEObtainServeRestart(t *testing.T) {
	pki := newTLSPKI(t)
	be := startBackend(t, "127.0.0.1", "web", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "backend saw "+r.URL.Path)
	}))
	s := newACMESite(t)
	e := startPebble(t, s.httpPort, s.alpnPort)
	s.write(t, e, pki, be)
	start := time.Now()
	p := s.start(t)

	// Serving at once: the Cert file answers for its name before any
	// certificate is issued.
	if _, err := servedSerial(fmt.Sprintf("127.0.0.1:%d", s.h01Port), "a.test", pki.ca.Pool()); err != nil {
		t.Fatalf("the Cert file is not served at start: %v", err)
	}
	roots := e.root()
	names := append(append([]string(nil), alpnNames...), httpNames...)
	serials := s.waitServed(t, roots, names, 20*time.Second)
	t.Logf("six names served %v after start", time.Since(start).Round(time.Millisecond))
	for _, n := range names {
		if got := e.front.ordersFor(n); got != 1 {
			t.Errorf("%s: %d orders at Pebble, want 1", n, got)
		}
	}
	// The Cert file still answers for its own name.
	if _, err := servedSerial(fmt.Sprintf("127.0.0.1:%d", s.h01Port), "a.test", pki.ca.Pool()); err != nil {
		t.Errorf("a.test beside the automatic names: %v", err)
	}

	// A token lbd does not present is the services' business.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/.well-known/acme-challenge/not-a-token", s.httpPort))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body) // a short read shows in the comparison
	resp.Body.Close()
	if want := "backend saw /.well-known/acme-challenge/not-a-token"; string(body) != want {
		t.Errorf("unknown token: got %d %q, want the backend's %q", resp.StatusCode, body, want)
	}

	fi, err := os.Stat(s.store)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("storage directory mode %v, want 0700", fi.Mode().Perm())
	}

	// Restart: the stored certificates are served at once, no order.
	before := e.front.totalOrders()
	p.kill()
	s.start(t)
	again := s.waitServed(t, roots, names, 3*time.Second)
	for _, n := range names {
		if again[n] != serials[n] {
			t.Errorf("%s: serial %s after the restart, want the stored %s", n, again[n], serials[n])
		}
	}
	time.Sleep(500 * time.Millisecond) // an order placed by mistake would be under way by now
	if got := e.front.totalOrders(); got != before {
		t.Errorf("the restart placed %d new orders", got-before)
	}
}
