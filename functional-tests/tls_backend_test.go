package functionaltests

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"lbd/internal/testpki"
)

// tlsBackend is an HTTPS backend with a certificate from the test CA. It
// closes every connection after one response (so lbd has to reconnect,
// which shows session resumption) and records each handshake.
type tlsBackend struct {
	addr string
	mu   sync.Mutex
	hs   []string // "sni=.. resumed=.. client=.."
}

func startTLSBackend(t *testing.T, p *tlsPKI, cert *testpki.Cert, clientCAs *x509.CertPool) *tlsBackend {
	t.Helper()
	tb := &tlsBackend{}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert.TLS(p.ca)}, ClientCAs: clientCAs}
	if clientCAs != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		client := ""
		if len(cs.PeerCertificates) > 0 {
			client = cs.PeerCertificates[0].Subject.CommonName
		}
		tb.mu.Lock()
		tb.hs = append(tb.hs, fmt.Sprintf("sni=%s resumed=%v client=%s", cs.ServerName, cs.DidResume, client))
		tb.mu.Unlock()
		return nil
	}
	ln, err := tls.Listen("tcp", "127.0.0.2:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	tb.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprintf(w, "host=%s proto=%s tls=%v\n", r.Host, r.Proto, r.TLS != nil)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return tb
}

func (tb *tlsBackend) block(extra string) string {
	host, port, _ := net.SplitHostPort(tb.addr)
	return fmt.Sprintf("\t\tBackEnd\n\t\t\tAddress %s\n\t\t\tPort %s\n\t\t\t%s\n\t\tEnd\n", host, port,
		strings.ReplaceAll(strings.TrimSpace(extra), "\n", "\n\t\t\t"))
}

func (tb *tlsBackend) handshakes() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.hs...)
}

func plainListener(blocks ...string) string {
	return "Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nClient 5\nGrace 2\n" +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n" + strings.Join(blocks, "") + "\tEnd\nEnd\n"
}

func TestHTTPSBackends(t *testing.T) {
	p := newTLSPKI(t)
	internal, err := testpki.Issue(testpki.Spec{CommonName: "internal.test", DNSNames: []string{"internal.test"}}, p.ca)
	if err != nil {
		t.Fatal(err)
	}
	other, err := testpki.Issue(testpki.Spec{CommonName: "other CA", CA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	otherCA := p.write(t, "other-ca.pem", other.CertPEM())
	clientPEM := p.write(t, "lbd-client.pem", p.client.ChainPEM())
	tests := []struct {
		name       string
		clientCAs  *x509.CertPool
		extra      string
		status     int
		handshakes []string // prefixes, per request
	}{
		{"HTTPS, no verification, no SNI", nil, "HTTPS", 200,
			[]string{"sni= resumed=false", "sni= resumed=true", "sni= resumed=true"}},
		{"ServerName sets SNI and Host", nil, `HTTPS
ServerName "internal.test"`, 200,
			[]string{"sni=internal.test resumed=false", "sni=internal.test resumed=true", "sni=internal.test resumed=true"}},
		{"implied by Ciphers", nil, `Ciphers "ECDHE-ECDSA-AES128-GCM-SHA256"
Disable TLSv1_2`, 200, []string{"sni= resumed=false"}},
		{"VerifyList with the right CA", nil, fmt.Sprintf("VerifyList %q\nServerName \"internal.test\"", p.caFile), 200,
			[]string{"sni=internal.test resumed=false"}},
		{"VerifyList with another CA", nil, fmt.Sprintf("VerifyList %q", otherCA), 503, nil},
		{"VerifyList and a wrong name", nil, fmt.Sprintf("VerifyList %q\nServerName \"wrong.test\"", p.caFile), 503, nil},
		{"Cert is the client certificate", p.ca.Pool(), fmt.Sprintf("Cert %q", clientPEM), 200,
			[]string{"sni= resumed=false client=alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := startTLSBackend(t, p, internal, tt.clientCAs)
			lbd := startLBD(t, plainListener(tb.block(tt.extra)))
			for i := 0; i < max(len(tt.handshakes), 1); i++ {
				resp, err := http.Get("http://" + lbd.addr + "/b")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, tt.status)
				}
			}
			hs := tb.handshakes()
			if len(hs) < len(tt.handshakes) {
				t.Fatalf("backend handshakes %q, want %q", hs, tt.handshakes)
			}
			for i, want := range tt.handshakes {
				if !strings.HasPrefix(hs[i], want) {
					t.Errorf("handshake %d = %q, want %q", i, hs[i], want)
				}
			}
		})
	}
}

func TestHTTPSBackendHostIsServerName(t *testing.T) {
	p := newTLSPKI(t)
	internal, err := testpki.Issue(testpki.Spec{CommonName: "internal.test", DNSNames: []string{"internal.test"}}, p.ca)
	if err != nil {
		t.Fatal(err)
	}
	tb := startTLSBackend(t, p, internal, nil)
	lbd := startLBD(t, plainListener(tb.block("HTTPS\nServerName \"internal.test\"")))
	out, code := runTool(t, "curl", "-sS", "-H", "Host: public.test", "http://"+lbd.addr+"/h")
	if code != 0 || out != "host=internal.test proto=HTTP/1.1 tls=true\n" {
		t.Errorf("curl (exit %d): %q", code, out)
	}
}
