//go:build linux

package functionaltests

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tlsIdleConfig: one ListenHTTPS (HTTP/1.1 and h2 by ALPN) with the
// Client timeout given, one service.
func tlsIdleConfig(pki *tlsPKI, client int, be *backend) string {
	return strings.Replace(httpsListener("Cert \""+pki.path("a.pem")+"\"", be), "Client 5\n", fmt.Sprintf("Client %d\n", client), 1)
}

// tlsIdleClients are one HTTP/1.1-over-TLS and one HTTP/2 connection
// to lbd, each kept open across requests.
type tlsIdleClients struct {
	h1 *tls.Conn
	br *bufio.Reader
	h2 *http.ClientConn
}

func dialTLSIdle(t *testing.T, pki *tlsPKI, addr string) *tlsIdleClients {
	t.Helper()
	dial := func(proto string) *tls.Conn {
		cfg := pki.tlsConfig("a.test")
		cfg.NextProtos = []string{proto}
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ConnectionState().NegotiatedProtocol; got != proto {
			t.Fatalf("ALPN: %q, want %q", got, proto)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	cl := &tlsIdleClients{h1: dial("http/1.1")}
	cl.br = bufio.NewReader(cl.h1)
	var protos http.Protocols
	protos.SetHTTP2(true)
	tr := &http.Transport{Protocols: &protos, DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
		return dial("h2"), nil
	}}
	cc, err := tr.NewClientConn(context.Background(), "https", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	cl.h2 = cc
	return cl
}

// askH1 and askH2 make one request on their connection and check that
// the backend saw it.
func (cl *tlsIdleClients) askH1(t *testing.T, path string) {
	t.Helper()
	if body := cl.h1Body(t, path); !strings.Contains(body, "GET "+path+"\n") {
		t.Fatalf("HTTP/1.1 %s: %q", path, body)
	}
}

func (cl *tlsIdleClients) askH2(t *testing.T, path string) {
	t.Helper()
	if body := cl.h2Body(t, path); !strings.Contains(body, "GET "+path+"\n") {
		t.Fatalf("h2 %s: %q", path, body)
	}
}

// TestIdleParkedTLSConnectionsResume: an HTTP/1.1-over-TLS and an HTTP/2
// connection that stay idle longer than the delay before parking (1 s)
// are parked (their sockets in lbd's epoll sets, as plain ones) and
// answer right every time they are used again, interleaved.
func TestIdleParkedTLSConnectionsResume(t *testing.T) {
	pki := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, tlsIdleConfig(pki, 30, be))
	cl := dialTLSIdle(t, pki, p.addr)
	cl.askH1(t, "/h1-0")
	cl.askH2(t, "/h2-0")
	for round := 1; round <= 2; round++ {
		waitParked(t, p, 2)
		cl.askH2(t, fmt.Sprintf("/h2-%d", round))
		cl.askH1(t, fmt.Sprintf("/h1-%d", round))
		cl.askH2(t, fmt.Sprintf("/h2-%d-again", round))
		cl.askH1(t, fmt.Sprintf("/h1-%d-again", round))
	}
}

// TestIdleParkedTLSConnectionsTimeOut: the Client timeout still ends
// parked TLS connections: HTTP/1.1 with close_notify and EOF, HTTP/2 with
// GOAWAY and the close (the client's connection is then closed); lbd
// holds none of their sockets after.
func TestIdleParkedTLSConnectionsTimeOut(t *testing.T) {
	pki := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, tlsIdleConfig(pki, 3, be))
	cl := dialTLSIdle(t, pki, p.addr)
	cl.askH1(t, "/t1")
	cl.askH2(t, "/t2")
	last := time.Now()
	waitParked(t, p, 2)
	cl.h1.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := cl.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("parked HTTP/1.1 connection at its timeout: %d bytes, %v; want EOF", n, err)
	}
	if idle := time.Since(last); idle < 2500*time.Millisecond || idle > 8*time.Second {
		t.Fatalf("closed %v after the last request, want about the 3 s Client timeout", idle)
	}
	waitFor(t, "the HTTP/2 connection closed by lbd", func() bool { return cl.h2.Err() != nil })
	waitParked(t, p, 0)
}

// TestIdleParkedTLSConnectionsOnStop: stopping lbd, gracefully (SIGINT)
// or at once (SIGTERM), ends parked TLS connections in order (HTTP/1.1:
// close_notify and EOF; HTTP/2: GOAWAY and the close), and lbd exits well
// before Grace (5 s).
func TestIdleParkedTLSConnectionsOnStop(t *testing.T) {
	pki := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startLBD(t, strings.Replace(tlsIdleConfig(pki, 30, be), "Grace 2\n", "Grace 5\n", 1))
			cl := dialTLSIdle(t, pki, p.addr)
			cl.askH1(t, "/s1")
			cl.askH2(t, "/s2")
			waitParked(t, p, 2)
			p.signal(sig)
			cl.h1.SetReadDeadline(time.Now().Add(4 * time.Second))
			if n, err := cl.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("parked HTTP/1.1 connection on %v: %d bytes, %v; want EOF", sig, n, err)
			}
			waitFor(t, "the HTTP/2 connection closed by lbd", func() bool { return cl.h2.Err() != nil })
			if code := p.wait(4 * time.Second); code != 0 {
				t.Fatalf("lbd exit %d (-1: still running after 4 s, Grace is 5 s):\n%s", code, p.out.String())
			}
		})
	}
}

// TestIdleParkedTLSConnectionsAcrossReload: TLS connections parked
// before a reload (lbctl reload) are served by the new configuration's
// backend on their next request, HTTP/1.1 and HTTP/2 alike.
func TestIdleParkedTLSConnectionsAcrossReload(t *testing.T) {
	pki := newTLSPKI(t)
	one := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	two := startBackend(t, "127.0.0.3", "two", echoHandler("two"))
	cfg := strings.Replace(tlsIdleConfig(pki, 30, one), "Grace 2\n", "Grace 2\nControl \"{DIR}/ctl.sock\"\n", 1)
	p := startLBD(t, cfg)
	cl := dialTLSIdle(t, pki, p.addr)
	cl.askH1(t, "/before1")
	cl.askH2(t, "/before2")
	waitParked(t, p, 2)
	p.replaceInConfig(t, one.block(), two.block())
	lbctlOK(t, filepath.Join(p.dir, "ctl.sock"), "reload")
	if n := parkedSockets(t, p.cmd.Process.Pid); n != 2 {
		t.Fatalf("%d parked connections after the reload, want 2", n)
	}
	for _, ask := range []func(*testing.T, string) string{cl.h1Body, cl.h2Body} {
		if body := ask(t, "/after"); !strings.HasPrefix(body, "two ") {
			t.Fatalf("after the reload: %q, want the new backend's answer", body)
		}
	}
}

func (cl *tlsIdleClients) h1Body(t *testing.T, path string) string {
	t.Helper()
	code, body := askOn(t, cl.h1, cl.br, path)
	if code != 200 {
		t.Fatalf("HTTP/1.1 %s: %d %q", path, code, body)
	}
	return body
}

func (cl *tlsIdleClients) h2Body(t *testing.T, path string) string {
	t.Helper()
	req, err := http.NewRequest("GET", "https://a.test"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.h2.RoundTrip(req)
	if err != nil {
		t.Fatalf("h2 %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("h2 %s: %d %s %q (%v)", path, resp.StatusCode, resp.Proto, body, err)
	}
	return string(body)
}
