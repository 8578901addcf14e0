// Command authtoken writes what bench/auth.sh needs: an ES256 key pair's
// public half as a JWK Set (-jwks), a token it signs (on stdout, an hour
// to live), and an API key file (-keys) for the key "bench-key".
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func main() {
	jwksPath := flag.String("jwks", "", "write the JWK Set here")
	keysPath := flag.String("keys", "", "write the API key file here")
	flag.Parse()
	if *jwksPath == "" || *keysPath == "" {
		log.Fatal("usage: authtoken -jwks FILE -keys FILE")
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &priv.PublicKey, KeyID: "bench", Algorithm: "ES256", Use: "sig"}}}
	data, err := json.Marshal(set)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*jwksPath, data, 0o644); err != nil {
		log.Fatal(err)
	}
	sum := sha256.Sum256([]byte("bench-key"))
	if err := os.WriteFile(*keysPath, []byte("bench sha256:"+hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "bench"))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(s).Claims(map[string]any{"sub": "bench-user", "iss": "https://idp.bench", "aud": "api",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "read write"}).Serialize()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok)
}
