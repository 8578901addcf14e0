package config

import (
	"regexp/syntax"
	"strings"
)

// PlainForms reports the plain strings a pattern amounts to, for an index
// that must find every subject the pattern can match (package routeindex):
// a plain -exact, -beg or -end pattern is its Text; a regex that only
// spells out anchored strings ("^/app/", "^(www\.)?example\.com$") is the
// literals it reduces to, all of one kind. ok is false for anything else
// (-contain, PCRE, a regex with classes or repetition).
//
// foldKS reports that a literal folds k or s, which a case-folding regex
// also matches with the Kelvin sign and the long s: a subject holding
// those bytes can match although its ASCII folding equals no text.
func (p *Pattern) PlainForms() (kind PatternKind, texts []string, icase, foldKS, ok bool) {
	switch {
	case p == nil || p.Re2 != nil:
		return "", nil, false, false, false
	case p.lits != nil:
		kind, icase = p.lits[0].Kind, p.lits[0].IgnoreCase
		for _, l := range p.lits {
			if l.Kind != kind {
				return "", nil, false, false, false
			}
			texts = append(texts, l.Text)
		}
		return kind, texts, icase, p.foldKS, kind != MatchContain
	case p.Kind == MatchRegex || p.Kind == MatchContain:
		return "", nil, false, false, false
	}
	return p.Kind, []string{p.Text}, p.IgnoreCase, false, true
}

// RequiredPrefix reports a string every subject a regex pattern matches
// must start with: the literal text after its leading ^ ("^/api/v[0-9]+/"
// gives "/api/v"), for an index to file the pattern under. icase and
// foldKS are as for PlainForms. ok is false for plain kinds (see
// PlainForms), PCRE, and regexes not anchored at the start of the text
// by a literal.
func (p *Pattern) RequiredPrefix() (prefix string, icase, foldKS, ok bool) {
	if p == nil || p.Kind != MatchRegex || p.Re2 != nil {
		return "", false, false, false
	}
	expr := p.Text
	if p.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return "", false, false, false
	}
	var b strings.Builder
	fold := -1
	for _, sub := range re.Sub[1:] {
		if sub.Op != syntax.OpLiteral {
			break
		}
		f := 0
		if sub.Flags&syntax.FoldCase != 0 {
			f = 1
		}
		if fold >= 0 && f != fold {
			break
		}
		fold = f
		for _, r := range sub.Rune {
			if r >= 0x80 {
				return "", false, false, false
			}
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "", false, false, false
	}
	prefix, icase = b.String(), fold == 1
	return prefix, icase, icase && strings.ContainsAny(prefix, "kKsS"), true
}
