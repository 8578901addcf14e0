// Package rules is Pound 4's request language compiled into one flat
// program: service conditions, Rewrite branches, Set*/Delete* actions and
// string expansion. The config package states the rules; Compile turns
// them into a Program of instructions with jump targets (no tree walk on
// the hot path); the proxy runs it on a State it reuses per connection, so
// a request allocates nothing in steady state.
package rules

import (
	"bytes"
	"net/netip"
	"time"

	"lbd/edgeauth"
)

// Message is the working copy of a request or response head the program
// reads and changes. Its slices alias the connection's read buffer until
// an action replaces them with bytes from the State's arena.
type Message struct {
	Method []byte
	URL    []byte   // request target as it will be sent
	Lines  [][]byte // header lines "Name: value", in order
	// Changed records whether an action touched the URL or the headers,
	// so the proxy re-renders only what changed.
	URLChanged, HeadersChanged bool
	// BindHost: the program put a Host line for the proxy to fill with
	// the backend's address (zproxy RewriteHost).
	BindHost bool
	// marked says that mark ran: Lines[:recv] are the received lines the
	// proxy's own lines follow (zproxy's order); otherwise those go last.
	marked bool
	recv   int
	// rewritten is the URL as the last rewrite_url that matched left
	// it, and urlTail 1 + the length of its end no rule changed (0: none
	// matched), for putting back a Location's path.
	rewritten []byte
	urlTail   int
}

// Reset empties m, keeping its capacity.
func (m *Message) Reset() {
	m.Method, m.URL = nil, nil
	m.Lines = m.Lines[:0]
	m.URLChanged, m.HeadersChanged, m.BindHost = false, false, false
	m.marked, m.recv, m.rewritten, m.urlTail = false, 0, nil, 0
}

// Split returns the lines before and after the place where the proxy
// writes the lines it adds itself (framing): after the received lines
// when the program marked them, else after all lines.
func (m *Message) Split() (before, after [][]byte) {
	if !m.marked {
		return m.Lines, nil
	}
	return m.Lines[:m.recv], m.Lines[m.recv:]
}

// Rewritten returns the URL as rewrite_url left it and the length of
// its end no rule changed; ok is false when no rule matched.
func (m *Message) Rewritten() (url []byte, tail int, ok bool) {
	return m.rewritten, m.urlTail - 1, m.urlTail > 0
}

// Path is the URL up to the query.
func (m *Message) Path() []byte {
	if i := bytes.IndexByte(m.URL, '?'); i >= 0 {
		return m.URL[:i]
	}
	return m.URL
}

// Query is the part after '?'; ok is false when there is none.
func (m *Message) Query() (q []byte, ok bool) {
	if i := bytes.IndexByte(m.URL, '?'); i >= 0 {
		return m.URL[i+1:], true
	}
	return nil, false
}

// Header returns the value of the first header named name.
func (m *Message) Header(name string) ([]byte, bool) {
	if i := m.find(name); i >= 0 {
		return lineValue(m.Lines[i]), true
	}
	return nil, false
}

// find is the index of the first line named name, or -1.
func (m *Message) find(name string) int {
	for i, l := range m.Lines {
		if nameIs(l, name) {
			return i
		}
	}
	return -1
}

// nameIs reports whether line's field name is name (case-insensitive).
func nameIs(line []byte, name string) bool {
	if len(line) <= len(name) || line[len(name)] != ':' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if fold(line[i]) != fold(name[i]) {
			return false
		}
	}
	return true
}

// LineName is the field name of a header line "Name: value".
func LineName(line []byte) []byte {
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		return line[:i]
	}
	return line
}

// lineValue is a header line's value without surrounding blanks.
func lineValue(line []byte) []byte {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return nil
	}
	v := line[i+1:]
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

func fold(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// smqSize is the depth of Pound's submatch queue: $N(M) reaches back
// this many matched conditions.
const smqSize = 8

// submatch is a matched condition: its pattern and the subject it
// matched. Groups are computed only when an expansion asks for them, so
// a request that never says $N runs no capturing regex.
type submatch struct {
	tag     string
	pat     patternIndexer
	subject []byte
}

// patternIndexer finds group offsets (config.Pattern).
type patternIndexer interface {
	SubmatchIndex(s []byte) []int
}

// State is one connection's evaluation state, reused for every request.
type State struct {
	Req  Message
	Resp Message
	// Client is the peer address (ACL, %[remoteip]).
	Client netip.Addr
	// LogSuppress accumulates the LogSuppress classes (bit 1<<class) of
	// the services that matched, FallThrough ones included.
	LogSuppress uint8
	// RetryAfter is, when a TBF condition found its bucket empty, the
	// longest wait until such a bucket has a token again (0: none did).
	RetryAfter time.Duration
	arena      []byte
	smq        [smqSize]submatch
	smCur      int
	smLen      int
	evals      []int8 // detached condition results: 0 unknown, 1 false, 2 true
	held       [heldSlots]heldValue
	jwt        []byte // the decoded payload of %[jwt CLAIM]
	// Location rewrites Location headers for rewrite_location (the
	// proxy sets it once per connection).
	Location LocationRewriter
	// Script is the Lua runtime the request holds, X what its scripts
	// see beyond the heads (script.go). Dry (the routing explainer's
	// state; Begin keeps it) calls no Lua function: DryScriptError.
	Dry        bool
	Script     ScriptSession
	X          Exchange
	scriptArgs [][]byte
	bodyBuf    []byte
	// Identity is who edge authentication found the request is from
	// (nil: nobody, or not asked); authMemo the checks run so far.
	Identity *edgeauth.Identity
	authMemo [maxAuthMemo]authMemo
	authN    int
}

// Begin prepares st for a new request from client.
func (st *State) Begin(client netip.Addr, detached int) {
	st.EndScripts()
	st.X = Exchange{}
	st.Req.Reset()
	st.Resp.Reset()
	st.Client = client
	st.LogSuppress, st.RetryAfter = 0, 0
	if st.authN > 0 || st.Identity != nil {
		st.Identity, st.authN = nil, 0
		st.authMemo = [maxAuthMemo]authMemo{}
	}
	st.arena = st.arena[:0]
	st.smCur, st.smLen = 0, 0
	st.held = [heldSlots]heldValue{}
	for i := range st.smq {
		st.smq[i] = submatch{}
	}
	if cap(st.evals) < detached {
		st.evals = make([]int8, detached)
	}
	st.evals = st.evals[:detached]
	clear(st.evals)
}

// keep copies b into the arena so it outlives the scratch it was built
// in. Earlier arena bytes are never overwritten within a request, so
// slices handed out stay valid even when the arena grows.
func (st *State) keep(b []byte) []byte {
	if len(st.arena)+len(b) > cap(st.arena) {
		st.arena = make([]byte, 0, max(2*cap(st.arena), len(b)+512))
	}
	start := len(st.arena)
	st.arena = append(st.arena, b...)
	return st.arena[start:len(st.arena):len(st.arena)]
}

// push records a matched condition.
func (st *State) push(tag string, p patternIndexer, subject []byte) {
	st.smCur = (st.smCur + 1) % smqSize
	st.smq[st.smCur] = submatch{tag: tag, pat: p, subject: subject}
	if st.smLen < smqSize {
		st.smLen++
	}
}

// ref returns the submatch n matches back (0 = the latest).
func (st *State) ref(n int) *submatch {
	if n < 0 || n >= st.smLen {
		return nil
	}
	return &st.smq[(st.smCur+smqSize-n)%smqSize]
}

// refTag finds the most recent submatch tagged tag.
func (st *State) refTag(tag string) *submatch {
	for n := 0; n < st.smLen; n++ {
		if sm := st.ref(n); sm.tag == tag {
			return sm
		}
	}
	return nil
}

// Rebase re-points every slice the state holds through f (the proxy
// moves a request head out of a read buffer it is about to reuse).
func (st *State) Rebase(f func([]byte) []byte) {
	st.Req.Method, st.Req.URL = f(st.Req.Method), f(st.Req.URL)
	for i, l := range st.Req.Lines {
		st.Req.Lines[i] = f(l)
	}
	for i := range st.smq {
		st.smq[i].subject = f(st.smq[i].subject)
	}
}

// Group is one matched condition's subject and group offsets, for code
// that expands back-references itself (redirect URLs).
type Group struct {
	Subject []byte
	Index   []int
}

// Groups returns the submatch queue oldest first, groups computed.
func (st *State) Groups() []Group {
	out := make([]Group, 0, st.smLen)
	for n := st.smLen - 1; n >= 0; n-- {
		sm := st.ref(n)
		g := Group{Subject: sm.subject}
		if sm.pat != nil {
			g.Index = sm.pat.SubmatchIndex(sm.subject)
		}
		out = append(out, g)
	}
	return out
}

// Combine joins the repeated lines of each header in names into the
// first one, values separated by ", " (Pound's CombineHeaders, RFC 9110
// §5.3), so conditions and the backend see one line.
func (st *State) Combine(m *Message, names []string) {
	for _, name := range names {
		first, n := -1, 0
		for i, l := range m.Lines {
			if nameIs(l, name) {
				if first < 0 {
					first = i
				}
				n++
			}
		}
		if n < 2 {
			continue
		}
		start := len(st.arena)
		st.arena = append(st.arena, LineName(m.Lines[first])...)
		st.arena = append(st.arena, ": "...)
		out, sep := m.Lines[:0], false
		for i, l := range m.Lines {
			if !nameIs(l, name) {
				out = append(out, l)
				continue
			}
			st.arena, sep = appendListElems(st.arena, lineValue(l), sep)
			if i == first {
				out = append(out, nil) // placeholder, filled below
			}
		}
		for i := range out {
			if out[i] == nil {
				out[i] = st.arena[start:len(st.arena):len(st.arena)]
			}
		}
		clear(m.Lines[len(out):])
		m.Lines = out
		m.HeadersChanged = true
	}
}

// appendListElems appends the elements of a comma-separated field value
// (commas inside quoted strings do not separate; blanks around elements
// and empty elements are dropped), each after ", " when sep is set.
func appendListElems(dst, v []byte, sep bool) ([]byte, bool) {
	for len(v) > 0 {
		end := listElemEnd(v)
		if elem := bytes.Trim(v[:end], " \t"); len(elem) > 0 {
			if sep {
				dst = append(dst, ", "...)
			}
			dst, sep = append(dst, elem...), true
		}
		v = v[min(end+1, len(v)):]
	}
	return dst, sep
}

// listElemEnd is the index of the comma that ends v's first element, or
// len(v).
func listElemEnd(v []byte) int {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++ // a quoted-pair
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return i
		}
	}
	return len(v)
}
