package rules

import (
	"bytes"
	"encoding/base64"
	"errors"

	"lbd/config"
)

// errBadCredentials is a "Basic" Authorization header whose credentials
// do not decode to "user:password". Pound treats it as an evaluation
// error, so the request gets a 500, not the 401 of wrong credentials.
var errBadCredentials = errors.New("BasicAuth: malformed Basic credentials in the Authorization header")

// basicAuth is the BasicAuth condition: the first Authorization header
// carries Basic credentials of a user in the password file. A request
// without the header, or with another scheme, does not match.
func (st *State) basicAuth(pf *config.PasswordFile) (bool, error) {
	return st.checkBasicAuth(pf, false)
}

// checkBasicAuth is basicAuth; dry (the routing explainer's) leaves the
// arena and the password file's cache as they were.
func (st *State) checkBasicAuth(pf *config.PasswordFile, dry bool) (bool, error) {
	v, ok := st.Req.Header("Authorization")
	if !ok {
		return false, nil
	}
	var buf []byte
	if dry {
		buf = make([]byte, 0, decodedMax(len(v)))
	} else {
		buf = st.scratch(decodedMax(len(v)))
	}
	cred, ok := basicCredentials(v, buf)
	if !ok {
		return false, nil
	}
	if cred == nil {
		return false, errBadCredentials
	}
	f := pf.Current()
	if f == nil {
		return false, nil
	}
	if dry {
		return f.Peek(cred), nil
	}
	return f.Check(cred), nil
}

// basicCredentials decodes the value of an Authorization header into
// dst's spare capacity the way Pound reads it: "Basic" in any case, blanks,
// then base64, optionally in double quotes. ok is false for another
// scheme; cred is nil (ok true) when the credentials are malformed: not
// base64, empty, or without a colon.
func basicCredentials(v, dst []byte) (cred []byte, ok bool) {
	if len(v) < 5 || !bytes.EqualFold(v[:5], []byte("basic")) {
		return nil, false
	}
	v = bytes.TrimLeft(v[5:], " \t")
	if len(v) > 0 && v[0] == '"' {
		v = bytes.TrimRight(v[1:], " \t")
		if len(v) == 0 || v[len(v)-1] != '"' {
			return nil, false
		}
		v = v[:len(v)-1]
	}
	out := dst[:decodedMax(len(v))]
	n, err := base64.StdEncoding.Decode(out, v)
	if err != nil {
		// Clients that drop the padding are common enough to accept.
		if n, err = base64.RawStdEncoding.Decode(out, v); err != nil {
			return nil, true
		}
	}
	if n == 0 || bytes.IndexByte(out[:n], ':') < 0 {
		return nil, true
	}
	return out[:n], true
}

// decodedMax bounds the decoded size of n base64 bytes, padded or not.
func decodedMax(n int) int { return base64.RawStdEncoding.DecodedLen(n) + 2 }

// tbf is the TBF condition: the expanded key's bucket gives a token.
// When it has none, RetryAfter learns how long until it has one.
func (st *State) tbf(env *Env, l *leaf) (bool, error) {
	start := len(st.arena)
	out, err := st.expand(env, l.subject, st.arena, "tbf")
	st.arena = out
	if err != nil {
		return false, err
	}
	ok, wait, err := l.tbf.Limiter.Take(st.arena[start:])
	if !ok && err == nil {
		st.RetryAfter = max(st.RetryAfter, wait)
	}
	return ok, err
}
