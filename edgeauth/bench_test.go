package edgeauth

import (
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// benchJWT is a verifier with one key of alg, issuer and audience
// checked and sub forwarded, and a token it accepts.
func benchJWT(b *testing.B, alg jose.SignatureAlgorithm) (*JWT, string) {
	b.Helper()
	s := newSigner(b, alg)
	keys, err := ParseKeys(jwksJSON(b, s.jwk(b, "k")))
	if err != nil {
		b.Fatal(err)
	}
	j, err := NewJWT(JWTConfig{Keys: keys, Issuer: "https://idp.test", Audiences: []string{"api"},
		Forward: []ClaimHeader{{"sub", "X-User"}}, Now: fixedNow})
	if err != nil {
		b.Fatal(err)
	}
	return j, s.sign(b, "k", claimsAt(map[string]any{"scope": "read write"}))
}

// BenchmarkVerifyFirst is a token's first verification (what a token
// not in the cache costs): parsing, the signature, the claims, the
// identity with its forwarded lines.
func BenchmarkVerifyFirst(b *testing.B) {
	for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA, jose.HS256} {
		b.Run(string(alg), func(b *testing.B) {
			j, tok := benchJWT(b, alg)
			now := t0
			b.ReportAllocs()
			for b.Loop() {
				if _, _, f := j.verify(tok, now); f != nil {
					b.Fatal(f)
				}
			}
		})
	}
}

// BenchmarkVerifyCached is a token verified before: the cache answers.
func BenchmarkVerifyCached(b *testing.B) {
	j, tok := benchJWT(b, jose.ES256)
	r := &authOnly{[]byte("Bearer " + tok)}
	if o := j.Check(r, nil); !o.OK() {
		b.Fatal(o.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		if o := j.Check(r, nil); !o.OK() {
			b.Fatal(o.Reason)
		}
	}
}
