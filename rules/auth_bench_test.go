package rules

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// BenchmarkSelectAuth isolates what BasicAuth (a cached bcrypt entry)
// and TBF add to selecting a service: the same request through a
// selection without conditions, with BasicAuth and with TBF.
//
//	go test ./rules -run '^$' -bench SelectAuth -benchmem
func BenchmarkSelectAuth(b *testing.B) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), 5)
	if err != nil {
		b.Fatal(err)
	}
	pw := filepath.Join(b.TempDir(), "htpasswd")
	if err := os.WriteFile(pw, []byte("bench:"+string(hash)+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, conds string }{
		{"none", ""},
		{"basicauth", `BasicAuth -file "` + pw + `"`},
		{"tbf", `TBF "%[remoteip 0]" 1000/1us 4294967295`},
		{"tbf by header", `TBF "%[header X-Api-Key]" 1000/1us 4294967295`},
		{"tbf by cookie", `TBF "%[cookie sid]" 1000/1us 4294967295`},
		{"tbf by jwt claim", `TBF "%[jwt sub]" 1000/1us 4294967295`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := compileFirst(b, wrap("", "", bc.conds))
			var st State
			client := netip.MustParseAddr("192.0.2.1")
			method, url := []byte("GET"), []byte("/index.html")
			hdrs := [][]byte{[]byte("Host: www.example.com"), []byte(basic("bench:s3cret")),
				[]byte("X-Api-Key: k-1234"), []byte("Cookie: theme=dark; sid=abc123"),
				[]byte(bearer(`{"iss":"https://id.example","sub":"alice","exp":1900000000}`))}
			run := func() {
				st.Begin(client, len(p.env.Detached))
				st.Req.Method, st.Req.URL = method, url
				st.Req.Lines = append(st.Req.Lines, hdrs...)
				if ok, err := p.sel.Select(&st); !ok || err != nil {
					b.Fatalf("Select = %v, %v", ok, err)
				}
			}
			run() // the first check runs bcrypt; the rest come from the cache
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
}
