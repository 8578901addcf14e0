package config

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"time"

	"github.com/dlclark/regexp2"

	"lbd/parser"
)

// patternFlags are Pound 4's matching options (src/config.c cond_re_flags).
// "name=" flags take an argument.
var patternFlags = []string{"re", "exact", "beg", "end", "contain", "icase", "case",
	"posix", "pcre", "perl", "file=", "filewatch=", "tag=", "decode"}

// patOpts is the outcome of a pattern's leading -flags.
type patOpts struct {
	kind   PatternKind
	icase  bool
	pcre   bool
	file   *parser.Arg // -file / -filewatch: patterns come from this file
	watch  bool        // -filewatch: and the file is followed while running
	tag    string
	decode bool
}

// patternOpts consumes the leading flags of u, starting from the
// directive's default kind and case sensitivity, and returns the rest.
func (b *builder) patternOpts(u []unit, kind PatternKind, icase bool) (patOpts, []unit) {
	o := patOpts{kind: kind, icase: icase, pcre: b.pcre}
	for len(u) > 0 && u[0].code == 'f' {
		f := u[0]
		u = u[1:]
		switch name := f.arg.Text[1:]; name {
		case "re":
			o.kind = MatchRegex
		case "posix":
			// Go's RE2 syntax covers POSIX ERE.
			o.kind, o.pcre = MatchRegex, false
		case "pcre", "perl":
			o.kind, o.pcre = MatchRegex, true
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
			o.file, o.watch = f.val, true
		case "tag":
			o.tag = f.val.Text
		case "decode":
			o.decode = true
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
	return b.compileOpts(rest[0].arg, o)
}

// compile makes a Pattern from argument a; a bad regex is reported at a.
func (b *builder) compile(a parser.Arg, kind PatternKind, icase bool) *Pattern {
	return b.compileOpts(a, patOpts{kind: kind, icase: icase})
}

// compileOpts is compile with the -pcre choice.
func (b *builder) compileOpts(a parser.Arg, o patOpts) *Pattern {
	p, err := newPattern(o.kind, a.Text, o.icase, o.pcre)
	if err != nil {
		b.errorf(a.Span, "%s", err.Error())
		return nil
	}
	return p
}

// NewPattern compiles a pattern of the given kind (regexes in Go's RE2
// syntax, which covers POSIX ERE).
func NewPattern(kind PatternKind, text string, icase bool) (*Pattern, error) {
	return newPattern(kind, text, icase, false)
}

// NewPCREPattern compiles a Perl-compatible regex (-pcre).
func NewPCREPattern(text string, icase bool) (*Pattern, error) {
	return newPattern(MatchRegex, text, icase, true)
}

func newPattern(kind PatternKind, text string, icase, pcre bool) (*Pattern, error) {
	p := &Pattern{Kind: kind, Text: text, IgnoreCase: icase}
	if kind != MatchRegex {
		p.setAnchor()
		return p, nil
	}
	if pcre {
		re, err := newPCRE(text, icase)
		if err != nil {
			return nil, err
		}
		p.PCRE, p.Re2 = true, re
		return p, nil
	}
	expr := text
	if icase {
		expr = "(?i)" + text
	}
	if p.lits = literalSet(expr); p.lits != nil {
		// Matching compares strings; the regex is for groups only, so it
		// compiles when first needed (a regexp is ~2 kB, and 10,000 URL
		// services each have one). literalSet parsed expr as Compile
		// would, so it cannot fail then.
		for _, l := range p.lits {
			p.foldKS = p.foldKS || l.foldKS
		}
		return p, nil
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

// Regexp is the compiled Go regex of a regex pattern (nil for PCRE and
// plain kinds), compiling it on first use for one that reduces to
// literals. Two first uses at once may both compile; one result stays.
func (p *Pattern) Regexp() *regexp.Regexp {
	if p.Re != nil || p.lits == nil {
		return p.Re
	}
	if re := p.lazy.Load(); re != nil {
		return re
	}
	expr := p.Text
	if p.IgnoreCase {
		expr = "(?i)" + expr
	}
	p.lazy.CompareAndSwap(nil, regexp.MustCompile(expr))
	return p.lazy.Load()
}

// MatchString reports whether s matches. It does not allocate (except
// for PCRE patterns, whose engine works on runes).
func (p *Pattern) MatchString(s string) bool {
	switch {
	case p.Re2 != nil:
		ok, err := p.Re2.MatchString(s)
		return ok && err == nil // err: the match timed out, see newPCRE
	case p.lits != nil:
		for _, l := range p.lits {
			if plainMatch(l, s) {
				return true
			}
		}
		// No ASCII comparison holds: only a k or an s folded with the
		// Kelvin sign or the long s could still make the regex match.
		return p.foldKS && hasFoldKSString(s) && p.Regexp().MatchString(s)
	case p.Kind == MatchRegex:
		return p.Re.MatchString(s)
	}
	return plainMatch(p, s)
}

// Match is MatchString for a byte slice (a header line in a read buffer).
// It does not allocate.
func (p *Pattern) Match(s []byte) bool {
	switch {
	case p.Re2 != nil:
		return p.MatchString(string(s))
	case p.lits != nil:
		undecided := false
		for _, l := range p.lits {
			ok, unsure := matchLit(l, s)
			if ok {
				return true
			}
			undecided = undecided || unsure
		}
		return undecided && p.Regexp().Match(s)
	case p.Kind == MatchRegex:
		return p.Re.Match(s)
	}
	return matchBytes(p, s)
}

// SubmatchIndex returns the group offsets of the first match in s (as
// regexp's FindSubmatchIndex); plain kinds capture the whole subject as
// group 0. It allocates, so it runs only when an expansion needs groups.
func (p *Pattern) SubmatchIndex(s []byte) []int {
	switch {
	case p.Re2 != nil:
		m, err := p.Re2.FindStringMatch(string(s))
		if err != nil || m == nil {
			return nil
		}
		return pcreIndex(m, s)
	case p.Kind == MatchRegex:
		return p.Regexp().FindSubmatchIndex(s)
	}
	if plainMatch(p, s) {
		return []int{0, len(s)}
	}
	return nil
}

// pcreIndex converts regexp2's rune offsets to byte offsets.
func pcreIndex(m *regexp2.Match, s []byte) []int {
	groups := m.Groups()
	runeToByte := make([]int, 0, len(s)+1)
	for i := range string(s) {
		runeToByte = append(runeToByte, i)
	}
	runeToByte = append(runeToByte, len(s))
	idx := make([]int, 2*len(groups))
	for i, g := range groups {
		if len(g.Captures) == 0 {
			idx[2*i], idx[2*i+1] = -1, -1
			continue
		}
		idx[2*i], idx[2*i+1] = runeToByte[g.Index], runeToByte[g.Index+g.Length]
	}
	return idx
}

// pcreTimeout bounds one PCRE match: a backtracking engine can be driven
// exponential by a hostile subject, and a request must not pin a CPU.
const pcreTimeout = 100 * time.Millisecond

// newPCRE compiles Perl syntax with regexp2 (look-around and
// back-references, which Go's RE2 refuses).
func newPCRE(text string, icase bool) (*regexp2.Regexp, error) {
	opt := regexp2.RegexOptions(regexp2.None)
	if icase {
		opt |= regexp2.IgnoreCase
	}
	re, err := regexp2.Compile(text, opt)
	if err != nil {
		return nil, errors.New("invalid regular expression: " + err.Error())
	}
	re.MatchTimeout = pcreTimeout
	return re, nil
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
		if len(t) == 0 {
			return true
		}
		// Compare only where the first byte matches (either case).
		lo, up := t[0], t[0]
		if p.IgnoreCase {
			lo, up = fold(t[0]), t[0]&^0x20
			if lo < 'a' || lo > 'z' {
				up = lo
			}
		}
		for i := 0; i+len(t) <= len(s); i++ {
			if c := s[i]; (c == lo || c == up) && eqAt(s, i, t, p.IgnoreCase) {
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
