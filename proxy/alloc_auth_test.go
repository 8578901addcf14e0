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

// authConfigs are one service without conditions, and the same service
// behind BasicAuth (a bcrypt entry, as htpasswd -B writes) and behind a
// TBF keyed by client address that never runs dry: what the two
// conditions add to a request is the difference.
func authConfigs(t testing.TB) map[string]string {
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
	return map[string]string{
		"none":      svc(""),
		"basicauth": svc(`BasicAuth -file "` + pw + `"`),
		"tbf":       svc(`TBF "%[remoteip 0]" 1000/1us 4294967295`),
	}
}

func TestRequestCycleAuthDoesNotAllocate(t *testing.T) {
	for name, src := range authConfigs(t) {
		t.Run(name, func(t *testing.T) {
			be := &memConn{reply: []byte(benchResponse), keep: true}
			c, st, client := newMemProxy(t, be)
			withRules(t, st, src)
			client.in = []byte(authRequest)
			client.keep = true
			if !cycle(c, st, client) || !strings.HasPrefix(string(client.out), "HTTP/1.1 200 OK") {
				t.Fatalf("first cycle failed; client got %q", client.out)
			}
			client.keep, be.keep = false, false
			allocs := testing.AllocsPerRun(1000, func() {
				if !cycle(c, st, client) {
					t.Fatal("cycle failed")
				}
			})
			if allocs != 0 {
				t.Fatalf("%s: %.1f allocations per request, want 0", name, allocs)
			}
		})
	}
}

// BenchmarkRequestCycleAuth: go test ./proxy -run '^$' -bench RequestCycleAuth -benchmem
func BenchmarkRequestCycleAuth(b *testing.B) {
	cfgs := authConfigs(b)
	for _, name := range []string{"none", "basicauth", "tbf"} {
		b.Run(name, func(b *testing.B) {
			be := &memConn{reply: []byte(benchResponse)}
			c, st, client := newMemProxy(b, be)
			withRules(b, st, cfgs[name])
			client.in = []byte(authRequest)
			if !cycle(c, st, client) {
				b.Fatal("first cycle failed")
			}
			b.ReportAllocs()
			for b.Loop() {
				if !cycle(c, st, client) {
					b.Fatal("cycle failed")
				}
			}
		})
	}
}
