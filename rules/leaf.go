package rules

import (
	"bytes"
	"fmt"
	"net/netip"

	"lbd/config"
)

type leafKind uint8

const (
	lkURL leafKind = iota
	lkPath
	lkQuery
	lkParam
	lkHeaderLine
	lkHeaderNamed
	lkHost
	lkMethod
	lkString
	lkACL
	lkEval
	lkWatched
	lkBasicAuth
	lkTBF
	lkLua
	lkJWT
	lkAPIKey
)

// leaf is one primitive condition. The one-byte fields share a word
// (10,000 services have 10,000 leaves, issue 36).
type leaf struct {
	kind   leafKind
	target leafKind // the kind a watched list's patterns apply to
	decode bool
	fwd    bool
	eval   int32 // the detached condition's index (lkEval)
	pat    *config.Pattern
	name   string // header or parameter name
	tag    string
	// field: a header-line pattern that amounts to a field name
	// (config.Pattern.FieldName) is tested by name.
	field   string
	subject *template // StringMatch
	acl     *config.ACL
	list    *config.PatternList
	auth    *config.PasswordFile
	tbf     *config.TBF
	script  *scriptCall
	src     *config.Condition
	authn   *config.Authn // lkJWT, lkAPIKey
}

var kindOf = map[config.CondKind]leafKind{
	config.CondURL: lkURL, config.CondPath: lkPath, config.CondQuery: lkQuery,
	config.CondQueryParam: lkParam, config.CondHost: lkHost, config.CondMethod: lkMethod,
	config.CondStringMatch: lkString, config.CondACL: lkACL, config.CondEval: lkEval,
}

func (c *compiler) leaf(x *config.Condition) (*leaf, error) {
	l := &leaf{pat: x.Pattern, name: x.Name, tag: x.Rare().Tag, decode: x.Decode, acl: x.Rare().ACL, fwd: x.Forwarded, src: x}
	switch x.Kind {
	case config.CondHeader:
		l.kind = lkHeaderLine
		if x.Name != "" {
			l.kind = lkHeaderNamed
		} else if x.Pattern != nil {
			l.field, _ = x.Pattern.FieldName()
		}
	case config.CondBasicAuth:
		l.kind, l.auth = lkBasicAuth, x.Rare().Auth
	case config.CondTBF:
		l.kind, l.tbf = lkTBF, x.Rare().TBF
		l.subject = c.env.template(x.Rare().TBF.Key)
	case config.CondLua:
		l.kind = lkLua
		sc, err := c.script(x.Rare().Lua)
		l.script = sc
		return l, err
	case config.CondJWT, config.CondAPIKey:
		l.kind, _ = authnLeafKind(x.Kind) // the case already limits Kind to the two it knows
		l.authn = x.Rare().Authn
	case config.CondWatched:
		l.kind, l.list = lkWatched, x.Rare().List
		t, ok := kindOf[x.Rare().Target]
		if x.Rare().Target == config.CondHeader {
			t, ok = lkHeaderLine, true
			if x.Name != "" {
				t = lkHeaderNamed
			}
		}
		if !ok {
			return l, fmt.Errorf("rules: -filewatch is not available for %s", x.Rare().Target)
		}
		l.target = t
	default:
		k, ok := kindOf[x.Kind]
		if !ok {
			return l, fmt.Errorf("rules: unknown condition kind %q", x.Kind)
		}
		l.kind = k
	}
	switch l.kind {
	case lkString:
		l.subject = c.env.template(x.Rare().Subject)
	case lkEval:
		i, ok := c.env.names[x.Name]
		if !ok {
			return l, fmt.Errorf("rules: no condition named %q", x.Name)
		}
		l.eval = int32(i)
		if d := c.env.Detached[i]; d != nil && d.scripts {
			c.scripts = true
		}
	}
	return l, nil
}

// test evaluates l against message m (the request, or the response for
// response rules), pushing the submatch of a pattern that matched.
func (st *State) test(env *Env, l *leaf, m *Message) (bool, error) {
	switch l.kind {
	case lkACL:
		in := st.inACL(env, l)
		l.acl.Decided(in) // counted here, not in testDry: a dry run changes nothing
		return in, nil
	case lkEval:
		return st.eval(env, int(l.eval), m)
	case lkBasicAuth:
		return st.basicAuth(l.auth)
	case lkTBF:
		return st.tbf(env, l)
	case lkLua:
		return st.runScript(env, l.script, m, ScriptMatch)
	case lkJWT, lkAPIKey:
		return st.authLeaf(l)
	case lkWatched:
		for _, p := range l.list.Patterns() {
			if ok, err := st.match(env, l, l.target, p, m); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}
	return st.match(env, l, l.kind, l.pat, m)
}

// match applies pattern p, as a condition of kind k, to its subject in m.
func (st *State) match(env *Env, l *leaf, k leafKind, p *config.Pattern, m *Message) (bool, error) {
	var subj []byte
	switch k {
	case lkURL:
		subj = m.URL
	case lkPath:
		subj = m.Path()
	case lkQuery:
		q, ok := m.Query()
		if !ok {
			return false, nil
		}
		subj = q
	case lkParam:
		q, _ := m.Query()
		v, ok := queryParam(q, l.name)
		if !ok || v == nil {
			return false, nil
		}
		subj = v
	case lkMethod:
		subj = m.Method
	case lkHost:
		v, ok := m.Header("Host")
		if !ok {
			return false, nil
		}
		subj = v
	case lkHeaderLine:
		for _, line := range m.Lines {
			if l.field != "" && k == l.kind {
				if nameIs(line, l.field) {
					st.push(l.tag, p, line)
					return true, nil
				}
				continue
			}
			if p.Match(line) {
				st.push(l.tag, p, line)
				return true, nil
			}
		}
		return false, nil
	case lkHeaderNamed:
		for _, line := range m.Lines {
			if nameIs(line, l.name) {
				if v := lineValue(line); p.Match(v) {
					st.push(l.tag, p, v)
					return true, nil
				}
			}
		}
		return false, nil
	case lkString:
		start := len(st.arena)
		out, err := st.expand(env, l.subject, st.arena, "string_match")
		st.arena = out
		if err != nil {
			return false, err
		}
		subj = st.arena[start:len(st.arena):len(st.arena)]
	}
	if l.decode {
		subj = st.keep(percentDecode(st.scratch(len(subj)), subj))
	}
	if !p.Match(subj) {
		return false, nil
	}
	st.push(l.tag, p, subj)
	return true, nil
}

// eval runs detached condition i once per request; its groups stay
// inside it, as in Pound.
func (st *State) eval(env *Env, i int, m *Message) (bool, error) {
	switch st.evals[i] {
	case 1:
		return false, nil
	case 2:
		return true, nil
	}
	saved, cur, n := st.smq, st.smCur, st.smLen
	st.smCur, st.smLen = 0, 0
	op, err := env.Detached[i].run(st, m)
	st.smq, st.smCur, st.smLen = saved, cur, n
	if err != nil {
		return false, err
	}
	res := op == opAccept
	st.evals[i] = 1
	if res {
		st.evals[i] = 2
	}
	return res, nil
}

// remoteIP is the client address, or with fwd the one the forwarded
// header names: scanning from the right, the first address that is not a
// trusted proxy. Without a trusted list, or when every hop is trusted or
// one does not parse, it is the peer address, as in Pound (%a).
func (st *State) remoteIP(env *Env, fwd bool) netip.Addr {
	return st.RemoteIP(env, fwd)
}

// RemoteIP is the originator address as Pound's %a and %[remoteip 1]
// see it (fwd), or the peer address.
func (st *State) RemoteIP(env *Env, fwd bool) netip.Addr {
	if !fwd || env.Trusted == nil {
		return st.Client
	}
	found := false
	var chain []byte
	for _, line := range st.Req.Lines {
		if nameIs(line, env.Forwarded) {
			if found {
				chain = append(chain, ", "...)
			} else {
				chain = st.arena[len(st.arena):]
			}
			chain = append(chain, lineValue(line)...)
			found = true
		}
	}
	for end := len(chain); end > 0; {
		start := bytes.LastIndexByte(chain[:end], ',') + 1
		a, err := netip.ParseAddr(string(bytes.TrimSpace(chain[start:end])))
		if err != nil {
			return st.Client
		}
		if !env.Trusted.Contains(a) {
			return a
		}
		end = start - 1
		if end < 0 {
			break
		}
	}
	return st.Client
}

// scratch returns spare room after the arena for n bytes of work.
func (st *State) scratch(n int) []byte {
	if cap(st.arena)-len(st.arena) < n {
		st.arena = append(make([]byte, 0, 2*cap(st.arena)+n), st.arena...)
	}
	return st.arena[len(st.arena):len(st.arena)]
}

// queryParam finds the raw value of parameter name; a parameter without
// '=' has a nil value.
func queryParam(q []byte, name string) ([]byte, bool) {
	for len(q) > 0 {
		var kv []byte
		kv, q, _ = bytes.Cut(q, []byte{'&'})
		k, v, hasEq := bytes.Cut(kv, []byte{'='})
		if string(k) == name {
			if !hasEq {
				return nil, true
			}
			if v == nil {
				v = kv[len(kv):]
			}
			return v, true
		}
	}
	return nil, false
}

// percentDecode appends s with %XX escapes decoded ('+' is kept).
func percentDecode(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isXDigit(s[i+1]) && isXDigit(s[i+2]) {
			dst = append(dst, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		dst = append(dst, s[i])
	}
	return dst
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isXDigit(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

func unhex(c byte) byte {
	if isDigit(c) {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

// inACL reports whether the client address is in the ACL of leaf l.
func (st *State) inACL(env *Env, l *leaf) bool { return l.acl.Contains(st.remoteIP(env, l.fwd)) }
