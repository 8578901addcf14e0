package edgeauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
)

// MinRSABits is the smallest RSA modulus accepted (NIST SP 800-131A);
// MinHMACBytes the shortest HMAC secret (RFC 7518 §3.2: at least the
// hash size, 256 bits for HS256).
const (
	MinRSABits   = 2048
	MinHMACBytes = 32
)

// key is one verification key: its key ID, the algorithm a JWK limits it
// to ("" for any that fits), and the public key (or HMAC secret) in the
// form go-jose verifies with.
type key struct {
	id  string
	alg string
	pub any
}

// keySet is the keys of one source at one time; a refresh replaces the
// whole set.
type keySet struct {
	keys []key
	gen  uint64
}

// ParseKeys reads verification keys: a JWK Set, a single JWK, or PEM
// blocks (public keys, RSA public keys, certificates). Private parts of a
// JWK are dropped; a PEM private key is refused (give lbd the public key
// only), as are RSA keys under MinRSABits and HMAC secrets under
// MinHMACBytes.
func ParseKeys(data []byte) ([]key, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return nil, errors.New("no keys")
	case trimmed[0] == '{':
		return parseJWKText(trimmed)
	case bytes.HasPrefix(trimmed, []byte("-----BEGIN")):
		return parsePEMKeys(trimmed)
	}
	return nil, errors.New("not a JWK, a JWK Set or PEM")
}

// parseJWKText reads a JWK Set ({"keys": [...]}) or one JWK.
func parseJWKText(data []byte) ([]key, error) {
	var probe struct {
		Keys json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	var jwks []jose.JSONWebKey
	if probe.Keys != nil {
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(data, &set); err != nil {
			return nil, fmt.Errorf("malformed JWK Set: %w", err)
		}
		jwks = set.Keys
	} else {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("malformed JWK: %w", err)
		}
		jwks = []jose.JSONWebKey{k}
	}
	if len(jwks) == 0 {
		return nil, errors.New("the JWK Set has no keys")
	}
	out := make([]key, 0, len(jwks))
	for i := range jwks {
		k, err := fromJWK(&jwks[i])
		if err != nil {
			return nil, fmt.Errorf("key %d%s: %w", i+1, kidNote(jwks[i].KeyID), err)
		}
		if k.pub != nil {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no signature verification keys (every key is for encryption)")
	}
	return out, nil
}

func kidNote(kid string) string {
	if kid == "" {
		return ""
	}
	return fmt.Sprintf(" (kid %q)", kid)
}

// fromJWK converts one JWK; a key whose "use" is "enc" is skipped (pub
// nil).
func fromJWK(j *jose.JSONWebKey) (key, error) {
	k := key{id: j.KeyID, alg: j.Algorithm}
	if j.Use == "enc" {
		return key{}, nil
	}
	if k.alg != "" && !knownAlg(k.alg) {
		return k, fmt.Errorf("algorithm %q is not a signature algorithm lbd accepts", k.alg)
	}
	pub := j.Key
	if !j.IsPublic() {
		if p := j.Public(); p.Key != nil {
			pub = p.Key
		}
	}
	var err error
	k.pub, err = checkKey(pub)
	return k, err
}

// parsePEMKeys reads every PEM block of a file.
func parsePEMKeys(data []byte) ([]key, error) {
	var out []key
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		pub, err := pemPublicKey(block)
		if err == nil {
			pub, err = checkKey(pub)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %d (%s): %w", n, block.Type, err)
		}
		out = append(out, key{pub: pub})
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM block")
	}
	return out, nil
}

func pemPublicKey(b *pem.Block) (any, error) {
	switch b.Type {
	case "PUBLIC KEY":
		return x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		return x509.ParsePKCS1PublicKey(b.Bytes)
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		return c.PublicKey, nil
	}
	return nil, errors.New("not a public key or certificate (lbd needs only the public key)")
}

// checkKey accepts the key types JWS verification uses and refuses weak
// ones.
func checkKey(pub any) (any, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return nil, fmt.Errorf("RSA key of %d bits is too weak (at least %d)", k.N.BitLen(), MinRSABits)
		}
		return k, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return k, nil
		}
		return nil, errors.New("unsupported elliptic curve")
	case ed25519.PublicKey:
		return k, nil
	case []byte:
		if len(k) < MinHMACBytes {
			return nil, fmt.Errorf("HMAC secret of %d bytes is too short (at least %d)", len(k), MinHMACBytes)
		}
		return k, nil
	}
	return nil, fmt.Errorf("unsupported key type %T", pub)
}

// algorithms are the signature algorithms a JWT may use. "none" is not
// among them and cannot be configured.
var algorithms = []jose.SignatureAlgorithm{
	jose.HS256, jose.HS384, jose.HS512,
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// Algorithms lists the algorithm names a configuration may give.
func Algorithms() []string {
	out := make([]string, len(algorithms))
	for i, a := range algorithms {
		out[i] = string(a)
	}
	return out
}

func knownAlg(name string) bool {
	for _, a := range algorithms {
		if string(a) == name {
			return true
		}
	}
	return false
}

// fits reports whether k may verify a signature made with alg: the key
// type matches the algorithm family (so an RSA public key is never used
// as an HMAC secret), an EC key's curve matches, an HMAC secret is at
// least as long as the hash, and a JWK's own "alg" agrees.
func (k *key) fits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch p := k.pub.(type) {
	case *rsa.PublicKey:
		return alg[0] == 'R' || alg[0] == 'P'
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return p.Curve == elliptic.P256()
		case "ES384":
			return p.Curve == elliptic.P384()
		case "ES512":
			return p.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	case []byte:
		switch alg {
		case "HS256":
			return len(p) >= 32
		case "HS384":
			return len(p) >= 48
		case "HS512":
			return len(p) >= 64
		}
	}
	return false
}

// candidates returns the keys of s that may verify a token signed with
// alg under key ID kid: those with that ID, or, when the token names
// none or no key has its ID, the keys without an ID. known is false when
// the token names an ID no key has and every key has one (a rotation the
// set has not seen yet).
func (s *keySet) candidates(dst []*key, kid, alg string) (out []*key, known bool) {
	out = dst[:0]
	named := false
	for i := range s.keys {
		k := &s.keys[i]
		if kid != "" && k.id == kid {
			named = true
			if k.fits(alg) {
				out = append(out, k)
			}
		}
	}
	if named {
		return out, true
	}
	anon := false
	for i := range s.keys {
		k := &s.keys[i]
		if k.id == "" || kid == "" {
			anon = anon || k.id == ""
			if k.fits(alg) {
				out = append(out, k)
			}
		}
	}
	return out, kid == "" || anon
}
