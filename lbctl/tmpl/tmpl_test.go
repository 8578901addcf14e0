package tmpl

import (
	"strings"
	"testing"
)

// sample is the JSON most cases run on.
const sample = `{"s":"str","n":3,"f":2.5,"t":true,"z":false,"null":null,
	"list":[10,20,30],"obj":{"b":"B","a":[1,"x"]},"empty":[],"nested":{"in":{"deep":"D"}},
	"pi":3.14159,"big":1234567,"tiny":0.00012,"e4":12345.678,"half":0.5,"neg":-2.5,"small":0.00001}`

// run parses text as the template "t" and runs it on data.
func run(t *testing.T, text, data string) (string, error) {
	t.Helper()
	v, err := FromJSON([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	set := New()
	if err := set.Parse("t.tmpl", `{{define "t"}}`+text+`{{end}}`); err != nil {
		return "", err
	}
	var b strings.Builder
	err = set.Execute(&b, "t", v)
	return b.String(), err
}

type execCase struct {
	name, text, want, err string
}

func runCases(t *testing.T, cases []execCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(t, tc.text, sample)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestValues checks how members and constants print.
func TestValues(t *testing.T) {
	runCases(t, []execCase{
		{name: "string as it is", text: `{{.s}}`, want: "str"},
		{name: "JSON numbers print without decimals", text: `{{.n}} {{.f}}`, want: "3 2"},
		{name: "booleans", text: `{{.t}} {{.z}}`, want: "true false"},
		{name: "null prints nothing", text: `[{{.null}}]`, want: "[]"},
		{name: "missing member is null", text: `[{{.nope}}]`, want: "[]"},
		{name: "member of null is null", text: `[{{.nope.deeper}}]`, want: "[]"},
		{name: "member of a string is null", text: `[{{.s.x}}]`, want: "[]"},
		{name: "chained members", text: `{{.nested.in.deep}}`, want: "D"},
		{name: "arrays and objects as JSON, keys sorted", text: `{{.list}} {{.obj}} {{.empty}}`,
			want: `[10, 20, 30] {"a":[1, "x"], "b":"B"} []`},
		{name: "dot", text: `{{.obj.b | printf "%s"}}{{with .obj}}{{.}}{{end}}`, want: `B{"a":[1, "x"], "b":"B"}`},
		{name: "integer constants", text: `{{7}} {{-2}} {{1.9}} {{0x10}}`, want: "7 -2 1 16"},
		{name: "string constant escapes", text: `{{"a\tb\\c\"d\q"}}`, want: "a\tb\\c\"d\\q"},
		{name: "true and false", text: `{{true}} {{false}}`, want: "true false"},
		{name: "parenthesised member", text: `{{(.nested.in).deep}}`, want: "D"},
		{name: "unset variable is null", text: `[{{$nope}}{{$nope.x}}]`, want: "[]"},
	})
}

// TestTrim checks the trim markers and comments.
func TestTrim(t *testing.T) {
	runCases(t, []execCase{
		{name: "left and right", text: "a  \n {{- \"b\" -}} \n  c", want: "abc"},
		{name: "no marker keeps spaces", text: "a {{\"b\"}} c", want: "a b c"},
		{name: "dash without space is a number", text: "a {{-1}} c", want: "a -1 c"},
		{name: "comment", text: "a{{/* x */}}b", want: "ab"},
		{name: "comment after a space, trimming", text: "a {{ /* x */ -}}  \n b", want: "a b"},
		{name: "comment between operands", text: `{{printf /* fmt */ "%d" /* arg */ 4}}`, want: "4"},
		{name: "comment trimming before", text: "a  {{- /* x */}}b", want: "ab"},
		{name: "empty action", text: "a{{}}b{{ }}c", want: "abc"},
	})
}

// TestActions checks if, with, range, break and continue.
func TestActions(t *testing.T) {
	runCases(t, []execCase{
		{name: "if else", text: `{{if .t}}y{{else}}n{{end}}{{if .z}}y{{else}}n{{end}}`, want: "yn"},
		{name: "else if chain", text: `{{if .z}}1{{else if .null}}2{{else if .n}}3{{else}}4{{end}}`, want: "3"},
		{name: "else if chain to else", text: `{{if .z}}1{{else if .null}}2{{else}}4{{end}}`, want: "4"},
		{name: "empty values are false", text: `{{if .empty}}1{{end}}{{if ""}}2{{end}}{{if 0}}3{{end}}{{if .null}}4{{end}}`, want: ""},
		{name: "with sets dot", text: `{{with .obj}}{{.b}}{{end}}`, want: "B"},
		{name: "with else", text: `{{with .null}}x{{else}}none{{end}}`, want: "none"},
		{name: "with variable keeps dot", text: `{{with $o = .obj}}{{$o.b}}{{.s}}{{end}}`, want: "Bstr"},
		{name: "range sets dot", text: `{{range .list}}{{.}},{{end}}`, want: "10,20,30,"},
		{name: "range variables keep dot", text: `{{range $i, $v = .list}}{{$i}}={{$v}}{{.s}};{{end}}`, want: "0=10str;1=20str;2=30str;"},
		{name: "range over an object in key order", text: `{{range $k, $v = .obj}}{{$k}}:{{$v}};{{end}}`, want: `a:[1, "x"];b:B;`},
		{name: "range with _", text: `{{range _, $v = .list}}{{$v}}{{end}}`, want: "102030"},
		{name: "range _, _ sets dot", text: `{{range _, _ = .list}}{{.}}{{end}}`, want: "102030"},
		{name: "range else", text: `{{range .empty}}x{{else}}empty{{end}}{{range .s}}x{{else}}scalar{{end}}`, want: "emptyscalar"},
		{name: "break", text: `{{range $i, $v = .list}}{{if eq $i 1}}{{break}}{{end}}{{$v}}{{end}}`, want: "10"},
		{name: "continue skips the rest of the iteration", text: `{{range $i, $v = .list}}{{if eq $i 1}}{{continue}}{{end}}{{$v}}{{end}}`, want: "1030"},
		{name: "break leaves the inner range only", text: `{{range $i, $a = .list}}{{range $j, $b = .list}}{{if eq $j 1}}{{break}}{{end}}{{$b}}{{end}};{{end}}`, want: "10;10;10;"},
		{name: "variables are scoped", text: `{{range $i, $v = .list}}{{end}}[{{$v}}]`, want: "[]"},
		{name: "pipeline", text: `{{.n | printf "%d!" | printf "<%s>"}}`, want: "<3!>"},
		{name: "piped value is the last argument", text: `{{2 | sub 10}}`, want: "8"},
	})
}

// TestTemplates checks define, block and template, nested and called.
func TestTemplates(t *testing.T) {
	runCases(t, []execCase{
		{name: "template with an argument", text: `{{define "x"}}<{{.}}>{{end}}{{template "x" .s}}`, want: "<str>"},
		{name: "template without an argument gets null", text: `{{define "x"}}<{{.}}>{{end}}{{template "x"}}`, want: "<>"},
		{name: "nested define is global", text: `{{define "x"}}{{define "y"}}Y{{end}}X{{end}}{{template "y"}}{{template "x"}}`, want: "YX"},
		{name: "block defines and calls", text: `{{block "b" .n}}[{{.}}]{{end}}{{template "b" 4}}`, want: "[3][4]"},
		{name: "block of a defined name only calls it", text: `{{define "b"}}D{{end}}{{if true}}{{block "b" .}}{{end}}`, want: "D"},
		{name: "a called template sees the caller's variables", text: `{{define "v"}}{{$v}}{{end}}{{range $i, $v = .list}}{{template "v"}}{{end}}`, want: "102030"},
		{name: "redefinition replaces", text: `{{define "r"}}1{{end}}{{define "r"}}2{{end}}{{template "r"}}`, want: "2"},
		{name: "undefined template", text: `{{template "nope"}}`, err: "t.tmpl:1:26: no such template defined: nope"},
		{name: "endless recursion", text: `{{define "loop"}}{{end}}{{define "loop"}}{{template "loop"}}{{end}}{{template "loop"}}`, err: "nested more than"},
	})
}

// TestParseErrors checks the messages and positions of syntax errors.
func TestParseErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{name: "unknown function", text: "a\n {{nosuch 1}}", want: "e.tmpl:2:4: no such function: nosuch"},
		{name: "two operands", text: `{{.a .b}}`, want: `e.tmpl:1:6: unexpected ".b", expected "}}"`},
		{name: "end at top level", text: `{{end}}`, want: "no such function: end"},
		{name: "else outside if", text: `{{define "x"}}{{else}}{{end}}`, want: "no such function: else"},
		{name: "break outside range", text: `{{if true}}{{break}}{{end}}`, want: "no such function: break"},
		{name: "break in a template called from range", text: `{{range .}}{{define "x"}}{{break}}{{end}}{{end}}`, want: "no such function: break"},
		{name: "range needs two variables", text: `{{range $v = .}}{{end}}`, want: `unexpected "=", expected ","`},
		{name: "range declares with =", text: `{{range $i, $v := .}}{{end}}`, want: `unexpected ":", expected "="`},
		{name: "with variable needs =", text: `{{with $v}}{{end}}`, want: `unexpected "}}", expected "="`},
		{name: "define name must be quoted", text: `{{define x}}{{end}}`, want: "expected a template name in quotes"},
		{name: "unterminated string", text: `{{"abc}}`, want: "e.tmpl:1:3: unexpected end of file in a string"},
		{name: "unterminated comment", text: `{{/* abc}}`, want: "unexpected end of file in a comment"},
		{name: "unclosed parenthesis", text: `{{(.a}}`, want: `expected ")"`},
		{name: "else if only", text: `{{if .a}}{{else with .b}}{{end}}`, want: `unexpected "with" after else`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := New().Parse("e.tmpl", tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestUnterminated checks that the end of the text closes what is open,
// as in Pound.
func TestUnterminated(t *testing.T) {
	set := New()
	if err := set.Parse("u.tmpl", `{{define "u"}}{{if true}}yes`); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := set.Execute(&b, "u", nil); err != nil || b.String() != "yes" {
		t.Fatalf("got %q, %v", b.String(), err)
	}
}

// TestExecuteUndefined checks the error for a name never defined and that
// a run-time error keeps the output produced before it.
func TestExecuteUndefined(t *testing.T) {
	set := New()
	if err := set.Parse("x.tmpl", `{{define "half"}}before {{eq 1 "a"}} after{{end}}`); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := set.Execute(&b, "nope", nil); err == nil || err.Error() != "template nope not defined" {
		t.Errorf("error %v", err)
	}
	err := set.Execute(&b, "half", nil)
	if err == nil || err.Error() != "integer and string are not comparable" || b.String() != "before " {
		t.Errorf("got %q, %v", b.String(), err)
	}
}
