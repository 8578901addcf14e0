package rules

import (
	"lbd/config"
	"lbd/edgeauth"
)

// Edge authentication in the request language: the conditions JWT and
// APIKey, the accessors %[claim NAME] and %[authuser], and what the
// proxy's access stage (a service's Authenticate) calls. A request that
// uses none of them pays for one nil pointer in Begin.

// authMemo remembers a check's outcome for the rest of the request, so
// that a condition and the service's Authenticate verify once.
type authMemo struct {
	c   edgeauth.Checker
	out edgeauth.Outcome
}

// maxAuthMemo is how many distinct checks one request remembers; more
// are checked again (correct, only slower).
const maxAuthMemo = 4

// Cookie is the value of cookie name (edgeauth.Request).
func (m *Message) Cookie(name string) ([]byte, bool) { return cookieValue(m, name) }

// Authenticate runs check c on the request (once per request: a second
// call returns the first outcome). On success the identity becomes the
// request's: %[claim] and %[authuser] read it, the access log names it.
func (st *State) Authenticate(c edgeauth.Checker, x *edgeauth.Exchange) edgeauth.Outcome {
	for i := range st.authN {
		if st.authMemo[i].c == c {
			return st.authMemo[i].out
		}
	}
	out := c.Check(&st.Req, x)
	if st.authN < maxAuthMemo {
		st.authMemo[st.authN] = authMemo{c: c, out: out}
		st.authN++
	}
	if out.OK() {
		st.Identity = out.ID
	}
	return out
}

// ForwardIdentity removes the request's lines named in strip (a client's
// forgeries of the headers lbd sets) and adds the identity's lines.
func (st *State) ForwardIdentity(strip []string, id *edgeauth.Identity) {
	m := &st.Req
	for _, name := range strip {
		if m.find(name) >= 0 {
			m.deleteNamed(name)
		}
	}
	m.Lines = append(m.Lines, id.Lines...)
	m.HeadersChanged = true
}

// authLeaf evaluates the JWT and APIKey conditions: the check passes and,
// for JWT "name" "claim" "pattern", the claim (or one element of an
// array claim) matches.
func (st *State) authLeaf(l *leaf) (bool, error) {
	out := st.Authenticate(l.authn.Checker, nil)
	if !out.OK() {
		return false, nil
	}
	if l.pat == nil {
		return true, nil
	}
	for _, v := range out.ID.ClaimValues(l.name) {
		if l.pat.Match(v) {
			st.push(l.tag, l.pat, v)
			return true, nil
		}
	}
	return false, nil
}

// authDetail says why an authentication condition held or not, for the
// routing explainer.
func (st *State) authDetail(l *leaf) string {
	out := st.Authenticate(l.authn.Checker, nil)
	if !out.OK() {
		return "refused: " + out.Reason
	}
	if out.ID.Name != "" {
		return "authenticated as " + out.ID.Name
	}
	return "authenticated"
}

func authnLeafKind(k config.CondKind) (leafKind, bool) {
	switch k {
	case config.CondJWT:
		return lkJWT, true
	case config.CondAPIKey:
		return lkAPIKey, true
	}
	return 0, false
}
