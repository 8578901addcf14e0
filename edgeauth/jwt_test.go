package edgeauth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

var t0 = time.Unix(1_800_000_000, 0)

// rfc6750 is a challenge with an error, its description in the
// characters RFC 6750 §3 allows.
var rfc6750 = regexp.MustCompile(`^WWW-Authenticate: Bearer realm="api", error="(invalid_token|insufficient_scope)", error_description="[\x20\x21\x23-\x5b\x5d-\x7e]*"$`)

func TestQuotedRealm(t *testing.T) {
	got := string(appendQuoted(nil, "a \"b\" \\ c\r\n\x00é"))
	if got != `"a \"b\" \\ c"` {
		t.Fatalf("%s", got)
	}
}

func fixedNow() time.Time { return t0 }

func claimsAt(extra map[string]any) map[string]any {
	c := map[string]any{"sub": "alice", "iss": "https://idp.test", "aud": "api",
		"exp": t0.Add(time.Hour).Unix(), "nbf": t0.Add(-time.Minute).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestEveryAlgorithmVerifies(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(string(alg), func(t *testing.T) {
			s := newSigner(t, alg)
			keys, err := ParseKeys(jwksJSON(t, s.jwk(t, "k1")))
			if err != nil {
				t.Fatal(err)
			}
			j, err := NewJWT(JWTConfig{Name: "t", Keys: keys, Issuer: "https://idp.test", Audiences: []string{"api"}, Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			o := j.Check(bearerReq(s.sign(t, "k1", claimsAt(nil))), nil)
			if !o.OK() || o.ID.Name != "alice" {
				t.Fatalf("refused: %s", o.Reason)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	es := newSigner(t, jose.ES256)
	other := newSigner(t, jose.ES256)
	rs := newSigner(t, jose.RS256)
	keys, err := ParseKeys(jwksJSON(t, es.jwk(t, "es"), rs.jwk(t, "rs")))
	if err != nil {
		t.Fatal(err)
	}
	good := es.sign(t, "es", claimsAt(nil))
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	// HS256 signed with the RSA public key's DER as the secret: the
	// classic algorithm confusion.
	der, _ := x509.MarshalPKIXPublicKey(rs.pub)
	confused := signer{jose.HS256, der, nil}.sign(t, "rs", claimsAt(nil))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"mallory","iss":"https://idp.test","aud":"api"}`)) + "." + parts[2]
	cases := []struct {
		name, tok, reason string
		status            int
	}{
		{"expired", es.sign(t, "es", claimsAt(map[string]any{"exp": t0.Add(-time.Hour).Unix()})), "expired", 401},
		{"within leeway", "", "", 0},
		{"not yet valid", es.sign(t, "es", claimsAt(map[string]any{"nbf": t0.Add(time.Hour).Unix()})), "not valid yet", 401},
		{"wrong audience", es.sign(t, "es", claimsAt(map[string]any{"aud": "other"})), "wrong audience", 401},
		{"wrong issuer", es.sign(t, "es", claimsAt(map[string]any{"iss": "https://evil.test"})), "wrong issuer", 401},
		{"tampered", tampered, "bad signature", 401},
		{"alg none", none, "algorithm is not accepted", 401},
		{"algorithm confusion", confused, "no key for algorithm HS256", 401},
		{"unknown kid", es.sign(t, "nope", claimsAt(nil)), "unknown key ID", 401},
		{"other key", other.sign(t, "es", claimsAt(nil)), "bad signature", 401},
		{"missing claim", es.sign(t, "es", claimsAt(map[string]any{"role": nil})), `no "role" claim`, 401},
		{"claim mismatch", es.sign(t, "es", claimsAt(map[string]any{"role": "guest"})), "does not match", 403},
		{"garbage", "a.b.c", "malformed", 401},
	}
	j, err := NewJWT(JWTConfig{Keys: keys, Issuer: "https://idp.test", Audiences: []string{"api"}, Now: fixedNow,
		Required: []string{"role"}, Realm: "api",
		Checks: []ClaimCheck{{Claim: "role", Desc: `"admin"`, Match: func(v []byte) bool { return string(v) == "admin" }}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.tok == "" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			o := j.Check(bearerReq(c.tok), nil)
			if o.OK() {
				t.Fatal("accepted")
			}
			if !strings.Contains(o.Reason, c.reason) || o.Reply.Status != c.status {
				t.Fatalf("got %d %q, want %d %q", o.Reply.Status, o.Reason, c.status, c.reason)
			}
			ch := string(o.Reply.Lines[0])
			if !rfc6750.MatchString(ch) {
				t.Fatalf("challenge %q is not RFC 6750's", ch)
			}
		})
	}
	ok := es.sign(t, "es", claimsAt(map[string]any{"role": []string{"user", "admin"}}))
	if o := j.Check(bearerReq(ok), nil); !o.OK() {
		t.Fatalf("array claim with admin refused: %s", o.Reason)
	}
}

func TestNoTokenChallengeHasNoError(t *testing.T) {
	s := newSigner(t, jose.ES256)
	keys, _ := ParseKeys(jwksJSON(t, s.jwk(t, "")))
	j, err := NewJWT(JWTConfig{Keys: keys, Realm: "x"})
	if err != nil {
		t.Fatal(err)
	}
	o := j.Check(req{h: map[string]string{"Authorization": "Basic Zm9vOmJhcg=="}}, nil)
	if o.OK() || o.Reply.Status != 401 || string(o.Reply.Lines[0]) != `WWW-Authenticate: Bearer realm="x"` {
		t.Fatalf("got %+v %q", o.Reply, o.Reply.Lines)
	}
	j.cfg.Redirect = "https://login.test/"
	o = j.Check(req{}, nil)
	if o.Reply.Status != 302 || string(o.Reply.Lines[0]) != "Location: https://login.test/" {
		t.Fatalf("redirect: %+v", o.Reply)
	}
}

func TestLeewayAndTokenSources(t *testing.T) {
	s := newSigner(t, jose.EdDSA)
	keys, _ := ParseKeys(jwksJSON(t, s.jwk(t, "")))
	tok := s.sign(t, "", claimsAt(map[string]any{"exp": t0.Add(-20 * time.Second).Unix()}))
	j, err := NewJWT(JWTConfig{Keys: keys, Leeway: 30 * time.Second, Now: fixedNow,
		Tokens: []TokenSource{{Kind: "cookie", Name: "at"}, {Kind: "query", Name: "access_token"}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]req{
		"cookie": {h: map[string]string{"Cookie": "x=1; at=" + tok}},
		"query":  {query: "a=1&access_token=" + tok},
	} {
		if o := j.Check(r, nil); !o.OK() {
			t.Errorf("%s: %s", name, o.Reason)
		}
	}
	if o := j.Check(bearerReq(tok), nil); o.OK() {
		t.Error("the Authorization header is not a configured source, yet it was read")
	}
}

func TestForwardedClaimsAndCache(t *testing.T) {
	s := newSigner(t, jose.ES256)
	keys, _ := ParseKeys(jwksJSON(t, s.jwk(t, "")))
	now := t0
	j, err := NewJWT(JWTConfig{Keys: keys, Now: func() time.Time { return now },
		Forward: []ClaimHeader{{"sub", "X-User"}, {"groups", "X-Groups"}, {"evil", "X-Evil"}}})
	if err != nil {
		t.Fatal(err)
	}
	tok := s.sign(t, "", claimsAt(map[string]any{"groups": []string{"a", "b"}, "evil": "x\r\nX-Admin: 1"}))
	o := j.Check(bearerReq(tok), nil)
	if !o.OK() {
		t.Fatal(o.Reason)
	}
	var got []string
	for _, l := range o.ID.Lines {
		got = append(got, string(l))
	}
	if strings.Join(got, "|") != `X-User: alice|X-Groups: ["a","b"]` {
		t.Fatalf("lines %q", got)
	}
	if o2 := j.Check(bearerReq(tok), nil); o2.ID != o.ID || j.cache.len() != 1 {
		t.Fatal("the second check did not come from the cache")
	}
	r := &authOnly{[]byte("Bearer " + tok)}
	allocs := testing.AllocsPerRun(100, func() { j.Check(r, nil) })
	if allocs > 0 {
		t.Errorf("a cached token allocates %v times", allocs)
	}
	now = t0.Add(2 * time.Hour) // past exp: the cache no longer answers
	if o := j.Check(bearerReq(tok), nil); o.OK() || !strings.Contains(o.Reason, "expired") {
		t.Fatalf("expired token accepted from the cache: %+v", o)
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := newTokenCache(32)
	for i := range 1000 {
		c.put(strings.Repeat("x", i), &Identity{}, time.Time{}, 0, 0)
	}
	if n := c.len(); n > 32 {
		t.Fatalf("%d entries", n)
	}
}

func TestParseKeysRefuses(t *testing.T) {
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&weak.PublicKey)
	privDER, _ := x509.MarshalPKCS8PrivateKey(weak)
	cases := map[string]struct{ data, want string }{
		"weak RSA":    {string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), "too weak"},
		"private key": {string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})), "only the public key"},
		"short HMAC":  {`{"kty":"oct","k":"c2hvcnQ"}`, "too short"},
		"empty set":   {`{"keys":[]}`, "no keys"},
		"bad JSON":    {`{"keys":[}`, "malformed JSON"},
		"not a key":   {"hello", "not a JWK"},
		"bad alg":     {`{"kty":"oct","alg":"none","k":"` + base64.RawURLEncoding.EncodeToString(make([]byte, 32)) + `"}`, `"none"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKeys([]byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestJWKSRotation(t *testing.T) {
	a, b := newSigner(t, jose.RS256), newSigner(t, jose.ES256)
	var mu sync.Mutex
	serve, fail := jwksJSON(t, a.jwk(t, "a")), false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			http.Error(w, "down", 500)
			return
		}
		w.Write(serve)
	}))
	defer srv.Close()
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	j, err := NewJWT(JWTConfig{JWKS: &JWKSConfig{URL: srv.URL, Roots: roots, MinInterval: time.Second}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if o := j.Check(bearerReq(a.sign(t, "a", claimsAt(nil))), nil); !o.OK() {
		t.Fatal(o.Reason)
	}
	mu.Lock()
	serve = jwksJSON(t, b.jwk(t, "b"))
	mu.Unlock()
	tb := b.sign(t, "b", claimsAt(nil))
	// The first fetch was just now: the unknown key waits for MinInterval.
	if o := j.Check(bearerReq(tb), nil); o.OK() {
		t.Fatal("a key fetched inside the rate limit")
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if o := j.Check(bearerReq(tb), nil); !o.OK() {
		t.Fatalf("rotated key refused: %s", o.Reason)
	}
	if o := j.Check(bearerReq(a.sign(t, "a", claimsAt(nil))), nil); o.OK() {
		t.Fatal("a key rotated out still verifies")
	}
	mu.Lock()
	fail, now = true, now.Add(5*time.Second)
	mu.Unlock()
	if o := j.Check(bearerReq(newSigner(t, jose.ES256).sign(t, "c", claimsAt(nil))), nil); o.OK() {
		t.Fatal("unknown key accepted")
	}
	if o := j.Check(bearerReq(tb), nil); !o.OK() {
		t.Fatalf("the last good set was dropped: %s", o.Reason)
	}
	if _, _, lastErr, _ := j.JWKSStatus(); !strings.Contains(lastErr, "500") {
		t.Fatalf("last error %q", lastErr)
	}
}

func TestJWKSUnreachableAtStart(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := NewJWT(JWTConfig{JWKS: &JWKSConfig{URL: url, Timeout: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err %v", err)
	}
	srv = httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	_, err = NewJWT(JWTConfig{JWKS: &JWKSConfig{URL: srv.URL, Timeout: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unverified certificate was accepted: %v", err)
	}
}

// TestJWKSRefreshOnLifetime: past JWKSRefresh a request starts one
// background fetch; tokens of the new set verify once it is in.
func TestJWKSRefreshOnLifetime(t *testing.T) {
	a, b := newSigner(t, jose.ES256), newSigner(t, jose.ES256)
	var mu sync.Mutex
	serve, fetches := jwksJSON(t, a.jwk(t, "a")), 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fetches++
		w.Write(serve)
	}))
	defer srv.Close()
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	// MinInterval is long: only the lifetime can cause the second fetch.
	j, err := NewJWT(JWTConfig{JWKS: &JWKSConfig{URL: srv.URL, Refresh: time.Minute, MinInterval: 30 * time.Second}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	serve = jwksJSON(t, a.jwk(t, "a"), b.jwk(t, "b"))
	mu.Unlock()
	if o := j.Check(bearerReq(a.sign(t, "a", claimsAt(nil))), nil); !o.OK() {
		t.Fatal(o.Reason)
	}
	mu.Lock()
	if fetches != 1 {
		t.Fatalf("%d fetches inside the lifetime", fetches)
	}
	now = now.Add(61 * time.Second)
	mu.Unlock()
	j.Check(bearerReq(a.sign(t, "a", claimsAt(nil))), nil) // starts the background fetch
	deadline := time.Now().Add(5 * time.Second)
	for {
		if o := j.Check(bearerReq(b.sign(t, "b", claimsAt(nil))), nil); o.OK() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the set was not fetched again after its lifetime")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if fetches != 2 {
		t.Fatalf("%d fetches, want 2", fetches)
	}
}
