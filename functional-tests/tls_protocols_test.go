package functionaltests

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 30: Disable TLSv1_3 means "TLS 1.3 alone" in zproxy files and
// "TLS 1.3 and every older protocol" (so: nothing) in Pound files; TLS 1.0
// and 1.1 only with an explicit @SECLEVEL=0.

// handshakes tries each version alone with a Go client and reports which
// succeeded, by name ("TLSv1.2 TLSv1.3").
func handshakes(t *testing.T, p *tlsPKI, addr string, versions ...uint16) string {
	t.Helper()
	var ok []string
	for _, v := range versions {
		cfg := p.tlsConfig("a.test")
		cfg.MinVersion, cfg.MaxVersion = v, v
		if c, err := tls.Dial("tcp", addr, cfg); err == nil {
			ok = append(ok, strings.ReplaceAll(tls.VersionName(v), "TLS ", "TLSv"))
			c.Close()
		}
	}
	return strings.Join(ok, " ")
}

// sClient reports whether openssl s_client completes a handshake with
// these options, and the protocol it names.
func sClient(t *testing.T, addr string, opts ...string) (string, bool) {
	t.Helper()
	out, code := runTool(t, "openssl", append([]string{"s_client", "-connect", addr, "-servername", "a.test", "-brief"}, opts...)...)
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "Protocol version: "); ok && code == 0 {
			return strings.TrimSpace(v), true
		}
	}
	return out, false
}

func TestTLSDisableTLS13ZproxyDialect(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	// A listener Name is zproxy-only: the file is read as zproxy's.
	lbd := startLBD(t, httpsListener(fmt.Sprintf("Name tls12only\nCert %q\nDisable TLSv1_3", p.path("a.pem")), be))
	all := []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13}
	if got := handshakes(t, p, lbd.addr, all...); got != "TLSv1.2" {
		t.Errorf("Go clients got through with [%s], want [TLSv1.2]", got)
	}
	if v, ok := sClient(t, lbd.addr, "-tls1_2"); !ok || v != "TLSv1.2" {
		t.Errorf("openssl s_client -tls1_2: %s", v)
	}
	if out, ok := sClient(t, lbd.addr, "-tls1_3"); ok {
		t.Errorf("openssl s_client -tls1_3 succeeded: %s", out)
	}
	status, _, body, err := fetchTLS(httpsClient(p.tlsConfig("a.test"), false), "https://"+lbd.addr+"/z")
	// zproxy sends no X-SSL-* lines (lbd does in Pound files).
	if err != nil || status != 200 || !strings.Contains(body, "GET /z ") || strings.Contains(body, "X-Ssl-") {
		t.Errorf("request: %v, status %d, backend saw:\n%s", err, status, body)
	}
}

// TestTLSDisableRefusedAtLoad: statements that leave no protocol are
// configuration errors with their position, in Pound's meaning of
// Disable TLSv1_3 and in zproxy's (with TLSv1_2, in either order).
func TestTLSDisableRefusedAtLoad(t *testing.T) {
	p := newTLSPKI(t)
	tests := []struct {
		name, extra, want string
	}{
		{"pound: TLSv1_3 and everything older", "Disable TLSv1_3",
			"lbd.cfg:12.17-23: Disable TLSv1_3 turns off TLS 1.3 and every older protocol (Pound's meaning)"},
		{"zproxy: TLSv1_2 then TLSv1_3", "Name z\nDisable TLSv1_2\nDisable TLSv1_3",
			"lbd.cfg:14.17-23: Disable TLSv1_2 and Disable TLSv1_3 together leave no protocol enabled"},
		{"zproxy: TLSv1_3 then TLSv1_2", "Name z\nDisable TLSv1_3\nDisable TLSv1_2",
			"lbd.cfg:14.17-23: Disable TLSv1_2 and Disable TLSv1_3 together leave no protocol enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := httpsListener(fmt.Sprintf("Cert %q\n%s", p.path("a.pem"), tt.extra))
			path := filepath.Join(dir, "lbd.cfg")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(cfg, "{PORT}", "1")), 0o644); err != nil {
				t.Fatal(err)
			}
			out, code := runCLI(t, binary(t, "lbd"), dir, "-c", "-f", path)
			if code != 1 || !strings.Contains(out, tt.want) {
				t.Errorf("lbd -c (exit %d), want %q in:\n%s", code, tt.want, out)
			}
		})
	}
}

// TestTLSLegacyOptIn: TLS 1.0 and 1.1 stay off unless the cipher list
// sets OpenSSL's security level 0, as Pound on OpenSSL 3 needs; Disable
// still applies on top.
func TestTLSLegacyOptIn(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	all := []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13}
	tests := []struct {
		name, extra, want string
	}{
		{"off by default", `Ciphers "ALL"`, "TLSv1.2 TLSv1.3"},
		{"security level 0", `Ciphers "ALL@SECLEVEL=0"`, "TLSv1.0 TLSv1.1 TLSv1.2 TLSv1.3"},
		{"level 0 and Disable TLSv1", "Ciphers \"ALL:@SECLEVEL=0\"\nDisable TLSv1", "TLSv1.1 TLSv1.2 TLSv1.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q\n%s", p.path("a.pem"), tt.extra), be))
			if got := handshakes(t, p, lbd.addr, all...); got != tt.want {
				t.Errorf("Go clients got through with [%s], want [%s]", got, tt.want)
			}
			// s_client needs level 0 too to offer TLS 1.0 at all.
			v, ok := sClient(t, lbd.addr, "-tls1", "-cipher", "DEFAULT@SECLEVEL=0")
			if want := strings.HasPrefix(tt.want, "TLSv1.0"); ok != want || ok && v != "TLSv1" {
				t.Errorf("openssl s_client -tls1: %s (success %v, want %v)", v, ok, want)
			}
		})
	}
}
