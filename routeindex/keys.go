package routeindex

import (
	"lbd/config"
)

// subject is the part of the request an indexed condition looks at.
type subject uint8

const (
	subjHost subject = iota // the first Host header's value
	subjURL                 // the request target
	subjPath                // the target up to '?'
	numSubjects
	// subjHeader is the value of a named header (any of its lines);
	// only exact keys, in Index.headers.
	subjHeader = numSubjects
)

var subjectOf = map[config.CondKind]subject{
	config.CondHost: subjHost, config.CondURL: subjURL, config.CondPath: subjPath,
}

// key is one string an indexed condition needs its subject to equal
// (kind exact), start with (prefix) or end with (suffix), folded to
// lower case: the index finds a superset of the services whose condition
// holds, the service's own program decides.
type key struct {
	subj   subject
	kind   config.PatternKind
	text   string
	foldKS bool
	name   string // subjHeader: the header's name, folded
}

// serviceKeys returns the keys of a service's conditions (an AND list),
// with ok false when the service cannot be indexed and must be tried for
// every request.
//
// Skipping a service must change nothing but the time spent: the
// condition the keys come from is the first one its program evaluates,
// so when none of the keys fits the request that test fails before any
// other runs, and a failed test leaves no trace (no submatch pushed, no
// token taken, no script run, no ACL decision counted). Hence only the
// first condition, or the first of nested AND groups, is used; an OR
// group is indexed when every alternative is, each being such a first
// test when the ones before it failed.
func serviceKeys(conds []*config.Condition) (keys []key, ok bool) {
	for _, c := range conds {
		if c.Kind == config.CondMatch && !c.Or && !c.Not {
			if len(c.Sub) == 0 {
				continue // an empty group holds and tests nothing
			}
			return serviceKeys(c.Sub)
		}
		return condKeys(c)
	}
	return nil, false // no condition: every request matches
}

// condKeys is serviceKeys for one condition that is not an AND group.
func condKeys(c *config.Condition) ([]key, bool) {
	if c.Not {
		return nil, false
	}
	if c.Kind == config.CondMatch {
		if !c.Or {
			return serviceKeys(c.Sub)
		}
		var keys []key
		for _, sub := range c.Sub {
			k, ok := serviceKeys([]*config.Condition{sub})
			if !ok {
				return nil, false
			}
			keys = append(keys, k...)
		}
		return keys, true // an empty OR never holds: no key at all
	}
	subj, known := subjectOf[c.Kind]
	if c.Kind == config.CondHeader && isName(c.Name) {
		subj, known = subjHeader, true
	}
	if !known || c.Decode || c.Pattern == nil {
		return nil, false
	}
	kind, texts, _, foldKS, ok := c.Pattern.PlainForms()
	if !ok && subj != subjHeader {
		// A regex anchored by a literal ("^/api/v[0-9]+/") can only
		// match subjects that start with it: file it under that prefix.
		var prefix string
		if prefix, _, foldKS, ok = c.Pattern.RequiredPrefix(); ok {
			kind, texts = config.MatchPrefix, []string{prefix}
		}
	}
	if !ok || (kind != config.MatchExact && kind != config.MatchPrefix && kind != config.MatchSuffix) {
		return nil, false
	}
	keys := make([]key, len(texts))
	for i, t := range texts {
		if subj == subjHeader && (kind != config.MatchExact || len(t) > maxMapKey) {
			return nil, false
		}
		// Case-sensitive texts are folded too: the index then offers a
		// few services whose own test will fail, never misses one.
		keys[i] = key{subj: subj, kind: kind, text: lower(t), foldKS: foldKS, name: lower(c.Name)}
	}
	return keys, true
}

// isName reports whether a Header condition's name can be looked up as
// the part of a line before its first colon (rules' nameIs).
func isName(s string) bool {
	if s == "" || len(s) > maxMapKey {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ':' || c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if fold(s[i]) != s[i] {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = fold(b[j])
			}
			return string(b)
		}
	}
	return s // already folded: no copy (one per service at build)
}

func fold(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
