package service

import (
	"bytes"

	"lbd/config"
	"lbd/http1"
)

// matcher is a service's compiled conditions, all of which must hold.
type matcher struct {
	conds []*config.Condition
}

func compile(cfg *config.Service) matcher {
	return matcher{conds: cfg.Conditions}
}

func (m matcher) matches(req *http1.Request, head []byte) bool {
	for _, c := range m.conds {
		if !condMatches(c, req, head) {
			return false
		}
	}
	return true
}

func condMatches(c *config.Condition, req *http1.Request, head []byte) bool {
	return evalCond(c, req, head) != c.Not
}

func evalCond(c *config.Condition, req *http1.Request, head []byte) bool {
	switch c.Kind {
	case config.CondURL:
		return patternMatch(c.Pattern, req.Target)
	case config.CondPath:
		return patternMatch(c.Pattern, req.Path)
	case config.CondQuery:
		return patternMatch(c.Pattern, req.Query)
	case config.CondHost:
		return patternMatch(c.Pattern, req.Host)
	case config.CondMethod:
		return patternMatch(c.Pattern, req.Method)
	case config.CondQueryParam:
		v, ok := queryParam(req.Query, c.Name)
		return ok && patternMatch(c.Pattern, v)
	case config.CondHeader:
		return headerMatch(c, req, head)
	case config.CondMatch:
		return matchGroup(c, req, head)
	}
	return false
}

func matchGroup(c *config.Condition, req *http1.Request, head []byte) bool {
	if c.Or {
		for _, sub := range c.Sub {
			if condMatches(sub, req, head) {
				return true
			}
		}
		return false
	}
	for _, sub := range c.Sub {
		if !condMatches(sub, req, head) {
			return false
		}
	}
	return true
}

// headerMatch implements HeadRequire/HeadDeny (regex on the whole header
// line as received) and Pound 4 `Header "Name" "pattern"` (on the value).
func headerMatch(c *config.Condition, req *http1.Request, head []byte) bool {
	for i := range req.Headers {
		h := &req.Headers[i]
		if c.Name != "" {
			if http1.EqualFold(h.Name, c.Name) && patternMatch(c.Pattern, h.Value) {
				return true
			}
			continue
		}
		if patternMatch(c.Pattern, HeaderLine(head, h)) {
			return true
		}
	}
	return false
}

// HeaderLine returns the header line "Name: value" as it was received, by
// locating the name and value slices in the head buffer they alias (their
// offset is the difference of capacities, so no copy and no unsafe).
func HeaderLine(head []byte, h *http1.Header) []byte {
	start := cap(head) - cap(h.Name)
	end := cap(head) - cap(h.Value) + len(h.Value)
	if start < 0 || end > len(head) || start > end {
		return h.Name
	}
	return head[start:end]
}

func patternMatch(p *config.Pattern, s []byte) bool {
	return p == nil || p.Match(s)
}

// queryParam finds the value of the exact parameter name in a query string.
func queryParam(q []byte, name string) ([]byte, bool) {
	for len(q) > 0 {
		var kv []byte
		if i := bytes.IndexByte(q, '&'); i >= 0 {
			kv, q = q[:i], q[i+1:]
		} else {
			kv, q = q, nil
		}
		k, v := kv, []byte(nil)
		if i := bytes.IndexByte(kv, '='); i >= 0 {
			k, v = kv[:i], kv[i+1:]
		}
		if string(k) == name {
			return v, true
		}
	}
	return nil, false
}
