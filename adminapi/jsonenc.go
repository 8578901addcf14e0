package adminapi

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Both products print JSON in ways encoding/json cannot: Pound sorts keys
// and separates members with ", " in compact form; zproxy (jansson) keeps
// insertion order, indents by 8 and prints reals with 3 significant digits.
// So the handlers build a small ordered tree and print it with a style.

// jobject is a JSON object in insertion order.
type jobject []jmember

// jmember is one key/value pair of a jobject.
type jmember struct {
	key string
	val any
}

// jarray is a JSON array. A nil jarray still prints as [] (use nil for null).
type jarray []any

// jlist is an array whose items are made as they are printed: a listing
// of 10,000 services and 20,000 backends then never exists as one tree of
// objects (issue 36: a few MB of members at a time instead of ~40 MB).
type jlist struct {
	n    int
	item func(i int) any
}

// jreal is a floating-point number printed the jansson way
// (JSON_REAL_PRECISION(3)): %.3g, always with a '.' or an exponent.
type jreal float64

// jfixed is a floating-point number printed the Pound way ("%.0f").
type jfixed float64

// jnumber is a number already printed (a valid JSON number).
type jnumber string

// add appends a member and returns the object, for compact builders.
func (o jobject) add(key string, val any) jobject {
	return append(o, jmember{key, val})
}

// jsonStyle selects the output conventions of one product.
type jsonStyle struct {
	sortKeys bool   // Pound: keys in strcmp order
	indent   int    // spaces per level; 0 = one line
	itemSep  string // between members on one line
	keySep   string // after a key on one line
}

var (
	// poundCompact is Pound's default form: {"a":1, "b":2}.
	poundCompact = jsonStyle{sortKeys: true, itemSep: ", ", keySep: ":"}
	// zproxyPretty is jansson's JSON_INDENT(8) used for every zproxy GET.
	zproxyPretty = jsonStyle{indent: 8, itemSep: ", ", keySep: ": "}
	// zproxyCompact is jansson's JSON_COMPACT used for result objects.
	zproxyCompact = jsonStyle{itemSep: ",", keySep: ":"}
)

// poundStyle returns Pound's style for ?indent=N.
func poundStyle(indent int) jsonStyle {
	st := poundCompact
	st.indent = indent
	return st
}

// encodeJSON prints v in the given style, without a trailing newline (neither
// product writes one).
func encodeJSON(v any, st jsonStyle) []byte { return encodeJSONSized(v, st, 0) }

// encodeJSONSized is encodeJSON into a buffer of size bytes to start
// with: a listing's previous size, so that a 5 MB reply does not grow
// through a dozen copies.
func encodeJSONSized(v any, st jsonStyle, size int) []byte {
	e := jsonEncoder{style: st, buf: make([]byte, 0, size)}
	e.value(v, 0)
	return e.buf
}

// jsonEncoder accumulates the output of encodeJSON.
type jsonEncoder struct {
	style jsonStyle
	buf   []byte
	// sorted holds, per nesting level, the sorted copy of the object
	// being printed there: reused, so that 20,000 backend objects,
	// whose members are built out of order, are not 20,000 copies.
	sorted []jobject
}

// value prints any supported value at nesting depth level.
func (e *jsonEncoder) value(v any, level int) {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case jfixed:
		e.buf = strconv.AppendFloat(e.buf, finite(float64(x)), 'f', 0, 64)
	case jnumber:
		e.buf = append(e.buf, x...)
	case jreal:
		e.buf = append(e.buf, formatReal(float64(x))...)
	case string:
		e.buf = appendJSONString(e.buf, x)
	case jarray:
		e.array(x, level)
	case jlist:
		e.list(x, level)
	case jobject:
		e.object(x, level)
	case jbackend:
		e.backend(x, level)
	default:
		// A programming error; printing null keeps the output valid.
		e.buf = append(e.buf, "null"...)
	}
}

// newline starts a new line indented for the given level, or writes the
// one-line separator.
func (e *jsonEncoder) sep(first bool, level int) {
	if e.style.indent == 0 {
		if !first {
			e.buf = append(e.buf, e.style.itemSep...)
		}
		return
	}
	if !first {
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, '\n')
	e.buf = append(e.buf, strings.Repeat(" ", level*e.style.indent)...)
}

// closeLine ends a non-empty container in indented mode.
func (e *jsonEncoder) closeLine(level int) {
	if e.style.indent > 0 {
		e.buf = append(e.buf, '\n')
		e.buf = append(e.buf, strings.Repeat(" ", level*e.style.indent)...)
	}
}

func (e *jsonEncoder) array(a jarray, level int) {
	e.buf = append(e.buf, '[')
	for i, v := range a {
		e.sep(i == 0, level+1)
		e.value(v, level+1)
	}
	if len(a) > 0 {
		e.closeLine(level)
	}
	e.buf = append(e.buf, ']')
}

func (e *jsonEncoder) list(l jlist, level int) {
	e.buf = append(e.buf, '[')
	for i := 0; i < l.n; i++ {
		e.sep(i == 0, level+1)
		e.value(l.item(i), level+1)
	}
	if l.n > 0 {
		e.closeLine(level)
	}
	e.buf = append(e.buf, ']')
}

// sortedCopy returns o sorted by key, in the buffer of level (o itself
// is the caller's and stays as it is). An object's members are printed
// at deeper levels, so a level's buffer is free again when the next
// object of that level comes.
func (e *jsonEncoder) sortedCopy(o jobject, level int) jobject {
	for len(e.sorted) <= level {
		e.sorted = append(e.sorted, nil)
	}
	c := append(e.sorted[level][:0], o...)
	slices.SortStableFunc(c, byKey)
	e.sorted[level] = c
	return c
}

func (e *jsonEncoder) object(o jobject, level int) {
	if e.style.sortKeys && !slices.IsSortedFunc(o, byKey) {
		o = e.sortedCopy(o, level)
	}
	e.buf = append(e.buf, '{')
	keySep := e.style.keySep
	if e.style.indent > 0 {
		keySep = ": "
	}
	for i, m := range o {
		e.sep(i == 0, level+1)
		e.buf = appendJSONString(e.buf, m.key)
		e.buf = append(e.buf, keySep...)
		e.value(m.val, level+1)
	}
	if len(o) > 0 {
		e.closeLine(level)
	}
	e.buf = append(e.buf, '}')
}

// appendJSONString quotes s. Like jansson (and unlike encoding/json) it
// leaves '/', '<', '>' and '&' alone; control characters are escaped and
// invalid UTF-8 becomes U+FFFD so the output is always valid JSON.
func appendJSONString(buf []byte, s string) []byte {
	if plainJSON(s) { // most keys and values: one copy
		buf = append(buf, '"')
		buf = append(buf, s...)
		return append(buf, '"')
	}
	return appendJSONEscaped(buf, s)
}

// appendJSONEscaped is appendJSONString byte by byte.
func appendJSONEscaped(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, `\ufffd`...)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, `\b`...)
		case '\f':
			buf = append(buf, `\f`...)
		case '\n':
			buf = append(buf, `\n`...)
		case '\r':
			buf = append(buf, `\r`...)
		case '\t':
			buf = append(buf, `\t`...)
		default:
			if c < 0x20 {
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				buf = append(buf, c)
			}
		}
		i++
	}
	return append(buf, '"')
}

// plainJSON reports whether s is ASCII from 0x20 up without '"' or
// '\\', which appendJSONEscaped would copy unchanged.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// formatReal prints f as jansson does with JSON_REAL_PRECISION(3): "%.3g",
// then ".0" appended when the result looks like an integer, and the
// exponent stripped of '+' and leading zeros ("1.23e+03" -> "1.23e3").
func formatReal(f float64) string {
	s := strconv.FormatFloat(finite(f), 'g', 3, 64)
	mant, exp, hasExp := strings.Cut(s, "e")
	if !hasExp {
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	neg := strings.HasPrefix(exp, "-")
	exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if exp == "" {
		exp = "0"
	}
	if neg {
		exp = "-" + exp
	}
	return mant + "e" + exp
}

// finite maps NaN and infinities to 0: neither product can print them and
// JSON has no spelling for them.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// byKey orders members as strcmp orders their keys (Pound's sort).
func byKey(a, b jmember) int { return strings.Compare(a.key, b.key) }
