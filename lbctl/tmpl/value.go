// Package tmpl is poundctl's template language: Go text/template's syntax
// and actions, evaluated the way Pound's own engine evaluates them
// (poundctl.tmpl(5)), on JSON values.
//
// Where Pound differs from Go, this package follows Pound: variables are
// declared only by range and with ("$i, $v = pipeline", "$v = pipeline"),
// a range with variables leaves dot alone, variables are visible in the
// templates a template calls, a member of null or of a non-object is null
// (not an error), null prints as nothing, "define" may appear anywhere
// (also inside another define) and defines a global template, "block" of a
// name already defined only calls it (its body is not read: the text that
// follows belongs to the enclosing action), "template" needs its template
// defined earlier in the text, and a comment may stand anywhere a space may
// inside an action. Numbers from JSON are reals ("number") and print without
// decimals; numbers written in a template, indexes and lengths are
// integers.
package tmpl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Values are nil (null), bool, float64 (a JSON number), int64 (an
// integer: a literal, an index, a length), string, []any and
// map[string]any.

// FromJSON decodes a JSON document into template values.
func FromJSON(js []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// normalize turns json.Number into float64, as Pound reads every JSON
// number as a real.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		// The decoder has checked the syntax, so ParseFloat fails only out
		// of float64's range, and then returns ±Inf, as C's strtod does.
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// typeName is the name typeof returns.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64:
		return "number"
	case int64:
		return "integer"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// truth is the condition of if, with, and, or and not: false for null,
// false, zero (a real within 1e-3 of it), "", and an empty array or
// object.
func truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x < -1e-3 || x > 1e-3
	case int64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// member returns v's member name, or nil when v is not an object or has
// no such member.
func member(v any, name string) any {
	if m, ok := v.(map[string]any); ok {
		return m[name]
	}
	return nil
}

// sortedKeys returns an object's member names in byte order, the order in
// which Pound keeps, ranges over and prints them.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// formatReal prints a real as C's "%.0f" does, infinities and NaN
// included.
func formatReal(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'f', 0, 64)
}

// writeValue prints the result of an action: nothing for null, a string
// as it is, anything else as compact JSON.
func writeValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
	case string:
		b.WriteString(x)
	default:
		writeJSON(b, v)
	}
}

// writeJSON prints v as Pound's unindented JSON: ", " between elements,
// no space after ':'.
func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		b.WriteString(formatReal(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case string:
		writeJSONString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeJSON(b, x[k])
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, x)
	}
}

// jsonEscapes are the characters Pound escapes in JSON strings; others,
// control characters included, go out as they are.
var jsonEscapes = map[byte]string{'\\': `\\`, '"': `\"`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if e, ok := jsonEscapes[s[i]]; ok {
			b.WriteString(e)
		} else {
			b.WriteByte(s[i])
		}
	}
	b.WriteByte('"')
}

// toString is Pound's conversion of a value to a string (printf's %s,
// index on an object): null and false are "", a real is "%g", an array
// or object is its length.
func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		if x {
			return "true"
		}
		return ""
	case float64:
		return formatG(x, 6, false)
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	case []any:
		return strconv.Itoa(len(x))
	case map[string]any:
		return strconv.Itoa(len(x))
	}
	return fmt.Sprint(v)
}

// toInteger is Pound's conversion to an integer (index on an array,
// even): a string is parsed whole (else 0), an array or object is its
// length.
func toInteger(v any) int64 {
	switch x := v.(type) {
	case bool:
		if x {
			return 1
		}
	case float64:
		return int64(x)
	case int64:
		return x
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err == nil {
			return n
		}
	case []any:
		return int64(len(x))
	case map[string]any:
		return int64(len(x))
	}
	return 0
}

// numeric returns a number's value as a real.
func numeric(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}
