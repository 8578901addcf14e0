package edgeauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TokenSource says where a request carries its token.
type TokenSource struct {
	// Kind is "header" (Name is the header, "Authorization" by default,
	// whose value is "Bearer TOKEN"), "cookie" or "query".
	Kind string
	Name string
}

// ClaimHeader forwards a verified claim as a request header.
type ClaimHeader struct {
	Claim, Header string
}

// ClaimCheck requires a claim to satisfy Match (one element of an array
// claim suffices). Desc is how the configuration wrote it, for the
// reason of a refusal.
type ClaimCheck struct {
	Claim string
	Desc  string
	Match func([]byte) bool
}

// JWTConfig is one JWT block.
type JWTConfig struct {
	Name string
	// Keys are the keys read from files (ParseKeys); JWKS the key set
	// URL. At least one of them is set.
	Keys []key
	JWKS *JWKSConfig
	// Algorithms limits the accepted algorithms (nil: all of Algorithms()).
	Algorithms []string
	Issuer     string
	Audiences  []string
	Leeway     time.Duration
	// Required claims must be present; Checks must match.
	Required []string
	Checks   []ClaimCheck
	// Tokens are tried in order (default: the Authorization header).
	Tokens  []TokenSource
	Forward []ClaimHeader
	// Realm goes in WWW-Authenticate; Redirect, when set, answers a
	// request without a valid token with a 302 there instead of a 401.
	Realm    string
	Redirect string
	// CacheSize bounds the verified-token cache (0: DefaultCacheSize).
	CacheSize int
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// DefaultCacheSize is how many verified tokens a JWT block remembers.
const DefaultCacheSize = 10000

// JWT verifies bearer tokens. It is safe for concurrent use.
type JWT struct {
	cfg    JWTConfig
	algs   []jose.SignatureAlgorithm
	static *keySet
	jwks   *jwksSource
	cache  *tokenCache
	strip  []string
	stats  Stats
}

// NewJWT checks cfg and, with a JWKS URL, fetches the key set once: an
// unreachable URL is an error at load, when the configuration can still
// say where it is.
func NewJWT(cfg JWTConfig) (*JWT, error) {
	j := &JWT{cfg: cfg}
	if cfg.Now == nil {
		j.cfg.Now = time.Now
	}
	if len(cfg.Keys) == 0 && cfg.JWKS == nil {
		return nil, errors.New("no keys: give KeyFile or JWKS")
	}
	if len(cfg.Algorithms) == 0 {
		j.algs = algorithms
	}
	for _, a := range cfg.Algorithms {
		if !knownAlg(a) {
			return nil, fmt.Errorf("unknown algorithm %q (known: %s)", a, strings.Join(Algorithms(), " "))
		}
		j.algs = append(j.algs, jose.SignatureAlgorithm(a))
	}
	if len(cfg.Keys) > 0 {
		j.static = &keySet{keys: cfg.Keys}
	}
	if cfg.JWKS != nil {
		src, err := newJWKS(*cfg.JWKS, j.cfg.Now)
		if err != nil {
			return nil, err
		}
		j.jwks = src
	}
	if len(j.cfg.Tokens) == 0 {
		j.cfg.Tokens = []TokenSource{{Kind: "header", Name: "Authorization"}}
	}
	size := cfg.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	j.cache = newTokenCache(size)
	for _, f := range cfg.Forward {
		j.strip = append(j.strip, f.Header)
	}
	return j, nil
}

// Name is the block's name.
func (j *JWT) Name() string { return j.cfg.Name }

// Strip is the forwarded claim headers.
func (j *JWT) Strip() []string { return j.strip }

// Close stops nothing today; it exists so that a reload can drop a
// block the same way whatever it holds.
func (j *JWT) Close() {}

// Token finds the request's token in the configured places.
func (j *JWT) Token(r Request) ([]byte, bool) {
	for _, s := range j.cfg.Tokens {
		switch s.Kind {
		case "header":
			v, ok := r.Header(s.Name)
			if !ok {
				continue
			}
			if t, ok := bearer(v); ok {
				return t, true
			}
		case "cookie":
			if v, ok := r.Cookie(s.Name); ok && len(v) > 0 {
				return v, true
			}
		case "query":
			if v, ok := r.Param(s.Name); ok && len(v) > 0 {
				return v, true
			}
		}
	}
	return nil, false
}

// bearer extracts the token of an "Authorization: Bearer TOKEN" value
// (the scheme is case-insensitive, RFC 9110 §11.1).
func bearer(v []byte) ([]byte, bool) {
	if len(v) < 8 || !bytes.EqualFold(v[:6], []byte("bearer")) || (v[6] != ' ' && v[6] != '\t') {
		return nil, false
	}
	t := bytes.TrimSpace(v[7:])
	return t, len(t) > 0
}

// Check verifies the request's token (Checker).
func (j *JWT) Check(r Request, _ *Exchange) Outcome {
	tok, ok := j.Token(r)
	if !ok {
		return Outcome{Reply: j.refusal(401, "", ""), Reason: "no token"}
	}
	id, ferr := j.Verify(tok)
	if ferr != nil {
		return Outcome{Reply: j.refusal(ferr.status, ferr.code, ferr.desc), Reason: ferr.Error()}
	}
	return Outcome{ID: id}
}

// Failure is why a token was refused, in RFC 6750's terms: desc is what
// the client is told (error_description), detail what the log and the
// routing explainer say when it adds to desc (the key ID, the claim).
type Failure struct {
	status int
	code   string // invalid_token, insufficient_scope
	desc   string
	detail string
}

func (f *Failure) Error() string {
	if f.detail != "" {
		return f.detail
	}
	return f.desc
}

func invalid(format string, a ...any) *Failure {
	return &Failure{status: 401, code: "invalid_token", desc: fmt.Sprintf(format, a...)}
}

// Verify checks a token: from the cache when it was verified before
// (with the same keys, and it has not expired since), else its
// signature, times, issuer, audience and claims.
func (j *JWT) Verify(tok []byte) (*Identity, *Failure) {
	now := j.cfg.Now()
	gen := j.generation()
	if id, ok := j.cache.get(tok, now.UnixNano(), gen); ok {
		return id, nil
	}
	id, expires, f := j.verify(string(tok), now)
	if f != nil {
		return nil, f
	}
	j.cache.put(string(tok), id, expires, now.UnixNano(), gen)
	return id, nil
}

// generation changes whenever the JWKS URL's key set does, so a token
// signed by a key that was rotated out is verified again.
func (j *JWT) generation() uint64 {
	if j.jwks == nil {
		return 0
	}
	return j.jwks.current().gen
}

// verify is Verify without the cache. expires is when the identity
// stops being valid (exp plus leeway; zero without exp).
func (j *JWT) verify(tok string, now time.Time) (*Identity, time.Time, *Failure) {
	parsed, err := jwt.ParseSigned(tok, j.algs)
	if err != nil {
		if strings.Contains(err.Error(), "unexpected signature algorithm") {
			return nil, time.Time{}, invalid("the token's algorithm is not accepted")
		}
		return nil, time.Time{}, invalid("malformed token")
	}
	h := parsed.Headers[0]
	payload, f := j.checkSignature(parsed, h.KeyID, h.Algorithm)
	if f != nil {
		return nil, time.Time{}, f
	}
	var std jwt.Claims
	if err := json.Unmarshal(payload, &std); err != nil {
		return nil, time.Time{}, invalid("malformed claims")
	}
	exp := jwt.Expected{Issuer: j.cfg.Issuer, AnyAudience: j.cfg.Audiences, Time: now}
	if err := std.ValidateWithLeeway(exp, j.cfg.Leeway); err != nil {
		return nil, time.Time{}, invalid("%s", claimError(err))
	}
	id, f := j.identity(payload, &std)
	if f != nil {
		return nil, time.Time{}, f
	}
	var expires time.Time
	if std.Expiry != nil {
		expires = std.Expiry.Time().Add(j.cfg.Leeway)
	}
	return id, expires, nil
}

// checkSignature tries the candidate keys for kid and alg; an unknown
// key ID makes the JWKS source refresh (rate-limited) and tries again.
func (j *JWT) checkSignature(parsed *jwt.JSONWebToken, kid, alg string) ([]byte, *Failure) {
	var buf [4]*key
	var cands []*key
	known := false
	if j.static != nil {
		var k bool
		cands, k = j.static.candidates(buf[:0], kid, alg)
		known = known || k
	}
	if j.jwks != nil {
		more, k := j.jwks.current().candidates(nil, kid, alg)
		if !k && len(cands) == 0 {
			if set := j.jwks.refreshFor(kid); set != nil {
				more, k = set.candidates(nil, kid, alg)
			}
		}
		cands, known = append(cands, more...), known || k
	}
	if len(cands) == 0 {
		if !known {
			f := invalid("unknown key ID")
			f.detail = fmt.Sprintf("unknown key ID %q", kid)
			return nil, f
		}
		return nil, invalid("no key for algorithm %s", alg)
	}
	for _, k := range cands {
		var raw json.RawMessage
		if err := parsed.Claims(k.pub, &raw); err == nil {
			return raw, nil
		}
	}
	return nil, invalid("bad signature")
}

func claimError(err error) string {
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrNotValidYet):
		return "the token is not valid yet"
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return "the token is issued in the future"
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrInvalidAudience):
		return "wrong audience"
	}
	return err.Error()
}

// Stats counts the decisions made with the check.
func (x *JWT) Stats() *Stats { return &x.stats }
