package listener

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"lbd/config"
	"lbd/internal/testpki"
)

// The process's one set of parked sockets (package idlewait) lives as
// long as the process, as the runtime's poller does.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("lbd/internal/idlewait.(*Set).loop"), goleak.IgnoreAnyFunction("lbd/internal/idlewait.(*Set).handBack"))
}

// pki is the certificate set most listener tests use.
type pki struct {
	ca, server, client, stranger *testpki.Cert
	dir                          string
}

func newPKI(t *testing.T) *pki {
	p := &pki{dir: t.TempDir()}
	p.ca = issue(t, testpki.Spec{CommonName: "Test CA", Org: "lbd", CA: true}, nil)
	p.server = issue(t, testpki.Spec{CommonName: "site.test", DNSNames: []string{"site.test"}}, p.ca)
	p.client = issue(t, testpki.Spec{CommonName: "alice", Org: "lbd", Client: true}, p.ca)
	p.stranger = issue(t, testpki.Spec{CommonName: "mallory", Client: true}, nil)
	return p
}

// listenerConfig is a ListenHTTPS block serving p.server.
func (p *pki) listenerConfig(t *testing.T) *config.Listener {
	path := filepath.Join(p.dir, "server.pem")
	if err := os.WriteFile(path, p.server.ChainPEM(p.ca), 0o600); err != nil {
		t.Fatal(err)
	}
	return &config.Listener{
		Client: config.Duration(5 * time.Second), HeaderOption: []string{"forwarded", "ssl"},
		TLS: &config.ListenerTLS{Certs: []*config.CertFile{{Path: path, Cert: p.server.TLS(p.ca)}}, NoHTTPS11: 2, HTTP2: true},
	}
}

// fakeProxy accepts from l and answers every HTTP/1.1 request with 200
// and a body echoing the request head it received and the X-SSL lines.
func fakeProxy(t *testing.T, l *TLS) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveFake(c)
		}
	}()
}

func serveFake(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		var head bytes.Buffer
		req, err := http.ReadRequest(bufio.NewReader(io.TeeReader(br, &head)))
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		ssl := ""
		if ti, ok := c.(interface{ SSLHeaders() []byte }); ok {
			ssl = string(ti.SSLHeaders())
		}
		reply := fmt.Sprintf("%s\n--body %q\n--ssl\n%s", head.String(), body, ssl)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Backend: fake\r\nConnection: keep-alive\r\n\r\n%s", len(reply), reply)
	}
}

func startTLS(t *testing.T, lc *config.Listener, dialect config.Dialect) *TLS {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	l := NewTLS(inner, log)
	if err := l.Configure(&config.Config{Dialect: dialect}, lc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); l.Wait() })
	fakeProxy(t, l)
	return l
}

func clientConfig(p *pki, certs ...tls.Certificate) *tls.Config {
	return &tls.Config{ServerName: "site.test", RootCAs: p.ca.Pool(), Certificates: certs, NextProtos: []string{"http/1.1"}}
}

// get sends one HTTP/1.1 request over TLS and returns the answer body.
func get(addr string, cfg *tls.Config) (string, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: site.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestClientCertModes(t *testing.T) {
	p := newPKI(t)
	crl, err := testpki.CRL(p.ca)
	if err != nil {
		t.Fatal(err)
	}
	revoked := issue(t, testpki.Spec{CommonName: "bob", Client: true}, p.ca)
	crlRevoking, err := testpki.CRL(p.ca, revoked)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		mode      int
		depth     int
		crl       []byte
		cert      []tls.Certificate
		ok        bool
		wantInHdr string
	}{
		{"mode 0 asks nothing", 0, 0, nil, []tls.Certificate{p.client.TLS()}, true, "X-SSL-cipher: TLSv1.3/"},
		{"mode 1 without certificate", 1, 9, nil, nil, true, "X-SSL-cipher"},
		{"mode 1 with a good certificate", 1, 9, nil, []tls.Certificate{p.client.TLS()}, true, "X-SSL-Subject: O = lbd, CN = alice\r\nX-SSL-Issuer: O = lbd, CN = Test CA\r\n"},
		{"mode 1 refuses an unknown issuer", 1, 9, nil, []tls.Certificate{p.stranger.TLS()}, false, ""},
		{"mode 2 requires a certificate", 2, 9, nil, nil, false, ""},
		{"mode 2 with a good certificate", 2, 9, nil, []tls.Certificate{p.client.TLS()}, true, "X-SSL-serial: "},
		{"mode 3 takes any certificate", 3, 9, nil, []tls.Certificate{p.stranger.TLS()}, true, "X-SSL-Subject: CN = mallory\r\n"},
		{"depth 0 allows a CA-signed leaf", 1, 0, nil, []tls.Certificate{p.client.TLS()}, true, "X-SSL-Subject"},
		{"CRL without the certificate", 2, 9, crl, []tls.Certificate{p.client.TLS()}, true, "X-SSL-Subject"},
		{"CRL revoking the certificate", 2, 9, crlRevoking, []tls.Certificate{revoked.TLS()}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := p.listenerConfig(t)
			lc.TLS.ClientCert, lc.TLS.ClientCertDepth = tt.mode, tt.depth
			lc.TLS.VerifyList = &config.FileData{Path: "ca.pem", Data: p.ca.CertPEM()}
			if tt.crl != nil {
				lc.TLS.CRLList = &config.FileData{Path: "crl.pem", Data: tt.crl}
			}
			l := startTLS(t, lc, config.DialectPound)
			body, err := get(l.Addr().String(), clientConfig(p, tt.cert...))
			if (err == nil) != tt.ok {
				t.Fatalf("request error = %v, want success %v", err, tt.ok)
			}
			if tt.ok && !strings.Contains(body, tt.wantInHdr) {
				t.Errorf("X-SSL lines lack %q:\n%s", tt.wantInHdr, body)
			}
			if tt.ok && tt.mode == 0 && strings.Contains(body, "X-SSL-Subject") {
				t.Errorf("ClientCert 0 sent client headers:\n%s", body)
			}
		})
	}
}

// TestHTTP2Off: a listener with HTTP2 0 (zproxy's default) offers only
// HTTP/1.1 by ALPN.
func TestHTTP2Off(t *testing.T) {
	p := newPKI(t)
	lc := p.listenerConfig(t)
	lc.TLS.HTTP2 = false
	l := startTLS(t, lc, config.DialectZproxy)
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{ServerName: "site.test", RootCAs: p.ca.Pool(), NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
		t.Errorf("ALPN chose %q, want http/1.1", got)
	}
}

func TestHTTP2IsBridgedToHTTP1(t *testing.T) {
	p := newPKI(t)
	l := startTLS(t, p.listenerConfig(t), config.DialectPound)
	var protos http.Protocols
	protos.SetHTTP2(true)
	tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: "site.test", RootCAs: p.ca.Pool()}, Protocols: &protos}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for i := 0; i < 3; i++ { // the bridge is reused: all three go over one
		req, _ := http.NewRequest("POST", "https://"+l.Addr().String()+"/up?i=1", strings.NewReader("hello"))
		req.Host = "site.test"
		req.Header.Set("X-Test", "v")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		for _, want := range []string{"POST /up?i=1 HTTP/1.1\r\nHost: site.test\r\n", "X-Test: v\r\n",
			"Content-Length: 5\r\n", `--body "hello"`, "X-SSL-cipher: TLSv1.3/"} {
			if !strings.Contains(body, want) {
				t.Errorf("request %d: proxy saw no %q:\n%s", i, want, body)
			}
		}
		if resp.ProtoMajor != 2 || resp.Header.Get("X-Backend") != "fake" || resp.Header.Get("Connection") != "" {
			t.Errorf("response %s, headers %v", resp.Proto, resp.Header)
		}
	}
}

func TestPlainHTTPOnTLSPort(t *testing.T) {
	p := newPKI(t)
	tests := []struct {
		name    string
		dialect config.Dialect
		nossl   *config.ErrNoSSL
		want    string
	}{
		{"Pound closes", config.DialectPound, nil, ""},
		{"zproxy default page", config.DialectZproxy, nil, "HTTP/1.1 400 Bad Request\r\n"},
		{"ErrNoSsl page", config.DialectZproxy, &config.ErrNoSSL{Status: 403, Page: &config.ErrorPage{Body: []byte("use TLS")}}, "HTTP/1.1 403 Forbidden\r\n"},
		{"NoSslRedirect", config.DialectZproxy, &config.ErrNoSSL{Redirect: "https://site.test/", Code: 301}, "Location: https://site.test/\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := p.listenerConfig(t)
			lc.ErrNoSSL = tt.nossl
			l := startTLS(t, lc, tt.dialect)
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: site.test\r\n\r\n")
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && len(got) != 0 || !strings.Contains(string(got), tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCloseEndsAccept(t *testing.T) {
	p := newPKI(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewTLS(inner, logrus.New())
	if err := l.Configure(&config.Config{}, p.listenerConfig(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	l.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
	}
	l.Wait()
}
