package config

import (
	"strings"

	"lbd/parser"
)

// Pound 4's Lua extension (pound.texi "Lua"): the global Lua section that
// loads the sources, and the statements that call their functions
// (LuaMatch, LuaModify, LuaBackend). The configuration only states them;
// package lua loads the sources and resolves the calls, the rules
// package and the proxy run them.

// Lua is the global Lua section.
type Lua struct {
	Pos Locus `json:"pos"`
	// Path and CPath are the Path and CPath components, in order; they
	// are prepended to package.path and package.cpath of every state.
	Path  []string `json:"path,omitempty"`
	CPath []string `json:"cpath,omitempty"`
	// Load are the sources loaded into every per-thread state,
	// LoadGlobal those of the one global state.
	Load       []*LuaSource `json:"load,omitempty"`
	LoadGlobal []*LuaSource `json:"load_global,omitempty"`
	// MemoryLimit bounds the bytes one Lua state may allocate and
	// InstructionLimit the VM instructions one call may run (lbd
	// extensions: Pound has no bounds); 0 is no bound.
	MemoryLimit      int64 `json:"memory_limit"`
	InstructionLimit int64 `json:"instruction_limit"`
}

// Defaults of the lbd extensions, per state and per call.
const (
	DefaultLuaMemoryLimit      = 64 << 20
	DefaultLuaInstructionLimit = 100_000_000
)

// LuaSource is one Load or LoadGlobal statement.
type LuaSource struct {
	Pos Locus `json:"pos"`
	// File is the source, resolved against the include directory.
	File string `json:"file"`
	// Name is the global the file's returned table is stored in: the
	// statement's second argument, or LuaModuleName(File).
	Name string `json:"name"`
}

// LuaCall is one call of a Lua function: a LuaMatch condition, a
// LuaModify action or a LuaBackend. Args are expanded per request.
type LuaCall struct {
	Pos  Locus    `json:"pos"`
	Func string   `json:"func"`
	Args []string `json:"args,omitempty"`
}

// LuaModuleName derives a source's global name from its file name, as
// Pound documents it: the base name without ".lua", an underscore in
// front unless it starts with a letter or underscore, and every other
// character that is not a letter, digit or underscore replaced by one.
func LuaModuleName(file string) string {
	base := file[strings.LastIndexByte(file, '/')+1:]
	if len(base) > len(".lua") && strings.HasSuffix(base, ".lua") {
		base = base[:len(base)-len(".lua")]
	}
	b := make([]byte, 0, len(base)+1)
	if base == "" || !isLuaNameStart(base[0]) {
		b = append(b, '_')
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		if !isLuaNameStart(c) && !(c >= '0' && c <= '9') {
			c = '_'
		}
		b = append(b, c)
	}
	return string(b)
}

func isLuaNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// IsLuaName reports whether s is a valid Lua variable name (reserved
// words included: Pound does not exclude them and they work as globals).
func IsLuaName(s string) bool {
	if s == "" || !isLuaNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLuaNameStart(c) && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// LuaPathComponents splits a Path or CPath argument at ';' and returns
// the components with the byte offset in s of each, and the indexes of
// those that are not patterns (have no '?'), which Pound refuses ("this
// doesn't look like a Lua path component").
func LuaPathComponents(s string) (comps []string, offs []int, bad []int) {
	off := 0
	for {
		c, rest, more := strings.Cut(s, ";")
		if !strings.Contains(c, "?") {
			bad = append(bad, len(comps))
		}
		comps, offs = append(comps, c), append(offs, off)
		if !more {
			return comps, offs, bad
		}
		off += len(c) + 1
		s = rest
	}
}

var luaTable = table[*Lua]{}

func initLuaTable() {
	t := luaTable
	t.add("Path", "s", func(b *builder, l *Lua, _ *parser.Node, u []unit) {
		l.Path = append(l.Path, b.luaPath(u[0].arg)...)
	})
	t.add("CPath", "s", func(b *builder, l *Lua, _ *parser.Node, u []unit) {
		l.CPath = append(l.CPath, b.luaPath(u[0].arg)...)
	})
	t.add("Load", "ss?", func(b *builder, l *Lua, n *parser.Node, u []unit) {
		if src := b.luaSource(n, u); src != nil {
			l.Load = append(l.Load, src)
		}
	})
	t.add("LoadGlobal", "ss?", func(b *builder, l *Lua, n *parser.Node, u []unit) {
		if src := b.luaSource(n, u); src != nil {
			l.LoadGlobal = append(l.LoadGlobal, src)
		}
	})
	t.add("MemoryLimit", "[nl]", func(b *builder, l *Lua, _ *parser.Node, u []unit) {
		if n, ok := b.sizeArg(u[0].arg, 1<<40); ok {
			l.MemoryLimit = n
		}
	})
	t.add("InstructionLimit", "n", func(b *builder, l *Lua, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, 1<<53); ok {
			l.InstructionLimit = n
		}
	})
}

// globalLua handles the Lua section; several sections add up.
func globalLua(b *builder, c *Config, n *parser.Node, _ []unit) {
	if !b.luaAllowed(n) {
		return
	}
	if c.Lua == nil {
		c.Lua = &Lua{Pos: LocusOf(stmtSpan(n)), MemoryLimit: DefaultLuaMemoryLimit, InstructionLimit: DefaultLuaInstructionLimit}
	}
	walk(b, luaTable, nil, c.Lua, n.Children)
}

// luaAllowed reports a Lua statement as an error when this lbd was built
// without Lua (LoadOptions.NoLua), or in a zproxy file, whose requests
// do not run Pound's rules.
func (b *builder) luaAllowed(n *parser.Node) bool {
	switch {
	case b.opts.NoLua:
		b.errorf(n.Span, "%q: this lbd was built without Lua (liblua5.4-dev; see README)", n.Keyword)
		return false
	case b.cfg.Dialect == DialectZproxy:
		b.errorf(n.Span, "%q is a Pound 4 statement: not available in the zproxy dialect", n.Keyword)
		return false
	}
	return true
}

// luaPath checks a Path or CPath argument and splits it into components.
func (b *builder) luaPath(a parser.Arg) []string {
	comps, offs, bad := LuaPathComponents(a.Text)
	for _, i := range bad {
		sp := a.Span
		// The text starts after the opening quote; the end is inclusive.
		sp.Start.Col += 1 + offs[i]
		sp.End = sp.Start
		sp.End.Col += max(len(comps[i])-1, 0)
		b.errorf(sp, "this doesn't look like a Lua path component")
	}
	if len(bad) > 0 {
		return nil
	}
	return comps
}

// luaSource checks a Load or LoadGlobal statement: the file must be a
// readable regular file (so the mistake is reported here, at its
// statement) and the optional name a Lua variable name.
func (b *builder) luaSource(n *parser.Node, u []unit) *LuaSource {
	path := b.resolve(u[0].arg.Text)
	if _, err := b.readRegular(path); err != nil {
		b.errorf(u[0].arg.Span, "can't open %s: %s", path, parser.ErrText(err))
		return nil
	}
	src := &LuaSource{Pos: LocusOf(stmtSpan(n)), File: path, Name: LuaModuleName(path)}
	if len(u) > 1 {
		if !IsLuaName(u[1].arg.Text) {
			b.errorf(u[1].arg.Span, "not a valid Lua variable name")
			return nil
		}
		src.Name = u[1].arg.Text
	}
	return src
}

// luaCall records a LuaMatch, LuaModify or LuaBackend statement; nil when
// Lua is not available.
func (b *builder) luaCall(n *parser.Node, u []unit) *LuaCall {
	if !b.luaAllowed(n) {
		return nil
	}
	c := &LuaCall{Pos: LocusOf(stmtSpan(n)), Func: u[0].arg.Text}
	for _, a := range u[1:] {
		c.Args = append(c.Args, a.arg.Text)
	}
	b.cfg.LuaCalls = append(b.cfg.LuaCalls, c)
	return c
}

// addLuaModify registers LuaModify on a table whose actions go to sink.
func addLuaModify[T any](t table[T], sink func(b *builder, x T) actionSink) {
	t.add("LuaModify", "s+", func(b *builder, x T, n *parser.Node, u []unit) {
		if c := b.luaCall(n, u); c != nil {
			sink(b, x)(b, &Action{Pos: c.Pos, Kind: ActLua, Lua: c})
		}
	})
}
