package rules

import (
	"bytes"

	"lbd/config"
)

// LocationRewriter rewrites the value of a Location or Content-Location
// response header for RewriteLocation: only the proxy knows the backend
// and the listener the decision depends on. It appends the new value to
// dst and reports whether the header is to be rewritten at all.
type LocationRewriter interface {
	RewriteLocation(dst, value []byte, mode int, undoURL bool) ([]byte, bool)
}

// edit runs one of zproxy's edits on m and reports whether it changed
// something (rewrite_url: whether its pattern matched).
func (st *State) edit(a *action, m *Message) bool {
	switch a.kind {
	case actMark:
		m.marked, m.recv = true, len(m.Lines)
		return false
	case actHoldHeader:
		st.hold(m, a)
	case actAppendHeader:
		st.appendLine(m, a.line)
	case actReplaceHeader:
		st.replaceHeaders(m, a.repls)
	case actAppendForwarded:
		st.appendForwarded(m, a)
	case actAppendHeld:
		if h := &st.held[a.slot]; h.found {
			st.appendLine(m, st.composeLine(a.name, h.val))
		}
	case actBackendHost:
		m.BindHost = true
		st.appendLine(m, st.composeLine("Host", nil))
	case actRewriteURL:
		return st.rewriteURL(m, a)
	case actTrimParam:
		st.trimParam(m)
	case actRewriteLocation:
		st.rewriteLocations(m, a)
	}
	return true
}

// heldValue is what hold_header kept of the lines it removed.
type heldValue struct {
	val   []byte // the values joined by ", " (empty ones skipped)
	found bool
}

// hold removes every line named a.name; with a slot, their values are
// kept for a later append_forwarded or append_held.
func (st *State) hold(m *Message, a *action) {
	var h *heldValue
	if a.slot != heldNone {
		h = &st.held[a.slot]
	}
	out, recv := m.Lines[:0], m.recv
	for i, l := range m.Lines {
		if !nameIs(l, a.name) {
			out = append(out, l)
			continue
		}
		if i < recv {
			m.recv--
		}
		if h == nil {
			continue
		}
		if v := lineValue(l); len(v) > 0 {
			if len(h.val) > 0 {
				h.val = st.keep2(h.val, ", ", v)
			} else {
				h.val = v
			}
		}
		h.found = true
	}
	m.truncate(out)
}

// keep2 returns a+sep+b in the arena.
func (st *State) keep2(a []byte, sep string, b []byte) []byte {
	buf := st.scratch(len(a) + len(sep) + len(b))
	buf = append(append(append(buf, a...), sep...), b...)
	return st.keep(buf)
}

// composeLine writes "name: value" into the arena.
func (st *State) composeLine(name string, value []byte) []byte {
	buf := st.scratch(len(name) + 2 + len(value))
	buf = append(append(append(buf, name...), ": "...), value...)
	return st.keep(buf)
}

// appendLine adds a line after every other.
func (st *State) appendLine(m *Message, line []byte) {
	m.Lines = append(m.Lines, line)
	m.HeadersChanged = true
}

// appendForwarded appends "X-Forwarded-For: <held chain>, <client>".
func (st *State) appendForwarded(m *Message, a *action) {
	h := &st.held[a.slot]
	start := len(st.arena)
	st.arena = append(st.arena, a.name...)
	st.arena = append(st.arena, ": "...)
	if len(h.val) > 0 {
		st.arena = append(st.arena, h.val...)
		st.arena = append(st.arena, ", "...)
	}
	if st.Client.IsValid() {
		st.arena = st.Client.AppendTo(st.arena)
	}
	st.appendLine(m, st.arena[start:len(st.arena):len(st.arena)])
}

// replaceHeaders applies zproxy's ReplaceHeader rules to the received
// lines: the first rule whose name pattern matches a line and whose
// match pattern matches its value replaces that part of the value; the
// line leaves its place and follows every line, in received order.
func (st *State) replaceHeaders(m *Message, rules []replaceRule) {
	n := m.received()
	kept := 0
	for i := 0; i < n; i++ {
		l := m.Lines[i]
		if line, ok := st.replaced(l, rules); ok {
			m.Lines = append(m.Lines, line)
			m.HeadersChanged = true
			continue
		}
		m.Lines[kept] = l
		kept++
	}
	m.closeGap(kept, n)
}

// replaced returns line with the first applicable rule applied.
func (st *State) replaced(line []byte, rules []replaceRule) ([]byte, bool) {
	name := LineName(line)
	value := lineValue(line)
	for i := range rules {
		r := &rules[i]
		if r.name == nil || !r.name.Match(line) {
			continue
		}
		start := len(st.arena)
		st.arena = append(append(st.arena, name...), ": "...)
		out, _, ok := Substitute(st.arena, value, r.match, r.repl)
		if !ok {
			st.arena = st.arena[:start]
			continue
		}
		st.arena = out
		return st.arena[start:len(st.arena):len(st.arena)], true
	}
	return nil, false
}

// rewriteURL applies one RewriteUrl rule to the URL (its origin form:
// an absolute-form target is reduced first, as the proxy sends it).
func (st *State) rewriteURL(m *Message, a *action) bool {
	cur := st.originForm(m.URL)
	start := len(st.arena)
	out, off, ok := Substitute(st.arena, cur, a.pat, a.repl)
	if !ok {
		return false
	}
	st.arena = out
	url := st.arena[start:len(st.arena):len(st.arena)]
	if tail := len(url) - off + 1; m.urlTail == 0 || tail < m.urlTail {
		m.urlTail = tail
	}
	m.URL, m.URLChanged, m.rewritten = url, true, url
	return true
}

// originForm is the path and query of an absolute-form target
// ("http://host/p?q" gives "/p?q", "http://host?q" gives "/?q"); other
// targets are returned as they are.
func (st *State) originForm(url []byte) []byte {
	i := bytes.Index(url, []byte("://"))
	if i <= 0 || bytes.IndexByte(url[:i], '/') >= 0 {
		return url
	}
	rest := url[i+3:]
	j := bytes.IndexAny(rest, "/?")
	switch {
	case j < 0:
		return slash
	case rest[j] == '/':
		return rest[j:]
	}
	buf := st.scratch(1 + len(rest) - j)
	return st.keep(append(append(buf, '/'), rest[j:]...))
}

var slash = []byte{'/'}

// trimParam removes the ";param" of the URL's path (zproxy does not
// forward what a PARM session keys on; it cuts to the end of the
// target, lbd keeps the query, which is the client's, not the
// session's).
func (st *State) trimParam(m *Message) {
	url := st.originForm(m.URL)
	semi := bytes.IndexByte(url, ';')
	if semi < 0 {
		if len(url) != len(m.URL) {
			m.URL, m.URLChanged = url, true
		}
		return
	}
	end := len(url)
	if q := bytes.IndexByte(url[semi:], '?'); q >= 0 {
		end = semi + q
	}
	start := len(st.arena)
	st.arena = append(st.arena, url[:semi]...)
	st.arena = append(st.arena, url[end:]...)
	m.URL, m.URLChanged = st.arena[start:len(st.arena):len(st.arena)], true
}

// rewriteLocations passes the received Location and Content-Location
// lines to the proxy's LocationRewriter; a rewritten one leaves its
// place and follows every line, as zproxy adds it.
func (st *State) rewriteLocations(m *Message, a *action) {
	if st.Location == nil {
		return
	}
	n := m.received()
	kept := 0
	for i := 0; i < n; i++ {
		l := m.Lines[i]
		if nameIs(l, "Location") || nameIs(l, "Content-Location") {
			name := LineName(l)
			start := len(st.arena)
			st.arena = append(append(st.arena, name...), ": "...)
			if out, ok := st.Location.RewriteLocation(st.arena, lineValue(l), a.mode, a.undoURL); ok {
				st.arena = out
				m.Lines = append(m.Lines, st.arena[start:len(st.arena):len(st.arena)])
				m.HeadersChanged = true
				continue
			}
			st.arena = st.arena[:start]
		}
		m.Lines[kept] = l
		kept++
	}
	m.closeGap(kept, n)
}

// received is how many of m's lines it was received with: those before
// the mark, or all.
func (m *Message) received() int {
	if m.marked {
		return m.recv
	}
	return len(m.Lines)
}

// closeGap ends a pass over the n received lines that kept the first
// kept in place and moved the others after every line: the moved lines'
// old places close up.
func (m *Message) closeGap(kept, n int) {
	if kept == n {
		return
	}
	rest := copy(m.Lines[kept:], m.Lines[n:])
	m.truncate(m.Lines[:kept+rest])
	if m.marked {
		m.recv = kept
	}
}

// truncate makes out (a prefix of m.Lines' array) the lines.
func (m *Message) truncate(out [][]byte) {
	clear(m.Lines[len(out):])
	m.Lines = out
	m.HeadersChanged = true
}

// deleteMatching removes the lines p matches.
func (m *Message) deleteMatching(p *config.Pattern) {
	out, recv := m.Lines[:0], m.recv
	for i, l := range m.Lines {
		if !p.Match(l) {
			out = append(out, l)
		} else if i < recv {
			m.recv--
		}
	}
	m.truncate(out)
}

// deleteNamed removes the lines named name.
func (m *Message) deleteNamed(name string) {
	out, recv := m.Lines[:0], m.recv
	for i, l := range m.Lines {
		if !nameIs(l, name) {
			out = append(out, l)
		} else if i < recv {
			m.recv--
		}
	}
	m.truncate(out)
}

// Substitute is zproxy's str_replace_regexp: the part of subject re
// matches is replaced by repl with $0..$9 expanded (a group that did not
// take part expands to nothing, "$$" is a dollar); the text after the
// match is kept only when the match was not empty. The result is
// appended to dst; off is where the replacement ends in it (counted from
// the end of dst), and ok is false when re does not match (dst is
// returned as it was).
func Substitute(dst, subject []byte, re *config.Pattern, repl string) (out []byte, off int, ok bool) {
	if re == nil || re.Regexp() == nil {
		return dst, 0, false
	}
	m := re.Regexp().FindSubmatchIndex(subject)
	if m == nil {
		return dst, 0, false
	}
	start := len(dst)
	dst = append(dst, subject[:m[0]]...)
	for i := 0; i < len(repl); i++ {
		switch {
		case repl[i] == '$' && i+1 < len(repl) && repl[i+1] == '$':
			dst = append(dst, '$')
			i++
		case repl[i] == '$' && i+1 < len(repl) && isDigit(repl[i+1]):
			if g := int(repl[i+1] - '0'); 2*g+1 < len(m) && m[2*g] >= 0 {
				dst = append(dst, subject[m[2*g]:m[2*g+1]]...)
			}
			i++
		default:
			dst = append(dst, repl[i])
		}
	}
	off = len(dst) - start
	if m[1] != m[0] {
		dst = append(dst, subject[m[1]:]...)
	}
	return dst, off, true
}
