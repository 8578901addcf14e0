package parser

import "github.com/alecthomas/participle/v2/lexer"

// lineAST is one logical line (continuations already joined): its tokens,
// the end of line, and for "ConfigText" the verbatim body that follows.
// The participle grammar in grammar_test.go defines this shape; readLine
// produces the same lines without participle's per-token reflection and
// allocation (see readLine).
type lineAST struct {
	Tokens []lexer.Token `parser:"@((Word | String | Number)+)"`
	EOL    lexer.Token   `parser:"@EOL"`
	Text   lexer.Token   `parser:"@Text?"`
}

// readLine reads the next logical line into l, reusing l.Tokens' storage,
// and reports false at the end of input.
//
// Why not participle at run time: on the 10,000-service benchmark config
// (~230k lines) participle's generic parser took 0.87 s and 780 MB per
// parse (0.34 s even with a hand-written participle.Parseable per line;
// lexer.Upgrade alone costs 150 ms), against a budget of "well under 0.5 s".
// The grammar is kept as the specification and the tests check that both
// produce identical lines for the same input.
func (s *scanner) readLine(l *lineAST) bool {
	l.Tokens = l.Tokens[:0]
	l.Text = lexer.Token{}
	for {
		// Next never fails: lexical errors go to s.diags.
		t, _ := s.Next()
		switch t.Type {
		case lexer.EOF:
			return false
		case tokEOL:
			l.EOL = t
			if s.raw {
				l.Text, _ = s.Next() // never fails, as above
			}
			return true
		default:
			l.Tokens = append(l.Tokens, t)
		}
	}
}

// tokenSpan is the span of a scanner token.
func tokenSpan(t *lexer.Token) Span {
	el, ec := unpackEnd(t.Pos.Offset)
	return Span{
		Start: Pos{File: t.Pos.Filename, Line: t.Pos.Line, Col: t.Pos.Column},
		End:   Pos{File: t.Pos.Filename, Line: el, Col: ec},
	}
}

// tokenArg converts a scanner token to an argument.
func tokenArg(t *lexer.Token) Arg {
	k := Word
	switch t.Type {
	case tokString, tokText:
		k = String
	case tokNumber:
		k = Number
	}
	return Arg{Kind: k, Text: t.Value, Span: tokenSpan(t)}
}

// tokenName names a token the way Pound's token_type_str does, for
// "unexpected ..." messages.
func tokenName(t *lexer.Token) string {
	switch t.Type {
	case tokString:
		return "quoted string"
	case tokNumber:
		return "number"
	}
	if isIdent(t.Value) {
		return "identifier"
	}
	return "literal"
}

// isIdent reports whether s is a Pound identifier: an ASCII letter or '_'
// followed by letters, digits and '_'.
func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		letter := (c >= 'a' && c <= 'z') || s[i] == '_'
		if !letter && (i == 0 || s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return s != ""
}
