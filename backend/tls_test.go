package backend

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"lbd/internal/testpki"
)

// tlsBackend is a TLS server answering "HTTP/1.1 204" to every request;
// it records the SNI and whether each handshake resumed a session.
type tlsBackend struct {
	ln      net.Listener
	mu      sync.Mutex
	sni     []string
	resumed []bool
	wg      sync.WaitGroup
}

func startTLSBackend(t *testing.T) *tlsBackend {
	t.Helper()
	cert, err := testpki.Issue(testpki.Spec{CommonName: "backend.test", DNSNames: []string{"backend.test"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := &tlsBackend{}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert.TLS()}}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		tb.mu.Lock()
		tb.sni, tb.resumed = append(tb.sni, cs.ServerName), append(tb.resumed, cs.DidResume)
		tb.mu.Unlock()
		return nil
	}
	tb.ln, err = tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	tb.wg.Add(1)
	go func() {
		defer tb.wg.Done()
		for {
			c, err := tb.ln.Accept()
			if err != nil {
				return
			}
			tb.wg.Add(1)
			go func() {
				defer tb.wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
				}
			}()
		}
	}()
	t.Cleanup(func() { tb.ln.Close(); tb.wg.Wait() })
	return tb
}

func roundTrip(t *testing.T, c *Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("response %v, %v", resp, err)
	}
}

func TestTLSDial(t *testing.T) {
	tb := startTLSBackend(t)
	addr := tb.ln.Addr().String()
	cfg := &tls.Config{ServerName: "backend.test", InsecureSkipVerify: true,
		ClientSessionCache: tls.NewLRUClientSessionCache(8)}
	b := New(Options{Address: addr, ServerName: "backend.test", DialContext: TLSDial(nil, cfg, addr)})
	for i := 0; i < 3; i++ {
		c, err := b.Dial(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c)
		if _, ok := c.Conn.(syscall.Conn); !ok {
			t.Error("TLS conn hides the raw socket from the stale-connection check")
		}
		c.Close()
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.sni) != 3 || tb.sni[0] != "backend.test" {
		t.Errorf("SNI seen %q, want backend.test x3", tb.sni)
	}
	if tb.resumed[0] || !tb.resumed[1] || !tb.resumed[2] {
		t.Errorf("resumed %v, want [false true true]", tb.resumed)
	}
	if b.ServerName() != "backend.test" {
		t.Errorf("ServerName() = %q", b.ServerName())
	}
}

func TestTLSDialFailures(t *testing.T) {
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	go func() { // a plain-HTTP server where TLS was configured
		c, err := plain.Accept()
		if err == nil {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
			c.Close()
		}
	}()
	addr := plain.Addr().String()
	log, _ := testLogger()
	b := New(Options{Address: addr, Logger: log, DialContext: TLSDial(nil, &tls.Config{InsecureSkipVerify: true}, addr)})
	if _, err := b.Dial(time.Time{}); err == nil {
		t.Fatal("handshake with a plain server succeeded")
	}
	if b.Alive() {
		t.Error("a failed handshake did not count as a failed connect")
	}
	// Only the backend address gets TLS: an HAport probe stays plain TCP.
	dial := TLSDial(func(context.Context, string, string) (net.Conn, error) {
		c, s := net.Pipe()
		s.Close()
		return c, nil
	}, &tls.Config{}, "127.0.0.1:1")
	c, err := dial(context.Background(), "tcp", "127.0.0.1:2")
	if err != nil {
		t.Fatalf("probe dial: %v", err)
	}
	if _, isTLS := c.(*tlsConn); isTLS {
		t.Error("probe address was wrapped in TLS")
	}
	c.Close()
}
