package functionaltests

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// jwtConfig: a JWTAuth block over keys.jwks, a service that requires it
// and forwards two claims, one that takes the token from a cookie or the
// query, and one without authentication.
func jwtConfig(dir string, be *backend) string {
	return `JWTAuth "api"
	KeyFile "` + filepath.Join(dir, "keys.jwks") + `"
	Issuer "https://idp.test"
	Audience "api" "api2"
	Leeway 5
	Realm "api"
	ForwardClaim "sub" "X-User"
	ForwardClaim "role" "X-Role"
End
JWTAuth "web"
	KeyFile "` + filepath.Join(dir, "keys.jwks") + `"
	TokenCookie "at"
	TokenQuery "access_token"
	LoginRedirect "https://login.test/start"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "open"
		URL "^/open"
		` + backendBlock(be) + `
	End
	Service "web"
		URL "^/web"
		Authenticate "web"
		` + backendBlock(be) + `
	End
	Service "api"
		Authenticate "api"
		` + backendBlock(be) + `
	End
End
`
}

// TestJWTEveryAlgorithm: a token of each algorithm passes through the
// binary, its claims reach the backend as headers, and a client's own
// X-User never does.
func TestJWTEveryAlgorithm(t *testing.T) {
	dir := t.TempDir()
	var keys []testKey
	for _, alg := range jwtAlgs {
		keys = append(keys, genKey(t, alg, "kid-"+string(alg)))
	}
	writeJWKS(t, filepath.Join(dir, "keys.jwks"), keys...)
	be := echoBackend(t, "a")
	p := startLBD(t, jwtConfig(dir, be))
	for _, k := range keys {
		t.Run(string(k.alg), func(t *testing.T) {
			tok := k.token(t, map[string]any{"role": "admin"})
			resp := getWith(t, p, "/x", "Authorization: Bearer "+tok, "X-User: mallory", "X-Role: root")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d (%s)", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			if u, r := resp.Header.Get("X-Got-X-User"), resp.Header.Get("X-Got-X-Role"); u != "alice" || r != "admin" {
				t.Fatalf("backend got X-User %q, X-Role %q", u, r)
			}
		})
	}
	// A token without the role claim: the client's X-Role is removed,
	// not passed on.
	resp := getWith(t, p, "/x", "Authorization: Bearer "+keys[9].token(t, nil), "X-Role: root")
	if resp.StatusCode != 200 || resp.Header.Get("X-Got-X-Role") != "" {
		t.Fatalf("status %d, forged X-Role reached the backend as %q", resp.StatusCode, resp.Header.Get("X-Got-X-Role"))
	}
	if resp := getWith(t, p, "/open", "X-User: mallory"); resp.StatusCode != 200 || resp.Header.Get("X-Got-X-User") != "mallory" {
		t.Fatalf("a service without Authenticate changed the request: %d %q", resp.StatusCode, resp.Header.Get("X-Got-X-User"))
	}
}

// TestJWTRefusals: every way a token can be wrong gets 401 and the
// RFC 6750 challenge that says why; the web service redirects instead.
func TestJWTRefusals(t *testing.T) {
	dir := t.TempDir()
	es := genKey(t, jose.ES256, "es")
	rs := genKey(t, jose.RS256, "rs")
	writeJWKS(t, filepath.Join(dir, "keys.jwks"), es, rs)
	p := startLBD(t, jwtConfig(dir, echoBackend(t, "a")))

	good := es.token(t, nil)
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"mallory","iss":"https://idp.test","aud":"api","exp":4102444800}`))
	tampered := parts[0] + "." + forged + "." + parts[2]
	stranger := genKey(t, jose.ES256, "es") // same kid, another key
	now := time.Now()
	cases := []struct {
		name, tok, desc string
	}{
		{"expired", es.token(t, map[string]any{"exp": now.Add(-time.Minute).Unix()}), "the token has expired"},
		{"not yet valid", es.token(t, map[string]any{"nbf": now.Add(time.Hour).Unix()}), "the token is not valid yet"},
		{"wrong audience", es.token(t, map[string]any{"aud": "other"}), "wrong audience"},
		{"wrong issuer", es.token(t, map[string]any{"iss": "https://evil.test"}), "wrong issuer"},
		{"tampered", tampered, "bad signature"},
		{"alg none", none, "the token's algorithm is not accepted"},
		{"unknown kid", genKey(t, jose.ES256, "nope").token(t, nil), `unknown key ID`},
		{"signed by another key", stranger.token(t, nil), "bad signature"},
		{"not a JWT", "abc.def", "malformed token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := getWith(t, p, "/x", "Authorization: Bearer "+c.tok)
			want := `Bearer realm="api", error="invalid_token", error_description="` + c.desc + `"`
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
				t.Fatalf("status %d, WWW-Authenticate %q, want %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
			}
		})
	}
	t.Run("within leeway", func(t *testing.T) {
		tok := es.token(t, map[string]any{"exp": now.Add(-2 * time.Second).Unix()})
		if resp := getWith(t, p, "/x", "Authorization: Bearer "+tok); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("second audience", func(t *testing.T) {
		tok := rs.token(t, map[string]any{"aud": []string{"x", "api2"}})
		if resp := getWith(t, p, "/x", "Authorization: Bearer "+tok); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("no token", func(t *testing.T) {
		resp := getWith(t, p, "/x", "Authorization: Basic Zm9vOmJhcg==")
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="api"` {
			t.Fatalf("status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("HEAD gets the head only", func(t *testing.T) {
		raw, closed := rawExchange(t, p.addr, []byte("HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n"), 2*time.Second)
		head, body, _ := strings.Cut(string(raw), "\r\n\r\n")
		if !closed || !strings.HasPrefix(head, "HTTP/1.1 401 Unauthorized\r\n") || body != "" ||
			!strings.Contains(head, "\r\nContent-Length: 17\r\n") {
			t.Fatalf("closed %v, answer %q", closed, raw)
		}
	})
	t.Run("cookie, query and redirect", func(t *testing.T) {
		if resp := getWith(t, p, "/web", "Cookie: x=1; at="+good); resp.StatusCode != 200 {
			t.Fatalf("cookie: status %d", resp.StatusCode)
		}
		if resp := getWith(t, p, "/web?access_token="+good); resp.StatusCode != 200 {
			t.Fatalf("query: status %d", resp.StatusCode)
		}
		resp := getWith(t, p, "/web", "Authorization: Bearer "+good)
		if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://login.test/start" {
			t.Fatalf("without the cookie: status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

// TestJWTConditionBothDialects: JWT "name" "claim" PATTERN routes
// requests in a Pound file and in a zproxy file, and %[claim] and
// %[authuser] expand to verified values in a Pound rule.
func TestJWTConditionBothDialects(t *testing.T) {
	dir := t.TempDir()
	k := genKey(t, jose.EdDSA, "")
	writeJWKS(t, filepath.Join(dir, "keys.jwks"), k)
	admin, user := echoBackend(t, "admin"), echoBackend(t, "user")
	for _, dialect := range []string{"pound", "zproxy"} {
		t.Run(dialect, func(t *testing.T) {
			extra := ""
			if dialect == "zproxy" {
				extra = "\t\tAddRequestHeader \"X-Dialect: zproxy\"\n"
			}
			cfg := `JWTAuth "api"
	KeyFile "` + filepath.Join(dir, "keys.jwks") + `"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "admins"
		JWT "api" "groups" -re "^(ops|admin)$"
		SetHeader "X-Verified: %[authuser] %[claim email]"
` + extra + `		` + backendBlock(admin) + `
	End
	Service "users"
		JWT "api"
		` + backendBlock(user) + `
	End
End
`
			p := startLBD(t, cfg)
			adminTok := k.token(t, map[string]any{"groups": []string{"dev", "ops"}, "email": "a@x.test"})
			resp := getWith(t, p, "/", "Authorization: Bearer "+adminTok)
			// zproxy's SetHeader expands nothing: the accessors are Pound's language.
			wantVerified := "alice a@x.test"
			if dialect == "zproxy" {
				wantVerified = "%[authuser] %[claim email]"
			}
			if resp.Header.Get("X-Backend") != "admin" || resp.Header.Get("X-Got-X-Verified") != wantVerified {
				t.Fatalf("admin token: backend %q, X-Verified %q", resp.Header.Get("X-Backend"), resp.Header.Get("X-Got-X-Verified"))
			}
			if dialect == "zproxy" && resp.Header.Get("X-Got-X-Dialect") != "zproxy" {
				t.Fatal("the file was not read as zproxy's")
			}
			resp = getWith(t, p, "/", "Authorization: Bearer "+k.token(t, map[string]any{"groups": "dev"}))
			if resp.Header.Get("X-Backend") != "user" {
				t.Fatalf("user token went to %q", resp.Header.Get("X-Backend"))
			}
			forged := adminTok[:len(adminTok)-4] + "AAAA"
			if resp := getWith(t, p, "/", "Authorization: Bearer "+forged); resp.StatusCode != 503 {
				t.Fatalf("a forged token matched a service: %d from %q", resp.StatusCode, resp.Header.Get("X-Backend"))
			}
		})
	}
}

// TestJWTWithSessions: a service behind Authenticate keeps its sessions;
// here the session key is the bearer token, so each user sticks to a
// backend (10 requests each: a random balancer alone would keep all of
// them on one backend with probability 2^-9).
func TestJWTWithSessions(t *testing.T) {
	dir := t.TempDir()
	k := genKey(t, jose.ES256, "")
	writeJWKS(t, filepath.Join(dir, "keys.jwks"), k)
	a, b := echoBackend(t, "a"), echoBackend(t, "b")
	p := startLBD(t, `JWTAuth "api"
	KeyFile "`+filepath.Join(dir, "keys.jwks")+`"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Authenticate "api"
		Session
			Type HEADER
			ID "Authorization"
			TTL 300
		End
		`+backendBlock(a)+`
		`+backendBlock(b)+`
	End
End
`)
	for _, user := range []string{"alice", "bob", "carol"} {
		tok := k.token(t, map[string]any{"sub": user})
		first := ""
		for i := range 10 {
			resp := getWith(t, p, "/", "Authorization: Bearer "+tok)
			got := resp.Header.Get("X-Backend")
			if resp.StatusCode != 200 || got == "" {
				t.Fatalf("%s: status %d", user, resp.StatusCode)
			}
			if i == 0 {
				first = got
			} else if got != first {
				t.Fatalf("%s went to %s, then to %s", user, first, got)
			}
		}
	}
}
