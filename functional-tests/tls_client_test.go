package functionaltests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// opensslField is one line of `openssl x509` output for the client
// certificate, the reference for what Pound puts in X-SSL-*.
func opensslField(t *testing.T, certFile, opt string) string {
	t.Helper()
	out, code := runTool(t, "openssl", "x509", "-in", certFile, "-noout", "-nameopt", "oneline,-esc_msb", opt)
	if code != 0 {
		t.Fatalf("openssl x509 %s: %s", opt, out)
	}
	_, v, _ := strings.Cut(strings.TrimSpace(out), "=")
	return v
}

func TestTLSClientCertificateHeaders(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	extra := fmt.Sprintf("Cert %q\nClientCert 2 3\nVerifyList %q\nCAlist %q", p.path("a.pem"), p.caFile, p.caFile)
	lbd := startLBD(t, httpsListener(extra, be))
	base := []string{"-sS", "--cacert", p.caFile, "--resolve", "a.test:" + port(lbd.addr) + ":127.0.0.1",
		"https://a.test:" + port(lbd.addr) + "/who", "-H", "X-SSL-Subject: CN = forged"}
	out, code := runTool(t, "curl", append(base, "--cert", p.clientFile, "--key", p.clientKey)...)
	if code != 0 {
		t.Fatalf("curl with a client certificate (exit %d): %s", code, out)
	}
	want := map[string]string{
		"X-Ssl-Subject":   opensslField(t, p.clientFile, "-subject"),
		"X-Ssl-Issuer":    opensslField(t, p.clientFile, "-issuer"),
		"X-Ssl-Notbefore": opensslField(t, p.clientFile, "-startdate"),
		"X-Ssl-Notafter":  opensslField(t, p.clientFile, "-enddate"),
		"X-Ssl-Serial":    p.client.Cert.SerialNumber.String(),
	}
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			got[k] += v
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (openssl)", k, got[k], v)
		}
	}
	// The backend unfolds the multi-line header to the PEM's lines.
	pem := strings.Join(strings.Fields(readFile(t, p.clientFile)), " ")
	if cert := got["X-Ssl-Certificate"]; strings.Join(strings.Fields(cert), " ") != pem {
		t.Errorf("X-SSL-certificate = %q\nwant the PEM %q", cert, pem)
	}
	if strings.Contains(out, "forged") {
		t.Errorf("the client's own X-SSL-Subject reached the backend:\n%s", out)
	}
	if out, code := runTool(t, "curl", base...); code == 0 {
		t.Errorf("ClientCert 2 let a client without certificate in:\n%s", out)
	}
	if out, code := runTool(t, "curl", append(base, "--cert", p.strangerFile, "--key", p.strangerKey)...); code == 0 {
		t.Errorf("ClientCert 2 accepted a certificate of another CA:\n%s", out)
	}
}

func TestTLSClientCertOptionalAndUnverified(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	tests := []struct {
		name, mode string
		cert, key  string
		ok         bool
		subject    string
	}{
		{"ask: no certificate", "1", "", "", true, ""},
		{"ask: good certificate", "1", p.clientFile, p.clientKey, true, "O = lbd, CN = alice"},
		{"ask: foreign certificate refused", "1", p.strangerFile, p.strangerKey, false, ""},
		{"no verify: foreign certificate", "3", p.strangerFile, p.strangerKey, true, "CN = mallory"},
		{"off: certificate not asked", "0", p.clientFile, p.clientKey, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := fmt.Sprintf("Cert %q\nClientCert %s\nVerifyList %q", p.path("a.pem"), tt.mode, p.caFile)
			lbd := startLBD(t, httpsListener(extra, be))
			args := []string{"-sS", "-k", "https://" + lbd.addr + "/m"}
			if tt.cert != "" {
				args = append(args, "--cert", tt.cert, "--key", tt.key)
			}
			out, code := runTool(t, "curl", args...)
			if (code == 0) != tt.ok {
				t.Fatalf("curl exit %d, want success %v:\n%s", code, tt.ok, out)
			}
			has := strings.Contains(out, "X-Ssl-Subject: "+tt.subject+"\n")
			if tt.ok && tt.subject != "" && !has || tt.subject == "" && strings.Contains(out, "X-Ssl-Subject") {
				t.Errorf("want subject %q, backend saw:\n%s", tt.subject, out)
			}
		})
	}
}

func TestTLSPlainHTTPToTLSPort(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	tests := []struct {
		name, extra string
		status      int
		header      string
	}{
		{"Pound closes silently", "", 0, ""},
		{"zproxy NoSslRedirect", "Name tls\nNoSslRedirect 301 \"https://a.test/\"", 301, "https://a.test/"},
		{"zproxy default ErrNoSsl", "Name tls", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q\n%s", p.path("a.pem"), tt.extra), be))
			c, err := net.Dial("tcp", lbd.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			switch {
			case tt.status == 0 && err == nil:
				t.Errorf("got a %d answer, want the connection closed", resp.StatusCode)
			case tt.status != 0 && err != nil:
				t.Fatalf("no answer: %v", err)
			case tt.status != 0 && (resp.StatusCode != tt.status || resp.Header.Get("Location") != tt.header):
				t.Errorf("status %d Location %q, want %d %q", resp.StatusCode, resp.Header.Get("Location"), tt.status, tt.header)
			}
		})
	}
}
