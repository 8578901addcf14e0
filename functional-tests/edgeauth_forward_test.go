package functionaltests

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// authService is a forward authentication service: the session cookie
// decides (ok: 200 with the user; login: 302 to the login page with a
// cookie; anything else 401). It records the subrequests it gets.
type authService struct {
	mu   sync.Mutex
	reqs []http.Header
	srv  *backend
}

func newAuthService(t *testing.T) *authService {
	a := &authService{}
	a.srv = startBackend(t, "127.0.0.3", "auth", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.reqs = append(a.reqs, r.Header.Clone())
		a.mu.Unlock()
		c, _ := r.Cookie("session") // a missing cookie is the 401 case
		switch {
		case c != nil && c.Value == "ok":
			w.Header().Set("X-Auth-User", "bob")
			w.Header().Set("X-Auth-Email", "bob@example.test")
			w.WriteHeader(200)
		case c != nil && c.Value == "login":
			w.Header().Set("Location", "https://sso.test/login?rd="+r.Header.Get("X-Forwarded-Uri"))
			w.Header().Add("Set-Cookie", "csrf=abc; Path=/; HttpOnly")
			w.WriteHeader(302)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="sso"`)
			w.WriteHeader(401)
			fmt.Fprint(w, "who are you?")
		}
	}))
	return a
}

func (a *authService) last() http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs[len(a.reqs)-1]
}

func (a *authService) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reqs)
}

// TestForwardAuth: the service's 200 lets the request through with its
// headers (the client's forgeries removed), its 401 and 302 reach the
// client as they are, a service that is down refuses (503, or 401 with
// OnError 401), and a positive answer is cached per cookie.
func TestForwardAuth(t *testing.T) {
	auth := newAuthService(t)
	be := echoBackend(t, "app")
	down := freePort(t)
	p := startLBD(t, `ForwardAuth "sso"
	URL "http://`+auth.srv.addr+`/verify"
	ResponseHeaders "X-Auth-User" "X-Auth-Email"
	Timeout 2
End
ForwardAuth "cached"
	URL "http://`+auth.srv.addr+`/verify"
	ResponseHeaders "X-Auth-User"
	CacheTTL 60
End
ForwardAuth "down"
	URL "http://127.0.0.1:`+fmt.Sprint(down)+`/verify"
End
ForwardAuth "down401"
	URL "http://127.0.0.1:`+fmt.Sprint(down)+`/verify"
	OnError 401
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		URL "^/cached"
		Authenticate "cached"
		`+backendBlock(be)+`
	End
	Service
		URL "^/down401"
		Authenticate "down401"
		`+backendBlock(be)+`
	End
	Service
		URL "^/down"
		Authenticate "down"
		`+backendBlock(be)+`
	End
	Service
		Authenticate "sso"
		`+backendBlock(be)+`
	End
End
`)
	resp := getWith(t, p, "/app/page?x=1", "Cookie: session=ok", "X-Auth-User: root", "Authorization: Bearer t0k")
	if resp.StatusCode != 200 || resp.Header.Get("X-Got-X-Auth-User") != "bob" || resp.Header.Get("X-Got-X-Auth-Email") != "bob@example.test" {
		t.Fatalf("200 from the service: %d, user %q, email %q", resp.StatusCode, resp.Header.Get("X-Got-X-Auth-User"), resp.Header.Get("X-Got-X-Auth-Email"))
	}
	sub := auth.last()
	for name, want := range map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Proto": "http",
		"X-Forwarded-Host": p.addr, "X-Forwarded-Uri": "/app/page?x=1", "X-Forwarded-For": "127.0.0.1",
		"Cookie": "session=ok", "Authorization": "Bearer t0k", "X-Auth-User": ""} {
		if got := sub.Get(name); got != want {
			t.Errorf("subrequest %s = %q, want %q", name, got, want)
		}
	}
	resp = getWith(t, p, "/app", "Cookie: session=login")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://sso.test/login?rd=/app" || resp.Header.Get("Set-Cookie") != "csrf=abc; Path=/; HttpOnly" {
		t.Fatalf("302 from the service: %d, Location %q, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Set-Cookie"))
	}
	resp = getWith(t, p, "/app", "X-Auth-User: root")
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="sso"` || resp.Header.Get("X-Backend") != "" {
		t.Fatalf("401 from the service: %d, %q, backend %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("X-Backend"))
	}
	if got := getWith(t, p, "/down", "Cookie: session=ok").StatusCode; got != 503 {
		t.Fatalf("service down: %d", got)
	}
	if got := getWith(t, p, "/down401", "Cookie: session=ok").StatusCode; got != 401 {
		t.Fatalf("service down with OnError 401: %d", got)
	}
	before := auth.count()
	for range 3 {
		if got := getWith(t, p, "/cached", "Cookie: session=ok").StatusCode; got != 200 {
			t.Fatalf("cached: %d", got)
		}
	}
	if got := getWith(t, p, "/cached", "Cookie: session=nope").StatusCode; got != 401 {
		t.Fatalf("another cookie used the cached answer: %d", got)
	}
	if n := auth.count() - before; n != 2 {
		t.Fatalf("%d subrequests for 3 requests with one cookie and 1 with another, want 2", n)
	}
}

// TestForwardAuthHTTPSAndTimeout: an https authentication service,
// verified with CAFile, and one that answers after the Timeout (503: the
// request never goes through). A service whose certificate the CA file
// does not vouch for refuses too.
func TestForwardAuthHTTPSAndTimeout(t *testing.T) {
	var hits sync.Map
	svc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		if r.URL.Path == "/slow" {
			time.Sleep(2 * time.Second)
		}
		w.Header().Set("X-Auth-User", "tls-user")
	}))
	defer svc.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: svc.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	be := echoBackend(t, "app")
	p := startLBD(t, `ForwardAuth "tls"
	URL "`+svc.URL+`/ok"
	CAFile "`+ca+`"
	ResponseHeaders "X-Auth-User"
End
ForwardAuth "slow"
	URL "`+svc.URL+`/slow"
	CAFile "`+ca+`"
	Timeout 1
End
ForwardAuth "untrusted"
	URL "`+svc.URL+`/untrusted"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		URL "^/slow"
		Authenticate "slow"
		`+backendBlock(be)+`
	End
	Service
		URL "^/untrusted"
		Authenticate "untrusted"
		`+backendBlock(be)+`
	End
	Service
		Authenticate "tls"
		`+backendBlock(be)+`
	End
End
`)
	if resp := getWith(t, p, "/x"); resp.StatusCode != 200 || resp.Header.Get("X-Got-X-Auth-User") != "tls-user" {
		t.Fatalf("https service: %d, user %q", resp.StatusCode, resp.Header.Get("X-Got-X-Auth-User"))
	}
	// The service would say yes after 2 s: a 503 is the Timeout's.
	if resp := getWith(t, p, "/slow"); resp.StatusCode != 503 || resp.Header.Get("X-Backend") != "" {
		t.Fatalf("slow service: %d from %q", resp.StatusCode, resp.Header.Get("X-Backend"))
	}
	if resp := getWith(t, p, "/untrusted"); resp.StatusCode != 503 {
		t.Fatalf("unverified certificate: %d", resp.StatusCode)
	}
	if _, asked := hits.Load("/untrusted"); asked {
		t.Fatal("a request reached the service whose certificate is not trusted")
	}
	waitText(t, p.out, "authentication untrusted: authentication service: tls: failed to verify certificate")
}
