package proxy

import (
	"lbd/config"
)

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// zproxyReplace is zproxy's str_replace_regexp: the part of subject the
// pattern matched is replaced by repl with $0..$9 expanded; the text
// after the match is kept only when the match was not empty. off is
// where the replacement ends in the appended result; ok is false when
// the pattern does not match.
func zproxyReplace(dst, subject []byte, re *config.Pattern, repl string) (out []byte, off int, ok bool) {
	if re == nil || re.Re == nil {
		return dst, 0, false
	}
	m := re.Re.FindSubmatchIndex(subject)
	if m == nil {
		return dst, 0, false
	}
	start := len(dst)
	dst = append(dst, subject[:m[0]]...)
	for i := 0; i < len(repl); i++ {
		switch {
		case repl[i] == '$' && i+1 < len(repl) && repl[i+1] == '$':
			dst = append(dst, '$')
			i++
		case repl[i] == '$' && i+1 < len(repl) && isDigit(repl[i+1]):
			if g := int(repl[i+1] - '0'); 2*g+1 < len(m) && m[2*g] >= 0 {
				dst = append(dst, subject[m[2*g]:m[2*g+1]]...)
			}
			i++
		default:
			dst = append(dst, repl[i])
		}
	}
	off = len(dst) - start
	if m[1] != m[0] {
		dst = append(dst, subject[m[1]:]...)
	}
	return dst, off, true
}
