package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lbd/internal/testpki"
)

// clusterPKI writes a CA, a client certificate with its key in one file,
// the same certificate and key in two files, and files that are no PEM,
// into a temporary directory; it returns the directory.
func clusterPKI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := testpki.Issue(testpki.Spec{CommonName: "ca", CA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := testpki.Issue(testpki.Spec{CommonName: "lb1", Client: true}, ca)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"ca.pem": ca.CertPEM(), "client.pem": cl.ChainPEM(), "client.crt": cl.CertPEM(),
		"client.key": cl.KeyPEM(), "junk.pem": []byte("not a certificate\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestClusterTLS(t *testing.T) {
	dir := clusterPKI(t)
	section := func(lines ...string) string {
		src := "Cluster\n\tNode \"a\"\n\tRedis \"10.0.0.10:6379\"\n"
		for _, l := range lines {
			src += "\t" + strings.ReplaceAll(l, "{D}", dir) + "\n"
		}
		return src + "End\n" + minimalSrc
	}
	tests := []struct {
		name    string
		dialect Dialect
		src     string
		wantErr string // "" for a configuration that loads
		check   func(t *testing.T, c *ClusterTLS)
	}{
		{name: "off by default", src: section(), check: func(t *testing.T, c *ClusterTLS) {
			if c != nil {
				t.Errorf("TLS %+v without a TLS statement", c)
			}
		}},
		{name: "TLS 0", src: section("TLS 0"), check: func(t *testing.T, c *ClusterTLS) {
			if c != nil {
				t.Errorf("TLS %+v with TLS 0", c)
			}
		}},
		{name: "system roots", src: section("TLS 1"), check: func(t *testing.T, c *ClusterTLS) {
			if c == nil || c.CA != nil || c.Cert != nil || c.ServerName != "" {
				t.Errorf("TLS %+v, want TLS with the system roots only", c)
			}
		}},
		{name: "everything in one file", src: section("TLS 1", `CAFile "{D}/ca.pem"`, `ClientCert "{D}/client.pem"`, `ServerName "redis.example"`),
			check: func(t *testing.T, c *ClusterTLS) {
				if c == nil || c.CA == nil || c.Cert == nil || len(c.Cert.Cert.Certificate) != 1 || c.ServerName != "redis.example" {
					t.Errorf("TLS %+v", c)
				}
			}},
		{name: "key before certificate", src: section(`ClientKey "{D}/client.key"`, "TLS 1", `ClientCert "{D}/client.crt"`),
			check: func(t *testing.T, c *ClusterTLS) {
				if c == nil || c.Cert == nil || c.Cert.Cert.PrivateKey == nil {
					t.Errorf("TLS %+v, want the client certificate", c)
				}
			}},
		{name: "zproxy dialect", dialect: DialectZproxy, src: section("TLS 1", `CAFile "{D}/ca.pem"`),
			check: func(t *testing.T, c *ClusterTLS) {
				if c == nil || c.CA == nil {
					t.Errorf("TLS %+v, want the CA", c)
				}
			}},
		{name: "unreadable CA", src: section("TLS 1", `CAFile "{D}/missing.pem"`), wantErr: "t.cfg:5.16-"},
		{name: "CA without a certificate", src: section("TLS 1", `CAFile "{D}/junk.pem"`), wantErr: "junk.pem: no PEM certificate found"},
		{name: "CA error position", src: section("TLS 1", `CAFile "{D}/junk.pem"`), wantErr: "t.cfg:5.16-"},
		{name: "certificate without key", src: section("TLS 1", `ClientCert "{D}/client.crt"`),
			wantErr: "client.crt: can't load the client certificate and key"},
		{name: "bad key", src: section("TLS 1", `ClientKey "{D}/junk.pem"`, `ClientCert "{D}/client.crt"`),
			wantErr: "t.cfg:5.19-"},
		{name: "key without certificate", src: section("TLS 1", `ClientKey "{D}/client.key"`), wantErr: "t.cfg:5.19-"},
		{name: "CAFile without TLS", src: section(`CAFile "{D}/ca.pem"`), wantErr: "t.cfg:4.16-"},
		{name: "ServerName without TLS", src: section(`ServerName "x"`), wantErr: "ServerName is only used with TLS 1"},
		{name: "empty ServerName", src: section("TLS 1", `ServerName ""`), wantErr: "empty ServerName"},
		{name: "TLS on a UNIX socket", src: "Cluster\n\tRedis \"/run/redis.sock\"\n\tTLS 1\nEnd\n" + minimalSrc,
			wantErr: "t.cfg:1.1-"},
		{name: "TLS takes 0 or 1", src: section("TLS 2"), wantErr: "t.cfg:4.9-13: invalid boolean value"},
		{name: "no InsecureSkipVerify", src: section("TLS 1", "InsecureSkipVerify 1"), wantErr: "InsecureSkipVerify"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.dialect
			if d == "" {
				d = DialectPound
			}
			cfg, _, err := LoadBytes("t.cfg", []byte(tc.src), LoadOptions{NoDNS: true, Dialect: d, DialectWhy: "test"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("load error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("load failed: %v", err)
			}
			tc.check(t, cfg.Cluster.TLS)
		})
	}
}
