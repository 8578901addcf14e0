package waf

import (
	"regexp"
	"strconv"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	re2 "github.com/wasilibs/go-re2"
	"github.com/wasilibs/go-re2/experimental"
)

// Coraza's @rx runs Go's regexp, whose NFA costs the Core Rule Set 17 ms
// of CPU on a 4 KiB form (BenchmarkCRSFormPOST; libmodsecurity's PCRE
// JIT takes a third of that). The same patterns on RE2 itself (its DFA
// decides most non-matches in one pass) take 3 ms. go-re2 is RE2
// compiled to Go (no cgo, no system library): lbd registers it as @rx.
// The syntax is RE2's in both, so every pattern means the same; one RE2
// refuses falls back to Go's regexp.
func init() {
	plugins.RegisterOperator("rx", newRX)
}

// matcher is what both engines offer the operator.
type matcher interface {
	MatchString(string) bool
	FindStringSubmatchIndex(string) []int
}

type rxOp struct{ re matcher }

func newRX(opt plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	// (?s) and (?m): dotall and multiline, as Coraza's @rx (and
	// ModSecurity's PCRE flags).
	pattern := "(?sm)" + opt.Arguments
	var re matcher
	var err error
	if arbitraryBytes(opt.Arguments) {
		// \x80-\xff stand for bytes, not runes: Latin-1 mode, as
		// Coraza's binary matcher.
		re, err = experimental.CompileLatin1(pattern)
	} else {
		re, err = re2.Compile(pattern)
	}
	if err != nil {
		std, stdErr := regexp.Compile(pattern)
		if stdErr != nil {
			return nil, stdErr
		}
		re = std
	}
	return &rxOp{re: re}, nil
}

func (o *rxOp) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if !tx.Capturing() {
		return o.re.MatchString(value)
	}
	m := o.re.FindStringSubmatchIndex(value)
	if m == nil {
		return false
	}
	// TX:0 to TX:8, as Coraza's @rx.
	for i := 0; i < len(m)/2 && i < 9; i++ {
		if m[2*i] >= 0 {
			tx.CaptureField(i, value[m[2*i]:m[2*i+1]])
		} else {
			tx.CaptureField(i, "")
		}
	}
	return true
}

// arbitraryBytes reports whether a pattern names a byte above 0x7f with
// a \xNN or \x{NN} escape (CRS 941310's US-ASCII malformed encoding).
func arbitraryBytes(p string) bool {
	for i := 0; i+3 < len(p); i++ {
		if p[i] != '\\' {
			continue
		}
		if p[i+1] != 'x' {
			i++ // an escaped character: \\x is not an escape of x
			continue
		}
		hex := p[i+2 : i+4]
		if p[i+2] == '{' {
			end := i + 3
			for end < len(p) && p[end] != '}' {
				end++
			}
			hex = p[i+3 : end]
		}
		if v, err := strconv.ParseUint(hex, 16, 32); err == nil && v >= 0x80 && v <= 0xff {
			return true
		}
	}
	return false
}
