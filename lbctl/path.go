package lbctl

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// objPath is a /L/S/B argument: listener, service and backend, each an
// index or (listener and service) a name; "-" as L is Pound's global
// scope. Fewer segments address the enclosing object.
type objPath struct {
	segs []string
}

// Levels of an object path.
const (
	levelAll      = 0
	levelListener = 1
	levelService  = 2
	levelBackend  = 3
)

// parsePath splits a /L/S/B argument. "" and "/" address everything.
func parsePath(s string) (objPath, error) {
	if s == "" || s == "/" {
		return objPath{}, nil
	}
	if !strings.HasPrefix(s, "/") {
		return objPath{}, errors.New("bad uri: should start with a /")
	}
	segs := strings.Split(strings.TrimSuffix(s[1:], "/"), "/")
	if len(segs) > levelBackend {
		return objPath{}, fmt.Errorf("bad uri: too many components in %s", s)
	}
	for _, seg := range segs {
		if seg == "" {
			return objPath{}, fmt.Errorf("bad uri: empty component in %s", s)
		}
	}
	return objPath{segs: segs}, nil
}

// level is how deep the path goes (levelAll .. levelBackend).
func (p objPath) level() int { return len(p.segs) }

// String is the path as lbctl prints it ("/" for everything).
func (p objPath) String() string { return "/" + strings.Join(p.segs, "/") }

// child is the path of the i-th object below p.
func (p objPath) child(i int) objPath {
	return objPath{segs: append(append([]string(nil), p.segs...), strconv.Itoa(i))}
}

// pound is the path in Pound's URL form, each segment escaped.
func (p objPath) pound() string {
	var b strings.Builder
	for _, s := range p.segs {
		b.WriteString("/" + url.PathEscape(s))
	}
	return b.String()
}

// zproxy returns the zproxy URL prefix for the path:
// /listener/L[/service/S[/backend/B]]. zproxy numbers listeners from 0
// without a control listener and has no global services.
func (p objPath) zproxy() (string, error) {
	if p.level() == levelAll {
		return "", nil
	}
	if _, err := strconv.Atoi(p.segs[0]); err != nil {
		return "", fmt.Errorf("bad uri: the zproxy control API addresses listeners by number, not %q", p.segs[0])
	}
	u := "/listener/" + p.segs[0]
	if p.level() >= levelService {
		u += "/service/" + url.PathEscape(p.segs[1])
	}
	if p.level() == levelBackend {
		u += "/backend/" + url.PathEscape(p.segs[2])
	}
	return u, nil
}

// need checks the path depth a command requires, with poundctl's
// messages.
func (p objPath) need(min, max int) error {
	switch {
	case p.level() < min && min == levelBackend:
		return errors.New("bad uri: backend not specified")
	case p.level() < min && min == levelService:
		return errors.New("bad uri: service not specified")
	case p.level() < min:
		return errors.New("bad uri: listener not specified")
	case p.level() > max && max == levelService:
		return errors.New("bad uri: spurious backend specification")
	case p.level() > max:
		return errors.New("bad uri: too many components")
	}
	return nil
}
