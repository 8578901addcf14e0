package functionaltests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Config routes /a to backend one and everything else to a service
// with cookie sessions over two and three, on a TLS listener.
func h2Config(p *tlsPKI, one, two, three *backend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nClient 5\nGrace 2\n")
	fmt.Fprintf(&b, "ListenHTTPS\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n\tCert %q\n", p.path("a.pem"))
	fmt.Fprintf(&b, "\tService\n\t\tURL \"^/a\"\n%s\tEnd\n", one.block())
	fmt.Fprintf(&b, "\tService\n\t\tSession\n\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 60\n\t\tEnd\n%s%s\tEnd\nEnd\n", two.block(), three.block())
	return b.String()
}

func TestH2SharesRoutingAndSessions(t *testing.T) {
	p := newTLSPKI(t)
	one := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	two := startBackend(t, "127.0.0.3", "two", headersHandler("two"))
	three := startBackend(t, "127.0.0.4", "three", headersHandler("three"))
	lbd := startLBD(t, h2Config(p, one, two, three))
	c := httpsClient(p.tlsConfig("a.test"), true)
	status, proto, body, err := fetchTLS(c, "https://"+lbd.addr+"/a/x?q=1")
	if err != nil || status != 200 || proto != "HTTP/2.0" {
		t.Fatalf("GET /a: %d %s %v", status, proto, err)
	}
	for _, want := range []string{"GET /a/x?q=1 HTTP/1.1 host=" + lbd.addr, "X-Forwarded-For: 127.0.0.1\n",
		"X-Forwarded-Proto: https\n", "X-Ssl-Cipher: TLSv1.3/"} {
		if !strings.Contains(body, want) {
			t.Errorf("backend one saw no %q:\n%s", want, body)
		}
	}
	// Sessions: every request with the same cookie goes to one backend.
	for _, sid := range []string{"s1", "s2", "s3", "s4"} {
		seen := map[string]int{}
		for i := 0; i < 6; i++ {
			req, _ := http.NewRequest("GET", "https://"+lbd.addr+"/b", nil)
			req.Header.Set("Cookie", "sid="+sid)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			seen[resp.Header.Get("X-Backend")]++
		}
		if len(seen) != 1 || seen["one"] != 0 {
			t.Errorf("session %s spread over %v", sid, seen)
		}
	}
	out, code := runTool(t, "curl", "-sS", "-k", "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", "https://"+lbd.addr+"/a")
	if code != 0 || out != "2 200" {
		t.Errorf("curl --http2: exit %d, %q", code, out)
	}
	out, code = runTool(t, "h2load", "-n", "2000", "-c", "4", "-m", "10", "https://"+lbd.addr+"/a")
	if code != 0 || !strings.Contains(out, "2000 succeeded, 0 failed, 0 errored") || !strings.Contains(out, "2000 2xx") {
		t.Errorf("h2load (exit %d):\n%s", code, out)
	}
}

func TestH2LargeBodies(t *testing.T) {
	p := newTLSPKI(t)
	blob := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	be := startBackend(t, "127.0.0.2", "one", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Got", fmt.Sprintf("%d %x", len(in), sha256.Sum256(in)))
		w.Write(blob)
	}))
	lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q", p.path("a.pem")), be))
	c := httpsClient(p.tlsConfig("a.test"), true)
	tests := []struct {
		name string
		body io.Reader
	}{
		{"known length", bytes.NewReader(blob)},
		{"unknown length (chunked to the backend)", io.MultiReader(bytes.NewReader(blob[:1000]), bytes.NewReader(blob[1000:]))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Post("https://"+lbd.addr+"/up", "application/octet-stream", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(out, blob) {
				t.Errorf("download: %d bytes, %v", len(out), err)
			}
			if want := fmt.Sprintf("%d %x", len(blob), sha256.Sum256(blob)); resp.Header.Get("X-Got") != want {
				t.Errorf("backend got %q, want %q", resp.Header.Get("X-Got"), want)
			}
		})
	}
}

// rawH2 sends one HEADERS (+DATA) request on a fresh TLS connection
// with ALPN h2 and returns the response status or "reset CODE".
func rawH2(t *testing.T, addr string, fields []string, data string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	fr := http2.NewFramer(c, c)
	io.WriteString(c, http2.ClientPreface)
	fr.WriteSettings()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: data == ""})
	if data != "" {
		fr.WriteData(1, true, []byte(data))
	}
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return "error " + err.Error()
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame:
			return "reset " + f.ErrCode.String()
		case *http2.GoAwayFrame:
			return "goaway " + f.ErrCode.String()
		case *http2.HeadersFrame:
			hf, _ := dec.DecodeFull(f.HeaderBlockFragment())
			for _, h := range hf {
				if h.Name == ":status" {
					return h.Value
				}
			}
		}
	}
}

// TestH2StrictTranslation sends what a smuggling client would; the
// backend must only ever see the one well-formed request.
func TestH2StrictTranslation(t *testing.T) {
	p := newTLSPKI(t)
	var mu sync.Mutex
	var seen []string
	be := startBackend(t, "127.0.0.2", "one", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // a body cut short (the client's stream was reset) is no request
		}
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI+" "+string(body))
		mu.Unlock()
	}))
	lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q", p.path("a.pem")), be))
	smuggled := "GET /admin HTTP/1.1\r\nHost: a\r\n\r\n"
	req := func(extra ...string) []string {
		return append([]string{":method", "POST", ":scheme", "https", ":path", "/p", ":authority", "a.test"}, extra...)
	}
	tests := []struct {
		name, data string
		fields     []string
		want       string
	}{
		{"body beyond content-length 0", smuggled, req("content-length", "0"), "reset"},
		{"body shorter than content-length", "x", req("content-length", "100"), "reset"},
		{"transfer-encoding header", "0\r\n\r\n" + smuggled, req("transfer-encoding", "chunked"), "reset PROTOCOL_ERROR"},
		{"connection header", "", req("connection", "close"), "reset PROTOCOL_ERROR"},
		{"CRLF in a value", "", req("x-a", "1\r\nContent-Length: 5"), "reset PROTOCOL_ERROR"},
		{"header named like a request line", "", req("get /admin http/1.1", "x"), "reset PROTOCOL_ERROR"},
		{"space in path", "", []string{":method", "GET", ":scheme", "https", ":path", "/a HTTP/1.1", ":authority", "a.test"}, "400"},
		{"well-formed", "ok", req("content-length", "2"), "200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rawH2(t, lbd.addr, tt.fields, tt.data); !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "POST /p ok" {
		t.Errorf("backend saw %q, want only the well-formed request", seen)
	}
}

// TestH2Spec runs the h2spec conformance suite (RFC 9113 and RFC 7541,
// strict mode) against a TLS listener; make functional builds h2spec from
// its pinned tools module (tools/h2spec).
func TestH2Spec(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// Some tests need a body larger than their flow-control window.
		io.WriteString(w, strings.Repeat("x", 1024))
	}))
	lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q", p.path("a.pem")), be))
	host, port, _ := strings.Cut(lbd.addr, ":")
	out, code := runTool(t, "h2spec", "-h", host, "-p", port, "-t", "-k", "-S", "-o", "3")
	m := regexp.MustCompile(`(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed`).FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != m[2] || m[4] != "0" {
		t.Errorf("h2spec (exit %d):\n%s", code, out)
	}
}

// TestH2AccessLog: an HTTP/2 request is logged with the client's
// protocol, though the engine handled it as HTTP/1.1.
func TestH2AccessLog(t *testing.T) {
	p := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	cfg := strings.Replace(httpsListener(fmt.Sprintf("Cert %q", p.path("a.pem")), be), "LogLevel 0", "LogLevel 4", 1)
	lbd := startLBD(t, cfg)
	out, code := runTool(t, "curl", "-sS", "-k", "--http2", "-o", "/dev/null", "-w", "%{http_version}", "https://"+lbd.addr+"/h2log?x=1")
	if code != 0 || out != "2" {
		t.Fatalf("curl --http2: exit %d, %q", code, out)
	}
	want := `"GET /h2log?x=1 HTTP/2.0" 200`
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(lbd.out.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", want, lbd.out.String())
		}
	}
}

// TestH2BackendFailureStaysOnItsStream: a backend that dies in the
// middle of a body resets that one stream; the client's other streams
// on the same connection complete, and the connection stays in use.
func TestH2BackendFailureStaysOnItsStream(t *testing.T) {
	p := newTLSPKI(t)
	broken := rawBackend(t, func(c net.Conn, br *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
	})
	good := startBackend(t, "127.0.0.3", "good", headersHandler("good"))
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nClient 5\nGrace 2\n"+
		"ListenHTTPS\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tCert %q\n"+
		"\tService\n\t\tURL \"^/broken\"\n%s\tEnd\n\tService\n%s\tEnd\nEnd\n", p.path("a.pem"), broken.block(), good.block())
	lbd := startLBD(t, cfg)
	c := httpsClient(p.tlsConfig("a.test"), true)
	var reused []bool
	var mu sync.Mutex
	get := func(path string) (string, error) {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			mu.Lock()
			reused = append(reused, i.Reused)
			mu.Unlock()
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "https://"+lbd.addr+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.Proto + " " + string(body), err
	}
	if _, err := get("/first"); err != nil { // opens the connection
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var brokenErr, goodErr error
	var goodBody string
	wg.Add(2)
	go func() { defer wg.Done(); _, brokenErr = get("/broken") }()
	go func() { defer wg.Done(); goodBody, goodErr = get("/ok") }()
	wg.Wait()
	if brokenErr == nil {
		t.Error("a body cut short by the backend arrived as complete")
	}
	if goodErr != nil || !strings.HasPrefix(goodBody, "HTTP/2.0 GET /ok") {
		t.Errorf("the other stream: %q, %v", goodBody, goodErr)
	}
	if _, err := get("/after"); err != nil {
		t.Errorf("the connection after the reset: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, r := range reused[1:] {
		if !r {
			t.Errorf("request %d opened a new connection: the reset took the connection down", i+2)
		}
	}
}
