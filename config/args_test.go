package config

import (
	"testing"

	"lbd/parser"
)

func TestParseArgdef(t *testing.T) {
	tests := []struct {
		name string
		def  string
		want []argItem
	}{
		{name: "empty", def: "", want: nil},
		{name: "single", def: "s", want: []argItem{{codes: "s"}}},
		{name: "bracket", def: "[sl]", want: []argItem{{codes: "sl"}}},
		{name: "modifiers", def: "f*s?n+", want: []argItem{{codes: "f", rep: '*'}, {codes: "s", rep: '?'}, {codes: "n", rep: '+'}}},
		{name: "bracket with modifier", def: "[fsl]+", want: []argItem{{codes: "fsl", rep: '+'}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseArgdef(tc.def)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("item %d: got %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestCheckArgs pins Pound's argument messages, including how optional
// items chain into "X or Y or end of list".
func TestCheckArgs(t *testing.T) {
	flags := map[string]bool{"icase": false, "file": true}
	tests := []struct {
		name string
		def  string
		args []parser.Arg
		want string
	}{
		{name: "exact string", def: "s", args: []parser.Arg{str("x")}},
		{name: "missing", def: "s", want: "not enough arguments"},
		{name: "extra", def: "s", args: []parser.Arg{str("x"), str("y")}, want: "argument type mismatch: expected end of argument list, but found string"},
		{name: "literal for string", def: "s", args: []parser.Arg{word("x")}, want: "argument type mismatch: expected string, but found literal"},
		{name: "number for string", def: "s", args: []parser.Arg{number("1")}, want: "argument type mismatch: expected string, but found number"},
		{name: "boolean word is a boolean", def: "n", args: []parser.Arg{word("yes")}, want: "argument type mismatch: expected number, but found boolean"},
		{name: "optional then required", def: "n?s", args: []parser.Arg{word("x")}, want: "argument type mismatch: expected number or string, but found literal"},
		{name: "optional trailing", def: "s?", args: nil},
		{name: "flags then pattern", def: "f*s", args: []parser.Arg{word("-icase"), word("-file"), str("f"), str("p")}},
		{name: "flag expected", def: "f*s?", args: []parser.Arg{number("3")}, want: "argument type mismatch: expected flag or string or end of list, but found number"},
		{name: "bracket", def: "[sl]", args: []parser.Arg{number("3")}, want: "argument type mismatch: expected string or literal, but found number"},
		{name: "plus needs one", def: "[sl]+", want: "not enough arguments"},
		{name: "plus takes many", def: "[sl]+", args: []parser.Arg{word("a"), str("b"), word("c")}},
		{name: "any", def: ".*", args: []parser.Arg{word("a"), number("1")}},
		{name: "bool number", def: "b", args: []parser.Arg{number("1")}},
		{name: "bool bad number", def: "b", args: []parser.Arg{number("2")}, want: "valid booleans are: 1, yes, true, on for true value, and 0, no, false, off for false value"},
		{name: "unknown flag", def: "f*s", args: []parser.Arg{word("-nope"), str("p")}, want: "unrecognized flag"},
		{name: "flag missing its argument", def: "f*s?", args: []parser.Arg{word("-file")}, want: "not enough arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := testBuilder()
			n := &parser.Node{Keyword: "X", Args: tc.args}
			units, ok := b.classify(tc.args, flags, n)
			if ok {
				b.matchArgs(parseArgdef(tc.def), units, n)
			}
			if got := lastMsg(b); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIsFlagWord(t *testing.T) {
	tests := []struct {
		name string
		w    string
		want bool
	}{
		{name: "flag", w: "-icase", want: true},
		{name: "dash only", w: "-", want: false},
		{name: "negative number", w: "-5", want: false},
		{name: "digits after letter", w: "-a1", want: true},
		{name: "no dash", w: "icase", want: false},
		{name: "punctuation", w: "-a.b", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isFlagWord(tc.w); got != tc.want {
				t.Errorf("isFlagWord(%q) = %v", tc.w, got)
			}
		})
	}
}
