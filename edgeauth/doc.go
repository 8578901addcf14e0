// Package edgeauth authenticates requests at the edge: JSON Web Tokens
// verified against keys from files or a JWKS URL, API keys stored hashed,
// and forward authentication (a subrequest to an authentication service,
// as Traefik's ForwardAuth and nginx's auth_request do).
//
// The proxy sees one narrow interface: a Checker takes a Request and
// returns an Outcome, either an Identity (who the request is from, the
// header lines to forward) or the Reply to send instead. Signatures are
// checked by go-jose; this package chooses keys, checks claims and
// caches verified tokens so that a token seen again costs a map lookup.
package edgeauth

import (
	"net/netip"
	"strconv"
	"sync/atomic"
)

// Request is what a check reads of the request it judges. The values it
// returns alias the request and must not be kept.
type Request interface {
	// Header is the value of the first header named name.
	Header(name string) ([]byte, bool)
	// Cookie is the value of cookie name.
	Cookie(name string) ([]byte, bool)
	// Param is the value of query parameter name (as sent, not decoded).
	Param(name string) ([]byte, bool)
}

// Exchange is what forward authentication passes on beyond headers.
type Exchange struct {
	Method, URI, Host []byte
	TLS               bool
	Client            netip.Addr
}

// Checker is one configured authentication (a JWT, APIKeys or
// ForwardAuth block).
type Checker interface {
	// Name is the block's name.
	Name() string
	// Check judges the request; x is only read by forward authentication
	// and may be nil for the others.
	Check(r Request, x *Exchange) Outcome
	// Strip lists the header names whose client copies are removed
	// before the identity's lines are added, so that a client cannot
	// forge them.
	Strip() []string
	// Stats counts the access decisions made with the check.
	Stats() *Stats
}

// Stats counts decisions: requests let through and refused.
type Stats struct {
	Passed, Refused atomic.Int64
}

// Record counts one decision.
func (s *Stats) Record(ok bool) {
	if ok {
		s.Passed.Add(1)
	} else {
		s.Refused.Add(1)
	}
}

// Outcome is a check's result: ID when the request is authenticated,
// otherwise Reply (and Reason, for logs and the routing explainer).
type Outcome struct {
	ID     *Identity
	Reply  *Reply
	Reason string
}

// OK reports whether the request passed.
func (o Outcome) OK() bool { return o.ID != nil }

// Identity is an authenticated client. It is shared between requests
// (cached with its token) and never changed once built.
type Identity struct {
	// Name is the API key's name, or the JWT's subject.
	Name string
	// Lines are the header lines ("Name: value") to add to the request.
	Lines [][]byte
	// claims are a token's top-level claims, rendered: a string's
	// contents, any other value as JSON.
	claims map[string][]byte
	// lists are the elements of array claims, rendered the same way.
	lists map[string][][]byte
}

// Claim returns the rendered value of a claim of a verified token.
func (id *Identity) Claim(name string) ([]byte, bool) {
	if id == nil {
		return nil, false
	}
	v, ok := id.claims[name]
	return v, ok
}

// ClaimValues returns the elements of an array claim, or the claim
// itself as one element.
func (id *Identity) ClaimValues(name string) [][]byte {
	if id == nil {
		return nil
	}
	if l, ok := id.lists[name]; ok {
		return l
	}
	if v, ok := id.claims[name]; ok {
		return [][]byte{v}
	}
	return nil
}

// Reply is a complete answer to a refused request: the status and the
// header lines (without framing); the proxy adds Content-Length and
// Connection.
type Reply struct {
	Status int
	Lines  [][]byte
	Body   []byte
}

// Render writes the reply as an HTTP/1.minor response that closes the
// connection; head leaves the body out (the answer to a HEAD request),
// Content-Length still says its size.
func (r *Reply) Render(minor int, reason string, head bool) []byte {
	b := make([]byte, 0, 128+len(r.Body))
	b = append(b, "HTTP/1."...)
	b = strconv.AppendInt(b, int64(minor), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, ' ')
	b = append(b, reason...)
	b = append(b, "\r\n"...)
	for _, l := range r.Lines {
		b = append(b, l...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(r.Body)), 10)
	b = append(b, "\r\nConnection: close\r\n\r\n"...)
	if head {
		return b
	}
	return append(b, r.Body...)
}
