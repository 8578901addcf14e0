package rules

// Edits scripts make to a message (Pound's Lua API: http.req.headers[k]
// = v, http.req.path = p, ...). New bytes go to the request's arena, so
// they stay valid until the next request, as the other actions' do.

// NameIs reports whether line's field name is name (case-insensitive).
func NameIs(line []byte, name []byte) bool {
	if len(line) <= len(name) || line[len(name)] != ':' {
		return false
	}
	for i := range name {
		if fold(line[i]) != fold(name[i]) {
			return false
		}
	}
	return true
}

// LineValue is a header line's value without surrounding blanks.
func LineValue(line []byte) []byte { return lineValue(line) }

// headerLine composes "name: value" in the arena.
func (st *State) headerLine(name, value []byte) []byte {
	start := len(st.arena)
	st.arena = append(st.arena, name...)
	st.arena = append(st.arena, ": "...)
	st.arena = append(st.arena, value...)
	return st.arena[start:len(st.arena):len(st.arena)]
}

// ReplaceHeader replaces the first header named name by "name: value",
// or appends it (Pound's H_REPLACE).
func (st *State) ReplaceHeader(m *Message, name, value []byte) {
	st.setHeader(m, st.headerLine(name, value), "")
}

// AddHeader appends "name: value" (Pound's H_APPEND).
func (st *State) AddHeader(m *Message, name, value []byte) {
	m.Lines = append(m.Lines, st.headerLine(name, value))
	m.HeadersChanged = true
}

// DeleteHeaders removes every header named name (the received lines a
// mark counted stay counted right).
func (m *Message) DeleteHeaders(name []byte) {
	out, recv := m.Lines[:0], m.recv
	for i, l := range m.Lines {
		if !NameIs(l, name) {
			out = append(out, l)
		} else if i < recv {
			m.recv--
		}
	}
	m.truncate(out)
}

// ClearHeaders removes every header.
func (m *Message) ClearHeaders() {
	m.recv = 0
	m.truncate(m.Lines[:0])
}

// SetURL replaces the request target.
func (st *State) SetURL(m *Message, url []byte) {
	m.URL, m.URLChanged = st.keep(url), true
}

// SetPath replaces the path and keeps the query.
func (st *State) SetPath(m *Message, path []byte) {
	q, ok := m.Query()
	st.setURL(m, path, q, ok)
}

// SetQuery replaces the query (has false: removes it).
func (st *State) SetQuery(m *Message, query []byte, has bool) {
	st.setURL(m, m.Path(), query, has)
}

// SetParam sets query parameter name to val, or with has false removes
// it.
func (st *State) SetParam(m *Message, name string, val []byte, has bool) {
	st.setParam(m, name, val, has)
}

// Param is the raw value of query parameter name.
func (m *Message) Param(name string) ([]byte, bool) {
	q, _ := m.Query()
	return queryParam(q, name)
}

// Params counts the query's parameters.
func (m *Message) Params() int {
	q, ok := m.Query()
	if !ok || len(q) == 0 {
		return 0
	}
	n := 1
	for _, c := range q {
		if c == '&' {
			n++
		}
	}
	return n
}
