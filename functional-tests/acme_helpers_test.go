package functionaltests

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lbd/internal/testpki"
)

// Pebble, Let's Encrypt's ACME test server (Debian's pebble package, with
// pebble-challtestsrv answering DNS: every name is 127.0.0.1), runs on
// loopback with PEBBLE_VA_NOSLEEP=1 and its default nonce rejection.
// lbd talks to it through acmeFront, a reverse proxy of the test that
// counts the orders per name (and can hold one back), so every claim
// about orders is counted at the CA's door, not taken from lbd.

type pebbleEnv struct {
	t                  *testing.T
	dir                string
	certFile           string // the CA server's own certificate: lbd's CARoots
	tlsCfg             *tls.Config
	dnsPort, acmePort  int
	mgmtPort           int
	httpPort, tlsPort  int // where Pebble validates HTTP-01 and TLS-ALPN-01
	pebble, chall      *exec.Cmd
	pebbleLog, chalLog *syncBuffer
	front              *acmeFront
}

// startPebble starts pebble-challtestsrv, Pebble and the counting front;
// Pebble validates on 127.0.0.1:httpPort and :tlsPort.
func startPebble(t *testing.T, httpPort, tlsPort int) *pebbleEnv {
	t.Helper()
	return startPebbleWith(t, httpPort, tlsPort, `"ocspResponderURL": "", "externalAccountBindingRequired": false`)
}

// startPebbleWith is startPebble with more of Pebble's settings (JSON
// members): External Account Binding, say.
func startPebbleWith(t *testing.T, httpPort, tlsPort int, settings string) *pebbleEnv {
	t.Helper()
	needTool(t, "pebble")
	needTool(t, "pebble-challtestsrv")
	e := &pebbleEnv{t: t, dir: t.TempDir(), httpPort: httpPort, tlsPort: tlsPort}
	c, err := testpki.Issue(testpki.Spec{CommonName: "localhost", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.certFile = filepath.Join(e.dir, "pebble.pem")
	keyFile := filepath.Join(e.dir, "pebble.key")
	for path, data := range map[string][]byte{e.certFile: c.CertPEM(), keyFile: c.KeyPEM()} {
		if err := testpki.WriteFile(path, data); err != nil {
			t.Fatal(err)
		}
	}
	e.tlsCfg = &tls.Config{RootCAs: c.Pool()}
	e.dnsPort, e.acmePort, e.mgmtPort = freePort(t), freePort(t), freePort(t)
	cfg := fmt.Sprintf(`{"pebble": {"listenAddress": "127.0.0.1:%d", "managementListenAddress": "127.0.0.1:%d",
		"certificate": %q, "privateKey": %q, "httpPort": %d, "tlsPort": %d,
		%s}}`,
		e.acmePort, e.mgmtPort, e.certFile, keyFile, httpPort, tlsPort, settings)
	if err := os.WriteFile(filepath.Join(e.dir, "pebble.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.chalLog = &syncBuffer{}
	e.chall = exec.Command("pebble-challtestsrv", "-dns01", fmt.Sprintf("127.0.0.1:%d", e.dnsPort),
		"-http01", "", "-https01", "", "-tlsalpn01", "", "-defaultIPv6", "",
		"-management", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	e.chall.Stdout, e.chall.Stderr = e.chalLog, e.chalLog
	if err := e.chall.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopCmd(e.chall) })
	e.startPebble()
	t.Cleanup(e.stopPebble)
	e.front = newACMEFront(t, e)
	return e
}

// startPebble (re)starts the CA itself: a fresh Pebble has new roots and
// knows no account.
func (e *pebbleEnv) startPebble() {
	e.t.Helper()
	e.pebbleLog = &syncBuffer{}
	e.pebble = exec.Command("pebble", "-config", filepath.Join(e.dir, "pebble.json"),
		"-dnsserver", fmt.Sprintf("127.0.0.1:%d", e.dnsPort))
	e.pebble.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1")
	e.pebble.Stdout, e.pebble.Stderr = e.pebbleLog, e.pebbleLog
	if err := e.pebble.Start(); err != nil {
		e.t.Fatal(err)
	}
	poll(e.t, 10*time.Second, "pebble listens", func() bool {
		return strings.Contains(e.pebbleLog.String(), "ACME directory available")
	})
	// Pebble starts its management interface in a goroutine of its own, so
	// the log line above can come before that listener answers.
	poll(e.t, 10*time.Second, "pebble's management interface answers", func() bool {
		_, err := e.tryManagement("/roots/0")
		return err == nil
	})
}

// stopPebble kills the CA by its PID.
func (e *pebbleEnv) stopPebble() {
	if e.pebble != nil {
		stopCmd(e.pebble)
		e.pebble = nil
	}
}

func stopCmd(c *exec.Cmd) {
	c.Process.Kill()
	c.Wait() // killed: the exit status says so and matters to nobody
}

// directory is the ACME directory URL lbd is given: the front's.
func (e *pebbleEnv) directory() string {
	return fmt.Sprintf("https://127.0.0.1:%d/dir", e.front.port)
}

// account is an ACMEAccount section for lbd.
func (e *pebbleEnv) account(storage string) string {
	return fmt.Sprintf("ACMEAccount\n\tDirectory %q\n\tEmail \"ops@example.com\"\n\tCARoots %q\n\tStorage %q\nEnd\n",
		e.directory(), e.certFile, storage)
}

// management reads a PEM document of Pebble's management interface.
func (e *pebbleEnv) management(path string) []byte {
	e.t.Helper()
	data, err := e.tryManagement(path)
	if err != nil {
		e.t.Fatalf("%v\npebble's log:\n%s", err, e.pebbleLog.String())
	}
	return data
}

// tryManagement is management's request, with its failure returned.
func (e *pebbleEnv) tryManagement(path string) ([]byte, error) {
	tr := &http.Transport{TLSClientConfig: e.tlsCfg}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d%s", e.mgmtPort, path))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return data, nil
}

// root is Pebble's current root certificate, from its management
// interface.
func (e *pebbleEnv) root() *x509.CertPool {
	e.t.Helper()
	pemData := e.management("/roots/0")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		e.t.Fatalf("no root from Pebble: %q", pemData)
	}
	return pool
}

// servedSerial handshakes with addr for name, verifying the chain against
// roots and the name; it returns the leaf's serial ("" and the error when
// the handshake or the verification fails).
func servedSerial(addr, name string, roots *x509.CertPool) (string, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Text(16), nil
}

// acmeFront is a reverse proxy before Pebble. It keeps the Host header,
// so Pebble names its own URLs (and checks the JWS "url") with the
// front's address and every request of lbd comes through here.
type acmeFront struct {
	t    *testing.T
	port int
	srv  *http.Server

	mu     sync.Mutex
	orders map[string]int // accepted new orders (201) per name
	// hold, when set, is called before a finalize for name goes on
	// (return false to drop it).
	hold     func(name string) bool
	finalize map[string]int
}

func newACMEFront(t *testing.T, e *pebbleEnv) *acmeFront {
	f := &acmeFront{t: t, orders: map[string]int{}, finalize: map[string]int{}}
	target, err := url.Parse(fmt.Sprintf("https://127.0.0.1:%d", e.acmePort))
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{TLSClientConfig: e.tlsCfg},
		ErrorLog:  quietLog(), // a stopped Pebble is the point of a test
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.port = ln.Addr().(*net.TCPAddr).Port
	cert, err := tls.LoadX509KeyPair(e.certFile, filepath.Join(e.dir, "pebble.key"))
	if err != nil {
		t.Fatal(err)
	}
	f.srv = &http.Server{Handler: f.counting(rp), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ErrorLog: quietLog()}
	go f.srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// counting records new orders by name and applies hold to finalizes.
func (f *acmeFront) counting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		payload := jwsPayload(body)
		if strings.HasPrefix(r.URL.Path, "/finalize-order/") {
			name := csrName(payload)
			f.mu.Lock()
			f.finalize[name]++
			hold := f.hold
			f.mu.Unlock()
			if hold != nil && !hold(name) {
				http.Error(w, "held back by the test", http.StatusServiceUnavailable)
				return
			}
		}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if r.URL.Path == "/order-plz" && rec.status == http.StatusCreated {
			var order struct {
				Identifiers []struct{ Value string } `json:"identifiers"`
			}
			if json.Unmarshal(payload, &order) == nil {
				f.mu.Lock()
				for _, id := range order.Identifiers {
					f.orders[id.Value]++
				}
				f.mu.Unlock()
			}
		}
	})
}

// ordersFor is the number of orders Pebble accepted for name.
func (f *acmeFront) ordersFor(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.orders[name]
}

func (f *acmeFront) totalOrders() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.orders {
		n += c
	}
	return n
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// jwsPayload decodes the payload of a flattened JWS (nil if it is not one).
func jwsPayload(body []byte) []byte {
	var jws struct {
		Payload string `json:"payload"`
	}
	if json.Unmarshal(body, &jws) != nil {
		return nil
	}
	p, err := base64.RawURLEncoding.DecodeString(jws.Payload)
	if err != nil {
		return nil
	}
	return p
}

// csrName is the first DNS name of a finalize request's CSR.
func csrName(payload []byte) string {
	var fin struct {
		CSR string `json:"csr"`
	}
	if json.Unmarshal(payload, &fin) != nil {
		return ""
	}
	der, err := base64.RawURLEncoding.DecodeString(fin.CSR)
	if err != nil {
		return ""
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil || len(csr.DNSNames) == 0 {
		return ""
	}
	return csr.DNSNames[0]
}

// quietLog drops the front's server errors (lbd hangs up at will).
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
