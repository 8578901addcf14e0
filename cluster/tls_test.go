package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"lbd/config"
	"lbd/internal/testpki"
)

// pki is a CA with a server certificate for "redis.test" and 127.0.0.1,
// a client certificate, and a second CA that signed neither.
type pki struct {
	ca, other, server, client *testpki.Cert
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	issue := func(s testpki.Spec, parent *testpki.Cert) *testpki.Cert {
		c, err := testpki.Issue(s, parent)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	p := &pki{ca: issue(testpki.Spec{CommonName: "ca", CA: true}, nil)}
	p.other = issue(testpki.Spec{CommonName: "other", CA: true}, nil)
	p.server = issue(testpki.Spec{CommonName: "redis", DNSNames: []string{"redis.test"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, p.ca)
	p.client = issue(testpki.Spec{CommonName: "lb1", Client: true}, p.ca)
	return p
}

// tlsServer accepts TLS connections and answers "+OK" to each, asking
// for a client certificate signed by p.ca when needClient.
func tlsServer(t *testing.T, p *pki, needClient bool) string {
	t.Helper()
	sc := &tls.Config{Certificates: []tls.Certificate{p.server.TLS()}, ClientCAs: p.ca.Pool()}
	if needClient {
		sc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				// A failed handshake is the client's error to see.
				if c.(*tls.Conn).Handshake() == nil {
					io.WriteString(c, "+OK\r\n")
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestTLSConfig(t *testing.T) {
	p := newPKI(t)
	ca := &config.FileData{Path: "ca.pem", Data: p.ca.CertPEM()}
	other := &config.FileData{Path: "other.pem", Data: p.other.CertPEM()}
	client := &config.CertFile{Path: "client.pem", Cert: p.client.TLS()}
	open, needClient := tlsServer(t, p, false), tlsServer(t, p, true)
	tests := []struct {
		name string
		cfg  *config.ClusterTLS
		addr string
		want string // "" for success, else a failure kind
	}{
		{name: "verified by the CA, name from the address", cfg: &config.ClusterTLS{CA: ca}, addr: open},
		{name: "verified under ServerName", cfg: &config.ClusterTLS{CA: ca, ServerName: "redis.test"}, addr: open},
		{name: "client certificate", cfg: &config.ClusterTLS{CA: ca, Cert: client}, addr: needClient},
		{name: "wrong CA", cfg: &config.ClusterTLS{CA: other}, addr: open, want: failTLSVerify},
		{name: "system roots do not know the CA", cfg: &config.ClusterTLS{}, addr: open, want: failTLSVerify},
		{name: "wrong ServerName", cfg: &config.ClusterTLS{CA: ca, ServerName: "elsewhere.test"}, addr: open, want: failTLSVerify},
		{name: "no client certificate", cfg: &config.ClusterTLS{CA: ca}, addr: needClient, want: failTLS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := exchange(tc.addr, tlsConfig(tc.cfg))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("exchange failed: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("exchange succeeded, want %s", tc.want)
			case tc.want != "" && failureKind(err) != tc.want:
				t.Fatalf("failure %q (%v), want %q", failureKind(err), err, tc.want)
			}
		})
	}
	if tlsConfig(nil) != nil {
		t.Error("tlsConfig(nil) is not nil: no TLS must mean clear text")
	}
}

// exchange dials addr with tc and reads the server's greeting, as the
// first Redis command would (a refused client certificate shows there
// in TLS 1.3).
func exchange(addr string, tc *tls.Config) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, tc)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "+OK\r\n" {
		return fmt.Errorf("greeting %q", buf)
	}
	return nil
}

// redisErr is an error as Redis answers it (go-redis's redis.Error).
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

func TestFailureKind(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "wrong password", err: redisErr("WRONGPASS invalid username-password pair or user is disabled."), want: failAuth},
		{name: "no password", err: fmt.Errorf("loading sessions: %w", redisErr("NOAUTH Authentication required.")), want: failAuth},
		{name: "other Redis error", err: redisErr("ERR unknown command"), want: failUnreachable},
		{name: "refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, want: failUnreachable},
		{name: "remote alert", err: &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, want: failTLS},
		{name: "not TLS", err: tls.RecordHeaderError{Msg: "tls: first record does not look like a TLS handshake"}, want: failTLS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := failureKind(tc.err); got != tc.want {
				t.Errorf("failureKind(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
