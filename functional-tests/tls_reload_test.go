package functionaltests

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lbd/internal/testpki"
)

// servedOrg is the Organization of the certificate lbd presents to a
// new connection for sni.
func servedOrg(addr, sni string) (string, error) {
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return strings.Join(c.ConnectionState().PeerCertificates[0].Subject.Organization, ","), nil
}

// eventuallyOrg waits (bounded) until new connections get org.
func eventuallyOrg(t *testing.T, addr, sni, org string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, _ = servedOrg(addr, sni); got == org {
			return
		}
	}
	t.Fatalf("certificate %q still served, want %q", got, org)
}

// watcherDone waits until lbd serves org for sni and its log has been
// quiet for over three of the certificate watcher's settle times (150
// ms): no read of a changed file is left to come.
func watcherDone(t *testing.T, lbd *proc, sni, org string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		logged := len(lbd.out.String())
		time.Sleep(500 * time.Millisecond)
		if got, err := servedOrg(lbd.addr, sni); err == nil && got == org && len(lbd.out.String()) == logged {
			return
		}
	}
	t.Fatalf("lbd did not settle on certificate %q:\n%s", org, lbd.out.String())
}

// swapLoad runs workers that each make one request per new TLS
// connection (so every request is a full handshake) until stop closes;
// it returns the failures and the certificate versions seen.
func swapLoad(addr string, p *tlsPKI, workers int, stop <-chan struct{}) ([]string, map[string]int) {
	var mu sync.Mutex
	var fails []string
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := p.tlsConfig("a.test")
			cfg.NextProtos = []string{"http/1.1"}
			tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get("https://" + addr + "/load")
				mu.Lock()
				switch {
				case err != nil:
					fails = append(fails, err.Error())
				case resp.StatusCode != 200:
					fails = append(fails, resp.Status)
				default:
					seen[strings.Join(resp.TLS.PeerCertificates[0].Subject.Organization, ",")]++
				}
				mu.Unlock()
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	return fails, seen
}

// TestCertHotSwapUnderLoad is issue 9's proof: the certificate file is
// replaced every 150 ms while a bounded load makes a full handshake per
// request; no request fails and both certificates are served. A broken
// file then keeps the last good certificate (and says why), and a
// configuration reload switches to another file.
func TestCertHotSwapUnderLoad(t *testing.T) {
	p := newTLSPKI(t)
	versions := map[string][]byte{}
	for _, v := range []string{"v1", "v2"} {
		c, err := testpki.Issue(testpki.Spec{CommonName: "a.test", DNSNames: []string{"a.test"}, Org: v}, p.ca)
		if err != nil {
			t.Fatal(err)
		}
		versions[v] = c.ChainPEM(p.ca)
	}
	site := p.write(t, "site.pem", versions["v1"])
	be := startBackend(t, "127.0.0.2", "one", headersHandler("one"))
	lbd := startLBD(t, httpsListener(fmt.Sprintf("Cert %q", site), be))

	stop := make(chan struct{})
	swaps := 0
	go func() {
		defer close(stop)
		for i := 0; i < 20; i++ { // 3 s of swaps
			time.Sleep(150 * time.Millisecond)
			v := []string{"v2", "v1"}[i%2]
			if err := testpki.WriteFile(site, versions[v]); err != nil {
				t.Error(err)
				return
			}
			swaps++
		}
	}()
	fails, seen := swapLoad(lbd.addr, p, 4, stop)
	if len(fails) > 0 {
		t.Fatalf("%d requests failed during the swaps, first: %s", len(fails), fails[0])
	}
	if seen["v1"] == 0 || seen["v2"] == 0 {
		t.Fatalf("certificates served %v after %d swaps, want both", seen, swaps)
	}
	t.Logf("%d swaps, requests per certificate: %v", swaps, seen)
	// The last one written, once the watcher has read it: a burst of
	// swaps still settling may serve v1 from an earlier swap, then v2 from
	// a later read, then v1 again.
	watcherDone(t, lbd, "a.test", "v1")

	// A broken file: the old certificate stays, and the log says why.
	kept := strings.Count(lbd.out.String(), "keeping the previous certificate")
	if err := testpki.WriteFile(site, versions["v2"][:200]); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); strings.Count(lbd.out.String(), "keeping the previous certificate") == kept; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log about the broken certificate:\n%s", lbd.out.String())
		}
	}
	if org, err := servedOrg(lbd.addr, "a.test"); err != nil || org != "v1" {
		t.Fatalf("after a broken file: %q, %v; want v1 kept", org, err)
	}

	// A configuration reload to another file takes effect at once.
	cfg := strings.ReplaceAll(readFile(t, lbd.cfg), site, p.path("b.pem"))
	if err := os.WriteFile(lbd.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	lbd.signal(syscall.SIGUSR1)
	eventuallyOrg(t, lbd.addr, "b.test", "")
	if c, err := tls.Dial("tcp", lbd.addr, &tls.Config{ServerName: "b.test", RootCAs: p.ca.Pool()}); err != nil {
		t.Errorf("after reload: %v", err)
	} else {
		c.Close()
	}
}
