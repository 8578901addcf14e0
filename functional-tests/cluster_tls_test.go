package functionaltests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lbd/internal/testpki"
)

// The Cluster section over TLS: a redis-server that speaks TLS only, on
// a free port of 127.0.0.1, asks for a password and a client certificate;
// two lbd instances share sessions through it, and instances with a
// wrong CA or a wrong password say so rather than seem to work.

const redisTLSPassword = "ft-s3cret-pass"

// tlsRedis is the redis-server with the files its clients need.
type tlsRedis struct {
	addr                     string
	ca, otherCA, client, dir string // PEM files
}

// startTLSRedis generates a CA, the server's certificate (for 127.0.0.1
// and "redis.test") and a client certificate, and starts redis-server
// with TLS alone; it is killed by PID when the test ends.
func startTLSRedis(t *testing.T) *tlsRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): install the Debian package redis-server", err)
	}
	dir := t.TempDir()
	issue := func(s testpki.Spec, parent *testpki.Cert) *testpki.Cert {
		c, err := testpki.Issue(s, parent)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca := issue(testpki.Spec{CommonName: "ft redis ca", CA: true}, nil)
	other := issue(testpki.Spec{CommonName: "ft other ca", CA: true}, nil)
	srv := issue(testpki.Spec{CommonName: "redis", DNSNames: []string{"redis.test"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, ca)
	cl := issue(testpki.Spec{CommonName: "lbd", Client: true}, ca)
	files := map[string][]byte{
		"ca.pem": ca.CertPEM(), "other-ca.pem": other.CertPEM(), "server.crt": srv.CertPEM(),
		"server.key": srv.KeyPEM(), "client.pem": cl.ChainPEM(),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := &tlsRedis{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), dir: dir,
		ca: filepath.Join(dir, "ca.pem"), otherCA: filepath.Join(dir, "other-ca.pem"), client: filepath.Join(dir, "client.pem")}
	_, port, _ := net.SplitHostPort(r.addr)
	cmd := exec.Command("redis-server", "--port", "0", "--bind", "127.0.0.1", "--tls-port", port,
		"--tls-cert-file", filepath.Join(dir, "server.crt"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", r.ca, "--tls-auth-clients", "yes", "--requirepass", redisTLSPassword,
		"--save", "", "--appendonly", "no", "--dir", dir)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait() // killed: its exit status says so
	})
	poll(t, 5*time.Second, "redis-server listens with TLS on "+r.addr+"\n"+out.String(), func() bool {
		c, err := net.Dial("tcp", r.addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return r
}

// startTLSInstance starts lbd as node name on 127.0.0.host with the
// Cluster section's Redis at r.addr and the extra lines given.
func startTLSInstance(t *testing.T, name string, host int, r *tlsRedis, bes []*backend, extra ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.%d:%d", host, freePort(t))
	in := &instance{name: name, ctl: filepath.Join(dir, "ctl.sock")}
	cfg := clusterConfig(name, addr, r.addr, in.ctl, bes)
	cfg = strings.Replace(cfg, "\tKeyPrefix", "\t"+strings.Join(extra, "\n\t")+"\n\tKeyPrefix", 1)
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	in.proc = runLBD(t, dir, path, addr)
	return in
}

// clusterConnected is GET /cluster's connected and last_error.
func (in *instance) clusterConnected(t *testing.T) (bool, string) {
	t.Helper()
	_, body := unixDo(t, in.ctl, http.MethodGet, "/cluster", "")
	var v struct {
		Connected bool    `json:"connected"`
		LastError *string `json:"last_error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("GET /cluster: %v: %s", err, body)
	}
	if v.LastError == nil {
		return v.Connected, ""
	}
	return v.Connected, *v.LastError
}

func TestClusterTLS(t *testing.T) {
	r := startTLSRedis(t)
	bes := []*backend{
		startBackend(t, "127.0.0.2", "one", echoHandler("one")),
		startBackend(t, "127.0.0.3", "two", echoHandler("two")),
	}
	good := []string{"TLS 1", fmt.Sprintf("CAFile %q", r.ca), fmt.Sprintf("ClientCert %q", r.client), fmt.Sprintf("Password %q", redisTLSPassword)}
	client := &http.Client{Timeout: 5 * time.Second}

	t.Run("sessions replicate over TLS", func(t *testing.T) {
		// a checks the certificate under the address's IP, b under ServerName.
		a := startTLSInstance(t, "a", 11, r, bes, good...)
		b := startTLSInstance(t, "b", 12, r, bes, append(good, `ServerName "redis.test"`)...)
		for _, in := range []*instance{a, b} {
			poll(t, 5*time.Second, in.name+" connected to Redis over TLS", func() bool {
				ok, _ := in.clusterConnected(t)
				return ok
			})
		}
		for i := range 5 {
			key := fmt.Sprintf("tls-client-%d", i)
			want, err := a.via(t, client, key)
			if err != nil {
				t.Fatal(err)
			}
			b.followsPin(t, client, key, want)
		}
		if out := a.out.String() + b.out.String(); strings.Contains(out, redisTLSPassword) {
			t.Fatalf("the Redis password is in the log:\n%s", out)
		}
	})

	failures := []struct {
		name  string
		lines []string
		want  string // in the log and in GET /cluster's last_error
		// resetFirst: in TLS 1.3 the client learns that Redis refused its
		// (missing) certificate only when it reads; a write racing the
		// server's close sees a reset first, logged as unreachable.
		resetFirst bool
	}{
		{name: "wrong CA", lines: []string{"TLS 1", fmt.Sprintf("CAFile %q", r.otherCA), fmt.Sprintf("ClientCert %q", r.client), fmt.Sprintf("Password %q", redisTLSPassword)},
			want: "TLS certificate verification failed"},
		{name: "wrong ServerName", lines: append(good, `ServerName "elsewhere.test"`), want: "TLS certificate verification failed"},
		{name: "no client certificate", lines: []string{"TLS 1", fmt.Sprintf("CAFile %q", r.ca), fmt.Sprintf("Password %q", redisTLSPassword)},
			want: "TLS handshake failed", resetFirst: true},
		{name: "wrong password", lines: append(good[:3:3], `Password "not-the-password"`), want: "authentication failed"},
	}
	for i, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			in := startTLSInstance(t, fmt.Sprintf("bad%d", i), 13+i, r, bes, tc.lines...)
			var lastErr string
			poll(t, 5*time.Second, in.name+" reports "+tc.want, func() bool {
				var ok bool
				ok, lastErr = in.clusterConnected(t)
				if ok {
					t.Fatalf("%s: connected to Redis, want %s", tc.name, tc.want)
				}
				return strings.Contains(lastErr, tc.want) && strings.Contains(in.out.String(), tc.want)
			})
			log := in.out.String()
			if !tc.resetFirst && strings.Contains(log, "unreachable") {
				t.Errorf("logged as unreachable, want %q:\n%s", tc.want, log)
			}
			if strings.Contains(log, "not-the-password") || strings.Contains(log, redisTLSPassword) || strings.Contains(lastErr, "not-the-password") {
				t.Errorf("a password is in the log or the status:\n%s\n%s", log, lastErr)
			}
			// It still serves, from its own state.
			if _, err := in.via(t, client, "local"); err != nil {
				t.Fatalf("%s does not serve without Redis: %v", in.name, err)
			}
		})
	}
}
