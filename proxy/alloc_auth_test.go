package proxy

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	return []authCase{
		{name: "none", cfg: svc(""), req: authRequest},
		{name: "basicauth", cfg: svc(`BasicAuth -file "` + pw + `"`), req: authRequest},
		{name: "tbf", cfg: svc(`TBF "%[remoteip 0]"` + never), req: authRequest},
		{name: "tbf by cookie", cfg: svc(`TBF "%[cookie sid]"` + never), req: authRequest},
		{name: "tbf by jwt claim", cfg: svc(`TBF "%[jwt sub]"` + never), req: jwtRequest},
		{name: "tbf limited with Retry-After", req: jwtRequest, want: "HTTP/1.1 429 Too Many Requests\r\n",
			cfg: "ListenHTTP\n\tService\n\t\tNot TBF \"%[jwt sub]\" 1/60s 1\n\t\tError 429\n\tEnd\n" +
				"\tService\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n"},
	}
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
