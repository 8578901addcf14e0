package functionaltests

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
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

// trickle408 sends first to an lbd with Client 1, then one of next(i)
// every 400 ms (at most 10: 4 s), and checks that lbd answers 408 and
// closes within 3.5 s.
func trickle408(t *testing.T, first string, next func(i int) string) {
	t.Helper()
	a := echoBackend(t, "a")
	p := startLBD(t, "Client 1\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n\t\t"+backendBlock(a)+"\n\tEnd\nEnd\n")
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, first); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c) // ends when lbd closes; an error is a close too
		got <- b
	}()
	for i := 0; i < 10; i++ {
		time.Sleep(400 * time.Millisecond)
		if _, err := io.WriteString(c, next(i)); err != nil {
			break // closed by lbd
		}
	}
	select {
	case b := <-got:
		if !strings.HasPrefix(string(b), "HTTP/1.1 408 ") {
			t.Fatalf("got %q, want a 408", b)
		}
		if d := time.Since(start); d > 3500*time.Millisecond {
			t.Fatalf("answered after %v: the limit is the Client timeout (1 s)", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection stayed open")
	}
}

// TestSlowHeadIsAnswered408: a client that sends its head one line at a
// time, each within the Client timeout but the whole beyond it, gets 408
// and the connection is closed (it cannot hold a connection forever).
func TestSlowHeadIsAnswered408(t *testing.T) {
	trickle408(t, "GET / HTTP/1.1\r\nHost: h\r\n", func(i int) string { return fmt.Sprintf("X-Slow-%d: 1\r\n", i) })
}

// TestSlowBodyIsAnswered408: a body that trickles below the minimum rate
// (1 KiB per Client period; here 10 bytes in 4 s) is answered 408 and the
// connection closed.
func TestSlowBodyIsAnswered408(t *testing.T) {
	trickle408(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\nx", func(int) string { return "y" })
}

// TestMixedRedirectIsBalanced: Pound balances a Redirect listed beside a
// regular backend as one more backend of its priority (here 1 against 2).
func TestMixedRedirectIsBalanced(t *testing.T) {
	a := echoBackend(t, "a")
	p := startLBD(t, fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n\t\tRedirect \"http://elsewhere.test\"\n"+
		"\t\tBackend\n\t\t\tAddress 127.0.0.2\n\t\t\tPort %d\n\t\t\tPriority 2\n\t\tEnd\n\tEnd\nEnd\n", a.port))
	if !strings.Contains(p.out.String(), "mixes regular and redirect backends") {
		t.Errorf("no warning about the mix:\n%s", p.out.String())
	}
	c := &http.Client{Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	counts := map[int]int{}
	for i := 0; i < 90; i++ {
		resp, err := c.Get("http://" + p.addr + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
	}
	// Expected 30 redirects and 60 proxied; 10..50 is far outside chance.
	if counts[302] < 10 || counts[302] > 50 || counts[200]+counts[302] != 90 {
		t.Fatalf("statuses %v, want about a third 302 and the rest 200", counts)
	}
}

// TestConnectPathUnderXHTTP3: as Pound 4, a CONNECT whose target is a
// path is forwarded when xHTTP allows CONNECT; lbd then closes the
// connection, which a tunnel-minded backend could otherwise desynchronise.
// Where xHTTP does not allow it, the answer is 405.
func TestConnectPathUnderXHTTP3(t *testing.T) {
	a := echoBackend(t, "a")
	for _, tc := range []struct {
		xhttp  int
		status string
	}{{3, "200"}, {0, "405"}} {
		t.Run("xHTTP "+fmt.Sprint(tc.xhttp), func(t *testing.T) {
			p := startLBD(t, fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP %d\n\tService\n\t\t%s\n\tEnd\nEnd\n",
				tc.xhttp, backendBlock(a)))
			resp, closed := rawExchange(t, p.addr, []byte("CONNECT /echo/foo HTTP/1.1\r\nHost: h\r\n\r\n"), 3*time.Second)
			if !strings.HasPrefix(string(resp), "HTTP/1.1 "+tc.status+" ") {
				t.Fatalf("got %q, want %s", resp, tc.status)
			}
			if tc.status == "200" && (!closed || !strings.Contains(string(resp), "X-Got-Uri: /echo/foo")) {
				t.Fatalf("closed %v, response %q", closed, resp)
			}
		})
	}
}
