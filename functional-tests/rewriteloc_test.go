package functionaltests

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// TestRewriteLocationOnHTTPS: on an HTTPS listener a backend's
// Location to the plain-http listener, or to a host that does not
// resolve but is the request's Host, is rewritten to the listener's
// https URL; one to another host is left alone.
func TestRewriteLocationOnHTTPS(t *testing.T) {
	pki := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(302)
	}))
	p := startLBD(t, httpsListener("Cert \""+pki.path("a.pem")+"\"\nRewriteLocation 1", be))
	_, port, err := net.SplitHostPort(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pki.tlsConfig("a.test")
	cfg.NextProtos = []string{"http/1.1"}
	c := &http.Client{Timeout: 5 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: cfg},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		name, host, to, want string
	}{
		{name: "the listener, plain http", host: "127.0.0.1:" + port, to: "http://127.0.0.1:" + port + "/x",
			want: "https://127.0.0.1:" + port + "/x"},
		{name: "unresolvable, the request's Host", host: "site.invalid:" + port, to: "http://site.invalid/x",
			want: "https://site.invalid:" + port + "/x"},
		{name: "another host", host: "site.invalid:" + port, to: "http://other.invalid/x", want: "http://other.invalid/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "https://"+p.addr+"/r?to="+tc.to, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Location"); got != tc.want {
				t.Errorf("Location %q, want %q", got, tc.want)
			}
		})
	}
}
