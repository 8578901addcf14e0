package tmpl

import (
	"fmt"
	"strconv"
	"strings"
)

type tokKind int

const (
	tEOF    tokKind = iota
	tText           // text outside actions
	tOpen           // {{ (a trailing "- " trims the text before it)
	tClose          // }} (" -}}" trims the text after it)
	tIdent          // keyword or function name
	tNumber         // 12, -1.5, 0x1f
	tString         // "text", unquoted
	tDot            // .
	tField          // .name (text without the dot)
	tVar            // $name (text without the dollar)
	tChar           // any other character: ( ) | , = _
)

type token struct {
	kind tokKind
	text string
	num  float64
	pos  int // offset in the source
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tOpen:
		return `"{{"`
	case tClose:
		return `"}}"`
	case tString:
		return strconv.Quote(t.text)
	case tField:
		return strconv.Quote("." + t.text)
	case tVar:
		return strconv.Quote("$" + t.text)
	}
	return strconv.Quote(t.text)
}

// lexer splits a template. Text and actions are read by different calls
// (text and next), as the parser knows which it expects; one action token
// can be put back.
type lexer struct {
	src  string
	pos  int
	back *token
}

// syntaxError is a parse error at an offset, printed as LINE:COL.
type syntaxError struct {
	pos int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

func (l *lexer) errorf(pos int, format string, a ...any) error {
	return &syntaxError{pos: pos, msg: fmt.Sprintf(format, a...)}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// at reports whether the source continues with s at offset i.
func (l *lexer) at(i int, s string) bool { return strings.HasPrefix(l.src[i:], s) }

// trimOpen reports whether the "{{" at offset i is "{{- ", which trims
// the text before it.
func (l *lexer) trimOpen(i int) bool {
	return i+3 < len(l.src) && l.src[i+2] == '-' && isSpace(l.src[i+3])
}

// text returns the text up to the next action, or the opening of the
// action when no text comes first.
func (l *lexer) text() token {
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tEOF, pos: start}
	}
	i := strings.Index(l.src[start:], "{{")
	if i < 0 {
		l.pos = len(l.src)
		return token{kind: tText, text: l.src[start:], pos: start}
	}
	open := start + i
	end := open
	if l.trimOpen(open) {
		for end > start && isSpace(l.src[end-1]) {
			end--
		}
	}
	if end > start {
		l.pos = open
		return token{kind: tText, text: l.src[start:end], pos: start}
	}
	l.pos = open + 2
	if l.trimOpen(open) {
		l.pos += 2
	}
	return token{kind: tOpen, pos: open}
}

// backup puts t back, to be returned by the next call of next.
func (l *lexer) backup(t token) { l.back = &t }

// spaceNext reports whether a space (or the end) follows the last token
// read, which ends a chain of fields: ".a.b" is one operand, ".a .b" two.
func (l *lexer) spaceNext() bool {
	return l.back == nil && (l.pos >= len(l.src) || isSpace(l.src[l.pos]))
}

// next returns the next token of an action. Comments count as spaces.
func (l *lexer) next() (token, error) {
	if l.back != nil {
		t := *l.back
		l.back = nil
		return t, nil
	}
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tEOF, pos: start}, nil
	}
	c := l.src[start]
	switch {
	case isAlpha(c):
		return l.word(tIdent, start, start, false), nil
	case isDigit(c), c == '-' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		return l.number(start)
	case c == '"':
		return l.quoted(start)
	case c == '.' && start+1 < len(l.src) && isAlpha(l.src[start+1]):
		return l.word(tField, start, start+1, true), nil
	case c == '.':
		l.pos++
		return token{kind: tDot, text: ".", pos: start}, nil
	case c == '$' && start+1 < len(l.src) && isAlpha(l.src[start+1]):
		return l.word(tVar, start, start+1, false), nil
	case l.at(start, "{{"):
		l.pos += 2
		return token{kind: tOpen, pos: start}, nil
	case l.at(start, "}}"):
		l.pos += 2
		return token{kind: tClose, pos: start}, nil
	case c == '-' && start > 0 && isSpace(l.src[start-1]) && l.at(start+1, "}}"):
		l.pos += 3
		for l.pos < len(l.src) && isSpace(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tClose, pos: start}, nil
	}
	l.pos++
	return token{kind: tChar, text: string(c), pos: start}, nil
}

// skipSpace skips spaces and /* comments */.
func (l *lexer) skipSpace() error {
	for l.pos < len(l.src) {
		switch {
		case isSpace(l.src[l.pos]):
			l.pos++
		case l.at(l.pos, "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return l.errorf(l.pos, "unexpected end of file in a comment")
			}
			l.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// word reads a name starting at from (the token itself starts at start);
// field names may also contain '-'.
func (l *lexer) word(kind tokKind, start, from int, dash bool) token {
	i := from + 1
	for i < len(l.src) && (isAlnum(l.src[i]) || l.src[i] == '_' || dash && l.src[i] == '-') {
		i++
	}
	l.pos = i
	return token{kind: kind, text: l.src[from:i], pos: start}
}

// number reads the longest prefix that is a number as C's strtod reads
// it: decimal with fraction and exponent, or hexadecimal.
func (l *lexer) number(start int) (token, error) {
	i := start
	if l.src[i] == '-' {
		i++
	}
	digits := func(hex bool) {
		for i < len(l.src) && (isDigit(l.src[i]) || hex && strings.IndexByte("abcdefABCDEF", l.src[i]) >= 0) {
			i++
		}
	}
	hex := l.at(i, "0x") || l.at(i, "0X")
	if hex {
		i += 2
	}
	digits(hex)
	if i < len(l.src) && l.src[i] == '.' {
		i++
		digits(hex)
	}
	if e := i; !hex && e < len(l.src) && (l.src[e] == 'e' || l.src[e] == 'E') {
		e++
		if e < len(l.src) && (l.src[e] == '+' || l.src[e] == '-') {
			e++
		}
		if e < len(l.src) && isDigit(l.src[e]) {
			i = e
			digits(false)
		}
	}
	text := l.src[start:i]
	var n float64
	var err error
	if hex {
		var v int64
		v, err = strconv.ParseInt(strings.Replace(strings.TrimSuffix(text, "."), "0x", "", 1), 16, 64)
		n = float64(v)
	} else {
		n, err = strconv.ParseFloat(text, 64)
	}
	if err != nil {
		return token{}, l.errorf(start, "number out of range: %s", text)
	}
	l.pos = i
	return token{kind: tNumber, text: text, num: n, pos: start}, nil
}

// quotedEscapes are the escapes of a string; a backslash before any other
// character stays.
var quotedEscapes = map[byte]byte{'\\': '\\', '"': '"', 'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// quoted reads a double-quoted string.
func (l *lexer) quoted(start int) (token, error) {
	var b strings.Builder
	for i := start + 1; i < len(l.src); i++ {
		c := l.src[i]
		switch {
		case c == '"':
			l.pos = i + 1
			return token{kind: tString, text: b.String(), pos: start}, nil
		case c == '\\' && i+1 < len(l.src):
			i++
			if e, ok := quotedEscapes[l.src[i]]; ok {
				b.WriteByte(e)
			} else {
				b.WriteByte('\\')
				b.WriteByte(l.src[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return token{}, l.errorf(start, "unexpected end of file in a string")
}
