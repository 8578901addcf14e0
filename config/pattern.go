package config

import (
	"errors"
	"regexp"
	"regexp/syntax"

	"lbd/parser"
)

// patternFlags are Pound 4's matching options (src/config.c cond_re_flags).
// "name=" flags take an argument.
var patternFlags = []string{"re", "exact", "beg", "end", "contain", "icase", "case",
	"posix", "pcre", "perl", "file=", "filewatch=", "tag=", "decode"}

// patOpts is the outcome of a pattern's leading -flags.
type patOpts struct {
	kind  PatternKind
	icase bool
	file  *parser.Arg // -file / -filewatch: patterns come from this file
}

// patternOpts consumes the leading flags of u, starting from the
// directive's default kind and case sensitivity, and returns the rest.
func (b *builder) patternOpts(u []unit, kind PatternKind, icase bool) (patOpts, []unit) {
	o := patOpts{kind: kind, icase: icase}
	for len(u) > 0 && u[0].code == 'f' {
		f := u[0]
		u = u[1:]
		switch name := f.arg.Text[1:]; name {
		case "re", "posix", "pcre", "perl":
			// Go's RE2 syntax covers the POSIX ERE and the common PCRE subset.
			o.kind = MatchRegex
		case "exact":
			o.kind = MatchExact
		case "beg":
			o.kind = MatchPrefix
		case "end":
			o.kind = MatchSuffix
		case "contain":
			o.kind = MatchContain
		case "icase":
			o.icase = true
		case "case":
			o.icase = false
		case "file":
			o.file = f.val
		case "filewatch":
			b.unsupported("-filewatch", f.arg.Span)
			o.file = f.val
		default: // tag, decode
			b.unsupported("-"+name, f.arg.Span)
		}
	}
	return o, u
}

// patternArgs builds a single pattern from "[flags] pattern" arguments.
func (b *builder) patternArgs(u []unit, kind PatternKind, icase bool) *Pattern {
	o, rest := b.patternOpts(u, kind, icase)
	if o.file != nil {
		b.errorf(u[0].arg.Span, "-file is not allowed here")
		return nil
	}
	return b.compile(rest[0].arg, o.kind, o.icase)
}

// compile makes a Pattern from argument a; a bad regex is reported at a.
func (b *builder) compile(a parser.Arg, kind PatternKind, icase bool) *Pattern {
	p, err := NewPattern(kind, a.Text, icase)
	if err != nil {
		b.errorf(a.Span, "%s", err.Error())
		return nil
	}
	return p
}

// NewPattern compiles a pattern of the given kind.
func NewPattern(kind PatternKind, text string, icase bool) (*Pattern, error) {
	p := &Pattern{Kind: kind, Text: text, IgnoreCase: icase}
	if kind != MatchRegex {
		return p, nil
	}
	expr := text
	if icase {
		expr = "(?i)" + text
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, errors.New("invalid regular expression: " + se.Code.String() + ": `" + se.Expr + "`")
		}
		return nil, errors.New("invalid regular expression: " + err.Error())
	}
	p.Re = re
	return p, nil
}

// MatchString reports whether s matches. It does not allocate.
func (p *Pattern) MatchString(s string) bool {
	if p.Kind == MatchRegex {
		return p.Re.MatchString(s)
	}
	return plainMatch(p, s)
}

// Match is MatchString for a byte slice (a header line in a read buffer).
// It does not allocate.
func (p *Pattern) Match(s []byte) bool {
	if p.Kind == MatchRegex {
		return p.Re.Match(s)
	}
	return plainMatch(p, s)
}

func plainMatch[S ~string | ~[]byte](p *Pattern, s S) bool {
	t := p.Text
	switch p.Kind {
	case MatchExact:
		return len(s) == len(t) && eqAt(s, 0, t, p.IgnoreCase)
	case MatchPrefix:
		return len(s) >= len(t) && eqAt(s, 0, t, p.IgnoreCase)
	case MatchSuffix:
		return len(s) >= len(t) && eqAt(s, len(s)-len(t), t, p.IgnoreCase)
	case MatchContain:
		for i := 0; i+len(t) <= len(s); i++ {
			if eqAt(s, i, t, p.IgnoreCase) {
				return true
			}
		}
	}
	return false
}

// eqAt compares s[off:off+len(t)] with t, folding ASCII case when icase
// (Pound's comparisons are in the C locale).
func eqAt[S ~string | ~[]byte](s S, off int, t string, icase bool) bool {
	for i := 0; i < len(t); i++ {
		a, c := s[off+i], t[i]
		if a == c {
			continue
		}
		if !icase || fold(a) != fold(c) {
			return false
		}
	}
	return true
}

func fold(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
