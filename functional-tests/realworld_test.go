package functionaltests

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRealWorldPoundLeftovers: what real Pound configurations carry and
// Pound accepts: the same backend listed twice in a service, and cipher
// lists with names OpenSSL ignores (SSLv2 is gone). Both load, warn at
// most, and serve.
func TestRealWorldPoundLeftovers(t *testing.T) {
	a := echoBackend(t, "a")
	pki := newTLSPKI(t)
	cfg := httpsListener("Cert \""+pki.path("a.pem")+"\"\nCiphers \"ALL:!ADH:!EXPORT:!SSLv2:RC4+RSA:+HIGH:+MEDIUM\"", a, a)
	p := startLBD(t, cfg)
	if out := p.out.String(); !strings.Contains(out, `cipher "SSLv2" selects nothing and is ignored`) {
		t.Errorf("no warning about SSLv2:\n%s", out)
	}
	tc := pki.tlsConfig("a.test")
	tc.NextProtos = []string{"http/1.1"}
	tc.MaxVersion = tls.VersionTLS12 // the cipher list applies to TLS 1.2
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	for i := 0; i < 6; i++ {
		resp, err := c.Get("https://" + p.addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "a" {
			t.Fatalf("request %d: %d from %q", i, resp.StatusCode, resp.Header.Get("X-Backend"))
		}
	}
}
