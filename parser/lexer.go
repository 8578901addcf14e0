package parser

import (
	"hash/maphash"
	"io"
	"strings"
	"unsafe"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types produced by the scanner. participle reserves -1 for EOF.
const (
	tokEOL lexer.TokenType = -(iota + 2)
	tokWord
	tokString
	tokNumber
	tokText
)

// tokenDef is the participle lexer.Definition for Pound's configuration
// language. It is hand-written rather than regexp-built because Pound's
// rules are context-dependent (a '#' starts a comment only where a token
// could start, a "ConfigText" line switches to verbatim text) and because a
// byte loop is several times faster than participle's regexp lexers.
type tokenDef struct{}

// Symbols implements lexer.Definition. It builds the map on each call
// rather than reading a package variable because the grammar is built
// during package initialisation, possibly before such a variable is set.
func (tokenDef) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF":    lexer.EOF,
		"EOL":    tokEOL,
		"Word":   tokWord,
		"String": tokString,
		"Number": tokNumber,
		"Text":   tokText,
	}
}

// Lex implements lexer.Definition. The parser itself uses newScanner
// directly so that it can collect the scanner's diagnostics.
func (tokenDef) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return newScanner(filename, string(b)), nil
}

// LexString implements lexer.StringDefinition.
func (tokenDef) LexString(filename, src string) (lexer.Lexer, error) {
	return newScanner(filename, src), nil
}

// Token positions: lexer.Token has no end position, so the scanner packs the
// end line and column of every token into Pos.Offset (participle uses Offset
// only to print its own errors, which this grammar cannot produce).
const colBits = 24

func packEnd(line, col int) int {
	if col >= 1<<colBits {
		col = 1<<colBits - 1
	}
	return line<<colBits | col
}

func unpackEnd(off int) (line, col int) { return off >> colBits, off & (1<<colBits - 1) }

// scanner turns one file into tokens. Columns follow Pound's locus rules:
// col is the column of the last byte consumed (0 at the start of a line) and
// a tab advances it by 8.
type scanner struct {
	file      string
	src       string
	off       int
	line, col int
	lineToks  int    // tokens emitted on the current logical line
	first     string // first token of the line, when it is a Word
	raw       bool   // the next token is the verbatim body of ConfigText
	buf       []byte // unescaped string text, reused across strings
	diags     Diagnostics
	// texts is the parse's: shared by the scanners of every file read
	// (an Include's scanner runs while its includer's is mid-file), so
	// that each appends after what the others have copied.
	texts *texts
}

func newScanner(file, src string) *scanner {
	return &scanner{file: file, src: src, line: 1, texts: &texts{}}
}

// texts copies token texts out of the file. A token's text is never a
// substring of the file: a configuration model keeps names, addresses
// and patterns for as long as it runs, and one such substring would keep
// the whole file's text alive with it (2.1 MB at 10,000 services, issue
// 36). The copies are packed into chunks of textChunk bytes, so that a
// large file costs a few allocations, not one per name, and a chunk holds
// nothing but token texts. A text met again while it is still in recent,
// a small cache by hash (keywords, "127.0.0.1", a port), is one string;
// a map of every text would be exact too, and made the parse of 10,000
// services 2.5 times slower.
type texts struct {
	recent *[textCache]string
	chunk  []byte // room for the next texts; what it holds never changes
}

const (
	// textChunk is the size of the chunks texts are copied into; a text
	// over textChunk/8 (a ConfigText body) is a string of its own.
	textChunk = 4096
	textCache = 512 // entries of texts.recent, a power of 2
)

var textSeed = maphash.MakeSeed()

// of returns the parse's copy of s.
func (ts *texts) of(s string) string {
	if s == "" {
		return ""
	}
	if ts.recent == nil {
		ts.recent = new([textCache]string)
	}
	slot := &ts.recent[maphash.String(textSeed, s)&(textCache-1)]
	if *slot == s {
		return *slot
	}
	var c string
	if len(s) > textChunk/8 {
		c = strings.Clone(s)
	} else {
		if cap(ts.chunk)-len(ts.chunk) < len(s) {
			ts.chunk = make([]byte, 0, textChunk)
		}
		at := len(ts.chunk)
		ts.chunk = append(ts.chunk, s...)
		c = unsafe.String(&ts.chunk[at], len(s))
	}
	*slot = c
	return c
}

// ofBytes is of for text held in a reused buffer.
func (ts *texts) ofBytes(b []byte) string {
	return ts.of(unsafe.String(unsafe.SliceData(b), len(b)))
}

func (s *scanner) pos(line, col int) Pos { return Pos{File: s.file, Line: line, Col: col} }

func (s *scanner) report(warn bool, start, end Pos, msg string) {
	s.diags = append(s.diags, &Diagnostic{Span: Span{Start: start, End: end}, Msg: msg, Warning: warn})
}

// note is a warning printed the way Pound prints it, without "warning:".
func (s *scanner) note(start, end Pos, msg string) {
	s.diags = append(s.diags, &Diagnostic{Span: Span{Start: start, End: end}, Msg: msg, Warning: true, Note: true})
}

// token makes a token of val, a substring of the file or of s.buf,
// which it copies (texts).
func (s *scanner) token(t lexer.TokenType, val string, line, col int) lexer.Token {
	val = s.texts.of(val)
	if t != tokEOL {
		s.lineToks++
		if s.lineToks == 1 && t == tokWord {
			s.first = val
		}
	}
	return lexer.Token{Type: t, Value: val, Pos: lexer.Position{
		Filename: s.file, Line: line, Column: col, Offset: packEnd(s.line, s.col)}}
}

// advance consumes one byte that is not a newline.
func (s *scanner) advance(c byte) {
	s.off++
	if c == '\t' {
		s.col += 8
	} else {
		s.col++
	}
}

func (s *scanner) newline() {
	s.off++
	s.line++
	s.col = 0
}

// continuation reports the length of a backslash-newline at the current
// offset (CRLF tolerated), 0 if there is none.
func (s *scanner) continuation() int {
	rest := s.src[s.off:]
	switch {
	case strings.HasPrefix(rest, "\\\n"):
		return 2
	case strings.HasPrefix(rest, "\\\r\n"):
		return 3
	}
	return 0
}

func (s *scanner) skipContinuation(n int) {
	s.off += n - 1
	s.newline()
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// Next implements lexer.Lexer. Blank and comment-only lines produce no
// tokens at all, so every EOL ends a line with at least one token.
func (s *scanner) Next() (lexer.Token, error) {
	if s.raw {
		s.raw = false
		return s.text(), nil
	}
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == '\n':
			if s.lineToks > 0 {
				tok := s.eol()
				s.newline()
				return tok, nil
			}
			s.newline()
		case isSpace(c):
			s.advance(c)
		case c == '\\' && s.continuation() > 0:
			s.skipContinuation(s.continuation())
		case c == '#':
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.advance(s.src[s.off])
			}
		case c == '"':
			return s.str(), nil
		default:
			return s.word(), nil
		}
	}
	if s.lineToks > 0 {
		return s.eol(), nil
	}
	return lexer.Token{Type: lexer.EOF, Pos: lexer.Position{
		Filename: s.file, Line: s.line, Column: s.col + 1, Offset: packEnd(s.line, s.col+1)}}, nil
}

// eol ends a logical line. Its position is where Pound puts a newline
// token: the last column of the line, which is also where Pound reports a
// block left without End.
func (s *scanner) eol() lexer.Token {
	if s.lineToks == 1 && s.first != "" && strings.EqualFold(s.first, "ConfigText") {
		s.raw = true
	}
	s.lineToks, s.first = 0, ""
	return s.token(tokEOL, "", s.line, s.col)
}

// word scans a bare token: everything up to whitespace (Pound lets '"' and
// '#' appear inside a word). A word of digits only is a Number.
func (s *scanner) word() lexer.Token {
	start, line, col := s.off, s.line, s.col+1
	digits := true
	for s.off < len(s.src) {
		c := s.src[s.off]
		if c == '\n' || isSpace(c) || (c == '\\' && s.continuation() > 0) {
			break
		}
		digits = digits && c >= '0' && c <= '9'
		s.advance(c)
	}
	t := tokWord
	if digits {
		t = tokNumber
	}
	return s.token(t, s.src[start:s.off], line, col)
}

// str scans a quoted string. Only \\ and \" are escapes; any other
// backslash stays in the text (so regular expressions such as "\.css$"
// survive) with a warning, as Pound 4 prints one. A backslash-newline
// continues the string on the next line.
func (s *scanner) str() lexer.Token {
	line, col := s.line, s.col+1
	s.advance('"')
	start := s.off
	s.buf = s.buf[:0]
	copied := false // s.buf holds the text because something was dropped
	for {
		if s.off >= len(s.src) {
			s.report(false, s.pos(line, col), s.pos(s.line, s.col), "end of file in quoted string")
			break
		}
		c := s.src[s.off]
		if c == '"' {
			break
		}
		if c == '\n' {
			s.report(false, s.pos(line, col), s.pos(s.line, s.col), "end of line in quoted string")
			break
		}
		if c != '\\' {
			if copied {
				s.buf = append(s.buf, c)
			}
			s.advance(c)
			continue
		}
		first := !copied
		if !copied {
			s.buf = append(s.buf, s.src[start:s.off]...)
			copied = true
		}
		s.escape(first)
	}
	var text string
	if copied {
		text = s.texts.ofBytes(s.buf)
	} else {
		text = s.src[start:s.off]
	}
	if s.off < len(s.src) && s.src[s.off] == '"' {
		s.advance('"')
	}
	return s.token(tokString, text, line, col)
}

// escape handles a backslash inside a string, appending its result to buf.
// Pound reports an unknown escape in its own words, without "warning:"
// (the file still loads): as the string's first escape, "unrecognized
// escape sequence" over the backslash and the two columns after it; a
// later one, "unrecognized escape character" at the character.
func (s *scanner) escape(first bool) {
	if n := s.continuation(); n > 0 {
		s.skipContinuation(n)
		return
	}
	bs := s.pos(s.line, s.col+1) // s.col is the last column consumed
	s.advance('\\')
	if s.off >= len(s.src) {
		s.buf = append(s.buf, '\\')
		return
	}
	c := s.src[s.off]
	switch c {
	case '"', '\\':
		s.buf = append(s.buf, c)
		s.advance(c)
	default:
		s.buf = append(s.buf, '\\', c)
		s.advance(c)
		if first {
			end := bs
			end.Col += 2
			s.note(bs, end, "unrecognized escape sequence")
			return
		}
		p := s.pos(s.line, s.col)
		s.note(p, p, "unrecognized escape character")
	}
}

// text scans the verbatim body of a ConfigText section: every line up to
// one that holds only "End" (in any case), which is left for the parser.
func (s *scanner) text() lexer.Token {
	start, line := s.off, s.line
	endLine, endCol := s.line, 1
	for s.off < len(s.src) {
		eol := strings.IndexByte(s.src[s.off:], '\n')
		next := len(s.src)
		if eol >= 0 {
			next = s.off + eol + 1
		}
		content := s.src[s.off:next]
		if strings.EqualFold(strings.TrimSpace(content), "end") {
			break
		}
		endLine, endCol = s.line, columns(strings.TrimRight(content, "\n"))
		if eol < 0 {
			s.off = next
			s.col = endCol
			break
		}
		s.off = next
		s.line++
	}
	tok := lexer.Token{Type: tokText, Value: s.texts.of(s.src[start:s.off]), Pos: lexer.Position{
		Filename: s.file, Line: line, Column: 1, Offset: packEnd(endLine, max(endCol, 1))}}
	if s.off == start {
		tok.Pos.Offset = packEnd(line, 1)
	}
	return tok
}

// columns is the Pound column of the last byte of line.
func columns(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '\t' {
			n += 8
		} else {
			n++
		}
	}
	return n
}
