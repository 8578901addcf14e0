package proxy

import (
	"strings"

	"lbd/http1"
)

// Pound 4 applies DeleteHeader and SetHeader to the request's header
// list after service matching (4.4+), after it added the forwarding
// headers: the listener's rules, then the service's. SetHeader replaces
// the first header of the same name in place, or appends; DeleteHeader
// removes every line its pattern matches, including lines an earlier
// rule set or Pound itself added. poundSim replays those edits on a
// small array of fates instead of building a list, so the head is still
// written in one pass without allocating.

const (
	fateKeep int16 = 0  // sent as received (or as forwarding rewrote it)
	fateGone int16 = -1 // removed, or never present
	// A positive fate k is "replaced by SetHeader line k-1".
)

// maxFate bounds the entries simulated on the stack.
const maxFate = 256

// poundSim is one replay. Entries are the received headers [0,n), then
// the X-Forwarded-For, -Proto and -Port lines Pound appends [n,n+3),
// then one slot per SetHeader line that may be appended. The fates are
// kept out of the struct and passed along: escape analysis is not field
// sensitive, and the expander stored here must not drag the stack array
// to the heap.
type poundSim struct {
	c  *conn
	st *Listener
	e  *HeaderEdits
	p  fwdPlan
	n  int
	x  *expander // for SetHeader lines with $N or %[...]
}

func (c *conn) appendPoundHeadersEdited(st *Listener, e *HeaderEdits, dst []byte) []byte {
	var buf [maxFate]int16
	s := poundSim{c: c, st: st, e: e, p: c.planForwarded(st), n: len(c.req.Headers)}
	total := s.n + 3 + len(e.sets)
	var fate []int16
	if total <= len(buf) {
		fate = buf[:total]
	} else {
		fate = make([]int16, total)
	}
	s.init(fate)
	for i := range e.levels {
		s.apply(fate, &e.levels[i], dst[len(dst):])
	}
	for j := 0; j < s.n; j++ {
		dst = s.emit(fate, j, dst)
	}
	dst = c.appendFraming(dst, true)
	for j := s.n; j < total; j++ {
		dst = s.emit(fate, j, dst)
	}
	dst = c.appendSSLHeaders(dst)
	return append(dst, crlf...)
}

func (s *poundSim) init(fate []int16) {
	for j := range fate {
		fate[j] = fateGone
	}
	for j := 0; j < s.n; j++ {
		if s.c.role(&s.p, j) != fwdSkip {
			fate[j] = fateKeep
		}
	}
	if s.p.on {
		if s.p.xff < 0 {
			fate[s.n] = fateKeep
		}
		if s.p.proto < 0 {
			fate[s.n+1] = fateKeep
		}
		if s.p.port < 0 && s.p.withPort {
			fate[s.n+2] = fateKeep
		}
	}
}

// apply runs one level's rules; scratch is spare room for composing
// lines to match.
func (s *poundSim) apply(fate []int16, lv *editLevel, scratch []byte) {
	for _, pat := range lv.remove {
		for j := range fate {
			if fate[j] == fateGone {
				continue
			}
			line := s.emit(fate, j, scratch[:0])
			if pat.Match(line[:len(line)-len(crlf)]) {
				fate[j] = fateGone
			}
		}
	}
	for _, k := range lv.sets {
		j := s.find(fate, s.e.sets[k].name)
		if j < 0 {
			j = s.n + 3 + k
		}
		fate[j] = int16(k + 1)
	}
}

// find returns the first live entry named name, or -1.
func (s *poundSim) find(fate []int16, name string) int {
	for j, f := range fate {
		switch {
		case f == fateGone:
		case f > 0:
			if strings.EqualFold(s.e.sets[f-1].name, name) {
				return j
			}
		case j < s.n:
			if http1.EqualFold(s.c.req.Headers[j].Name, name) {
				return j
			}
		case strings.EqualFold(virtualNames[j-s.n], name):
			return j
		}
	}
	return -1
}

var virtualNames = [3]string{hdrXFF, hdrXFProto, hdrXFPort}

// emit appends entry j as it is sent, CRLF included.
func (s *poundSim) emit(fate []int16, j int, dst []byte) []byte {
	f := fate[j]
	switch {
	case f == fateGone:
		return dst
	case f > 0:
		return s.appendSet(int(f-1), dst)
	case j < s.n:
		return s.c.appendReceived(s.st, s.e, &s.p, j, dst)
	case j == s.n:
		dst = append(dst, hdrXFF...)
		dst = append(dst, ": "...)
		dst = appendAddr(dst, s.c.client)
		return append(dst, crlf...)
	case j == s.n+1:
		return appendLine(dst, hdrXFProto, s.st.Scheme)
	}
	return s.c.appendXFPort(s.st, dst)
}

// appendSet writes SetHeader line k, expanding $N and %[...] (Pound
// expands header values like redirect URLs).
func (s *poundSim) appendSet(k int, dst []byte) []byte {
	sl := &s.e.sets[k]
	if !sl.dyn {
		dst = append(dst, sl.line...)
		return append(dst, crlf...)
	}
	if s.x == nil {
		s.x = &expander{c: s.c, q: s.c.submatches(), anon: s.e.lst.anon}
	}
	start := len(dst)
	dst, n := s.x.expand(dst, sl.line)
	if n < 0 {
		// An invalid reference: Pound answers 500 (rewrite_apply
		// fails); forward sees the mark and answers so instead of
		// sending this head.
		dst = append(dst[:start], sl.line...)
		s.c.ex.badExpand = true
	}
	return append(dst, crlf...)
}
