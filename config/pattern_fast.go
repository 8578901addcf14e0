package config

import (
	"bytes"
	"regexp/syntax"
	"strings"
)

// Regexes that only spell out strings ("^Cookie:", "(?i)x-block",
// "\\.html$", "^(GET|HEAD)$") are matched by comparing those strings:
// Go's regexp runs its machine position by position even for them, while
// a comparison, with IndexByte to find where to compare, costs a few
// nanoseconds. Groups still come from the regex (SubmatchIndex).

// maxLiterals bounds the strings a regex may spell out to be compared.
const maxLiterals = 16

// literalSet returns the plain matchers equivalent to a regex that is a
// finite set of ASCII strings, optionally anchored at either end, or nil.
func literalSet(expr string) []*Pattern {
	if l := plainLiteral(expr); l != nil {
		return []*Pattern{l}
	}
	return literalSetParsed(expr)
}

// literalSetParsed is literalSet by parsing the regex.
func literalSetParsed(expr string) []*Pattern {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	begin := len(subs) > 0 && subs[0].Op == syntax.OpBeginText
	if begin {
		subs = subs[1:]
	}
	end := len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText
	if end {
		subs = subs[:len(subs)-1]
	}
	body := &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
	fold := -1 // unknown; 0 or 1 once a literal says
	strs, ok := finiteStrings(body, &fold)
	if !ok || len(strs) == 0 {
		return nil
	}
	kind := MatchContain
	switch {
	case begin && end:
		kind = MatchExact
	case begin:
		kind = MatchPrefix
	case end:
		kind = MatchSuffix
	}
	out := make([]*Pattern, len(strs))
	for i, s := range strs {
		l := &Pattern{Kind: kind, Text: s, IgnoreCase: fold == 1}
		l.foldKS = l.IgnoreCase && strings.ContainsAny(s, "kKsS")
		l.setAnchor()
		out[i] = l
	}
	return out
}

// plainLiteral is literalSet for a regex that is printable ASCII without
// a metacharacter, with ^ or $ at its ends or not ("^/app12/"), or nil.
// It gives literalSet's result without parsing: 10,000 URL services each
// had their pattern parsed and simplified at start (issue 36).
func plainLiteral(expr string) *Pattern {
	kind := MatchContain
	body, begin := strings.CutPrefix(expr, "^")
	body, end := strings.CutSuffix(body, "$")
	switch {
	case body == "":
		return nil
	case begin && end:
		kind = MatchExact
	case begin:
		kind = MatchPrefix
	case end:
		kind = MatchSuffix
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; c < ' ' || c > '~' || strings.IndexByte(`\.+*?()|[]{}^$`, c) >= 0 {
			return nil
		}
	}
	l := &Pattern{Kind: kind, Text: body}
	l.setAnchor()
	return l
}

// finiteStrings lists the strings re matches when it is made of ASCII
// literals, small classes, concatenation, alternation, groups and optional groups only, all literals
// folding case alike (fold records how), at most maxLiterals of them.
func finiteStrings(re *syntax.Regexp, fold *int) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		f := 0
		if re.Flags&syntax.FoldCase != 0 {
			f = 1
		}
		if *fold >= 0 && *fold != f {
			return nil, false
		}
		*fold = f
		for _, r := range re.Rune {
			if r >= 0x80 {
				return nil, false
			}
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCapture:
		return finiteStrings(re.Sub[0], fold)
	case syntax.OpCharClass: // "[ab]", or "(a|b)" simplified to it: one string per character
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= 0x80 || len(out)+int(hi-lo)+1 > maxLiterals {
				return nil, false
			}
			for r := lo; r <= hi; r++ {
				out = append(out, string(r))
			}
		}
		// The class lists every case it matches: its strings compare
		// exactly, so they cannot join literals that fold.
		if *fold == 1 || len(out) == 0 {
			return nil, false
		}
		*fold = 0
		return out, true
	case syntax.OpQuest: // "(www\.)?": the strings of the group, or none
		s, ok := finiteStrings(re.Sub[0], fold)
		if !ok || len(s)+1 > maxLiterals {
			return nil, false
		}
		return append([]string{""}, s...), true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s, ok := finiteStrings(sub, fold)
			if !ok || len(out)+len(s) > maxLiterals {
				return nil, false
			}
			out = append(out, s...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			s, ok := finiteStrings(sub, fold)
			if !ok || len(out)*len(s) > maxLiterals {
				return nil, false
			}
			next := make([]string, 0, len(out)*len(s))
			for _, a := range out {
				for _, b := range s {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

// setAnchor chooses the byte a -contain search looks for with IndexByte:
// the rarest in header text by a rough frequency order (byteRank), a
// letter that folds case (two searches) only when there is nothing else. For a literal that
// folds k or s the anchor must not be a k or an s nor follow one, so that
// it sits at a fixed offset in any match (anchorExact).
func (p *Pattern) setAnchor() {
	if p.Kind != MatchContain || p.Text == "" {
		return
	}
	best, bestRank := -1, 0
	for i := 0; i < len(p.Text); i++ {
		c := p.Text[i]
		if p.foldKS && strings.ContainsAny(p.Text[:i+1], "kKsS") {
			break
		}
		r := byteRank(c)
		if l := fold(c); p.IgnoreCase && l >= 'a' && l <= 'z' {
			// Two searches, each finding the byte more often than one
			// that has a single form: any other byte is better.
			r = byteRank(l) - 100
		}
		if best < 0 || r > bestRank {
			best, bestRank = i, r
		}
	}
	exact := best >= 0
	if !exact {
		best = 0
	}
	c := p.Text[best]
	p.anchorOK, p.anchorExact, p.anchorAt, p.anchorLo, p.anchorUp = true, exact, int32(best), c, c
	if l := fold(c); p.IgnoreCase && l >= 'a' && l <= 'z' {
		p.anchorLo, p.anchorUp = l, l-'a'+'A'
	}
}

// commonBytes orders the bytes of header lines, most frequent first (a
// guess from typical requests; letters folded).
const commonBytes = " e-tanosircl/hd.:,;=0123456789pumgw*bfyvkxjqz"

// byteRank is how rare c is: its place in commonBytes, more for bytes
// not in it.
func byteRank(c byte) int {
	if i := strings.IndexByte(commonBytes, fold(c)); i >= 0 && (c < 'A' || c > 'Z') {
		return i
	}
	if i := strings.IndexByte(commonBytes, fold(c)); i >= 0 {
		return i + 2 // an upper-case letter, searched for as written
	}
	return len(commonBytes) + 1
}

// matchBytes is plainMatch for a byte slice, searching a -contain text
// with IndexByte.
func matchBytes(p *Pattern, s []byte) bool {
	if p.Kind != MatchContain || !p.anchorOK {
		return plainMatch(p, s)
	}
	t, anchorAt := p.Text, int(p.anchorAt)
	last := len(s) - len(t) // the last offset a match can start at
	for from := anchorAt; from-anchorAt <= last; {
		j := indexEither(s[from:last+anchorAt+1], p.anchorLo, p.anchorUp)
		if j < 0 {
			return false
		}
		at := from + j - anchorAt
		if eqAt(s, at, t, p.IgnoreCase) {
			return true
		}
		from += j + 1
	}
	return false
}

// indexEither is the first index of a or b in s, or -1.
func indexEither(s []byte, a, b byte) int {
	i := bytes.IndexByte(s, a)
	if a == b {
		return i
	}
	if i >= 0 {
		s = s[:i]
	}
	if j := bytes.IndexByte(s, b); j >= 0 {
		return j
	}
	return i
}

// hasFoldKS reports whether s may hold the Kelvin sign (E2 84 AA) or the
// long s (C5 BF), which regexp folds with k and s.
func hasFoldKS(s []byte) bool {
	return bytes.IndexByte(s, 0xE2) >= 0 || bytes.IndexByte(s, 0xC5) >= 0
}

func hasFoldKSString(s string) bool {
	return strings.IndexByte(s, 0xE2) >= 0 || strings.IndexByte(s, 0xC5) >= 0
}

// matchLit matches a literal of a regex against s. unsure reports a
// subject it cannot decide, which the regex must: a literal folding k or
// s that no anchored comparison covers (a suffix, or a -contain without
// an exact anchor) on a subject that may hold the Kelvin sign or the
// long s.
func matchLit(l *Pattern, s []byte) (ok, unsure bool) {
	if !l.foldKS {
		return matchBytes(l, s), false
	}
	switch {
	case l.Kind == MatchPrefix || l.Kind == MatchExact:
		n, ok := eqFoldKS(s, l.Text, true)
		return ok && (l.Kind == MatchPrefix || n == len(s)), false
	case l.Kind == MatchContain && l.anchorExact:
		return containFoldKS(l, s), false
	}
	if matchBytes(l, s) {
		return true, false
	}
	return false, hasFoldKS(s)
}

// containFoldKS is matchBytes for a -contain literal folding k or s
// whose anchor has no k or s before it: where the anchor byte is found,
// the match would start anchorAt bytes before.
func containFoldKS(l *Pattern, s []byte) bool {
	anchorAt := int(l.anchorAt)
	for from := anchorAt; from < len(s); {
		j := indexEither(s[from:], l.anchorLo, l.anchorUp)
		if j < 0 {
			return false
		}
		if _, ok := eqFoldKS(s[from+j-anchorAt:], l.Text, true); ok {
			return true
		}
		from += j + 1
	}
	return false
}

// eqFoldKS compares t with the start of s as a case-folding regex does
// (icase): ASCII letters fold as usual, k also with the Kelvin sign and
// s with the long s. n is the length of s that matched.
func eqFoldKS(s []byte, t string, icase bool) (n int, ok bool) {
	for i := 0; i < len(t); i++ {
		if n >= len(s) {
			return 0, false
		}
		c := s[n]
		if c < 0x80 {
			if c != t[i] && (!icase || fold(c) != fold(t[i])) {
				return 0, false
			}
			n++
			continue
		}
		switch f := fold(t[i]); {
		case icase && f == 'k' && bytes.HasPrefix(s[n:], kelvin):
			n += len(kelvin)
		case icase && f == 's' && bytes.HasPrefix(s[n:], longS):
			n += len(longS)
		default:
			return 0, false
		}
	}
	return n, true
}

var (
	kelvin = []byte("\u212a")
	longS  = []byte("\u017f")
)

// FieldName reports the field name (to compare without regard to case)
// a pattern on whole header lines amounts to: a case-folding prefix "Name:" (the regex "^Name:", or
// -beg "Name:") holds for a line exactly when the line's field name is
// Name, because the header lines lbd matches always have a token for a
// name (the parser refuses others, SetHeader and the additions are
// checked at load), so no Kelvin sign or long s can be in one.
func (p *Pattern) FieldName() (string, bool) {
	l := p
	switch {
	case p.Re2 != nil:
		return "", false
	case p.lits != nil:
		if len(p.lits) != 1 {
			return "", false
		}
		l = p.lits[0]
	case p.Kind == MatchRegex:
		return "", false
	}
	n := len(l.Text) - 1
	if l.Kind != MatchPrefix || !l.IgnoreCase || n < 1 || l.Text[n] != ':' || !isToken(l.Text[:n]) {
		return "", false
	}
	return l.Text[:n], true
}
