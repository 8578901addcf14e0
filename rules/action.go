package rules

import (
	"bytes"
	"strings"

	"lbd/config"
)

// action is one compiled modification.
type action struct {
	kind   config.ActionKind
	tmpl   *template // value (SetHeader: the whole line)
	name   string    // SetQueryParam
	hasVal bool
	pat    *config.Pattern // DeleteHeader
	encode bool
	what   string // the string's name in expansion errors
	script *scriptCall
	src    *config.Action
	// field is the header name a SetHeader sets, or the one a
	// DeleteHeader pattern amounts to (config.Pattern.FieldName); "" when
	// not known at load.
	field string
	// zproxy's edits (edits.go)
	line    []byte        // append_header
	slot    int           // hold_header, append_forwarded, append_held
	repls   []replaceRule // replace_header
	repl    string        // rewrite_url
	mode    int           // rewrite_location
	undoURL bool          // rewrite_location: put back what rewrite_url changed
}

func (c *compiler) action(a *config.Action) {
	if a.Kind == config.ActRewrite {
		c.rule(a.Rule)
		return
	}
	x := &action{kind: a.Kind, name: a.Name, hasVal: a.HasVal, pat: a.Pattern, encode: a.Encode,
		what: actionWhat[a.Kind], src: a}
	switch a.Kind {
	case config.ActSetHeader, config.ActSetURL, config.ActSetPath, config.ActSetQuery, config.ActSetQueryParam:
		x.tmpl = c.env.template(a.Value)
	case config.ActLua:
		var err error
		if x.script, err = c.script(a.Lua); err != nil && c.err == nil {
			c.err = err
		}
	}
	switch a.Kind {
	case config.ActSetHeader:
		// The name is known at load unless an expansion writes it.
		if p := x.tmpl.parts; len(p) > 0 && p[0].kind == pLit {
			x.field, _, _ = strings.Cut(p[0].text, ":")
			if len(x.field) == len(p[0].text) {
				x.field = ""
			}
		}
	case config.ActDeleteHeader:
		x.field, _ = a.Pattern.FieldName()
	}
	c.emit(instr{op: opAct, act: x})
}

// actionWhat names an action's string in expansion errors, as Pound does.
var actionWhat = map[config.ActionKind]string{
	config.ActSetHeader: "Header", config.ActSetURL: "url", config.ActSetPath: "path",
	config.ActSetQuery: "query", config.ActSetQueryParam: "query parameter",
}

// act runs one modification on m.
func (st *State) act(env *Env, a *action, m *Message) error {
	switch a.kind {
	case config.ActDeleteHeader:
		if a.field != "" {
			m.deleteNamed(a.field)
		} else {
			m.deleteMatching(a.pat)
		}
		return nil
	case config.ActDeleteQuery:
		m.URL = m.Path()
		m.URLChanged = true
		return nil
	case config.ActLua:
		mode := ScriptRequest
		if m == &st.Resp {
			mode = ScriptResponse
		}
		_, err := st.runScript(env, a.script, m, mode)
		return err
	}
	val := a.tmpl.lit
	if val == nil {
		start := len(st.arena)
		out, err := st.expand(env, a.tmpl, st.arena, a.what)
		st.arena = out
		if err != nil {
			return err
		}
		val = st.arena[start:len(st.arena):len(st.arena)]
	}
	switch a.kind {
	case config.ActSetHeader:
		st.setHeader(m, val, a.field)
	case config.ActSetURL:
		m.URL, m.URLChanged = val, true
	case config.ActSetPath:
		if a.encode {
			val = st.keep(urlEncode(st.scratch(3*len(val)), val, "/"))
		}
		q, ok := m.Query()
		st.setURL(m, val, q, ok)
	case config.ActSetQuery:
		st.setURL(m, m.Path(), val, true)
	case config.ActSetQueryParam:
		if a.encode {
			val = st.keep(urlEncode(st.scratch(3*len(val)), val, ""))
		}
		st.setParam(m, a.name, val, a.hasVal)
	}
	return nil
}

// setHeader replaces the first header named name (the line's own name
// when "") in place, or appends the line (Pound's H_REPLACE).
func (st *State) setHeader(m *Message, line []byte, name string) {
	m.HeadersChanged = true
	if name == "" {
		name := LineName(line)
		for i, l := range m.Lines {
			if len(l) > len(name) && l[len(name)] == ':' && bytes.EqualFold(l[:len(name)], name) {
				m.Lines[i] = line
				return
			}
		}
	} else if i := m.find(name); i >= 0 {
		m.Lines[i] = line
		return
	}
	m.Lines = append(m.Lines, line)
}

// setURL composes path?query into the arena.
func (st *State) setURL(m *Message, path, query []byte, hasQuery bool) {
	start := len(st.arena)
	st.arena = append(st.arena, path...)
	if hasQuery {
		st.arena = append(st.arena, '?')
		st.arena = append(st.arena, query...)
	}
	m.URL, m.URLChanged = st.arena[start:len(st.arena):len(st.arena)], true
}

// setParam sets parameter name to val (in place, or appended), or with
// hasVal false removes it.
func (st *State) setParam(m *Message, name string, val []byte, hasVal bool) {
	q, _ := m.Query()
	start := len(st.arena)
	st.arena = append(st.arena, m.Path()...)
	sep := byte('?')
	done := false
	for len(q) > 0 {
		var kv []byte
		kv, q, _ = bytes.Cut(q, []byte{'&'})
		k, _, _ := bytes.Cut(kv, []byte{'='})
		if string(k) == name {
			if !hasVal || done {
				continue
			}
			done = true
			st.arena = append(st.arena, sep)
			st.arena = append(st.arena, name...)
			st.arena = append(st.arena, '=')
			st.arena = append(st.arena, val...)
			sep = '&'
			continue
		}
		st.arena = append(st.arena, sep)
		st.arena = append(st.arena, kv...)
		sep = '&'
	}
	if hasVal && !done {
		st.arena = append(st.arena, sep)
		st.arena = append(st.arena, name...)
		st.arena = append(st.arena, '=')
		st.arena = append(st.arena, val...)
	}
	m.URL, m.URLChanged = st.arena[start:len(st.arena):len(st.arena)], true
}
