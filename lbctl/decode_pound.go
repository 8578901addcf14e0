package lbctl

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A Pound listing of 10,000 services and 20,000 backends is 5 MB of JSON,
// and encoding/json's reflection took a third of lbctl list's CPU to
// decode it (issue 36). poundDecoder decodes the listing's objects into
// the same structs, member by member, and gives up — the caller then runs
// encoding/json on the whole reply — at anything whose result it does not
// reproduce exactly: a syntax error, a value of the wrong type, a number
// out of range, a key that matches a member only without regard to case,
// which encoding/json accepts. Strings with escapes or non-ASCII bytes are
// handed to encoding/json one at a time. So a reply decodes to the same
// value, or fails with the same error, whichever path it takes
// (TestPoundDecoderMatchesJSON, FuzzPoundDecoder).
type poundDecoder struct {
	b     []byte
	i     int
	depth int // of skipped values
	// The services and backends of a listing are carved out of one
	// array each, sized by counting their kind in the reply: growing
	// a slice of 10,000 services by appending faulted in ~5 times its
	// final size of fresh pages (the most expensive part of decoding).
	svcArena []service
	beArena  []backend
}

// decodePoundFast decodes a reply for a path of level lvl into o; false
// means the reply is beyond it (o is then partly filled: drop it).
func decodePoundFast(o *object, body []byte) bool {
	d := &poundDecoder{b: body}
	if o.doc != nil || o.lst != nil {
		// Only hints: a reply that counts otherwise grows the arrays.
		d.svcArena = make([]service, 0, bytes.Count(body, []byte(`"kind":"service"`)))
		d.beArena = make([]backend, 0, bytes.Count(body, []byte(`"alive":`)))
	}
	var ok bool
	switch {
	case o.doc != nil:
		ok = d.document(o.doc)
	case o.lst != nil:
		ok = d.listener(o.lst)
	case o.svc != nil:
		ok = d.service(o.svc)
	default:
		ok = d.backend(o.be)
	}
	d.space()
	return ok && d.i == len(d.b)
}

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

// The members of each object, for unknown's check.
var (
	documentKeys = []string{"core", "kind", "listeners", "services"}
	listenerKeys = []string{"address", "enabled", "kind", "name", "protocol", "services", "connections", "tbf", "basic_auth"}
	serviceKeys  = []string{"backends", "enabled", "kind", "name", "session_type", "sessions", "session_count", "tbf", "basic_auth"}
	backendKeys  = []string{"address", "alive", "enabled", "kind", "priority", "protocol", "type", "weight", "code", "url",
		"status", "stats", "id", "connections", "requests", "response_time"}
	statsKeys   = []string{"request_count", "request_time_avg", "request_time_stddev"}
	sessionKeys = []string{"backend", "expire", "key", "last_seen"}
	tbfKeys     = []string{"key", "interval", "burst", "buckets"}
	authKeys    = []string{"file", "generation", "users", "watch"}
)

func (d *poundDecoder) document(doc *document) bool {
	return d.object(documentKeys, func(key string) bool {
		switch key {
		case "core":
			raw, ok := d.skip()
			doc.Core = append(json.RawMessage(nil), raw...)
			return ok
		case "kind":
			return d.str(&doc.Kind)
		case "listeners":
			return slice(d, &doc.Listeners, d.listener)
		case "services":
			return d.services(&doc.Services)
		}
		return d.unknown(key, documentKeys)
	})
}

func (d *poundDecoder) listener(l *listener) bool {
	return d.object(listenerKeys, func(key string) bool {
		switch key {
		case "address":
			return d.str(&l.Address)
		case "enabled":
			return d.boolean(&l.Enabled)
		case "kind":
			return d.str(&l.Kind)
		case "name":
			return d.strPtr(&l.Name)
		case "protocol":
			return d.str(&l.Protocol)
		case "services":
			return d.services(&l.Services)
		case "connections":
			return d.int64Ptr(&l.Connections)
		case "tbf", "basic_auth":
			return d.limits(key, &l.limits)
		}
		return d.unknown(key, listenerKeys)
	})
}

func (d *poundDecoder) services(svcs *[]service) bool {
	return carve(d, &d.svcArena, svcs, d.service)
}

func (d *poundDecoder) service(s *service) bool {
	return d.object(serviceKeys, func(key string) bool {
		switch key {
		case "backends":
			return carve(d, &d.beArena, &s.Backends, d.backend)
		case "enabled":
			return d.boolean(&s.Enabled)
		case "kind":
			return d.str(&s.Kind)
		case "name":
			return d.strPtr(&s.Name)
		case "session_type":
			return d.str(&s.SessionType)
		case "sessions":
			return slice(d, &s.Sessions, d.session)
		case "session_count":
			return d.intPtr(&s.SessionCount)
		case "tbf", "basic_auth":
			return d.limits(key, &s.limits)
		}
		return d.unknown(key, serviceKeys)
	})
}

func (d *poundDecoder) backend(b *backend) bool {
	return d.object(backendKeys, func(key string) bool {
		switch key {
		case "address":
			return d.str(&b.Address)
		case "alive":
			return d.boolean(&b.Alive)
		case "enabled":
			return d.boolean(&b.Enabled)
		case "kind":
			return d.str(&b.Kind)
		case "priority":
			return d.intVal(&b.Priority)
		case "protocol":
			return d.str(&b.Protocol)
		case "type":
			return d.str(&b.Type)
		case "weight":
			return d.intVal(&b.Weight)
		case "code":
			return d.intVal(&b.Code)
		case "url":
			return d.str(&b.URL)
		case "status":
			return d.intVal(&b.Status)
		case "stats":
			if d.null() {
				b.Stats = nil
				return true
			}
			if b.Stats == nil {
				b.Stats = &stats{}
			}
			return d.stats(b.Stats)
		case "id":
			return d.str(&b.ID)
		case "connections":
			return d.int64Ptr(&b.Connections)
		case "requests":
			return d.int64Ptr(&b.Requests)
		case "response_time":
			return d.float64Ptr(&b.ResponseTime)
		}
		return d.unknown(key, backendKeys)
	})
}

func (d *poundDecoder) stats(st *stats) bool {
	return d.object(statsKeys, func(key string) bool {
		switch key {
		case "request_count":
			return d.int64Val(&st.RequestCount)
		case "request_time_avg":
			return d.float64Ptr(&st.RequestTimeAvg)
		case "request_time_stddev":
			return d.float64Ptr(&st.RequestTimeStddev)
		}
		return d.unknown(key, statsKeys)
	})
}

func (d *poundDecoder) session(s *session) bool {
	return d.object(sessionKeys, func(key string) bool {
		switch key {
		case "backend":
			return d.intVal(&s.Backend)
		case "expire":
			return d.str(&s.Expire)
		case "key":
			return d.str(&s.Key)
		case "last_seen":
			return d.int64Ptr(&s.LastSeen)
		}
		return d.unknown(key, sessionKeys)
	})
}

// limits decodes lbd's "tbf" or "basic_auth" member.
func (d *poundDecoder) limits(key string, l *limits) bool {
	if key == "tbf" {
		return slice(d, &l.TBF, func(t *tbfState) bool {
			return d.object(tbfKeys, func(key string) bool {
				switch key {
				case "key":
					return d.str(&t.Key)
				case "interval":
					return d.int64Val(&t.Interval)
				case "burst":
					return d.uint64Val(&t.Burst)
				case "buckets":
					return d.intVal(&t.Buckets)
				}
				return d.unknown(key, tbfKeys)
			})
		})
	}
	return slice(d, &l.BasicAuth, func(f *authState) bool {
		return d.object(authKeys, func(key string) bool {
			switch key {
			case "file":
				return d.str(&f.File)
			case "generation":
				return d.uint64Val(&f.Generation)
			case "users":
				return d.intVal(&f.Users)
			case "watch":
				return d.boolean(&f.Watch)
			}
			return d.unknown(key, authKeys)
		})
	})
}
