package functionaltests

import (
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

func (s *acmeSite) write(t *testing.T, e *pebbleEnv, pki *tlsPKI, be *backend, extra ...string) {
	t.Helper()
	svc := fmt.Sprintf("\tService\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %d\n\t\tEnd\n\tEnd\n", be.port)
	quoted := func(names []string) string { return `"` + strings.Join(names, `" "`) + `"` }
	cfg := e.account(s.store) + fmt.Sprintf("Control %q\n", s.sock) +
		fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n%sEnd\n", s.httpPort, svc) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert %s\n\tACMEChallenge \"tls-alpn-01\"\n%sEnd\n", s.alpnPort, quoted(alpnNames), svc) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tCert %q\n\tACMECert %s\n\tACMEChallenge \"http-01\"\n%sEnd\n", s.h01Port, pki.path("a.pem"), quoted(append(append([]string(nil), httpNames...), extra...)), svc)
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
// has no token for goes to the services; a restart places no new order,
// a reload that adds a name one.
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

	// A reload that adds a name orders that one alone; the others are
	// served from the first handshake after it.
	s.write(t, e, pki, be, "h4.example.com")
	lbctlOK(t, s.sock, "reload")
	for _, n := range names {
		if sn, err := servedSerial(s.addrOf(n), n, roots); err != nil || sn != serials[n] {
			t.Errorf("%s right after the reload: serial %q (%v), want %s", n, sn, err, serials[n])
		}
	}
	s.waitServed(t, roots, []string{"h4.example.com"}, 20*time.Second)
	if got := e.front.totalOrders() - before; got != 1 || e.front.ordersFor("h4.example.com") != 1 {
		t.Errorf("the reload placed %d orders, want 1 for h4.example.com", got)
	}
}

// metricValue is the value of one sample line of the control socket's
// /metrics ("" when absent).
func metricValue(t *testing.T, sock, sample string) string {
	t.Helper()
	out := lbctlOK(t, sock, "metrics")
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// TestACMEOutage: lbctl lists the certificates; with Pebble stopped a
// forced renewal fails, the error shows in lbctl and the metrics, and
// the stored certificate is still served; with Pebble back (a fresh one:
// new roots, the account unknown) the next renewal goes through and the
// new serial is served.
func TestACMEOutage(t *testing.T) {
	pki := newTLSPKI(t)
	be := startBackend(t, "127.0.0.1", "web", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	s := newACMESite(t)
	e := startPebble(t, s.httpPort, s.alpnPort)
	s.write(t, e, pki, be)
	s.start(t)
	roots := e.root()
	serials := s.waitServed(t, roots, append(append([]string(nil), alpnNames...), httpNames...), 20*time.Second)

	list := lbctlOK(t, s.sock, "acme")
	for _, want := range []string{"t1.example.com", "h3.example.com", "Pebble Intermediate CA", serials["t1.example.com"]} {
		if !strings.Contains(list, want) {
			t.Errorf("lbctl acme lacks %q:\n%s", want, list)
		}
	}
	if v := metricValue(t, s.sock, `lbd_acme_certificate_valid{name="t1.example.com"}`); v != "1" {
		t.Errorf("lbd_acme_certificate_valid = %q, want 1", v)
	}

	e.stopPebble()
	out, errOut, code := lbctlRun(t, "lbctl", nil, "-s", s.sock, "acme", "renew", "t1.example.com")
	// The front answers 502 for the stopped Pebble, as a CA's own proxy
	// would.
	if code == 0 || !strings.Contains(errOut, "fetching new nonce from server: HTTP 502") {
		t.Errorf("renewal with Pebble down: exit %d, stdout %q, stderr %q; want the CA's 502", code, out, errOut)
	}
	if list := lbctlOK(t, s.sock, "acme"); !strings.Contains(list, "HTTP 502") {
		t.Errorf("lbctl acme does not show the error:\n%s", list)
	}
	if v := metricValue(t, s.sock, `lbd_acme_last_attempt_failed{name="t1.example.com"}`); v != "1" {
		t.Errorf("lbd_acme_last_attempt_failed = %q, want 1", v)
	}
	if sn, err := servedSerial(s.addrOf("t1.example.com"), "t1.example.com", roots); err != nil || sn != serials["t1.example.com"] {
		t.Errorf("with Pebble down: serial %q (%v), want the stored %s", sn, err, serials["t1.example.com"])
	}

	e.startPebble()
	// The fresh Pebble does not know the account: lbd registers it
	// again within the same renewal.
	if _, errOut, code = lbctlRun(t, "lbctl", nil, "-s", s.sock, "acme", "renew", "t1.example.com"); code != 0 {
		t.Fatalf("no renewal once Pebble is back: %s", errOut)
	}
	sn, err := servedSerial(s.addrOf("t1.example.com"), "t1.example.com", e.root())
	if err != nil || sn == serials["t1.example.com"] {
		t.Errorf("after recovery: serial %q (%v), want a new one verified by the new Pebble's root", sn, err)
	}
	if v := metricValue(t, s.sock, `lbd_acme_last_attempt_failed{name="t1.example.com"}`); v != "0" {
		t.Errorf("lbd_acme_last_attempt_failed = %q after recovery, want 0", v)
	}
}

// TestACMEBadInput: a name that is not a DNS name and a bad directory
// URL are configuration errors at file:line:col; a storage directory
// lbd cannot create stops it at start with the reason; an unreachable
// CA leaves lbd serving and says why in lbctl.
func TestACMEBadInput(t *testing.T) {
	dir := t.TempDir()
	listener := "ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert %s\n\tService\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 9\n\t\tEnd\n\tEnd\nEnd\n"
	account := "ACMEAccount\n\tDirectory %q\n\tStorage %q\nEnd\n"
	check := func(name, cfg string) (string, int) {
		path := filepath.Join(dir, name+".cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCmd(t, exec.Command(binary(t, "lbd"), "-c", "-f", path))
		return out + errOut, code
	}
	for _, tc := range []struct{ name, cfg, want string }{
		{"bad-name", fmt.Sprintf(account, "https://127.0.0.1:1/dir", dir) + fmt.Sprintf(listener, 443, `"www.example.com" "bad_name.example.com"`),
			"bad-name.cfg:8.36-57: ACMECert \"bad_name.example.com\": not a valid DNS name"},
		{"bad-url", fmt.Sprintf(account, "ftp://ca.example/dir", dir) + fmt.Sprintf(listener, 443, `"www.example.com"`),
			"bad-url.cfg:2.19-40: ACME directory URL \"ftp://ca.example/dir\": the scheme must be https"},
	} {
		out, code := check(tc.name, tc.cfg)
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output %q; want 1 and %q", tc.name, code, out, tc.want)
		}
	}

	// A storage path below a regular file cannot be created.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	path := filepath.Join(dir, "store.cfg")
	cfg := fmt.Sprintf(account, "https://127.0.0.1:1/dir", filepath.Join(blocker, "acme")) + fmt.Sprintf(listener, port, `"www.example.com"`)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t, "lbd"), "-e", "-f", path)
	out, errOut, code := runCmd(t, cmd)
	if code == 0 || !strings.Contains(out+errOut, "store.cfg:1.1-4.3: ACME storage: mkdir "+blocker+": not a directory") {
		t.Errorf("unusable storage: exit %d, output %q", code, out+errOut)
	}

	// An unreachable CA: lbd serves (the handshake fails for lack of a
	// certificate: this listener has no Cert) and lbctl says why.
	sock := filepath.Join(dir, "ctl.sock")
	cfg = fmt.Sprintf(account, "https://127.0.0.1:1/dir", filepath.Join(dir, "acme")) + fmt.Sprintf("Control %q\n", sock) + fmt.Sprintf(listener, port, `"www.example.com"`)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", port))
	poll(t, 10*time.Second, "lbctl acme shows the unreachable CA", func() bool {
		return strings.Contains(lbctlOK(t, sock, "acme"), "127.0.0.1:1: connect: connection refused")
	})
	if v := metricValue(t, sock, `lbd_acme_certificate_valid{name="www.example.com"}`); v != "0" {
		t.Errorf("lbd_acme_certificate_valid = %q, want 0", v)
	}
}

// TestACMERenewUnderLoad: a forced renewal while h2load opens 200 new
// TLS connections a second for 10 s (one request each): no handshake
// or request fails, and the new serial is served afterwards. The
// listener has no Cert file: h2load sends no SNI to an IP address and
// gets the first automatic name's certificate.
func TestACMERenewUnderLoad(t *testing.T) {
	needTool(t, "h2load")
	dir := t.TempDir()
	httpPort, tlsPort := freePort(t), freePort(t)
	e := startPebble(t, httpPort, tlsPort)
	be := startBackend(t, "127.0.0.1", "web", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	sock := filepath.Join(dir, "ctl.sock")
	svc := fmt.Sprintf("\tService\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %d\n\t\tEnd\n\tEnd\n", be.port)
	cfg := e.account(filepath.Join(dir, "acme")) + fmt.Sprintf("Control %q\n", sock) +
		fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n%sEnd\n", httpPort, svc) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert \"r1.example.com\"\n%sEnd\n", tlsPort, svc)
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", httpPort))
	addr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	roots := e.root()
	var old string
	poll(t, 20*time.Second, "r1.example.com served", func() bool {
		sn, err := servedSerial(addr, "r1.example.com", roots)
		old = sn
		return err == nil
	})

	load := exec.Command(needTool(t, "h2load"), "-r", "200", "-c", "2000", "-n", "2000", "https://"+addr+"/")
	var out strings.Builder
	load.Stdout, load.Stderr = &out, &out
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- load.Wait() }()
	time.Sleep(3 * time.Second)
	renew := lbctlOK(t, sock, "acme", "renew", "r1.example.com")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("h2load: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		load.Process.Kill()
		t.Fatalf("h2load did not finish in 30 s:\n%s", out.String())
	}
	summary := out.String()
	if !strings.Contains(summary, "requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout") {
		t.Errorf("h2load saw failures:\n%s", summary)
	}
	sn, err := servedSerial(addr, "r1.example.com", roots)
	if err != nil || sn == old || !strings.Contains(renew, sn) {
		t.Errorf("after the renewal: serial %q (%v), old %s, lbctl said %q", sn, err, old, renew)
	}
	t.Logf("renewed during the load: %s", strings.TrimSpace(renew))
}

// TestACMEExternalAccountBinding: a CA that requires EAB issues to the
// account bound with the right key and refuses a wrong one, which lbctl
// shows.
func TestACMEExternalAccountBinding(t *testing.T) {
	const kid, mac = "kid-1", "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"
	httpPort, tlsPort := freePort(t), freePort(t)
	e := startPebbleWith(t, httpPort, tlsPort, fmt.Sprintf(`"externalAccountBindingRequired": true, "externalAccountMACKeys": {%q: %q}`, kid, mac))
	for _, tc := range []struct {
		name, key string
		ok        bool
	}{
		{"bound", mac, true},
		{"wrong key", "b10lLJs8l1GPIzsLP0s6pMt8O0XVGnfTaCeROxQM0BIt2XrJMDHJZBM5NuQmQJQH", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "ctl.sock")
			account := strings.Replace(e.account(filepath.Join(dir, "acme")), "End\n", fmt.Sprintf("\tEAB %q %q\nEnd\n", kid, tc.key), 1)
			cfg := account + fmt.Sprintf("Control %q\n", sock) +
				fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n\tService\n\t\tError 404\n\tEnd\nEnd\n", httpPort) +
				fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert \"e1.example.com\"\n\tService\n\t\tError 404\n\tEnd\nEnd\n", tlsPort)
			path := filepath.Join(dir, "lbd.cfg")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			p := runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", httpPort))
			defer p.kill() // the next case binds the same ports
			if tc.ok {
				poll(t, 20*time.Second, "e1.example.com served", func() bool {
					_, err := servedSerial(fmt.Sprintf("127.0.0.1:%d", tlsPort), "e1.example.com", e.root())
					return err == nil
				})
				return
			}
			poll(t, 20*time.Second, "lbctl shows the refused binding", func() bool {
				return strings.Contains(lbctlOK(t, sock, "acme"), "external account binding JWS verification error")
			})
			if strings.Contains(p.out.String(), tc.key) || strings.Contains(lbctlOK(t, sock, "-j", "acme"), tc.key) {
				t.Error("the EAB MAC key appears in the log or the control API")
			}
		})
	}
}

// TestACMEUserDrop: lbd started as root with User "nobody" gives the
// storage directory to nobody, orders once it is nobody, and every file
// of the storage is nobody's (so later renewals can write them).
func TestACMEUserDrop(t *testing.T) {
	requireRoot(t)
	uid, gid := nobodyIDs(t)
	dir := openTempDir(t)
	httpPort, tlsPort := freePort(t), freePort(t)
	e := startPebble(t, httpPort, tlsPort)
	store, sock := filepath.Join(dir, "acme"), filepath.Join(dir, "ctl.sock")
	cfg := "User \"nobody\"\nGroup \"nogroup\"\n" + e.account(store) + fmt.Sprintf("Control %q\n", sock) +
		fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n\tService\n\t\tError 404\n\tEnd\nEnd\n", httpPort) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert \"u1.example.com\"\n\tService\n\t\tError 404\n\tEnd\nEnd\n", tlsPort)
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", httpPort))
	waitDropped(t, p)
	addr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	poll(t, 20*time.Second, "u1.example.com served", func() bool {
		_, err := servedSerial(addr, "u1.example.com", e.root())
		return err == nil
	})
	lbctlOK(t, sock, "acme", "renew", "u1.example.com")
	files := 0
	err := filepath.Walk(store, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s belongs to %d:%d, want nobody (%d:%d)", p, st.Uid, st.Gid, uid, gid)
		}
		if !fi.IsDir() {
			files++
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("storage walk: %v, %d files", err, files)
	}
}
