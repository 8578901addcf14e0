package config

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
