// Package routeindex finds, for a request, the services of a listener
// whose first condition can hold, in service order, without trying each
// service: the conditions that decide most large configurations (Host
// exact, prefix or suffix; URL and Path patterns that are literal strings
// or literal prefixes or suffixes; a named header's exact value) are filed
// in hash maps and byte tries keyed by their folded text, and every other
// service is offered for every request.
//
// The index only ever narrows the services a router tries; the router
// still runs each offered service's conditions in order, so first-match
// order, disabled services, fall-through services and every condition
// kind keep their meaning (see serviceKeys for why skipping is exact).
// An Index is immutable: a rebuilt router builds a new one, and
// enabling or disabling a service needs no change to it.
package routeindex

import (
	"bytes"
	"fmt"

	"lbd/config"
)

// Index is the compiled index of one router's services.
type Index struct {
	n int32
	// always lists the services offered for every request.
	always []int32
	// exact maps the exact keys of up to maxMapKey bytes to their
	// services (one hash per request, wherever the keys share bytes);
	// fwd holds the prefix keys and longer exact ones, rev the suffix
	// keys reversed, per subject; nil when there are none.
	exact    [numSubjects]map[string][]int32
	fwd, rev [numSubjects]*trie
	// headers maps a folded header name to its exact values' services;
	// headerFoldKS is foldKS for them.
	headers      map[string]map[string][]int32
	headerFoldKS bool
	// foldKS: some key of the subject folds k or s as a regex does, so
	// a subject with non-ASCII bytes may match with no key fitting.
	foldKS [numSubjects]bool
	// keyed[i] is the subject service i is filed under (for the
	// explainer), or -1 when it is offered always.
	keyed []int8
}

// Build indexes services given by their conditions, in router order.
func Build(services [][]*config.Condition) *Index {
	ix := &Index{n: int32(len(services)), keyed: make([]int8, len(services))}
	var fwd, rev [numSubjects]*trieBuilder
	for s := range fwd {
		fwd[s], rev[s] = newTrieBuilder(), newTrieBuilder()
	}
	for i, conds := range services {
		id := int32(i)
		keys, ok := serviceKeys(conds)
		if !ok {
			ix.always = append(ix.always, id)
			ix.keyed[i] = -1
			continue
		}
		ix.keyed[i] = int8(subjHost)
		if len(keys) > 0 {
			ix.keyed[i] = int8(keys[0].subj)
		}
		for _, k := range keys {
			if k.subj == subjHeader {
				ix.addHeader(k, id)
				continue
			}
			ix.foldKS[k.subj] = ix.foldKS[k.subj] || k.foldKS
			switch {
			case k.kind == config.MatchExact && len(k.text) <= maxMapKey:
				if ix.exact[k.subj] == nil {
					ix.exact[k.subj] = map[string][]int32{}
				}
				ix.exact[k.subj][k.text] = appendID(ix.exact[k.subj][k.text], id)
			case k.kind == config.MatchExact:
				fwd[k.subj].add(k.text, id, true)
			case k.kind == config.MatchPrefix:
				fwd[k.subj].add(k.text, id, false)
			case k.kind == config.MatchSuffix:
				rev[k.subj].add(reverse(k.text), id, false)
			}
		}
	}
	for s := range fwd {
		ix.fwd[s], ix.rev[s] = fwd[s].flatten(), rev[s].flatten()
	}
	return ix
}

func (ix *Index) addHeader(k key, id int32) {
	if ix.headers == nil {
		ix.headers = map[string]map[string][]int32{}
	}
	vals := ix.headers[k.name]
	if vals == nil {
		vals = map[string][]int32{}
		ix.headers[k.name] = vals
	}
	vals[k.text] = appendID(vals[k.text], id)
	ix.headerFoldKS = ix.headerFoldKS || k.foldKS
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// Indexed is how many services the index can skip (those not offered
// for every request).
func (ix *Index) Indexed() int { return int(ix.n) - len(ix.always) }

// Request is what the index looks at in a request.
type Request struct {
	Host    []byte // the first Host header's value
	HasHost bool
	URL     []byte // the request target
	// Lines are the header lines "Name: value", for Header conditions.
	Lines [][]byte
}

// Lookup sets it to the services from `from` on that the request may
// match, in order. It does not allocate.
func (ix *Index) Lookup(r *Request, from int, it *Iter) {
	it.reset(int32(from), ix.n)
	it.add(ix.always)
	path := r.URL
	for i, c := range path {
		if c == '?' {
			path = path[:i]
			break
		}
	}
	if !ix.walk(subjHost, r.Host, r.HasHost, it) ||
		!ix.walk(subjURL, r.URL, true, it) ||
		!ix.walk(subjPath, path, true, it) ||
		!ix.headerLists(r.Lines, it) {
		it.linear = true
	}
}

// headerLists adds the services of the indexed headers the request
// has, line by line (a condition on a header holds when any of its
// lines does).
func (ix *Index) headerLists(lines [][]byte, it *Iter) bool {
	if ix.headers == nil {
		return true
	}
	var buf [maxMapKey]byte
	for _, line := range lines {
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || colon > maxMapKey {
			continue
		}
		vals := ix.headers[string(foldInto(buf[:0], line[:colon]))]
		if vals == nil {
			continue
		}
		v := trimBlanks(line[colon+1:])
		if ix.headerFoldKS && !ascii(v) {
			return false
		}
		if len(v) > maxMapKey {
			continue // longer than every key
		}
		if l, ok := vals[string(foldInto(buf[:0], v))]; ok && !it.add(l) {
			return false
		}
	}
	return true
}

// foldInto appends s folded to dst (a buffer on the caller's stack).
func foldInto(dst, s []byte) []byte {
	for _, c := range s {
		dst = append(dst, fold(c))
	}
	return dst
}

// trimBlanks is a header value without surrounding spaces and tabs, as
// the rules read it.
func trimBlanks(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// walk adds the lists of subject s (value v, present or not); false
// means the index cannot decide and every service must be offered.
func (ix *Index) walk(s subject, v []byte, present bool, it *Iter) bool {
	if !present {
		return true // the condition fails without its subject
	}
	if ix.foldKS[s] && !ascii(v) {
		return false
	}
	if m := ix.exact[s]; m != nil && len(v) <= maxMapKey {
		var buf [maxMapKey]byte
		if l, ok := m[string(foldInto(buf[:0], v))]; ok && !it.add(l) {
			return false
		}
	}
	if t := ix.fwd[s]; t != nil && !t.walk(v, false, it) {
		return false
	}
	if t := ix.rev[s]; t != nil && !t.walk(v, true, it) {
		return false
	}
	return true
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// Why says, for the explainer, why service i was not offered.
func (ix *Index) Why(i int) string {
	if i < 0 || i >= len(ix.keyed) || ix.keyed[i] < 0 {
		return ""
	}
	name := [...]string{"Host", "URL", "Path", "header"}[ix.keyed[i]]
	return fmt.Sprintf("the routing index shows its first condition, on the %s, cannot hold for this request", name)
}

// maxMapKey is the longest exact key the hash map holds: a subject is
// folded into a buffer of this size on the stack.
const maxMapKey = 128

// maxLists bounds the candidate lists one lookup merges; a request that
// would need more (a subject with many indexed prefixes) is offered
// every service, which is correct and merely slower.
const maxLists = 16

// Iter yields the offered services in increasing order, each once. The
// zero Iter yields nothing; it lives on the caller's stack.
type Iter struct {
	lists  [maxLists][]int32
	n      int
	from   int32
	total  int32
	linear bool
}

func (it *Iter) reset(from, total int32) {
	*it = Iter{from: from, total: total}
}

// add merges a sorted list, dropping the ids before it.from.
func (it *Iter) add(l []int32) bool {
	if len(l) == 0 || l[len(l)-1] < it.from {
		return true
	}
	if l[0] < it.from {
		lo, hi := 0, len(l) // l[hi] >= from; find the first such
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); l[mid] < it.from {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		l = l[lo:]
	}
	if it.n == maxLists {
		return false
	}
	it.lists[it.n] = l
	it.n++
	return true
}

// Next returns the next service to try, or -1.
func (it *Iter) Next() int {
	if it.linear {
		if it.from >= it.total {
			return -1
		}
		it.from++
		return int(it.from - 1)
	}
	best := int32(-1)
	for i := 0; i < it.n; i++ {
		if l := it.lists[i]; len(l) > 0 && (best < 0 || l[0] < best) {
			best = l[0]
		}
	}
	if best < 0 {
		return -1
	}
	for i := 0; i < it.n; i++ {
		if l := it.lists[i]; len(l) > 0 && l[0] == best {
			it.lists[i] = l[1:]
		}
	}
	return int(best)
}
