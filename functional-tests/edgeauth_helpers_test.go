package functionaltests

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Edge authentication fixtures: key pairs generated in the test, tokens
// signed with them (go-jose), key files written as the operator would.

// jwtAlgs are the algorithms lbd must verify.
var jwtAlgs = []jose.SignatureAlgorithm{jose.HS256, jose.HS384, jose.HS512, jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

type testKey struct {
	alg  jose.SignatureAlgorithm
	kid  string
	priv any
	pub  any
}

func genKey(t testing.TB, alg jose.SignatureAlgorithm, kid string) testKey {
	t.Helper()
	k := testKey{alg: alg, kid: kid}
	var err error
	switch {
	case alg[0] == 'H':
		secret := make([]byte, 64)
		_, err = rand.Read(secret)
		k.priv, k.pub = secret, secret
	case alg[0] == 'R' || alg[0] == 'P':
		var r *rsa.PrivateKey
		r, err = rsa.GenerateKey(rand.Reader, 2048)
		k.priv = r
		if r != nil {
			k.pub = &r.PublicKey
		}
	case alg == jose.EdDSA:
		var pub ed25519.PublicKey
		pub, k.priv, err = ed25519.GenerateKey(rand.Reader)
		k.pub = pub
	default:
		curve := map[jose.SignatureAlgorithm]elliptic.Curve{jose.ES256: elliptic.P256(), jose.ES384: elliptic.P384(), jose.ES512: elliptic.P521()}[alg]
		var e *ecdsa.PrivateKey
		e, err = ecdsa.GenerateKey(curve, rand.Reader)
		k.priv = e
		if e != nil {
			k.pub = &e.PublicKey
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (k testKey) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.pub, KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// token signs claims (merged over a valid default set: sub alice, iss
// https://idp.test, aud api, an hour to live).
func (k testKey) token(t testing.TB, over map[string]any) string {
	t.Helper()
	c := map[string]any{"sub": "alice", "iss": "https://idp.test", "aud": "api",
		"exp": time.Now().Add(time.Hour).Unix(), "nbf": time.Now().Add(-time.Minute).Unix()}
	for name, v := range over {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if k.kid != "" {
		opts = opts.WithHeader("kid", k.kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func writeJWKS(t testing.TB, path string, keys ...testKey) {
	t.Helper()
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.jwk())
	}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// getWith sends GET path with extra headers ("Name: value") and returns
// the response (body read and closed).
func getWith(t *testing.T, p *proc, path string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+p.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, v, _ := strings.Cut(h, ": ")
		req.Header.Add(name, v)
	}
	c := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// lbdCheck runs lbd -c -f on cfg (written in a temporary directory, with
// {DIR} replaced by it) and returns its exit code and output.
func lbdCheck(t *testing.T, cfg string, files map[string]string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(cfg, "{DIR}", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t, "lbd"), "-c", "-f", path)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return code, string(out)
}
