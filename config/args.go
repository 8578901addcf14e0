package config

import (
	"fmt"
	"strings"

	"lbd/parser"
)

// Argument checking mirrors Pound 4's table-driven parser (src/cfg-lex.l,
// lex_argcmp): every directive declares its arguments in a tiny language,
// and a mismatch produces Pound's exact words ("not enough arguments",
// "extra arguments", "argument type mismatch: expected X, but found Y").
//
// Type codes: s string, n number, l literal (bare word), b boolean, f flag,
// a string or literal, . anything. "[sl]" is one of several codes; a code or
// bracket may be followed by ? (optional), * (any number) or + (at least one).

// argItem is one element of a parsed argument definition.
type argItem struct {
	codes string // one or more type codes
	rep   byte   // 0, '?', '*' or '+'
}

// parseArgdef compiles an argument definition; it panics on a malformed
// definition because those are static tables in this package.
func parseArgdef(def string) []argItem {
	var items []argItem
	for i := 0; i < len(def); {
		var it argItem
		if def[i] == '[' {
			end := strings.IndexByte(def[i:], ']')
			if end < 0 {
				panic("config: bad argdef " + def)
			}
			it.codes = def[i+1 : i+end]
			i += end + 1
		} else {
			it.codes = def[i : i+1]
			i++
		}
		if i < len(def) && strings.IndexByte("?*+", def[i]) >= 0 {
			it.rep = def[i]
			i++
		}
		items = append(items, it)
	}
	return items
}

// unit is one argument as the matcher sees it: a flag with an argument is
// a single unit spanning both.
type unit struct {
	code byte // s n l b f, or 'B' for a word that is also a boolean
	arg  parser.Arg
	val  *parser.Arg // a flag's argument
}

// boolWords are Pound 4's boolean keywords (case-insensitive); numbers 0
// and 1 are booleans too.
var boolWords = map[string]bool{"yes": true, "true": true, "on": true, "no": false, "false": false, "off": false}

// isFlagWord reports whether w looks like a -flag.
func isFlagWord(w string) bool {
	if len(w) < 2 || w[0] != '-' {
		return false
	}
	for i := 1; i < len(w); i++ {
		c := w[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 1 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// classify turns arguments into units. flags maps a flag name (without the
// dash) to whether it takes an argument; nil means the directive has no
// flags and "-x" words are literals.
func (b *builder) classify(args []parser.Arg, flags map[string]bool, n *parser.Node) ([]unit, bool) {
	units := b.units(len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		u := unit{arg: a}
		switch a.Kind {
		case parser.String:
			u.code = 's'
		case parser.Number:
			u.code = 'n'
		default:
			u.code = 'l'
			if _, ok := boolWords[strings.ToLower(a.Text)]; ok {
				u.code = 'B'
			}
			if flags != nil && isFlagWord(a.Text) {
				hasArg, ok := flags[a.Text[1:]]
				if !ok {
					b.errorf(a.Span, "unrecognized flag")
					return nil, false
				}
				u.code = 'f'
				if hasArg {
					if i+1 >= len(args) {
						b.errorf(stmtSpan(n), "not enough arguments")
						return nil, false
					}
					i++
					u.val = &args[i]
				}
			}
		}
		units = append(units, u)
	}
	return units, true
}

// units returns room for n units, carved from a slab: a large
// configuration has hundreds of thousands of statements. Handlers may keep
// pointers into the result, so a slab is never reused.
func (b *builder) units(n int) []unit {
	if cap(b.unitSlab)-len(b.unitSlab) < n {
		b.unitSlab = make([]unit, 0, max(1024, n))
	}
	start := len(b.unitSlab)
	b.unitSlab = b.unitSlab[:start+n]
	return b.unitSlab[start : start : start+n]
}

// codeMatches reports whether unit u satisfies type code c.
func codeMatches(c byte, u unit) bool {
	switch c {
	case '.':
		return true
	case 's':
		return u.code == 's'
	case 'n':
		return u.code == 'n'
	case 'l':
		return u.code == 'l' || u.code == 'B'
	case 'a':
		return u.code == 's' || u.code == 'l' || u.code == 'B'
	case 'f':
		return u.code == 'f'
	case 'b':
		return u.code == 'B' || u.code == 'n' && (u.arg.Text == "0" || u.arg.Text == "1")
	}
	return false
}

func itemMatches(it argItem, u unit) bool {
	for i := 0; i < len(it.codes); i++ {
		if codeMatches(it.codes[i], u) {
			return true
		}
	}
	return false
}

// codeName is Pound's argcode_string.
func codeName(c byte) string {
	switch c {
	case 'a':
		return "string or literal"
	case 'b':
		// lbd's b takes 0 and 1 as well: Pound's [bn].
		return "boolean or number"
	case 'f':
		return "flag"
	case 'l':
		return "literal"
	case 'n':
		return "number"
	case 's':
		return "string"
	case '.':
		return "any type"
	}
	return "UNDEFINED"
}

// unitName is Pound's token_string for what was found.
func unitName(u unit) string {
	switch u.code {
	case 's':
		return "string"
	case 'n':
		return "number"
	case 'B':
		return "boolean"
	case 'f':
		return "flag"
	}
	return "literal"
}

// describe renders what was expected from items[k:], as Pound's
// argdef_string does: optional items chain with "or".
func describe(items []argItem, k int) string {
	var sb strings.Builder
	for i := k; i < len(items); i++ {
		it := items[i]
		for j := 0; j < len(it.codes); j++ {
			if j > 0 {
				sb.WriteString(" or ")
			}
			sb.WriteString(codeName(it.codes[j]))
		}
		if it.rep != '?' && it.rep != '*' {
			break
		}
		if i+1 < len(items) {
			sb.WriteString(" or ")
		} else {
			sb.WriteString(" or end of list")
		}
	}
	return sb.String()
}

// argErr is a failed argument check, reported at span.
type argErr struct {
	span   parser.Span
	msg    string
	follow string // a second line explaining msg
}

// matchArgs checks units against items and reports the first mismatch.
func (b *builder) matchArgs(items []argItem, units []unit, n *parser.Node) bool {
	if e := checkArgs(items, units, n); e != nil {
		b.errorf(e.span, "%s", e.msg)
		if e.follow != "" {
			b.followf(e.span, "%s", e.follow)
		}
		return false
	}
	return true
}

// checkArgs is Pound's lex_argcmp: greedy, left to right, no backtracking.
func checkArgs(items []argItem, units []unit, n *parser.Node) *argErr {
	i, j := 0, 0
	for i < len(items) {
		it := items[i]
		if j == len(units) {
			for _, rest := range items[i:] {
				if rest.rep != '?' && rest.rep != '*' {
					return &argErr{span: stmtSpan(n), msg: "not enough arguments"}
				}
			}
			return nil
		}
		ok := itemMatches(it, units[j])
		switch {
		case ok && (it.rep == '*' || it.rep == '+'):
			for j < len(units) && itemMatches(it, units[j]) {
				j++
			}
		case ok:
			j++
		case it.rep == '?' || it.rep == '*':
		case it.codes == "b" && units[j].code == 'n':
			// A number that is not 0 or 1 (Pound's cfg_bool_commit).
			return &argErr{span: stmtSpan(n), msg: "invalid boolean value",
				follow: "valid booleans are: 1, yes, true, on for true value, and 0, no, false, off for false value"}
		default:
			k := backOverOptional(items, i)
			return &argErr{span: units[j].arg.Span, msg: fmt.Sprintf("argument type mismatch: expected %s, but found %s", describe(items, k), unitName(units[j]))}
		}
		i++
	}
	if j < len(units) {
		// Like Pound, an argument left over after optional items is a type
		// mismatch against them ("expected string or end of list").
		k := backOverOptional(items, len(items))
		if k == len(items) {
			// Pound's words when the definition is used up.
			return &argErr{span: units[j].arg.Span, msg: "argument type mismatch: expected end of argument list, but found " + unitName(units[j])}
		}
		return &argErr{span: units[j].arg.Span, msg: fmt.Sprintf("argument type mismatch: expected %s, but found %s", describe(items, k), unitName(units[j]))}
	}
	return nil
}

// backOverOptional moves k back over the optional items before it, as
// Pound does before describing what it expected.
func backOverOptional(items []argItem, k int) int {
	for k > 0 && (items[k-1].rep == '?' || items[k-1].rep == '*') {
		k--
	}
	return k
}
