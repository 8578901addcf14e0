// Package session implements sticky sessions for lbd: extracting the
// session key from a request (or learning it from a response) per Pound's
// and zproxy's session types, and the per-service table that maps keys to
// the backend they are pinned to, with idle expiry and a size cap.
//
// The package knows nothing about backends: Table is generic over the value
// so that the engine can store *backend.Backend while this package stays at
// the bottom of the import graph (it imports only lbd/http1).
package session

import (
	"errors"
	"fmt"
	"strings"
)

// Type is a session type, as named by a service's Session/Type directive.
type Type uint8

// Session types. The order is stable so that the zero value means "no
// session" (Pound's "session_type":"NONE").
const (
	None         Type = iota // no sticky sessions
	IP                       // client address
	Basic                    // Basic-auth credentials (the base64 token)
	URL                      // value of the query parameter named ID
	Parm                     // the ";param" part of the path
	Cookie                   // value of the cookie named ID
	Header                   // value of the request header named ID
	CookieInsert             // zproxy: proxy-inserted cookie naming the backend
)

// ErrUnknownType is returned by ParseType for a name that is no session type.
var ErrUnknownType = errors.New("unknown session type")

// typeNames are the names Pound's and zproxy's control APIs print.
var typeNames = [...]string{
	None:         "NONE",
	IP:           "IP",
	Basic:        "BASIC",
	URL:          "URL",
	Parm:         "PARM",
	Cookie:       "COOKIE",
	Header:       "HEADER",
	CookieInsert: "COOKIEINSERT",
}

// String returns the Pound/zproxy name of t ("NONE", "IP", ...,
// "COOKIEINSERT"), the form the control API reports as session_type.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// ParseType parses a Session Type directive value, case-insensitively as
// zproxy does. BACKENDCOOKIE is zproxy's other name for COOKIEINSERT.
func ParseType(s string) (Type, error) {
	if strings.EqualFold(s, "BACKENDCOOKIE") {
		return CookieInsert, nil
	}
	for t, name := range typeNames {
		if strings.EqualFold(s, name) {
			return Type(t), nil
		}
	}
	return None, fmt.Errorf("%w: %q", ErrUnknownType, s)
}

// NeedsID reports whether the type requires an ID directive (the cookie,
// parameter or header name): Pound rejects URL, COOKIE and HEADER without one.
func (t Type) NeedsID() bool {
	return t == URL || t == Cookie || t == Header
}
