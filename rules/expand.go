package rules

import (
	"bytes"
	"encoding/base64"
)

// expand appends the expansion of t to dst. A malformed construct or a
// reference to a group that did not match is copied as written and the
// expansion fails with an *ExpandError naming the first problem.
func (st *State) expand(env *Env, t *template, dst []byte, what string) ([]byte, error) {
	var err error
	fail := func(msg string) {
		if err == nil {
			err = &ExpandError{What: what, Src: t.src, Msg: msg}
		}
	}
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
			}
		case pAccess:
			dst = st.appendAccessor(env, dst, p)
		}
	}
	return dst, err
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

// appendAccessor appends %[name arg] of the request; an absent value
// expands to nothing.
func (st *State) appendAccessor(env *Env, dst []byte, p *part) []byte {
	r := &st.Req
	switch p.acc {
	case aURL:
		return append(dst, r.URL...)
	case aPath:
		return append(dst, r.Path()...)
	case aQuery:
		q, _ := r.Query()
		return append(dst, q...)
	case aParam:
		q, _ := r.Query()
		v, _ := queryParam(q, p.text)
		return append(dst, v...)
	case aHeader:
		v, _ := r.Header(p.text)
		return append(dst, v...)
	case aHost, aPort:
		v, ok := r.Header("Host")
		if !ok {
			return dst
		}
		i := bytes.IndexByte(v, ':')
		switch {
		case p.acc == aHost && i >= 0:
			return append(dst, v[:i]...)
		case p.acc == aHost:
			return append(dst, v...)
		case i >= 0:
			return append(dst, v[i:]...)
		}
		return dst
	case aRemoteIP:
		return st.remoteIP(env, p.text != "0").AppendTo(dst)
	case aUser:
		return append(dst, basicUser(r)...)
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
