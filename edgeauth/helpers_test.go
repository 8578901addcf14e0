package edgeauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// signer is a test key pair: the private key signs, pub is what lbd gets.
type signer struct {
	alg  jose.SignatureAlgorithm
	priv any
	pub  any
}

func newSigner(t testing.TB, alg jose.SignatureAlgorithm) signer {
	t.Helper()
	switch alg[0] {
	case 'H':
		secret := make([]byte, 64)
		rand.Read(secret)
		return signer{alg, secret, secret}
	case 'R', 'P':
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		return signer{alg, k, &k.PublicKey}
	case 'E':
		if alg == jose.EdDSA {
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			return signer{alg, priv, pub}
		}
		curve := map[jose.SignatureAlgorithm]elliptic.Curve{jose.ES256: elliptic.P256(), jose.ES384: elliptic.P384(), jose.ES512: elliptic.P521()}[alg]
		k, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return signer{alg, k, &k.PublicKey}
	}
	t.Fatalf("no signer for %s", alg)
	return signer{}
}

// sign makes a compact JWT of claims, with key ID kid when not "".
func (s signer) sign(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: s.priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sg).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jwk is the public key as a JWK.
func (s signer) jwk(t testing.TB, kid string) jose.JSONWebKey {
	t.Helper()
	return jose.JSONWebKey{Key: s.pub, KeyID: kid, Algorithm: string(s.alg), Use: "sig"}
}

func jwksJSON(t testing.TB, keys ...jose.JSONWebKey) []byte {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// req is a Request from a header map, a cookie line and a query.
type req struct {
	h     map[string]string
	query string
}

func (r req) Header(name string) ([]byte, bool) {
	for k, v := range r.h {
		if strings.EqualFold(k, name) {
			return []byte(v), true
		}
	}
	return nil, false
}

func (r req) Cookie(name string) ([]byte, bool) {
	c, ok := r.Header("Cookie")
	if !ok {
		return nil, false
	}
	for _, p := range strings.Split(string(c), ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if k == name {
			return []byte(v), true
		}
	}
	return nil, false
}

func (r req) Param(name string) ([]byte, bool) {
	q, err := url.ParseQuery(r.query)
	if err != nil || !q.Has(name) {
		return nil, false
	}
	return []byte(q.Get(name)), true
}

func bearerReq(tok string) req { return req{h: map[string]string{"Authorization": "Bearer " + tok}} }

// authOnly is a request with only an Authorization header, which
// allocates nothing to read.
type authOnly struct{ v []byte }

func (a *authOnly) Header(name string) ([]byte, bool) {
	return a.v, strings.EqualFold(name, "Authorization")
}
func (*authOnly) Cookie(string) ([]byte, bool) { return nil, false }
func (*authOnly) Param(string) ([]byte, bool)  { return nil, false }
