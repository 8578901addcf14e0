package functionaltests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// jwksServer serves a JWK Set over TLS that the test can rotate or
// break; caFile is its certificate for JWKSCAFile.
type jwksServer struct {
	mu     sync.Mutex
	body   []byte
	broken bool
	hits   int
	srv    *httptest.Server
	caFile string
}

func newJWKSServer(t *testing.T, keys ...testKey) *jwksServer {
	s := &jwksServer{}
	s.set(t, keys...)
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.hits++
		if s.broken {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.body)
	}))
	t.Cleanup(s.srv.Close)
	s.caFile = filepath.Join(t.TempDir(), "jwks-ca.pem")
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	if err := os.WriteFile(s.caFile, pemData, 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *jwksServer) set(t *testing.T, keys ...testKey) {
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.jwk())
	}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.body = data
	s.mu.Unlock()
}

func (s *jwksServer) setBroken(b bool) {
	s.mu.Lock()
	s.broken = b
	s.mu.Unlock()
}

// TestJWKSURLRotation: keys come from a JWKS URL over verified TLS; a
// token with a new key ID makes lbd fetch the rotated set (no more often
// than JWKSMinRefresh), a key rotated out stops verifying, and when the
// URL fails the last good set stays.
func TestJWKSURLRotation(t *testing.T) {
	old, next := genKey(t, jose.RS256, "2026-01"), genKey(t, jose.ES256, "2026-02")
	js := newJWKSServer(t, old)
	be := echoBackend(t, "a")
	p := startLBD(t, `JWTAuth "idp"
	JWKS "`+js.srv.URL+`/jwks.json"
	JWKSCAFile "`+js.caFile+`"
	JWKSMinRefresh 1
	JWKSRefresh 1h
	ForwardClaim "sub" "X-User"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Authenticate "idp"
		`+backendBlock(be)+`
	End
End
`)
	status := func(k testKey) int {
		return getWith(t, p, "/", "Authorization: Bearer "+k.token(t, nil)).StatusCode
	}
	if got := status(old); got != 200 {
		t.Fatalf("key of the first set: %d", got)
	}
	js.set(t, next)
	time.Sleep(1100 * time.Millisecond) // past JWKSMinRefresh since the load's fetch
	if got := status(next); got != 200 {
		t.Fatalf("rotated key: %d", got)
	}
	if got := status(old); got != 401 {
		t.Fatalf("key rotated out: %d", got)
	}
	js.setBroken(true)
	time.Sleep(1100 * time.Millisecond)
	if got := status(genKey(t, jose.ES256, "2026-03")); got != 401 {
		t.Fatalf("unknown key while the URL fails: %d", got)
	}
	if got := status(next); got != 200 {
		t.Fatalf("the last good set was dropped: %d", got)
	}
	waitLog(t, p, "keeping the 1 keys fetched before", 5*time.Second) // the failed fetch
	js.mu.Lock()
	hits := js.hits
	js.mu.Unlock()
	for range 20 {
		status(genKey(t, jose.ES256, "random"))
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.hits > hits+1 {
		t.Fatalf("20 unknown key IDs in a row made %d fetches (JWKSMinRefresh 1s)", js.hits-hits)
	}
}

// apiKeyLine is a key file line for key.
func apiKeyLine(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	return name + " sha256:" + hex.EncodeToString(sum[:]) + "\n"
}

// TestAPIKeys: keys from a watched file of hashes, in a header or the
// query; the name reaches the backend (never the client's copy), the
// access log and a TBF key; a changed file applies without a reload.
func TestAPIKeys(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keys, []byte("# partners\n"+apiKeyLine("acme", "k-acme-1")+apiKeyLine("globex", "k-globex-1")), 0o644); err != nil {
		t.Fatal(err)
	}
	be := echoBackend(t, "a")
	p := startLBD(t, `LogFormat "keys" "%u %s"
APIKeyAuth "partners"
	KeyFile -filewatch "`+keys+`"
	Header "X-API-Key"
	Query "api_key"
	ForwardName "X-Partner"
	Realm "partners"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	LogLevel "keys"
	Service "limited"
		URL "^/limited"
		APIKey "partners"
		TBF "%[authuser]" 1/60s 2
		`+backendBlock(be)+`
	End
	Service "over"
		URL "^/limited"
		Error 429
	End
	Service "api"
		Authenticate "partners"
		`+backendBlock(be)+`
	End
End
`)
	resp := getWith(t, p, "/x", "X-API-Key: k-acme-1", "X-Partner: root")
	if resp.StatusCode != 200 || resp.Header.Get("X-Got-X-Partner") != "acme" {
		t.Fatalf("header key: %d, X-Partner %q", resp.StatusCode, resp.Header.Get("X-Got-X-Partner"))
	}
	if resp := getWith(t, p, "/x?api_key=k-globex-1"); resp.StatusCode != 200 || resp.Header.Get("X-Got-X-Partner") != "globex" {
		t.Fatalf("query key: %d, X-Partner %q", resp.StatusCode, resp.Header.Get("X-Got-X-Partner"))
	}
	for _, c := range []struct{ name, hdr, want string }{
		{"no key", "X-Other: 1", `APIKey realm="partners"`},
		{"unknown key", "X-API-Key: k-acme-2", `APIKey realm="partners", error="invalid_key"`},
		{"the hash itself", "X-API-Key: " + strings.Fields(apiKeyLine("acme", "k-acme-1"))[1], `APIKey realm="partners", error="invalid_key"`},
	} {
		resp := getWith(t, p, "/x", c.hdr)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != c.want {
			t.Errorf("%s: %d %q", c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// TBF keyed by the key's name: acme's burst of 2 is spent, globex
	// still has its own.
	var codes []int
	for range 3 {
		codes = append(codes, getWith(t, p, "/limited", "X-API-Key: k-acme-1").StatusCode)
	}
	codes = append(codes, getWith(t, p, "/limited", "X-API-Key: k-globex-1").StatusCode)
	if fmt.Sprint(codes) != "[200 200 429 200]" {
		t.Fatalf("statuses %v, want acme limited after 2 and globex not", codes)
	}
	waitLog(t, p, "acme 200", 5*time.Second) // the access log names the key
	if err := os.WriteFile(keys, []byte(apiKeyLine("initech", "k-initech-1")), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for getWith(t, p, "/x", "X-API-Key: k-initech-1").StatusCode != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the new key file was not picked up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := getWith(t, p, "/x", "X-API-Key: k-acme-1").StatusCode; got != 401 {
		t.Fatalf("a removed key still works: %d", got)
	}
}

// TestEdgeAuthBadInput: errors at load name the statement; at a reload
// the running configuration stays.
func TestEdgeAuthBadInput(t *testing.T) {
	dir := t.TempDir()
	weak := filepath.Join(dir, "weak.pem")
	weakPEM, err := os.ReadFile("../testdata/config/files/auth_weak.pem")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(weak, weakPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	gone := httptest.NewTLSServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	listener := "ListenHTTP\n\tAddress 127.0.0.1\n\tPort 1\n\tService\n\t\tAuthenticate \"a\"\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n"
	cases := []struct{ name, block, want string }{
		{"malformed JWKS", "JWTAuth \"a\"\n\tKeyFile \"bad.jwks\"\nEnd\n", `lbd.cfg:2.17-26: bad.jwks: malformed JSON`},
		{"weak RSA key", "JWTAuth \"a\"\n\tKeyFile \"" + weak + "\"\nEnd\n", "RSA key of 1024 bits is too weak"},
		{"unreachable JWKS URL", "JWTAuth \"a\"\n\tJWKS \"" + goneURL + "\"\n\tJWKSTimeout 2\nEnd\n", "lbd.cfg:2.14-"},
		{"forward auth host that does not resolve", "ForwardAuth \"a\"\n\tURL \"http://no-such-host.invalid/auth\"\nEnd\n", "lbd.cfg:2.13-46: http://no-such-host.invalid/auth: the host does not resolve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := lbdCheck(t, c.block+listener, map[string]string{"bad.jwks": `{"keys": [`})
			if code != 1 || !strings.Contains(out, c.want) || strings.Count(out, "\n") != 1 {
				t.Fatalf("exit %d, want one error with %q in:\n%s", code, c.want, out)
			}
		})
	}
	t.Run("reload keeps the running configuration", func(t *testing.T) {
		k := genKey(t, jose.ES256, "")
		keys := filepath.Join(t.TempDir(), "keys.jwks")
		writeJWKS(t, keys, k)
		be := echoBackend(t, "a")
		p := startLBD(t, "JWTAuth \"a\"\n\tKeyFile \""+keys+"\"\nEnd\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n\t\tAuthenticate \"a\"\n\t\t"+backendBlock(be)+"\n\tEnd\nEnd\n")
		cfg, err := os.ReadFile(p.cfg)
		if err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(string(cfg), keys, weak, 1)
		if err := os.WriteFile(p.cfg, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		p.signal(syscall.SIGUSR1)
		waitText(t, p.out, "too weak")
		if got := getWith(t, p, "/", "Authorization: Bearer "+k.token(t, nil)).StatusCode; got != 200 {
			t.Fatalf("after a failed reload: %d", got)
		}
	})
}

// TestAuthOnLuaResend: a response script that resends the request to
// another service (http.service.name) passes that service's
// Authenticate too.
func TestAuthOnLuaResend(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keys, []byte(apiKeyLine("acme", "k-acme-1")), 0o644); err != nil {
		t.Fatal(err)
	}
	missing, _ := tallyBackend(t, "127.0.0.2", "missing", func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.WriteHeader(404)
	})
	secure := echoBackend(t, "secure")
	cfg := luaHead + `Lua
	Load "retry.lua"
End
APIKeyAuth "partners"
	KeyFile -file "` + keys + `"
	ForwardName "X-Partner"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "missing"
		Path "^/missing"
		Rewrite response
			LuaModify "retry.elsewhere" "%[header X-Where]"
		End
` + indent(backendBlock(missing), 2) + `
	End
	Service "secure"
		Path "^/secure"
		Authenticate "partners"
` + indent(backendBlock(secure), 2) + `
	End
End
`
	p := startLua(t, cfg, map[string]string{"retry.lua": retryLua})
	if resp := getWith(t, p, "/missing", "X-Where: secure"); resp.StatusCode != 401 || resp.Header.Get("X-Backend") != "" {
		t.Fatalf("resent without a key: %d from %q", resp.StatusCode, resp.Header.Get("X-Backend"))
	}
	resp := getWith(t, p, "/missing", "X-Where: secure", "X-API-Key: k-acme-1")
	if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "secure" || resp.Header.Get("X-Got-X-Partner") != "acme" {
		t.Fatalf("resent with a key: %d from %q, X-Partner %q", resp.StatusCode, resp.Header.Get("X-Backend"), resp.Header.Get("X-Got-X-Partner"))
	}
}
