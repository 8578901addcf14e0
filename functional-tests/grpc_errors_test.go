package functionaltests

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2cBackend serves h with Go's HTTP/2 server, cleartext with prior
// knowledge, on a free port of 127.0.0.1.
func h2cBackend(t *testing.T, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// h2cClient speaks cleartext HTTP/2 with prior knowledge.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}, Timeout: 10 * time.Second}
}

// TestH2BackendTranslatesHTTP1: an HTTP/1.1 client's request reaches an
// HTTP/2 backend as HTTP/2, and the response comes back as HTTP/1.1
// with its trailers in the chunked body; an HTTP/2 client gets them as
// trailers too, its stream relayed frame by frame (the metrics count
// each request by the path it took).
func TestH2BackendTranslatesHTTP1(t *testing.T) {
	port := h2cBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short read shows in the echo
		w.Header().Set("Trailer", "Grpc-Status")
		fmt.Fprintf(w, "%s %s %q", r.Proto, r.Header.Get("Te"), body)
		w.Header().Set("Grpc-Status", "0")
	}))
	metrics := "\tService\n\t\tURL \"^/metrics$\"\n\t\tMetrics\n\tEnd\n"
	lbd := startLBD(t, strings.Replace(grpcConfig("", "", h2Backend(port)), "\tService\n", metrics+"\tService\n", 1))
	for _, c := range []struct {
		name   string
		client *http.Client
		proto  string
	}{{"HTTP/1.1", &http.Client{Timeout: 10 * time.Second}, "HTTP/1.1"}, {"h2c", h2cClient(), "HTTP/2.0"}} {
		resp, err := c.client.Post("http://"+lbd.addr+"/echo", "text/plain", strings.NewReader("ping"))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.Proto != c.proto || string(body) != `HTTP/2.0 trailers "ping"` || resp.Trailer.Get("Grpc-Status") != "0" {
			t.Errorf("%s: %s %v %q, trailers %v", c.name, resp.Proto, err, body, resp.Trailer)
		}
	}
	resp, err := http.Get("http://" + lbd.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body) // a short read fails the matches below
	resp.Body.Close()
	for _, path := range []string{"frames", "transport"} {
		re := regexp.MustCompile(`(?m)^lbd_backend_h2_streams_total\{[^}]*path="` + path + `"[^}]*\} 1$`)
		if !re.Match(body) {
			t.Errorf("no lbd_backend_h2_streams_total of 1 for path %s in:\n%s", path, grepLines(string(body), "h2_streams"))
		}
	}
}

// TestH2BackendBadInput: backends that fail in the ways HTTP/2 allows
// get the client a clear error (gRPC: a status, never an HTML page),
// and the other services of the same lbd keep working.
func TestH2BackendBadInput(t *testing.T) {
	h1 := startBackend(t, "127.0.0.2", "h1", headersHandler("h1")) // does not speak h2
	garbage := connBackend(t, "127.0.0.1", func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, 64)
		io.ReadAtLeast(c, buf, 24) // the client preface
		io.WriteString(c, "\x00\x00\x04\x07\x00\x00\x00\x00\x00garbage frames")
	})
	bigHeader := h2cBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("b", 100<<10))
	}))
	slow := h2cBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	good := h2cBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "good") }))
	tlsH1 := startTLSHTTP1Backend(t)
	service := func(url string, port int, extra ...string) string {
		return fmt.Sprintf("\tService\n\t\tURL %q\n%s\tEnd\n", url, h2Backend(port, extra...))
	}
	_, h1port, _ := net.SplitHostPort(h1.addr)
	_, gport, _ := net.SplitHostPort(garbage.addr)
	cfg := "Daemon 0\nLogLevel 0\nAlive 30\nTimeOut 5\nClient 10\nGrace 1\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tHTTP2 1\n" +
		strings.Replace(service("^/h1", 0), "127.0.0.1\n\t\t\tPort 0", "127.0.0.2\n\t\t\tPort "+h1port, 1) +
		strings.Replace(service("^/garbage", 0), "Port 0", "Port "+gport, 1) +
		service("^/big", bigHeader) + service("^/slow", slow, "TimeOut 1") + service("^/tlsh1", tlsH1, "HTTPS") +
		service("^/good", good) + "End\n"
	lbd := startLBD(t, cfg)
	cases := []struct {
		path       string
		status     int    // HTTP/1.1 client
		grpcStatus string // gRPC request over h2c
	}{
		{"/h1", 502, "14"},
		{"/garbage", 502, "14"},
		{"/big", 502, "14"},
		{"/tlsh1", 503, "14"},
	}
	for _, c := range cases {
		resp, err := http.Get("http://" + lbd.addr + c.path)
		if err != nil || resp.StatusCode != c.status {
			t.Errorf("%s: %v %v, want %d", c.path, resp, err, c.status)
		} else {
			resp.Body.Close()
		}
		if st, msg := grpcCall(t, lbd.addr, c.path, ""); st != c.grpcStatus {
			t.Errorf("%s: gRPC call got grpc-status %q (%s), want %s", c.path, st, msg, c.grpcStatus)
		}
	}
	for _, c := range []struct {
		name   string
		client *http.Client
	}{{"HTTP/1.1", http.DefaultClient}, {"h2c", h2cClient()}} { // the Transport's path and the frame-level one
		start := time.Now()
		if resp, err := c.client.Get("http://" + lbd.addr + "/slow"); err != nil || resp.StatusCode != 504 || time.Since(start) > 3*time.Second {
			t.Errorf("%s /slow (TimeOut 1): %v %v after %v, want 504 after about a second", c.name, resp, err, time.Since(start))
		} else {
			resp.Body.Close()
		}
	}
	start := time.Now()
	if st, msg := grpcCall(t, lbd.addr, "/slow", "200m"); st != "4" || time.Since(start) > 900*time.Millisecond {
		t.Errorf("/slow with grpc-timeout 200m: grpc-status %q (%s) after %v, want 4 (DEADLINE_EXCEEDED) at once", st, msg, time.Since(start))
	}
	if !strings.Contains(lbd.out.String(), "did not accept HTTP/2") {
		t.Errorf("no word of the TLS backend that refused h2 in the log:\n%s", lbd.out.String())
	}
	resp, err := h2cClient().Get("http://" + lbd.addr + "/good")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the good service after all that: %v %v", resp, err)
	}
	resp.Body.Close()
}

// grpcCall sends an empty gRPC request over h2c and returns its
// grpc-status and grpc-message, from the trailers or, for a
// trailers-only response, the headers.
func grpcCall(t *testing.T, addr, path, timeout string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+path, strings.NewReader("\x00\x00\x00\x00\x00")) // a constant, valid URL
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	if timeout != "" {
		req.Header.Set("Grpc-Timeout", timeout)
	}
	resp, err := h2cClient().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return "HTTP " + resp.Status, ""
	}
	if st := resp.Trailer.Get("Grpc-Status"); st != "" {
		return st, resp.Trailer.Get("Grpc-Message")
	}
	return resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
}

// startTLSHTTP1Backend is a TLS backend that knows nothing of ALPN: its
// handshake succeeds without agreeing to h2.
func startTLSHTTP1Backend(t *testing.T) int {
	t.Helper()
	p := newTLSPKI(t)
	cert, err := tls.LoadX509KeyPair(p.path("a.pem"), p.path("a.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: headersHandler("tls")}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestGRPCStatusLoggedAndCounted: the grpc-status of every gRPC
// response, a backend's (OK, UNIMPLEMENTED) or lbd's own (UNAVAILABLE
// for a dead backend), shows in the access log (%{grpc}N) and in
// lbd_listener_grpc_responses_total. lbd's own error is logged with the
// HTTP status it stands for (503), as its other replies are.
func TestGRPCStatusLoggedAndCounted(t *testing.T) {
	g := startGRPCPeer(t)
	cfg := "Daemon 0\nLogFormat \"g\" \"%r %s grpc=%{grpc}N\"\nLogLevel \"g\"\nAlive 30\n" +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tHTTP2 1\n" +
		"\tService\n\t\tURL \"^/metrics$\"\n\t\tMetrics\n\tEnd\n" +
		"\tService\n\t\tURL \"^/dead\"\n" + h2Backend(freePort(t)) + "\tEnd\n" +
		"\tService\n" + h2Backend(g.port) + "\tEnd\nEnd\n"
	lbd := startLBD(t, cfg)
	calls := []struct{ path, want, logged string }{
		{"/grpc.testing.TestService/EmptyCall", "0", "200"},
		{"/grpc.testing.TestService/NoSuchCall", "12", "200"},
		{"/dead/grpc.testing.TestService/EmptyCall", "14", "503"},
	}
	for _, c := range calls {
		if st, msg := grpcCall(t, lbd.addr, c.path, ""); st != c.want {
			t.Errorf("%s: grpc-status %q (%s), want %s", c.path, st, msg, c.want)
		}
		waitLog(t, lbd, "POST "+c.path+" HTTP/2.0 "+c.logged+" grpc="+c.want, 3*time.Second)
	}
	resp, err := http.Get("http://" + lbd.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body) // a short read fails the matches below
	resp.Body.Close()
	for _, code := range []string{"0", "12", "14"} {
		re := regexp.MustCompile(`(?m)^lbd_listener_grpc_responses_total\{[^}]*code="` + code + `"[^}]*\} 1$`)
		if !re.Match(body) {
			t.Errorf("no lbd_listener_grpc_responses_total of 1 for code %s in:\n%s", code, grepLines(string(body), "grpc"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestH2BackendResetReachesClient: a backend that resets a stream after
// its response began (here with ENHANCE_YOUR_CALM) has the client's
// stream reset with the same code.
func TestH2BackendResetReachesClient(t *testing.T) {
	be := connBackend(t, "127.0.0.1", func(c net.Conn) {
		defer c.Close()
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		fr.WriteSettings()
		var enc bytes.Buffer
		he := hpack.NewEncoder(&enc)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.HeadersFrame:
				enc.Reset()
				he.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: enc.Bytes(), EndHeaders: true})
				fr.WriteData(f.StreamID, false, []byte("partial"))
				fr.WriteRSTStream(f.StreamID, http2.ErrCodeEnhanceYourCalm)
			}
		}
	})
	_, port, _ := net.SplitHostPort(be.addr)
	p, _ := strconv.Atoi(port) // connBackend's own address
	lbd := startLBD(t, grpcConfig("", "", h2Backend(p)))
	resp, err := h2cClient().Get("http://" + lbd.addr + "/reset")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.Contains(err.Error(), "ENHANCE_YOUR_CALM") {
		t.Errorf("reading the body: %v, want the backend's reset code ENHANCE_YOUR_CALM", err)
	}
}
