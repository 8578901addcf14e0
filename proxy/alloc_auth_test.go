package proxy

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/crypto/bcrypt"
)

// authRequest is benchRequest with Basic credentials (user "bench").
var authRequest = strings.Replace(benchRequest, "\r\n\r\n",
	"\r\nAuthorization: Basic "+base64.StdEncoding.EncodeToString([]byte("bench:s3cret"))+"\r\n\r\n", 1)

// jwtRequest is benchRequest with a bearer token whose payload says
// {"sub":"bench"}.
var jwtRequest = strings.Replace(benchRequest, "\r\n\r\n",
	"\r\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9."+base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"bench"}`))+
		".c2ln\r\n\r\n", 1)

// authCase is a configuration and the request sent through it; limited
// cases answer 429 (want) from the second request on.
type authCase struct {
	name, cfg, req, want string
}

// authConfigs are one service without conditions, and the same service
// behind BasicAuth (a bcrypt entry, as htpasswd -B writes) and behind
// TBFs keyed by client address, cookie and JWT claim that never run dry:
// what the conditions add to a request is the difference. The last one
// runs dry at once and answers 429 with Retry-After.
func authConfigs(t testing.TB) []authCase {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), 5)
	if err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(pw, []byte("bench:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := func(cond string) string {
		return "ListenHTTP\n\tService\n\t\t" + cond + "\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n"
	}
	const never = ` 1000/1us 4294967295`
	edge, tok := edgeAuthBlocks(t)
	bearer := strings.Replace(benchRequest, "\r\n\r\n", "\r\nAuthorization: Bearer "+tok+"\r\nX-User: forged\r\n\r\n", 1)
	apiKey := strings.Replace(benchRequest, "\r\n\r\n", "\r\nX-API-Key: bench-key\r\n\r\n", 1)
	return []authCase{
		{name: "none", cfg: svc(""), req: authRequest},
		{name: "basicauth", cfg: svc(`BasicAuth -file "` + pw + `"`), req: authRequest},
		{name: "tbf", cfg: svc(`TBF "%[remoteip 0]"` + never), req: authRequest},
		{name: "tbf by cookie", cfg: svc(`TBF "%[cookie sid]"` + never), req: authRequest},
		{name: "tbf by jwt claim", cfg: svc(`TBF "%[jwt sub]"` + never), req: jwtRequest},
		{name: "tbf limited with Retry-After", req: jwtRequest, want: "HTTP/1.1 429 Too Many Requests\r\n",
			cfg: "ListenHTTP\n\tService\n\t\tNot TBF \"%[jwt sub]\" 1/60s 1\n\t\tError 429\n\tEnd\n" +
				"\tService\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n"},
		{name: "jwt authenticate (cached)", cfg: edge + svc(`Authenticate "jwt"`), req: bearer},
		{name: "jwt condition and tbf by claim", cfg: edge + svc("JWT \"jwt\" \"sub\" \"bench\"\n\t\tTBF \"%[claim sub]\""+never), req: bearer},
		{name: "api key authenticate", cfg: edge + svc(`Authenticate "key"`), req: apiKey},
	}
}

// edgeAuthBlocks writes an HS256 key (a JWK) and an API key file and
// returns the JWTAuth and APIKeyAuth blocks that use them, and a token
// the key signs ({"sub":"bench"}).
func edgeAuthBlocks(t testing.TB) (string, string) {
	dir := t.TempDir()
	secret := []byte("0123456789abcdef0123456789abcdef")
	jwk, err := json.Marshal(jose.JSONWebKey{Key: secret, Algorithm: "HS256"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("bench-key"))
	if os.WriteFile(filepath.Join(dir, "k.jwk"), jwk, 0o600) != nil ||
		os.WriteFile(filepath.Join(dir, "keys"), []byte("bench sha256:"+hex.EncodeToString(sum[:])+"\n"), 0o600) != nil {
		t.Fatal("cannot write the key files")
	}
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sg).Claims(map[string]any{"sub": "bench"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return "JWTAuth \"jwt\"\n\tKeyFile \"" + filepath.Join(dir, "k.jwk") + "\"\n\tForwardClaim \"sub\" \"X-User\"\nEnd\n" +
		"APIKeyAuth \"key\"\n\tKeyFile -file \"" + filepath.Join(dir, "keys") + "\"\n\tForwardName \"X-Key\"\nEnd\n", tok
}

func TestRequestCycleAuthDoesNotAllocate(t *testing.T) {
	for _, ac := range authConfigs(t) {
		t.Run(ac.name, func(t *testing.T) {
			be := &memConn{reply: []byte(benchResponse), keep: true}
			c, st, client := newMemProxy(t, be)
			withRules(t, st, ac.cfg)
			client.in = []byte(ac.req)
			client.keep = true
			if !cycle(c, st, client) || !strings.HasPrefix(string(client.out), "HTTP/1.1 200 OK") {
				t.Fatalf("first cycle failed; client got %q", client.out)
			}
			if ac.want != "" {
				client.out = client.out[:0]
				cycle(c, st, client)
				got := string(client.out)
				if !strings.HasPrefix(got, ac.want) || !strings.Contains(got, "\r\nRetry-After: 60\r\n\r\n") {
					t.Fatalf("second request got %q, want %q with Retry-After: 60", got, ac.want)
				}
			}
			client.keep, be.keep = false, false
			allocs := testing.AllocsPerRun(1000, func() {
				if !cycle(c, st, client) && ac.want == "" {
					t.Fatal("cycle failed")
				}
			})
			if allocs != 0 {
				t.Fatalf("%s: %.1f allocations per request, want 0", ac.name, allocs)
			}
		})
	}
}

// BenchmarkRequestCycleAuth: go test ./proxy -run '^$' -bench RequestCycleAuth -benchmem
func BenchmarkRequestCycleAuth(b *testing.B) {
	for _, ac := range authConfigs(b) {
		b.Run(ac.name, func(b *testing.B) {
			be := &memConn{reply: []byte(benchResponse)}
			c, st, client := newMemProxy(b, be)
			withRules(b, st, ac.cfg)
			client.in = []byte(ac.req)
			if !cycle(c, st, client) {
				b.Fatal("first cycle failed")
			}
			b.ReportAllocs()
			for b.Loop() {
				if !cycle(c, st, client) && ac.want == "" {
					b.Fatal("cycle failed")
				}
			}
		})
	}
}
