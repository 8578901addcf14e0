package edgeauth

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseKeys: any key file is refused with an error or gives keys
// that are all usable for some algorithm; nothing panics.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"a"}]}`))
	f.Add([]byte(`{"kty":"oct","k":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","alg":"HS256"}`))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte(`{"keys":[]}`))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := ParseKeys(data)
		if err != nil {
			return
		}
		for _, k := range keys {
			usable := false
			for _, a := range Algorithms() {
				usable = usable || k.fits(a)
			}
			if !usable && k.alg == "" {
				t.Fatalf("key %+v fits no algorithm", k)
			}
		}
	})
}

// FuzzParseAPIKeys: a key file parses into names that are safe in a
// header line, or is refused.
func FuzzParseAPIKeys(f *testing.F) {
	f.Add([]byte("# keys\nacme sha256:f10f781241e2246678b6b45c857069208152a53863e47fac33f607ab405006f4\n"))
	f.Add([]byte("a sha256:zz\n"))
	f.Add([]byte("a b c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseAPIKeys(data)
		if err != nil {
			return
		}
		for _, name := range m {
			if name == "" || strings.ContainsAny(name, "\r\n") {
				t.Fatalf("bad name %q", name)
			}
		}
	})
}

// FuzzVerify: no token makes verification panic, and none verifies
// against a key that did not sign it.
func FuzzVerify(f *testing.F) {
	s := newSigner(f, "ES256")
	keys, err := ParseKeys(jwksJSON(f, s.jwk(f, "k")))
	if err != nil {
		f.Fatal(err)
	}
	j, err := NewJWT(JWTConfig{Keys: keys, Now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Add(newSigner(f, "ES256").sign(f, "k", claimsAt(nil)))
	f.Fuzz(func(t *testing.T, tok string) {
		if id, fail := j.Verify([]byte(tok)); fail == nil {
			t.Fatalf("a token no key of the set signed verified: %q (%v)", tok, id)
		}
	})
}
