package rules

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// ExpandError is a string that is malformed or refers to groups that
// did not match; Pound logs one line per problem and answers 500. Its
// text is Pound's.
type ExpandError struct {
	What string   // "path", "url", "Header", ...
	Src  string   // the string as written
	Msgs []string // in order of appearance
}

// Error is one line per problem.
func (e *ExpandError) Error() string {
	lines := make([]string, len(e.Msgs))
	for i, m := range e.Msgs {
		if strings.HasPrefix(m, "refers to ") {
			lines[i] = fmt.Sprintf("%s %q %s", e.What, e.Src, m)
		} else {
			lines[i] = fmt.Sprintf("%s %q: %s", e.What, e.Src, m)
		}
	}
	return strings.Join(lines, "\n")
}

type partKind uint8

const (
	pLit    partKind = iota // text as is
	pBad                    // malformed construct: text is kept, expansion fails
	pRef                    // $group(ref) or $group(tag)
	pAccess                 // %[name arg]
)

type accessor uint8

const (
	aURL accessor = iota
	aPath
	aQuery
	aParam
	aHeader
	aHost
	aPort
	aRemoteIP
	aUser
	aCookie // lbd: %[cookie NAME]
	aJWT    // lbd: %[jwt CLAIM]
	// lbd's verified counterparts: a claim of the token a JWTAuth check
	// verified, and the authenticated name (API key name, JWT subject,
	// forward authentication's user).
	aClaim    // %[claim CLAIM]
	aAuthUser // %[authuser]
)

var accessors = map[string]struct {
	a   accessor
	arg bool
}{
	"url": {aURL, false}, "path": {aPath, false}, "query": {aQuery, false},
	"param": {aParam, true}, "header": {aHeader, true}, "host": {aHost, false},
	"port": {aPort, false}, "remoteip": {aRemoteIP, true}, "user": {aUser, false},
	"cookie": {aCookie, true}, "jwt": {aJWT, true},
	"claim": {aClaim, true}, "authuser": {aAuthUser, false},
}

type part struct {
	kind  partKind
	text  string // pLit, pBad; for pAccess the argument; for pRef as written
	msg   string // pBad: what is wrong, as Pound logs it
	group int
	ref   int
	tag   string
	acc   accessor
}

// template is a string with $N back-references and %[...] accessors,
// parsed once at load. Constants are resolved at load too: their scope is
// the section the string is written in.
type template struct {
	src   string
	parts []part
	// lit is the value of a string with nothing to expand (nil
	// otherwise): actions use it as it is, without copying.
	lit []byte
}

func (e *Env) template(s string) *template {
	src := s
	t := &template{src: s}
	at := func() int { return len(src) - len(s) } // offset of s in src
	lit := func(x string) {
		if n := len(t.parts); n > 0 && t.parts[n-1].kind == pLit {
			t.parts[n-1].text += x
			return
		}
		t.parts = append(t.parts, part{kind: pLit, text: x})
	}
	for len(s) > 0 {
		i := strings.IndexAny(s, "$%")
		if i < 0 {
			lit(s)
			break
		}
		lit(s[:i])
		s = s[i:]
		switch {
		case len(s) == 1:
			lit(s)
			s = ""
		case s[0] == '$' && (s[1] == '$' || s[1] == '%'):
			// "$$" and "$%" are a literal sign, as the manual says
			// (Pound 4.23's code emits "$" for both).
			lit(s[1:2])
			s = s[2:]
		case s[0] == '%' && len(s) > 2 && isXDigit(s[1]) && isXDigit(s[2]):
			lit(s[:3])
			s = s[3:]
		case s[0] == '%' && s[1] == '[':
			s = e.parseAccessor(t, s, at(), lit)
		case s[1] == '{' || isDigit(s[1]):
			s = parseRef(t, s, at())
		default:
			t.parts = append(t.parts, part{kind: pBad, text: s[:1],
				msg: fmt.Sprintf("unescaped %% character at offset %d", at()+1)})
			s = s[1:]
		}
	}
	switch {
	case len(t.parts) == 0:
		t.lit = []byte{}
	case len(t.parts) == 1 && t.parts[0].kind == pLit:
		b := []byte(t.parts[0].text)
		t.lit = b[:len(b):len(b)]
	}
	return t
}

// parseAccessor reads %[name arg] at s; an unknown name is kept as text,
// as Pound does, and a constant becomes its (encoded) value.
func (e *Env) parseAccessor(t *template, s string, off int, lit func(string)) string {
	end := strings.IndexByte(s[2:], ']')
	if end < 0 {
		t.parts = append(t.parts, part{kind: pBad, text: s[:2], msg: fmt.Sprintf("unclosed %%[ at offset %d", off)})
		return s[2:]
	}
	body, rest := strings.TrimSpace(s[2:2+end]), s[3+end:]
	name, arg, _ := strings.Cut(body, " ")
	arg = strings.TrimSpace(arg)
	if name == "const" {
		// An undefined constant expands to nothing, as in Pound.
		if v, ok := e.constValue(arg); ok {
			lit(v)
		}
		return rest
	}
	a, ok := accessors[name]
	if !ok || a.arg != (arg != "") {
		lit(s[:3+end])
		return rest
	}
	t.parts = append(t.parts, part{kind: pAccess, acc: a.a, text: arg})
	return rest
}

// constValue is %[const NAME [none|url|base64]]; ok is false for an
// undefined constant or an unknown encoding.
func (e *Env) constValue(arg string) (string, bool) {
	name, enc, _ := strings.Cut(arg, " ")
	v, ok := e.constant(name)
	if !ok {
		return "", false
	}
	switch strings.TrimSpace(enc) {
	case "", "none":
		return v, true
	case "url":
		return string(urlEncode(nil, []byte(v), "")), true
	case "base64":
		return base64.StdEncoding.EncodeToString([]byte(v)), true
	}
	return "", false
}

// parseRef reads $N, ${N}, $N(M), $N(tag) and %N (= $N(1), kept from
// Pound 4.4) at s.
func parseRef(t *template, s string, off int) string {
	brace := s[1] == '{'
	p := 1
	if brace {
		p = 2
	}
	group, p := atoiAt(s, p)
	r := part{kind: pRef, group: group}
	if s[0] == '%' {
		r.ref = 1
	}
	bad := func(n int, msg string) string {
		t.parts = append(t.parts, part{kind: pBad, text: s[:n], msg: msg})
		return s[n:]
	}
	if s[0] == '$' && p < len(s) && s[p] == '(' {
		close := strings.IndexAny(s[p+1:], "()") + 1
		if close == 0 || s[p+close] != ')' {
			return bad(p, fmt.Sprintf("missing closing parenthesis in reference started at offset %d", off+1))
		}
		inner := s[p+1 : p+close]
		if inner != "" && isDigit(inner[0]) {
			n, q := atoiAt(s, p+1)
			if q != p+close {
				return bad(p+close+1, fmt.Sprintf("invalid reference number at offset %d", off+q+1))
			}
			if n >= smqSize {
				return bad(p+close+1, "refers to non-existing group "+s[:p+close+1])
			}
			r.ref = n
		} else {
			r.tag = inner
		}
		p += close + 1
	}
	if brace {
		if p >= len(s) || s[p] != '}' {
			return bad(p, fmt.Sprintf("missing closing brace in reference started at offset %d", off+1))
		}
		p++
	}
	r.text = s[:p]
	t.parts = append(t.parts, r)
	return s[p:]
}

// atoiAt parses decimal digits at s[i:] (none: 0, as strtoul).
func atoiAt(s string, i int) (n, end int) {
	for end = i; end < len(s) && isDigit(s[end]) && n < 1<<20; end++ {
		n = n*10 + int(s[end]-'0')
	}
	return n, end
}
