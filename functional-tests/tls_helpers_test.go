package functionaltests

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"lbd/internal/testpki"
)

// tlsPKI is a test CA with three server certificates (a.test, b.test,
// c.test) and client certificates, written as PEM files in dir.
type tlsPKI struct {
	dir                                  string
	ca                                   *testpki.Cert
	a, b, c                              *testpki.Cert
	client, stranger                     *testpki.Cert
	caFile, clientFile                   string
	clientKey, strangerFile, strangerKey string
}

func newTLSPKI(t *testing.T) *tlsPKI {
	t.Helper()
	p := &tlsPKI{dir: t.TempDir()}
	mk := func(s testpki.Spec, parent *testpki.Cert) *testpki.Cert {
		c, err := testpki.Issue(s, parent)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	p.ca = mk(testpki.Spec{CommonName: "lbd test CA", Org: "lbd", CA: true}, nil)
	p.a = mk(testpki.Spec{CommonName: "a.test", DNSNames: []string{"a.test"}}, p.ca)
	p.b = mk(testpki.Spec{CommonName: "b.test", DNSNames: []string{"b.test", "*.b.test"}}, p.ca)
	p.c = mk(testpki.Spec{CommonName: "c.test", DNSNames: []string{"c.test"}}, p.ca)
	p.client = mk(testpki.Spec{CommonName: "alice", Org: "lbd", Client: true}, p.ca)
	p.stranger = mk(testpki.Spec{CommonName: "mallory", Client: true}, nil)
	for name, c := range map[string]*testpki.Cert{"a": p.a, "b": p.b, "c": p.c} {
		p.write(t, name+".pem", c.ChainPEM(p.ca))
	}
	p.caFile = p.write(t, "ca.pem", p.ca.CertPEM())
	p.clientFile = p.write(t, "client.crt", p.client.CertPEM())
	p.clientKey = p.write(t, "client.key", p.client.KeyPEM())
	p.strangerFile = p.write(t, "stranger.crt", p.stranger.CertPEM())
	p.strangerKey = p.write(t, "stranger.key", p.stranger.KeyPEM())
	return p
}

func (p *tlsPKI) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := testpki.WriteFile(path, data); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *tlsPKI) path(name string) string { return filepath.Join(p.dir, name) }

// tlsConfig is a client configuration trusting the test CA.
func (p *tlsPKI) tlsConfig(sni string) *tls.Config {
	return &tls.Config{ServerName: sni, RootCAs: p.ca.Pool()}
}

// httpsListener renders a ListenHTTPS block on {PORT} with extra
// directives and one service over backends.
func httpsListener(extra string, backends ...*backend) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nClient 5\nGrace 2\n")
	b.WriteString("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n")
	for _, l := range strings.Split(strings.TrimSpace(extra), "\n") {
		b.WriteString("\t" + strings.TrimSpace(l) + "\n")
	}
	b.WriteString("\tService\n")
	for _, be := range backends {
		b.WriteString(be.block())
	}
	b.WriteString("\tEnd\nEnd\n")
	return b.String()
}

// headersHandler answers with the request line and every header the
// backend received, sorted, one "Name: value" per line.
func headersHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.Header().Set("X-Backend", name)
		fmt.Fprintf(w, "%s %s %s host=%s body=%q\n", r.Method, r.RequestURI, r.Proto, r.Host, body)
		for _, k := range keys {
			for _, v := range r.Header[k] {
				fmt.Fprintf(w, "%s: %s\n", k, v)
			}
		}
	})
}

// httpsClient is an HTTP client for lbd's TLS listener: HTTP/1.1, or
// HTTP/2 when h2 is set.
func httpsClient(cfg *tls.Config, h2 bool) *http.Client {
	if h2 {
		var p http.Protocols
		p.SetHTTP2(true)
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, Protocols: &p}}
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// fetchTLS does one GET and returns status, protocol and body.
func fetchTLS(c *http.Client, url string) (int, string, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Proto, string(b), err
}

// needTool fails the test when a Debian tool the proof relies on is
// missing (the CI installs them: openssl, curl, nghttp2-client).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (apt-get install openssl curl nghttp2-client; h2spec: make bin/tools/h2spec)", name)
	}
	return p
}

// runTool runs a command with a deadline and returns its combined
// output and exit code.
func runTool(t *testing.T, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, needTool(t, name), args...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return string(out), 0
}

// readFile returns a file's content or fails.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
