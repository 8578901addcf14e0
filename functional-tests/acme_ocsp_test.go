package functionaltests

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"
)

// ocspResponder answers OCSP requests for Pebble's certificates "good",
// signed with Pebble's intermediate key (from its management interface):
// Pebble names a responder in its certificates but runs none.
type ocspResponder struct {
	mu     sync.Mutex
	issuer *x509.Certificate
	key    crypto.Signer
	asked  int
}

func (o *ocspResponder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := ocsp.ParseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.asked++
	issuer, key := o.issuer, o.key
	o.mu.Unlock()
	now := time.Now()
	resp, err := ocsp.CreateResponse(issuer, issuer, ocsp.Response{
		Status: ocsp.Good, SerialNumber: req.SerialNumber, ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour),
	}, key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/ocsp-response")
	w.Write(resp)
}

// TestACMEOCSPStapling: when the CA's certificates name an OCSP
// responder, lbd staples its response to the handshakes of the
// automatic name, and lbctl says so.
func TestACMEOCSPStapling(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp := &ocspResponder{}
	srv := &http.Server{Handler: resp}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	httpPort, tlsPort := freePort(t), freePort(t)
	e := startPebbleWith(t, httpPort, tlsPort, fmt.Sprintf(`"ocspResponderURL": "http://%s/", "externalAccountBindingRequired": false`, ln.Addr()))
	block, _ := pem.Decode(e.management("/intermediates/0"))
	keyBlock, _ := pem.Decode(e.management("/intermediate-keys/0"))
	if block == nil || keyBlock == nil {
		t.Fatal("no intermediate or key from Pebble")
	}
	issuer, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := parseKey(keyBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	resp.mu.Lock()
	resp.issuer, resp.key = issuer, key
	resp.mu.Unlock()

	dir := t.TempDir()
	sock := filepath.Join(dir, "ctl.sock")
	cfg := e.account(filepath.Join(dir, "acme")) + fmt.Sprintf("Control %q\n", sock) +
		fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n\tService\n\t\tError 404\n\tEnd\nEnd\n", httpPort) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert \"o1.example.com\"\n\tService\n\t\tError 404\n\tEnd\nEnd\n", tlsPort)
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", httpPort))
	roots := e.root()
	var staple []byte
	var leaf *x509.Certificate
	poll(t, 20*time.Second, "o1.example.com served with an OCSP staple", func() bool {
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", tlsPort), &tls.Config{ServerName: "o1.example.com", RootCAs: roots})
		if err != nil {
			return false
		}
		defer c.Close()
		cs := c.ConnectionState()
		staple, leaf = cs.OCSPResponse, cs.PeerCertificates[0]
		return len(staple) > 0
	})
	r, err := ocsp.ParseResponseForCert(staple, leaf, issuer)
	if err != nil || r.Status != ocsp.Good {
		t.Fatalf("staple: %v, status %v", err, r)
	}
	if list := lbctlOK(t, sock, "acme"); !strings.Contains(list, "valid, OCSP stapled") {
		t.Errorf("lbctl acme does not say the staple:\n%s", list)
	}
}

// parseKey reads Pebble's intermediate key (PKCS#1 RSA, SEC 1 EC or PKCS#8).
func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%T is not a signer", k)
	}
	return s, nil
}
