package lbctl

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JSON reader under poundDecoder: one value at a time from d.b[d.i:],
// each method false at anything encoding/json would decode otherwise.

func (d *poundDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte (0 at the end).
func (d *poundDecoder) peek() byte {
	d.space()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// literal consumes word (true, false, null) if it is next.
func (d *poundDecoder) literal(word string) bool {
	if d.peek() != word[0] || len(d.b)-d.i < len(word) {
		return false
	}
	for k := 1; k < len(word); k++ {
		if d.b[d.i+k] != word[k] {
			return false
		}
	}
	d.i += len(word)
	return true
}

// null consumes a null if it is next.
func (d *poundDecoder) null() bool { return d.literal("null") }

// object decodes {"key": value, ...}, calling member for each key with the
// decoder at its value; member returns false when it cannot decode it.
// known lists the struct's keys: an unknown key that matches one of them
// regardless of case fails the decoding, as encoding/json would fill that
// member. A null object leaves everything as it is, as encoding/json does.
func (d *poundDecoder) object(known []string, member func(key string) bool) bool {
	if d.null() {
		return true
	}
	if d.peek() != '{' {
		return false
	}
	d.i++
	if d.peek() == '}' {
		d.i++
		return true
	}
	for {
		key, ok := d.rawKey()
		if !ok || d.peek() != ':' {
			return false
		}
		d.i++
		if !member(key) {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// rawKey reads a member name that is plain ASCII without escapes; the
// string is a view of the reply, valid only until the value is decoded.
func (d *poundDecoder) rawKey() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return string(d.b[start:j]), true // the compiler does not copy it for a switch
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return "", false
		}
	}
	return "", false
}

// unknown skips the value of a member the struct does not have, unless
// key would match one of known regardless of case. Known keys are lower
// case and keys are ASCII (rawKey): only a key with a capital letter can.
func (d *poundDecoder) unknown(key string, known []string) bool {
	if strings.ContainsFunc(key, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		for _, k := range known {
			if strings.EqualFold(k, key) {
				return false
			}
		}
	}
	_, ok := d.skip()
	return ok
}

// array decodes [v, ...] calling elem for each element.
func (d *poundDecoder) array(elem func() bool) bool {
	if d.peek() != '[' {
		return false
	}
	d.i++
	if d.peek() == ']' {
		d.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// slice decodes an array into *s as encoding/json does: null is a nil
// slice, [] an empty one. A member given twice fails when the first gave
// elements (encoding/json would decode the second into them).
func slice[T any](d *poundDecoder, s *[]T, elem func(*T) bool) bool {
	if d.null() {
		*s = nil
		return true
	}
	if len(*s) > 0 {
		return false
	}
	*s = []T{}
	return d.array(func() bool {
		var zero T
		*s = append(*s, zero)
		return elem(&(*s)[len(*s)-1])
	})
}

// carve is slice for an array of T whose elements hold no T, appended
// to arena: *s is arena's part that holds them, capped at its length.
func carve[T any](d *poundDecoder, arena *[]T, s *[]T, elem func(*T) bool) bool {
	if d.null() {
		*s = nil
		return true
	}
	if len(*s) > 0 {
		return false
	}
	start := len(*arena)
	ok := d.array(func() bool {
		var zero T
		*arena = append(*arena, zero)
		return elem(&(*arena)[len(*arena)-1])
	})
	if *s = (*arena)[start:len(*arena):len(*arena)]; *s == nil {
		*s = []T{}
	}
	return ok
}

// str decodes a string into *s; null leaves *s as it is.
func (d *poundDecoder) str(s *string) bool {
	if d.null() {
		return true
	}
	if d.peek() != '"' {
		return false
	}
	start := d.i
	plain := true
	for j := start + 1; j < len(d.b); j++ {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			if plain {
				*s = string(d.b[start+1 : j])
				return true
			}
			// Escapes, or bytes that may not be valid UTF-8: exactly as
			// encoding/json decodes them.
			return json.Unmarshal(d.b[start:d.i], s) == nil
		case c == '\\':
			plain = false
			j++ // the escaped byte cannot end the string
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return false
}

// strPtr decodes a string or null into *p.
func (d *poundDecoder) strPtr(p **string) bool {
	if d.null() {
		*p = nil
		return true
	}
	var s string
	if !d.str(&s) {
		return false
	}
	*p = &s
	return true
}

func (d *poundDecoder) boolean(b *bool) bool {
	switch {
	case d.literal("true"):
		*b = true
	case d.literal("false"):
		*b = false
	default:
		return d.null()
	}
	return true
}

// number returns the next number token, checked against JSON's grammar,
// and whether it is an integer (no fraction, no exponent).
func (d *poundDecoder) number() (tok string, integer, ok bool) {
	d.space()
	b, j := d.b, d.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return "", false, false
	}
	integer = true
	if j < len(b) && b[j] == '.' {
		integer = false
		if j++; j >= len(b) || b[j] < '0' || b[j] > '9' {
			return "", false, false
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		integer = false
		if j++; j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return "", false, false
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	tok, d.i = string(b[d.i:j]), j
	return tok, integer, true
}

// int64Val decodes an integer into *n; null leaves it. A fraction or an
// exponent fails, as encoding/json fails to put them in an integer.
func (d *poundDecoder) int64Val(n *int64) bool {
	if d.null() {
		return true
	}
	tok, integer, ok := d.number()
	if !ok || !integer {
		return false
	}
	v, err := strconv.ParseInt(tok, 10, 64)
	*n = v
	return err == nil
}

func (d *poundDecoder) intVal(n *int) bool {
	v := int64(*n)
	ok := d.int64Val(&v)
	*n = int(v)
	return ok && int64(int(v)) == v
}

func (d *poundDecoder) uint64Val(n *uint64) bool {
	if d.null() {
		return true
	}
	tok, integer, ok := d.number()
	if !ok || !integer {
		return false
	}
	v, err := strconv.ParseUint(tok, 10, 64)
	*n = v
	return err == nil
}

func (d *poundDecoder) int64Ptr(p **int64) bool {
	if d.null() {
		*p = nil
		return true
	}
	var v int64
	if !d.int64Val(&v) {
		return false
	}
	*p = &v
	return true
}

func (d *poundDecoder) intPtr(p **int) bool {
	if d.null() {
		*p = nil
		return true
	}
	var v int
	if !d.intVal(&v) {
		return false
	}
	*p = &v
	return true
}

func (d *poundDecoder) float64Ptr(p **float64) bool {
	if d.null() {
		*p = nil
		return true
	}
	tok, _, ok := d.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return false
	}
	*p = &v
	return true
}

// maxDepth is encoding/json's limit of nested arrays and objects.
const maxDepth = 10000

// skip passes over one value of any kind, checking its syntax, and
// returns its bytes.
func (d *poundDecoder) skip() ([]byte, bool) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDepth {
		return nil, false
	}
	var ok bool
	c := d.peek() // past the white space: the value starts here
	start := d.i
	switch c {
	case '{':
		ok = d.object(nil, func(string) bool { _, ok := d.skip(); return ok })
	case '[':
		ok = d.array(func() bool { _, ok := d.skip(); return ok })
	case '"':
		ok = d.skipString()
	case 't', 'f', 'n':
		ok = d.literal("true") || d.literal("false") || d.literal("null")
	default:
		_, _, ok = d.number()
	}
	return d.b[start:d.i], ok
}

// skipString passes over a string, checking escapes and UTF-8 where it
// has any.
func (d *poundDecoder) skipString() bool {
	start := d.i
	plain := true
	for j := start + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return plain || json.Valid(d.b[start:d.i])
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			return false
		}
	}
	return false
}
