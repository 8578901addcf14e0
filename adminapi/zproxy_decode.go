package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"
)

// Request bodies of the zproxy dialect, decoded strictly: unknown fields,
// wrong types and trailing data are refused (jansson silently accepts the
// first two). Pointers tell "absent" from zero, which zproxy's messages
// distinguish ("Expected 'port' variable.").

// statusBody is PATCH .../backend/B/status.
type statusBody struct {
	Status string `json:"status"`
}

// sessionBody is one session in PUT/PATCH/DELETE bodies and sync arrays.
type sessionBody struct {
	ID        *string `json:"id"`
	BackendID *string `json:"backend-id"`
	LastSeen  *int64  `json:"last-seen"`
}

// backendBody is PUT .../backends.
type backendBody struct {
	ID        *string `json:"id"`
	Address   *string `json:"address"`
	Port      *int    `json:"port"`
	HTTPS     *bool   `json:"https"`
	Weight    *int    `json:"weight"`
	Priority  *int    `json:"priority"`
	ConnLimit *int    `json:"connlimit"`
}

// backendSettingsBody is lbd's PATCH .../backend/B: the values to set,
// at least one.
type backendSettingsBody struct {
	Weight    *int `json:"weight"`
	Priority  *int `json:"priority"`
	ConnLimit *int `json:"connlimit"`
}

// listenerSessions is one element of PATCH /sessions.
type listenerSessions struct {
	ID       int `json:"id"`
	Services []struct {
		Name     string        `json:"name"`
		Sessions []sessionBody `json:"sessions"`
	} `json:"services"`
}

// decodeError is a body zproxy's wording does not cover. strict marks
// bodies zproxy itself would have accepted (unknown field, wrong type):
// they get 400 with the detail even where zproxy answers 500.
type decodeError struct {
	strict bool
	msg    string
}

func (e *decodeError) Error() string { return e.msg }

// decodeStrict decodes exactly one JSON value into v.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		strict := errors.As(err, &typeErr) || strings.Contains(err.Error(), "unknown field")
		return &decodeError{strict: strict, msg: strings.TrimPrefix(err.Error(), "json: ")}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &decodeError{msg: "trailing data after the JSON value"}
	}
	return checkKeys(body)
}

// bodyKeys are all member names the bodies use. encoding/json matches
// names case-insensitively and keeps the last of duplicate keys; jansson
// does neither, so checkKeys refuses both.
var bodyKeys = map[string]bool{
	"status": true, "id": true, "backend-id": true, "last-seen": true,
	"address": true, "port": true, "https": true, "weight": true,
	"priority": true, "connlimit": true, "services": true, "name": true,
	"sessions": true,
}

// checkKeys walks a well-formed body and refuses member names that are not
// spelled exactly as in bodyKeys, and duplicate names in one object.
func checkKeys(body []byte) error {
	type frame struct {
		obj, wantKey bool
		seen         map[string]bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF; syntax errors were reported by Decode
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.obj && top.wantKey {
			if !bodyKeys[key] {
				return &decodeError{strict: true, msg: fmt.Sprintf("unknown field %q", key)}
			}
			if top.seen[key] {
				return &decodeError{strict: true, msg: fmt.Sprintf("duplicate field %q", key)}
			}
			top.seen[key], top.wantKey = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, wantKey: true, seen: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				continue
			}
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj {
			top.wantKey = true // a member value is complete
		}
	}
}

// decodeArray is decodeStrict for endpoints that need a JSON array (a
// top-level null or object is refused, as jansson's json_is_array does).
func decodeArray(body []byte, v any) error {
	if !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) {
		return &decodeError{msg: "expected a JSON array"}
	}
	return decodeStrict(body, v)
}

// reason is zproxy's message for a decoding failure, with the detail
// appended when the failure is one of our strictness checks.
func reason(base string, err error) string {
	var de *decodeError
	if errors.As(err, &de) && de.strict {
		return strings.TrimSuffix(base, ".") + ": " + de.msg
	}
	return base
}

// isStrict reports a failure zproxy would not have had (always 400).
func isStrict(err error) bool {
	var de *decodeError
	return errors.As(err, &de) && de.strict
}

// spec turns a session body into a SessionSpec for backend bi: no
// last-seen means now, 0 means a static session.
func (s *sessionBody) spec(key string, bi int) (SessionSpec, error) {
	sp := SessionSpec{Key: key, Backend: bi}
	switch {
	case s.LastSeen == nil:
	case *s.LastSeen < 0:
		return sp, &decodeError{strict: true, msg: "last-seen must not be negative"}
	case *s.LastSeen == 0:
		sp.Static = true
	default:
		sp.LastSeen = time.Unix(*s.LastSeen, 0)
	}
	return sp, nil
}

// str dereferences an optional string.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// spec validates a runtime backend and applies zproxy's defaults (weight
// 1, priority 1, no connection limit). It returns the zproxy message of
// the first problem, or "" when the body is acceptable.
func (b *backendBody) spec() (BackendSpec, string) {
	if str(b.Address) == "" {
		return BackendSpec{}, "Invalid JSON format. Expected 'address' variable."
	}
	if b.Port == nil || *b.Port < 0 {
		return BackendSpec{}, "Invalid JSON format. Expected 'port' variable."
	}
	sp := BackendSpec{Address: *b.Address, Port: *b.Port, Weight: 1, Priority: 1}
	if !validBackendAddress(sp.Address) {
		return sp, fmt.Sprintf("Invalid JSON format: invalid address %q.", sp.Address)
	}
	if sp.Port < 1 || sp.Port > 65535 {
		return sp, "Invalid JSON format: port must be 1..65535."
	}
	if b.ID != nil && (*b.ID == "" || strings.ContainsAny(*b.ID, "/ \t\r\n")) {
		return sp, "Invalid JSON format: invalid backend id."
	}
	sp.ID = str(b.ID)
	if b.HTTPS != nil {
		sp.HTTPS = *b.HTTPS
	}
	for _, f := range []struct {
		p   *int
		dst *int
		min int
	}{{b.Weight, &sp.Weight, 1}, {b.Priority, &sp.Priority, 1}, {b.ConnLimit, &sp.ConnLimit, 0}} {
		if f.p == nil {
			continue
		}
		if *f.p < f.min {
			return sp, "Invalid JSON format: weight and priority must be >= 1, connlimit >= 0."
		}
		*f.dst = *f.p
	}
	return sp, ""
}

// validBackendAddress accepts an IP literal, a host name, or an absolute
// UNIX socket path.
func validBackendAddress(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	if strings.HasPrefix(s, "/") {
		return len(s) < 108 && !strings.ContainsAny(s, "\x00\n")
	}
	if len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
