package parser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
)

// lexLines renders every token of src as "KIND "text" L.C-L.C", one line
// of input per element, tokens separated by " | ".
func lexLines(src string) ([]string, Diagnostics) {
	sc := newScanner("t.cfg", src)
	var out []string
	var l lineAST
	for sc.readLine(&l) {
		var parts []string
		for i := range l.Tokens {
			parts = append(parts, fmtToken(&l.Tokens[i]))
		}
		parts = append(parts, fmtToken(&l.EOL))
		if l.Text.Type == tokText {
			parts = append(parts, fmtToken(&l.Text))
		}
		out = append(out, strings.Join(parts, " | "))
	}
	return out, sc.diags
}

func fmtToken(t *lexer.Token) string {
	s := tokenSpan(t)
	kind := map[lexer.TokenType]string{tokWord: "W", tokString: "S", tokNumber: "N", tokEOL: "EOL", tokText: "T"}[t.Type]
	pos := fmt.Sprintf("%d.%d-%d.%d", s.Start.Line, s.Start.Col, s.End.Line, s.End.Col)
	if t.Type == tokEOL {
		return "EOL " + pos
	}
	return fmt.Sprintf("%s %q %s", kind, t.Value, pos)
}

// scannerTests are the TestScanner cases: src, the expected tokens of each
// line, and the expected diagnostics.
var scannerTests = []struct {
	name  string
	src   string
	lines []string
	diags []string
}{
	{name: "keyword and string", src: "User \"root\"\n",
		lines: []string{`W "User" 1.1-1.4 | S "root" 1.6-1.11 | EOL 1.11-1.11`}},
	{name: "escaped quote and backslash", src: `X "a\"b\\c"`,
		lines: []string{`W "X" 1.1-1.1 | S "a\"b\\c" 1.3-1.11 | EOL 1.11-1.11`}},
	{name: "regex backslash stays, with Pound's warning", src: `URL "\.css$"` + "\n",
		lines: []string{`W "URL" 1.1-1.3 | S "\\.css$" 1.5-1.12 | EOL 1.12-1.12`},
		diags: []string{"t.cfg:1.6-8: unrecognized escape sequence"}},
	{name: "pound testsuite escape position", src: "# Unrecognized escape\nuser \"foo\\Bar\"\n",
		lines: []string{`W "user" 2.1-2.4 | S "foo\\Bar" 2.6-2.14 | EOL 2.14-2.14`},
		diags: []string{"t.cfg:2.10-12: unrecognized escape sequence"}},
	{name: "escapes mixed with a kept backslash", src: `X "\d+\"\\"`,
		lines: []string{`W "X" 1.1-1.1 | S "\\d+\"\\" 1.3-1.11 | EOL 1.11-1.11`},
		diags: []string{"t.cfg:1.4-6: unrecognized escape sequence"}},
	{name: "continuation between tokens", src: "Address \\\n  1.2.3.4\nPort 80\n",
		lines: []string{
			`W "Address" 1.1-1.7 | W "1.2.3.4" 2.3-2.9 | EOL 2.9-2.9`,
			`W "Port" 3.1-3.4 | N "80" 3.6-3.7 | EOL 3.7-3.7`}},
	{name: "continuation with CRLF", src: "A \\\r\n B\r\n",
		lines: []string{`W "A" 1.1-1.1 | W "B" 2.2-2.2 | EOL 2.3-2.3`}},
	{name: "continuation inside a string", src: "X \"ab\\\ncd\"\n",
		lines: []string{`W "X" 1.1-1.1 | S "abcd" 1.3-2.3 | EOL 2.3-2.3`}},
	{name: "continuation ends a word", src: "abc\\\ndef\n",
		lines: []string{`W "abc" 1.1-1.3 | W "def" 2.1-2.3 | EOL 2.3-2.3`}},
	{name: "comments only where a token starts", src: "# full\nA 1 # tail\n  # indented\nB x#y \"#z\"\n",
		lines: []string{
			`W "A" 2.1-2.1 | N "1" 2.3-2.3 | EOL 2.10-2.10`,
			`W "B" 4.1-4.1 | W "x#y" 4.3-4.5 | S "#z" 4.7-4.10 | EOL 4.10-4.10`}},
	{name: "CRLF line ends", src: "A 1\r\nB\r\n",
		lines: []string{`W "A" 1.1-1.1 | N "1" 1.3-1.3 | EOL 1.4-1.4`, `W "B" 2.1-2.1 | EOL 2.2-2.2`}},
	{name: "a tab advances the column by 8", src: "\tBackend\n\t\tAddress 1\n",
		lines: []string{`W "Backend" 1.9-1.15 | EOL 1.15-1.15`, `W "Address" 2.17-2.23 | N "1" 2.25-2.25 | EOL 2.25-2.25`}},
	{name: "numbers are digits only", src: "Priority 5 10s -1 0x1F 007\n",
		lines: []string{`W "Priority" 1.1-1.8 | N "5" 1.10-1.10 | W "10s" 1.12-1.14 | W "-1" 1.16-1.17 | W "0x1F" 1.19-1.22 | N "007" 1.24-1.26 | EOL 1.26-1.26`}},
	{name: "unterminated string at end of line", src: "User \"root\nGroup x\n",
		lines: []string{`W "User" 1.1-1.4 | S "root" 1.6-1.10 | EOL 1.10-1.10`, `W "Group" 2.1-2.5 | W "x" 2.7-2.7 | EOL 2.7-2.7`},
		diags: []string{"t.cfg:1.6-10: end of line in quoted string"}},
	{name: "unterminated string at end of file", src: "User \"ro",
		lines: []string{`W "User" 1.1-1.4 | S "ro" 1.6-1.8 | EOL 1.8-1.8`},
		diags: []string{"t.cfg:1.6-8: end of file in quoted string"}},
	{name: "backslash at end of file in a string", src: `X "a\`,
		lines: []string{`W "X" 1.1-1.1 | S "a\\" 1.3-1.5 | EOL 1.5-1.5`},
		diags: []string{"t.cfg:1.3-5: end of file in quoted string"}},
	{name: "ConfigText body is verbatim", src: "Resolver\n ConfigText\n  search x # \"\n\tnameserver 1\n End\nEnd\n",
		lines: []string{
			`W "Resolver" 1.1-1.8 | EOL 1.8-1.8`,
			`W "ConfigText" 2.2-2.11 | EOL 2.11-2.11 | T "  search x # \"\n\tnameserver 1\n" 3.1-4.20`,
			`W "End" 5.2-5.4 | EOL 5.4-5.4`,
			`W "End" 6.1-6.3 | EOL 6.3-6.3`}},
	{name: "empty ConfigText", src: "configtext\nEND\n",
		lines: []string{`W "configtext" 1.1-1.10 | EOL 1.10-1.10 | T "" 2.1-2.1`, `W "END" 2.1-2.3 | EOL 2.3-2.3`}},
	{name: "ConfigText up to end of file", src: "ConfigText\nabc",
		lines: []string{`W "ConfigText" 1.1-1.10 | EOL 1.10-1.10 | T "abc" 2.1-2.3`}},
	{name: "ConfigText with arguments is an ordinary line", src: "ConfigText x\nEnd\n",
		lines: []string{`W "ConfigText" 1.1-1.10 | W "x" 1.12-1.12 | EOL 1.12-1.12`, `W "End" 2.1-2.3 | EOL 2.3-2.3`}},
	{name: "no newline at end of file", src: "A b",
		lines: []string{`W "A" 1.1-1.1 | W "b" 1.3-1.3 | EOL 1.3-1.3`}},
	{name: "blank and whitespace-only lines", src: "\n  \n\t\r\n\nA\n\n", lines: []string{`W "A" 5.1-5.1 | EOL 5.1-5.1`}},
	{name: "empty string", src: `X ""`, lines: []string{`W "X" 1.1-1.1 | S "" 1.3-1.4 | EOL 1.4-1.4`}},
	{name: "string then word without space", src: `X "a"b`,
		lines: []string{`W "X" 1.1-1.1 | S "a" 1.3-1.5 | W "b" 1.6-1.6 | EOL 1.6-1.6`}},
	{name: "quote inside a word", src: `a"b c`, lines: []string{`W "a\"b" 1.1-1.3 | W "c" 1.5-1.5 | EOL 1.5-1.5`}},
	{name: "backslash inside a word", src: `Path C:\dir`, lines: []string{`W "Path" 1.1-1.4 | W "C:\\dir" 1.6-1.11 | EOL 1.11-1.11`}},
	{name: "columns count bytes", src: "Héllo x\n", lines: []string{`W "Héllo" 1.1-1.6 | W "x" 1.8-1.8 | EOL 1.8-1.8`}},
	{name: "empty input", src: "", lines: nil},
}

func TestScanner(t *testing.T) {
	for _, tt := range scannerTests {
		t.Run(tt.name, func(t *testing.T) {
			lines, diags := lexLines(tt.src)
			if strings.Join(lines, "\n") != strings.Join(tt.lines, "\n") {
				t.Errorf("lines:\n got: %q\nwant: %q", lines, tt.lines)
			}
			checkDiags(t, diags, tt.diags)
		})
	}
}

// TestTokenDefinition checks the participle lexer.Definition entry points.
func TestTokenDefinition(t *testing.T) {
	tests := []struct {
		name string
		lex  func() (lexer.Lexer, error)
	}{
		{name: "Lex", lex: func() (lexer.Lexer, error) { return tokenDef{}.Lex("t.cfg", strings.NewReader("A \"b\" 1\n")) }},
		{name: "LexString", lex: func() (lexer.Lexer, error) { return tokenDef{}.LexString("t.cfg", "A \"b\" 1\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lx, err := tt.lex()
			if err != nil {
				t.Fatal(err)
			}
			toks, err := lexer.ConsumeAll(lx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			syms := lexer.SymbolsByRune(tokenDef{})
			for _, tk := range toks {
				got = append(got, syms[tk.Type]+":"+tk.Value)
			}
			want := "Word:A String:b Number:1 EOL: EOF:"
			if strings.Join(got, " ") != want {
				t.Errorf("tokens = %q, want %q", strings.Join(got, " "), want)
			}
		})
	}
}

func TestIsIdent(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{name: "keyword", s: "ListenHTTP", want: true},
		{name: "underscore and digits", s: "_err414", want: true},
		{name: "leading digit", s: "4xx", want: false},
		{name: "dash", s: "no-ssl", want: false},
		{name: "empty", s: "", want: false},
		{name: "non-ASCII", s: "é", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isIdent(tt.s); got != tt.want {
				t.Errorf("isIdent(%q) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

// TestScannerSteadyStateAllocs proves that scanning lines without escapes
// allocates nothing per token: values are substrings of the source.
func TestScannerSteadyStateAllocs(t *testing.T) {
	src := strings.Repeat("\tBackEnd\n\t\tAddress 10.0.0.1\n\t\tPort 80\n\t\tURL \"^/a/b\"\n\tEnd\n", 100)
	sc := newScanner("t.cfg", src)
	var l lineAST
	sc.readLine(&l) // size l.Tokens once
	allocs := testing.AllocsPerRun(100, func() {
		sc.off, sc.line, sc.col = 0, 1, 0
		for sc.readLine(&l) {
		}
	})
	if allocs != 0 {
		t.Errorf("scanning allocated %v times per run, want 0", allocs)
	}
}
