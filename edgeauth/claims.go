package edgeauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/go-jose/go-jose/v4/jwt"
)

// identity renders a verified payload: every top-level claim (and each
// element of an array claim) as text, the required claims and claim
// checks applied, and the forwarded header lines composed once, so a
// cached token costs nothing more.
func (j *JWT) identity(payload []byte, std *jwt.Claims) (*Identity, *Failure) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(payload, &all); err != nil {
		return nil, invalid("malformed claims")
	}
	id := &Identity{Name: std.Subject, claims: make(map[string][]byte, len(all))}
	for name, raw := range all {
		if bytes.Equal(raw, []byte("null")) {
			continue
		}
		id.claims[name] = renderClaim(raw)
		var elems []json.RawMessage
		if len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &elems) == nil {
			list := make([][]byte, len(elems))
			for i, e := range elems {
				list[i] = renderClaim(e)
			}
			if id.lists == nil {
				id.lists = map[string][][]byte{}
			}
			id.lists[name] = list
		}
	}
	for _, c := range j.cfg.Required {
		if _, ok := id.claims[c]; !ok {
			f := invalid("a required claim is missing")
			f.detail = fmt.Sprintf("the token has no %q claim", c)
			return nil, f
		}
	}
	for _, c := range j.cfg.Checks {
		if !id.Matches(c.Claim, c.Match) {
			return nil, &Failure{status: 403, code: "insufficient_scope", desc: "the token's claims do not allow this request",
				detail: "claim " + strconv.Quote(c.Claim) + " does not match " + c.Desc}
		}
	}
	for _, f := range j.cfg.Forward {
		if v, ok := id.claims[f.Claim]; ok && headerSafe(v) {
			id.Lines = append(id.Lines, []byte(f.Header+": "+string(v)))
		}
	}
	return id, nil
}

// Matches reports whether match accepts the claim, or one element of an
// array claim.
func (id *Identity) Matches(claim string, match func([]byte) bool) bool {
	for _, v := range id.ClaimValues(claim) {
		if match(v) {
			return true
		}
	}
	return false
}

// renderClaim is a string's contents, anything else as JSON (compacted).
func renderClaim(raw json.RawMessage) []byte {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return append([]byte(nil), raw...)
	}
	return b.Bytes()
}

// headerSafe refuses values that cannot go in a header line as they are
// (control characters would let a token's author add lines); such a
// claim is not forwarded.
func headerSafe(v []byte) bool {
	for _, c := range v {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// appendQuoted writes s as an HTTP quoted-string (RFC 9110 §5.6.4):
// '"' and '\\' escaped, control characters and non-ASCII bytes dropped.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c >= 0x20 && c <= 0x7e || c == '\t':
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// refusal is the answer to a request without a valid token: a redirect
// when one is configured, else 401 (or 403 for insufficient_scope) with
// the challenge of RFC 6750 §3: no error attribute when the request
// carried no token.
func (j *JWT) refusal(status int, code, desc string) *Reply {
	if j.cfg.Redirect != "" && status == 401 {
		return &Reply{Status: 302, Lines: [][]byte{[]byte("Location: " + j.cfg.Redirect)}}
	}
	ch := []byte(`WWW-Authenticate: Bearer`)
	sep := " "
	if j.cfg.Realm != "" {
		ch = append(ch, ` realm=`...)
		ch = appendQuoted(ch, j.cfg.Realm)
		sep = ", "
	}
	if code != "" {
		ch = append(ch, sep+`error="`+code+`", error_description="`...)
		for i := 0; i < len(desc); i++ {
			// RFC 6750 §3: printable ASCII without '"' and '\'.
			if c := desc[i]; c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' {
				ch = append(ch, c)
			}
		}
		ch = append(ch, '"')
	}
	body := []byte(strconv.Itoa(status) + " " + map[int]string{401: "Unauthorized", 403: "Forbidden"}[status] + "\n")
	return &Reply{Status: status, Lines: [][]byte{ch, []byte("Content-Type: text/plain")}, Body: body}
}
