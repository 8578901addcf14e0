package waf

import (
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/macro"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/dlclark/regexp2"
)

// ModSecurity's @rx is PCRE; Coraza's is Go's RE2, which has no
// look-behind, back-references or atomic groups. Rule sets written for
// ModSecurity use them (Debian's CRS 3.3 does, in a dozen rules; CRS 4
// was rewritten to avoid them). lbd runs such a pattern, and only such a
// pattern, with a backtracking engine (regexp2, already lbd's engine for
// Pound's PCRE conditions) under its own operator name; every pattern RE2
// accepts keeps Coraza's fast path.
const pcreOperator = "lbdrx"

// pcreMatchTimeout bounds one match, as SecPcreMatchLimit bounds PCRE's
// backtracking: a pattern that runs away is no match, not a stuck request.
const pcreMatchTimeout = 100 * time.Millisecond

func init() {
	plugins.RegisterOperator(pcreOperator, newPCRE)
}

type pcre struct{ re *regexp2.Regexp }

func newPCRE(opt plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	// (?s) and (?m): the flags Coraza's @rx applies (dotall, multiline).
	re, err := regexp2.Compile("(?sm)"+opt.Arguments, regexp2.None)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = pcreMatchTimeout
	return &pcre{re: re}, nil
}

func (o *pcre) Evaluate(tx plugintypes.TransactionState, value string) bool {
	m, err := o.re.FindStringMatch(value)
	if err != nil || m == nil {
		return false
	}
	if tx.Capturing() {
		for i, g := range m.Groups() {
			if i == 9 {
				break
			}
			tx.CaptureField(i, g.String())
		}
	}
	return true
}

// engineFor says which engine an @rx pattern runs on: RE2 (Coraza's
// own), the backtracking engine when only it takes the pattern, or
// neither (Coraza then reports the pattern's error).
func engineFor(pattern string) (re2, backtrack bool) {
	if _, err := regexp.Compile("(?sm)" + pattern); err == nil {
		return true, false
	}
	_, err := regexp2.Compile("(?sm)"+pattern, regexp2.None)
	return false, err == nil
}

// dePossessive drops PCRE's possessive marks (x*+ x++ x?+ x{n}+), which
// neither RE2 nor regexp2 has. A possessive quantifier never gives back
// what it took; rule sets use it to bound backtracking, and on the
// patterns they are written for the greedy form matches the same inputs.
func dePossessive(p string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			i++
			c = p[i]
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == ']' { // []...] has a literal ]
				b.WriteByte(c)
				i++
				c = p[i]
			}
		case c == '+' && i > 0 && strings.IndexByte("*+?}", p[i-1]) >= 0 && !escapedAt(p, i-1):
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// escapedAt reports whether p[i] is preceded by an odd run of backslashes.
func escapedAt(p string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && p[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// pcreOperatorLine rewrites the operator of a SecRule directive whose
// first line is line, when its @rx pattern (explicit, or implicit: an
// operator without @) holds a macro (macroOperator), has possessive
// quantifiers (dropped) or needs the backtracking engine (the operator
// renamed). The operator is the second
// argument, a quoted string on the first line.
func pcreOperatorLine(line string) string {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 8 || !strings.EqualFold(t[:8], "secrule ") {
		return line
	}
	rest := strings.TrimLeft(t[8:], " ")
	_, rest, ok := strings.Cut(rest, " ") // the variables
	if !ok {
		return line
	}
	rest = strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(rest, `"`) {
		return line
	}
	end := closingQuote(rest)
	if end < 0 {
		return line
	}
	opStart := len(line) - len(rest) + 1 // offset of the operator text in line
	raw := rest[1:end]
	body := strings.TrimPrefix(raw, "!")
	skip := len(raw) - len(body) // the negation
	name := 0                    // length of the operator name ("@rx ") in body
	switch {
	case strings.HasPrefix(body, "@rx "):
		name = 4
	case strings.HasPrefix(body, "@"):
		return line
	}
	if strings.Contains(body[name:], "%{") {
		return line[:opStart+skip] + "@" + macroOperator + " " + body[name:] + line[opStart+len(raw):]
	}
	fixed := dePossessive(body[name:])
	re2, backtrack := engineFor(strings.ReplaceAll(fixed, `\"`, `"`))
	if !re2 && !backtrack {
		return line
	}
	op := body[:name]
	if backtrack {
		op = "@" + pcreOperator + " "
	}
	if op == body[:name] && fixed == body[name:] {
		return line
	}
	return line[:opStart+skip] + op + fixed + line[opStart+len(raw):]
}

// closingQuote finds the quote that ends the quoted string s starts
// with (a quote after an odd run of backslashes is escaped).
func closingQuote(s string) int {
	escapes := 0
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			escapes++
			continue
		case '"':
			if escapes%2 == 0 {
				return i
			}
		}
		escapes = 0
	}
	return -1
}

// ModSecurity expands macros (%{tx.name}) in an @rx pattern for each
// transaction before it compiles it; Coraza takes the text literally, so
// a CRS 3 rule such as 920480 (the charset of Content-Type against
// %{tx.allowed_request_content_type_charset}) never matches and its
// negation always does. Such a pattern runs under this operator, which
// expands it and compiles each expansion once.
const macroOperator = "lbdrxm"

// maxExpansions bounds the compiled expansions one rule keeps: the
// variables rules put in patterns are settings, not request data.
const maxExpansions = 64

func init() {
	plugins.RegisterOperator(macroOperator, newMacroRX)
}

type macroRX struct {
	m  macro.Macro
	mu sync.Mutex
	re map[string]plugintypes.Operator
}

func newMacroRX(opt plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	m, err := macro.NewMacro(opt.Arguments)
	if err != nil {
		return nil, err
	}
	return &macroRX{m: m, re: map[string]plugintypes.Operator{}}, nil
}

func (o *macroRX) Evaluate(tx plugintypes.TransactionState, value string) bool {
	pattern := o.m.Expand(tx)
	o.mu.Lock()
	op, ok := o.re[pattern]
	o.mu.Unlock()
	if !ok {
		var err error
		if op, err = compileRX(pattern); err != nil {
			return false // ModSecurity logs it and does not match either
		}
		o.mu.Lock()
		if len(o.re) < maxExpansions {
			o.re[pattern] = op
		}
		o.mu.Unlock()
	}
	return op.Evaluate(tx, value)
}

// compileRX compiles an expanded pattern as @rx does (RE2), else on the
// backtracking engine.
func compileRX(pattern string) (plugintypes.Operator, error) {
	pattern = dePossessive(pattern)
	if op, err := newRX(plugintypes.OperatorOptions{Arguments: pattern}); err == nil {
		return op, nil
	}
	return newPCRE(plugintypes.OperatorOptions{Arguments: pattern})
}
