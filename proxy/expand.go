package proxy

import (
	"bytes"
	"strings"

	"lbd/config"
	"lbd/http1"
)

// submatch is one entry of Pound's submatch queue: the subject a
// service condition was matched against and the regex groups it
// captured (nil when it did not match).
type submatch struct {
	subject []byte
	idx     []int
}

// submatches re-evaluates the conditions of the request's service in
// Pound's order (src/http.c match_cond pushes one entry per pattern
// condition evaluated) to recover the groups $N refers to. Only
// redirects and dynamic SetHeader lines need them, so allocating here
// keeps ordinary requests free of regex capture work.
func (c *conn) submatches() []submatch {
	svc := c.ex.svc
	if svc == nil || svc.Cfg == nil {
		return nil
	}
	var q []submatch
	for _, cond := range svc.Cfg.Conditions {
		if !c.pushCond(&q, cond) {
			break
		}
	}
	return q
}

// pushCond evaluates one condition, pushing its submatch, and reports
// whether it held (AND/OR short-circuit as Pound's do).
func (c *conn) pushCond(q *[]submatch, cond *config.Condition) bool {
	if cond.Kind == config.CondMatch {
		res := !cond.Or
		for _, sub := range cond.Sub {
			if c.pushCond(q, sub) == cond.Or {
				res = cond.Or
				break
			}
		}
		return res != cond.Not
	}
	subject, ok := c.condSubject(cond)
	sm := submatch{subject: subject}
	if ok && cond.Pattern != nil {
		sm.idx = patternIndex(cond.Pattern, subject)
	}
	*q = append(*q, sm)
	matched := sm.idx != nil || cond.Pattern == nil
	return matched != cond.Not
}

// condSubject is the string a condition is matched against.
func (c *conn) condSubject(cond *config.Condition) ([]byte, bool) {
	req := &c.req
	switch cond.Kind {
	case config.CondURL:
		return req.Target, true
	case config.CondPath:
		return req.Path, true
	case config.CondQuery:
		return req.Query, req.Query != nil
	case config.CondHost:
		return req.Host, true
	case config.CondMethod:
		return req.Method, true
	case config.CondQueryParam:
		return queryParam(req.Query, cond.Name)
	case config.CondHeader:
		for i := range req.Headers {
			h := &req.Headers[i]
			if cond.Name != "" {
				if http1.EqualFold(h.Name, cond.Name) && cond.Pattern.Match(h.Value) {
					return h.Value, true
				}
				continue
			}
			if line := lineOf(h, nil); cond.Pattern.Match(line) {
				return line, true
			}
		}
	}
	return nil, false
}

// patternIndex is FindSubmatchIndex for any pattern kind; plain kinds
// capture the whole subject as group 0.
func patternIndex(p *config.Pattern, s []byte) []int {
	if p.Kind == config.MatchRegex {
		return p.Re.FindSubmatchIndex(s)
	}
	if p.Match(s) {
		return []int{0, len(s)}
	}
	return nil
}

func queryParam(q []byte, name string) ([]byte, bool) {
	for len(q) > 0 {
		var kv []byte
		kv, q, _ = bytes.Cut(q, []byte{'&'})
		k, v, _ := bytes.Cut(kv, []byte{'='})
		if string(k) == name {
			return v, true
		}
	}
	return nil, false
}

// expander expands Pound 4 strings (src/http.c expand_string_to_buffer):
// $N, ${N}, $N(M) back-references into the submatch queue, %[accessor]
// request accessors, %XX escapes kept, $$ and $% for literal signs.
type expander struct {
	c    *conn
	q    []submatch
	anon bool
}

// expand appends the expansion of s to dst and returns the number of
// expansions made; n is -1 when a reference was invalid (Pound then
// refuses a redirect with 500).
func (x *expander) expand(dst []byte, s string) ([]byte, int) {
	n := 0
	fail := func() { n = -1 }
	count := func() {
		if n >= 0 {
			n++
		}
	}
	for len(s) > 0 {
		i := strings.IndexAny(s, "$%")
		if i < 0 {
			return append(dst, s...), n
		}
		dst, s = append(dst, s[:i]...), s[i:]
		switch {
		case len(s) == 1 || (s[0] == '$' && (s[1] == '$' || s[1] == '%')):
			dst, s = append(dst, s[0]), s[min(2, len(s)):]
		case s[0] == '%' && len(s) > 2 && isXDigit(s[1]) && isXDigit(s[2]):
			dst, s = append(dst, s[:3]...), s[3:]
		case s[0] == '%' && s[1] == '[':
			dst, s = x.accessor(dst, s, count, fail)
		case s[1] == '{' || isDigit(s[1]):
			dst, s = x.backref(dst, s, count, fail)
		default:
			dst, s = append(dst, s[0]), s[1:]
			fail()
		}
	}
	return dst, n
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isXDigit(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// accessor expands %[name arg] at s.
func (x *expander) accessor(dst []byte, s string, count, fail func()) ([]byte, string) {
	end := strings.IndexByte(s[2:], ']')
	if end < 0 {
		fail()
		return append(dst, s[:2]...), s[2:]
	}
	body, rest := s[2:2+end], s[3+end:]
	name, arg, _ := strings.Cut(strings.TrimSpace(body), " ")
	arg = strings.TrimSpace(arg)
	start := len(dst)
	var ok, known bool
	dst, ok, known = x.c.appendAccessor(dst, name, arg, x.anon)
	switch {
	case !known:
		return append(dst[:start], s[:3+end]...), rest
	case ok:
		count()
	}
	return dst, rest
}

// appendAccessor appends the value of a Pound request accessor. ok is
// false when the value is absent; known false for an unknown name.
func (c *conn) appendAccessor(dst []byte, name, arg string, anon bool) (out []byte, ok, known bool) {
	req := &c.req
	needArg := name == "param" || name == "header" || name == "remoteip"
	if needArg != (arg != "") {
		return dst, false, false
	}
	switch name {
	case "url":
		return append(dst, req.Target...), true, true
	case "path":
		t := req.Target
		if i := bytes.LastIndexByte(t, '?'); i >= 0 {
			t = t[:i]
		}
		return append(dst, t...), true, true
	case "query":
		i := bytes.LastIndexByte(req.Target, '?')
		if i < 0 || i == len(req.Target)-1 {
			return dst, false, true
		}
		return append(dst, req.Target[i+1:]...), true, true
	case "param":
		v, found := queryParam(req.Query, arg)
		return append(dst, v...), found && v != nil, true
	case "header":
		v, found := c.reqHeader(arg)
		return append(dst, v...), found, true
	case "host", "port":
		return c.appendHostPart(dst, name == "port")
	case "remoteip":
		return c.appendClientAddr(dst, anon), true, true
	}
	return dst, false, false
}

// appendHostPart is %[host] (Host up to its first ':') or %[port] (from
// the ':' on, colon included, as Pound prints it).
func (c *conn) appendHostPart(dst []byte, port bool) ([]byte, bool, bool) {
	v, found := c.reqHeader(hdrHost)
	if !found {
		return dst, false, true
	}
	i := bytes.IndexByte(v, ':')
	if !port {
		if i >= 0 {
			v = v[:i]
		}
		return append(dst, v...), true, true
	}
	if i < 0 {
		return dst, false, true
	}
	return append(dst, v[i:]...), true, true
}

// backref expands $N, ${N}, $N(M) and %N (= $N(1), as Pound 4.4-4.5).
func (x *expander) backref(dst []byte, s string, count, fail func()) ([]byte, string) {
	brace := s[1] == '{'
	p := 1
	if brace {
		p = 2
	}
	group, p := atoiAt(s, p)
	ref := 0
	if s[0] == '%' {
		ref = 1
	}
	if s[0] == '$' && p < len(s) && s[p] == '(' {
		close := strings.IndexByte(s[p:], ')')
		if close < 0 {
			fail()
			return append(dst, s[:p]...), s[p:]
		}
		n, q := atoiAt(s, p+1)
		if q != p+close {
			fail()
			return append(dst, s[:p+close+1]...), s[p+close+1:]
		}
		ref, p = n, p+close+1
	}
	if brace {
		if p >= len(s) || s[p] != '}' {
			fail()
			return append(dst, s[:p]...), s[p:]
		}
		p++
	}
	if ref >= len(x.q) || x.q[len(x.q)-1-ref].idx == nil || 2*group+1 >= len(x.q[len(x.q)-1-ref].idx) {
		fail()
		return append(dst, s[:p]...), s[p:]
	}
	sm := x.q[len(x.q)-1-ref]
	if a, b := sm.idx[2*group], sm.idx[2*group+1]; a >= 0 {
		dst = append(dst, sm.subject[a:b]...)
	}
	count()
	return dst, s[p:]
}

// atoiAt parses decimal digits at s[i:] (none: 0, as strtoul).
func atoiAt(s string, i int) (n, end int) {
	for end = i; end < len(s) && isDigit(s[end]) && n < 1<<20; end++ {
		n = n*10 + int(s[end]-'0')
	}
	return n, end
}

// zproxyReplace is zproxy's str_replace_regexp: the part of subject the
// pattern matched is replaced by repl with $0..$9 expanded; the text
// after the match is kept only when the match was not empty. off is
// where the replacement ends in the appended result; ok is false when
// the pattern does not match.
func zproxyReplace(dst, subject []byte, re *config.Pattern, repl string) (out []byte, off int, ok bool) {
	if re == nil || re.Re == nil {
		return dst, 0, false
	}
	m := re.Re.FindSubmatchIndex(subject)
	if m == nil {
		return dst, 0, false
	}
	start := len(dst)
	dst = append(dst, subject[:m[0]]...)
	for i := 0; i < len(repl); i++ {
		switch {
		case repl[i] == '$' && i+1 < len(repl) && repl[i+1] == '$':
			dst = append(dst, '$')
			i++
		case repl[i] == '$' && i+1 < len(repl) && isDigit(repl[i+1]):
			if g := int(repl[i+1] - '0'); 2*g+1 < len(m) && m[2*g] >= 0 {
				dst = append(dst, subject[m[2*g]:m[2*g+1]]...)
			}
			i++
		default:
			dst = append(dst, repl[i])
		}
	}
	off = len(dst) - start
	if m[1] != m[0] {
		dst = append(dst, subject[m[1]:]...)
	}
	return dst, off, true
}
