package rules

import (
	"bytes"
	"encoding/base64"
	"net/netip"
)

// expand appends the expansion of t to dst. A malformed construct or a
// reference to a group that did not match is copied as written and the
// expansion fails with an *ExpandError naming every problem.
func (st *State) expand(env *Env, t *template, dst []byte, what string) ([]byte, error) {
	dst, _, err := st.expandN(env, t, dst, what)
	return dst, err
}

// expandN is expand that also counts the references and accessors that
// produced a value (Pound appends the request URL to a redirect that
// expanded nothing).
func (st *State) expandN(env *Env, t *template, dst []byte, what string) ([]byte, int, error) {
	var xe *ExpandError
	fail := func(msg string) {
		if xe == nil {
			xe = &ExpandError{What: what, Src: t.src}
		}
		xe.Msgs = append(xe.Msgs, msg)
	}
	n := 0
	for i := range t.parts {
		p := &t.parts[i]
		switch p.kind {
		case pLit:
			dst = append(dst, p.text...)
		case pBad:
			dst = append(dst, p.text...)
			fail(p.msg)
		case pRef:
			var ok bool
			if dst, ok = st.appendRef(dst, p); !ok {
				dst = append(dst, p.text...)
				fail("refers to non-existing group " + p.text)
			} else {
				n++
			}
		case pAccess:
			var found bool
			if dst, found = st.appendAccessor(env, dst, p); found {
				n++
			}
		}
	}
	if xe != nil {
		return dst, n, xe
	}
	return dst, n, nil
}

// Expand expands s as a Pound string (a redirect URL): it is parsed here,
// so it allocates; n counts the expansions made.
func (st *State) Expand(env *Env, s string, dst []byte, what string) (out []byte, n int, err error) {
	return st.expandN(env, env.template(s), dst, what)
}

func (st *State) appendRef(dst []byte, p *part) ([]byte, bool) {
	var sm *submatch
	if p.tag != "" {
		sm = st.refTag(p.tag)
	} else {
		sm = st.ref(p.ref)
	}
	if sm == nil || sm.pat == nil {
		return dst, false
	}
	idx := sm.pat.SubmatchIndex(sm.subject)
	if 2*p.group+1 >= len(idx) {
		return dst, false
	}
	if a, b := idx[2*p.group], idx[2*p.group+1]; a >= 0 {
		dst = append(dst, sm.subject[a:b]...)
	}
	return dst, true
}

// appendAccessor appends %[name arg] of the request; found is false when
// the value is absent (it then expands to nothing).
func (st *State) appendAccessor(env *Env, dst []byte, p *part) ([]byte, bool) {
	r := &st.Req
	switch p.acc {
	case aURL:
		return append(dst, r.URL...), true
	case aPath:
		return append(dst, r.Path()...), true
	case aQuery:
		q, ok := r.Query()
		return append(dst, q...), ok && len(q) > 0
	case aParam:
		q, _ := r.Query()
		v, ok := queryParam(q, p.text)
		return append(dst, v...), ok && v != nil
	case aHeader:
		v, ok := r.Header(p.text)
		return append(dst, v...), ok
	case aHost, aPort:
		return appendHostPart(dst, r, p.acc == aPort)
	case aRemoteIP:
		return appendIP(dst, st.remoteIP(env, p.text != "0"), env.Anonymise), true
	case aUser:
		return append(dst, basicUser(r)...), true
	case aCookie:
		v, ok := cookieValue(r, p.text)
		return append(dst, v...), ok
	case aJWT:
		return st.appendJWTClaim(dst, r, p.text)
	case aClaim:
		v, ok := st.Identity.Claim(p.text)
		return append(dst, v...), ok
	case aAuthUser:
		if st.Identity == nil || st.Identity.Name == "" {
			return dst, false
		}
		return append(dst, st.Identity.Name...), true
	}
	return dst, false
}

// appendHostPart is %[host] (the Host header up to a ':') or %[port]
// (from the ':' on, colon included, as Pound prints it).
func appendHostPart(dst []byte, r *Message, port bool) ([]byte, bool) {
	v, ok := r.Header("Host")
	if !ok {
		return dst, false
	}
	i := bytes.IndexByte(v, ':')
	switch {
	case !port && i >= 0:
		return append(dst, v[:i]...), true
	case !port:
		return append(dst, v...), true
	case i >= 0:
		return append(dst, v[i:]...), true
	}
	return dst, false
}

// appendIP prints a; anon replaces its last group by 0, as Pound's
// Anonymise does in logs and %[remoteip].
func appendIP(dst []byte, a netip.Addr, anon bool) []byte {
	start := len(dst)
	dst = a.AppendTo(dst)
	if !anon {
		return dst
	}
	for i := len(dst) - 1; i >= start; i-- {
		if dst[i] == '.' || dst[i] == ':' {
			return append(dst[:i+1], '0')
		}
	}
	return dst
}

// basicUser is the user name of an "Authorization: Basic" header (only
// %[user] asks for it, so decoding may allocate).
func basicUser(r *Message) []byte {
	v, ok := r.Header("Authorization")
	if !ok || len(v) < 6 || !bytes.EqualFold(v[:6], []byte("basic ")) {
		return nil
	}
	cred := bytes.TrimSpace(v[6:])
	out := make([]byte, base64.StdEncoding.DecodedLen(len(cred)))
	n, err := base64.StdEncoding.Decode(out, cred)
	if err != nil {
		return nil
	}
	user, _, _ := bytes.Cut(out[:n], []byte{':'})
	return user
}

// urlEncode appends s percent-encoded (RFC 3986 unreserved characters
// kept), leaving the bytes in keep unencoded (SetPath -encode keeps '/').
func urlEncode(dst, s []byte, keep string) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '.', c == '_', c == '~':
			dst = append(dst, c)
		case keep != "" && bytes.IndexByte([]byte(keep), c) >= 0:
			dst = append(dst, c)
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}
