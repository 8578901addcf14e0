package rules

import (
	"bytes"
	"encoding/base64"
	"unicode/utf16"
	"unicode/utf8"
)

// lbd's own accessors, beyond Pound's: %[cookie NAME] and %[jwt CLAIM],
// so that a TBF key (or any string) can name a client by its session
// cookie or by a claim of its bearer token without Lua. Both read the
// request as it is; they allocate nothing once the State's buffers have
// grown to the largest token seen.

// cookieValue is the value of cookie name in the request's Cookie
// headers ("a=1; b=2"), without the double quotes RFC 6265 allows around
// it. Names compare exactly, as cookie names are case-sensitive.
func cookieValue(r *Message, name string) ([]byte, bool) {
	for _, l := range r.Lines {
		if !nameIs(l, "Cookie") {
			continue
		}
		v := lineValue(l)
		for len(v) > 0 {
			pair := v
			if i := bytes.IndexByte(v, ';'); i >= 0 {
				pair, v = v[:i], v[i+1:]
			} else {
				v = nil
			}
			eq := bytes.IndexByte(pair, '=')
			if eq < 0 || string(trimBlanks(pair[:eq])) != name {
				continue
			}
			val := trimBlanks(pair[eq+1:])
			if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			return val, true
		}
	}
	return nil, false
}

// trimBlanks drops spaces and tabs around b.
func trimBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// appendJWTClaim appends claim of the JSON payload of the request's
// "Authorization: Bearer" token: a string's contents, any other value
// as written (a number, true, an object...). The signature is not
// checked: the value is what the client says (see lbd.cfg(5)). found is
// false without a bearer token, with a payload that is not base64url
// JSON, and when the claim is absent or null.
func (st *State) appendJWTClaim(dst []byte, r *Message, claim string) ([]byte, bool) {
	v, ok := r.Header("Authorization")
	if !ok || len(v) < 7 || !bytes.EqualFold(v[:6], []byte("bearer")) || (v[6] != ' ' && v[6] != '\t') {
		return dst, false
	}
	token := bytes.TrimLeft(v[7:], " \t")
	_, rest, ok := bytes.Cut(token, []byte{'.'})
	if !ok {
		return dst, false
	}
	payload, _, _ := bytes.Cut(rest, []byte{'.'})
	payload = bytes.TrimRight(payload, "=")
	n := base64.RawURLEncoding.DecodedLen(len(payload))
	if cap(st.jwt) < n {
		st.jwt = make([]byte, n)
	}
	n, err := base64.RawURLEncoding.Decode(st.jwt[:n], payload)
	if err != nil {
		return dst, false
	}
	return appendMember(dst, st.jwt[:n], claim)
}

// appendMember appends the value of member name of the JSON object doc
// (see appendJWTClaim); a document that is not an object finds nothing.
func appendMember(dst, doc []byte, name string) ([]byte, bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return dst, false
	}
	i++
	for {
		i = skipSpace(doc, i)
		if i >= len(doc) || doc[i] != '"' {
			return dst, false // '}' (not found) or not JSON
		}
		kEnd := skipValue(doc, i)
		if kEnd < 0 {
			return dst, false
		}
		key := doc[i:kEnd]
		i = skipSpace(doc, kEnd)
		if i >= len(doc) || doc[i] != ':' {
			return dst, false
		}
		vStart := skipSpace(doc, i+1)
		vEnd := skipValue(doc, vStart)
		if vEnd <= vStart {
			return dst, false
		}
		if keyIs(key, name) {
			v := doc[vStart:vEnd]
			switch {
			case string(v) == "null":
				return dst, false
			case v[0] == '"':
				return unquote(dst, v[1:len(v)-1])
			}
			return append(dst, v...), true
		}
		i = skipSpace(doc, vEnd)
		if i >= len(doc) || doc[i] != ',' {
			return dst, false
		}
		i++
	}
}

// keyIs reports whether the quoted key is name (escapes undone).
func keyIs(quoted []byte, name string) bool {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == name
	}
	var buf [64]byte
	k, ok := unquote(buf[:0], raw)
	return ok && string(k) == name
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at doc[i], or -1
// when there is none. Objects and arrays are skipped by counting
// brackets outside strings, without recursion.
func skipValue(doc []byte, i int) int {
	if i >= len(doc) {
		return -1
	}
	depth := 0
	for ; i < len(doc); i++ {
		switch c := doc[i]; c {
		case '"':
			j := i + 1
			for j < len(doc) && doc[j] != '"' {
				if doc[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(doc) {
				return -1
			}
			i = j
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a scalar before the enclosing bracket
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	if depth != 0 {
		return -1
	}
	return i
}

// unquote appends the contents of a JSON string (without its quotes)
// with its escapes undone; ok is false for a malformed escape.
func unquote(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		if i++; i >= len(s) {
			return dst, false
		}
		switch s[i] {
		case '"', '\\', '/':
			dst = append(dst, s[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n := hex4(s[i+1:])
			if n == 0 {
				return dst, false
			}
			i += n
			if utf16.IsSurrogate(r) {
				// A pair is two escapes; a lone half becomes U+FFFD.
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, m := hex4(s[i+3:]); m > 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r, i = d, i+2+m
						}
					}
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

// hex4 reads the four hex digits of a \u escape; n is 0 when they are
// not there.
func hex4(s []byte) (r rune, n int) {
	if len(s) < 4 {
		return 0, 0
	}
	for _, c := range s[:4] {
		if !isXDigit(c) {
			return 0, 0
		}
		r = r<<4 | rune(unhex(c))
	}
	return r, 4
}
