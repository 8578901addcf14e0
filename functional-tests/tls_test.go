package functionaltests

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 9: ListenHTTPS with real TLS clients (Go, openssl s_client, curl).

func TestTLSSNISelection(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	cfg := httpsListener(fmt.Sprintf("Cert %q\nCert %q\nCert %q", p.path("a.pem"), p.path("b.pem"), p.path("c.pem")), be)
	lbd := startLBD(t, cfg)
	tests := []struct {
		sni, want string
	}{
		{"a.test", "a.test"}, {"b.test", "b.test"}, {"c.test", "c.test"},
		{"www.b.test", "b.test"}, {"unknown.test", "a.test"}, {"", "a.test"},
	}
	for _, tt := range tests {
		t.Run("SNI "+tt.sni, func(t *testing.T) {
			c, err := tls.Dial("tcp", lbd.addr, &tls.Config{ServerName: tt.sni, InsecureSkipVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.ConnectionState().PeerCertificates[0].Subject.CommonName; got != tt.want {
				t.Errorf("certificate %s, want %s", got, tt.want)
			}
		})
	}
	// openssl s_client verifies the chain it gets for c.test against the CA.
	out, code := runTool(t, "openssl", "s_client", "-connect", lbd.addr, "-servername", "c.test",
		"-CAfile", p.caFile, "-verify_return_error", "-brief")
	if code != 0 || !strings.Contains(out, "CN = c.test") || !strings.Contains(out, "Verification: OK") {
		t.Errorf("openssl s_client (exit %d):\n%s", code, out)
	}
	// curl resolves the name to lbd, checks it, and the request goes through.
	out, code = runTool(t, "curl", "-sS", "--cacert", p.caFile, "--resolve", "b.test:"+port(lbd.addr)+":127.0.0.1",
		"https://b.test:"+port(lbd.addr)+"/sni")
	if code != 0 || !strings.Contains(out, "GET /sni HTTP/1.1 host=b.test:") {
		t.Errorf("curl (exit %d):\n%s", code, out)
	}
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

// TestTLSDisableLevels: Pound's meaning, X and every older protocol.
// Disable TLSv1_3 would leave nothing and is refused at load
// (TestTLSDisableRefusedAtLoad).
func TestTLSDisableLevels(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	versions := []uint16{tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13}
	tests := []struct {
		disable string
		ok      []bool // per version in versions
		openssl string // an s_client option that must fail
	}{
		{"", []bool{false, true, true}, "-tls1_1"},
		{"Disable SSLv3", []bool{false, true, true}, "-tls1_1"},
		{"Disable TLSv1", []bool{false, true, true}, "-tls1_1"},
		{"Disable TLSv1_1", []bool{false, true, true}, "-tls1_1"},
		{"Disable TLSv1_2", []bool{false, false, true}, "-tls1_2"},
	}
	for _, tt := range tests {
		t.Run("["+tt.disable+"]", func(t *testing.T) {
			lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q\n%s", p.path("a.pem"), tt.disable), be))
			for i, v := range versions {
				cfg := &tls.Config{ServerName: "a.test", RootCAs: p.ca.Pool(), MinVersion: v, MaxVersion: v}
				c, err := tls.Dial("tcp", lbd.addr, cfg)
				if err == nil {
					c.Close()
				}
				if (err == nil) != tt.ok[i] {
					t.Errorf("%s: handshake error %v, want success %v", tls.VersionName(v), err, tt.ok[i])
				}
			}
			out, code := runTool(t, "openssl", "s_client", "-connect", lbd.addr, "-servername", "a.test", tt.openssl, "-brief")
			if code == 0 {
				t.Errorf("openssl s_client %s succeeded:\n%s", tt.openssl, out)
			}
		})
	}
}

func TestTLSCipherRestriction(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q\nCiphers \"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305\"", p.path("a.pem")), be))
	tests := []struct {
		name  string
		suite uint16
		ok    bool
	}{
		{"listed AES128-GCM", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, true},
		{"listed CHACHA20", tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, true},
		{"unlisted AES256-GCM", tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, false},
		{"unlisted CBC", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := p.tlsConfig("a.test")
			cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{tt.suite}
			status, _, body, err := fetchTLS(httpsClient(cfg, false), "https://"+lbd.addr+"/c")
			if (err == nil) != tt.ok {
				t.Fatalf("request error %v, want success %v", err, tt.ok)
			}
			if tt.ok && (status != 200 || !strings.Contains(body, "X-Ssl-Cipher: TLSv1.2/ECDHE-ECDSA-")) {
				t.Errorf("status %d, backend saw:\n%s", status, body)
			}
		})
	}
	want := "X-Ssl-Cipher: TLSv1.2/ECDHE-ECDSA-AES128-GCM-SHA256  TLSv1.2 Kx=ECDH     Au=ECDSA Enc=AESGCM(128)            Mac=AEAD\n"
	out, code := runTool(t, "curl", "-sS", "-k", "--tls-max", "1.2", "--ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256", "https://"+lbd.addr+"/c")
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("curl (exit %d) want %q in:\n%s", code, want, out)
	}
	if out, code := runTool(t, "curl", "-sS", "-k", "--tls-max", "1.2", "--ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384", "https://"+lbd.addr+"/c"); code == 0 {
		t.Errorf("curl with an unlisted cipher succeeded:\n%s", out)
	}
}

// TestTLSUnknownCipherIsConfigError: a cipher list that selects nothing
// because of a typo is an error naming it (beside valid names it is only
// ignored, as OpenSSL does: TestRealWorldPoundLeftovers).
func TestTLSUnknownCipherIsConfigError(t *testing.T) {
	p := newTLSPKI(t)
	dir := t.TempDir()
	cfg := httpsListener(fmt.Sprintf("Cert %q\nCiphers \"ECDHE-RSA-AES128-GCM-SHA265\"", p.path("a.pem")))
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(cfg, "{PORT}", "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, binary(t, "lbd"), dir, "-c", "-f", path)
	if code != 1 || !strings.Contains(out, `unknown cipher "ECDHE-RSA-AES128-GCM-SHA265"`) || !strings.Contains(out, "lbd.cfg:") {
		t.Errorf("lbd -c (exit %d):\n%s", code, out)
	}
}
