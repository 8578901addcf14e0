package functionaltests

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// tlsProtoBackend is a TLS backend answering "NAME PROTO" (the protocol
// the request came in); alpn is what its handshake offers (nil: no ALPN
// at all, as an old server).
func tlsProtoBackend(t *testing.T, name string, alpn []string) int {
	t.Helper()
	p := newTLSPKI(t)
	cert, err := tls.LoadX509KeyPair(p.path("a.pem"), p.path("a.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s %s", name, r.Proto)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: alpn},
		ErrorLog: log.New(io.Discard, "", 0)} // refused handshakes are expected
	if alpn == nil || len(alpn) == 1 && alpn[0] == "http/1.1" {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){} // no HTTP/2
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestH2BackendALPNAuto: Protocol auto offers h2 and http/1.1 by ALPN and
// speaks what the backend chose, to HTTP/1.1 and h2c clients alike; a
// service's auto backends share the first choice, and one that cannot
// speak it is found dead while the others serve.
func TestH2BackendALPNAuto(t *testing.T) {
	both := tlsProtoBackend(t, "both", []string{"h2", "http/1.1"})
	h1only := tlsProtoBackend(t, "h1only", []string{"http/1.1"})
	noALPN := tlsProtoBackend(t, "none", nil)
	service := func(url string, backends ...string) string {
		return fmt.Sprintf("\tService\n\t\tURL %q\n%s\tEnd\n", url, strings.Join(backends, ""))
	}
	auto := func(port int) string {
		return fmt.Sprintf("\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %d\n\t\t\tHTTPS\n\t\t\tProtocol auto\n\t\tEnd\n", port)
	}
	cfg := "Daemon 0\nLogLevel 0\nAlive 30\nTimeOut 5\nClient 10\nGrace 1\n" +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tHTTP2 1\n" +
		service("^/both", auto(both)) + service("^/h1only", auto(h1only)) + service("^/none", auto(noALPN)) +
		service("^/mixed", auto(both), auto(h1only)) + "End\n"
	lbd := startLBD(t, cfg)
	h1 := &http.Client{Timeout: 10 * time.Second}
	h2c := h2cClient()
	tests := []struct {
		path   string
		client *http.Client
		want   string
	}{
		{"/both", h1, "both HTTP/2.0"},
		{"/both", h2c, "both HTTP/2.0"},
		{"/h1only", h1, "h1only HTTP/1.1"},
		{"/h1only", h2c, "h1only HTTP/1.1"},
		{"/none", h1, "none HTTP/1.1"},
		{"/none", h2c, "none HTTP/1.1"},
		// The first backend decides h2; the other cannot speak it.
		{"/mixed", h1, "both HTTP/2.0"},
		{"/mixed", h2c, "both HTTP/2.0"},
		{"/mixed", h1, "both HTTP/2.0"},
		{"/mixed", h2c, "both HTTP/2.0"},
	}
	for _, tt := range tests {
		resp, err := tt.client.Post("http://"+lbd.addr+tt.path, "text/plain", strings.NewReader("ping"))
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != tt.want {
			t.Errorf("%s (client %s): %s %q %v, want %q", tt.path, resp.Proto, resp.Status, body, err, tt.want)
		}
	}
}
