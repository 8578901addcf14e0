package rules

import (
	"slices"
	"sync"

	"lbd/config"
)

type opcode uint8

const (
	opTest   opcode = iota // evaluate leaf; go to t when it holds, f otherwise
	opJump                 // go to t
	opAct                  // run act; next instruction
	opAccept               // selection: the conditions hold
	opReject               // selection: they do not
	opEnd                  // end of a rewrite program
	opEdit                 // run one of zproxy's edits (act); go to t when it changed something, else next
)

// instr is one instruction. Conditions are compiled to jumping code:
// AND, OR and Not become targets, so evaluation is a loop over pc.
type instr struct {
	op   opcode
	t, f int32
	leaf *leaf
	act  *action
}

// Program is a compiled condition list or rule list. The zero Program is
// empty: as a selection it accepts, as a rewrite it does nothing.
type Program struct {
	code    []instr
	env     *Env
	scripts bool // it may call Lua
}

// Empty reports whether running p can have no effect.
func (p *Program) Empty() bool { return p == nil || len(p.code) <= 1 }

// HasScripts reports whether running p may call a Lua function.
func (p *Program) HasScripts() bool { return p != nil && p.scripts }

// Env is what compiled rules refer to outside themselves: detached
// conditions (by index into Detached), the trusted proxies and the
// forwarded header, and the constants in scope.
type Env struct {
	Detached  []*Program
	names     map[string]int
	Trusted   *config.ACL
	Forwarded string // header naming the forwarding chain; default X-Forwarded-For
	Consts    []map[string]string
	// Anonymise hides the last byte of %[remoteip] (global Anonymise).
	Anonymise bool
	// Scripts resolves LuaMatch and LuaModify calls; nil when the
	// configuration has no Lua section.
	Scripts Scripts
}

// NewEnv compiles the detached conditions of cfg; the result is shared
// by every program of that configuration.
func NewEnv(cfg *config.Config) (*Env, error) { return NewEnvScripts(cfg, nil) }

// NewEnvScripts is NewEnv with the Lua functions of scripts.
func NewEnvScripts(cfg *config.Config, scripts Scripts) (*Env, error) {
	e := &Env{names: map[string]int{}, Forwarded: "X-Forwarded-For", Trusted: cfg.TrustedIP, Anonymise: cfg.Anonymise,
		Scripts: scripts}
	if cfg.ForwardedHeader != "" {
		e.Forwarded = cfg.ForwardedHeader
	}
	e.Consts = []map[string]string{cfg.Constants}
	for _, d := range cfg.Detached {
		e.names[d.Name] = len(e.Detached)
		e.Detached = append(e.Detached, nil)
	}
	for _, d := range cfg.Detached {
		p, err := e.CompileSelect(d.Conds)
		if err != nil {
			return nil, err
		}
		e.Detached[e.names[d.Name]] = p
	}
	return e, nil
}

// Scope returns an Env for a listener or service: its constants shadow
// the enclosing ones, and its TrustedIP list (when set) replaces theirs.
// A scope that changes nothing is e itself (an Env is not written once
// made): most services of a large file share their listener's.
func (e *Env) Scope(consts map[string]string, trusted *config.ACL, fwd string) *Env {
	if len(consts) == 0 && trusted == nil && fwd == "" {
		return e
	}
	n := *e
	if len(consts) > 0 {
		n.Consts = append([]map[string]string{consts}, e.Consts...)
	}
	if trusted != nil {
		n.Trusted = trusted
	}
	if fwd != "" {
		n.Forwarded = fwd
	}
	return &n
}

func (e *Env) constant(name string) (string, bool) {
	for _, m := range e.Consts {
		if v, ok := m[name]; ok {
			return v, true
		}
	}
	return "", false
}

// compiler accumulates code. Jumps whose targets are not known yet are
// kept in patch lists (the classic back-patching of boolean code).
type compiler struct {
	env     *Env
	code    []instr
	err     error
	scripts bool
}

// patch names the t (f=false) or f (f=true) slot of instruction i.
type patch struct {
	i int32
	f bool
}

func (c *compiler) emit(in instr) int32 {
	c.code = append(c.code, in)
	return int32(len(c.code) - 1)
}

func (c *compiler) here() int32 { return int32(len(c.code)) }

func (c *compiler) resolve(ps []patch, to int32) {
	for _, p := range ps {
		if p.f {
			c.code[p.i].f = to
		} else {
			c.code[p.i].t = to
		}
	}
}

// CompileSelect compiles a service's conditions (all must hold).
func (e *Env) CompileSelect(conds []*config.Condition) (*Program, error) {
	return e.compile(func(c *compiler) {
		t, f := c.and(conds)
		c.resolve(t, c.emit(instr{op: opAccept}))
		c.resolve(f, c.emit(instr{op: opReject}))
	})
}

// CompileRewrite compiles rules in order (a listener's or a service's
// request or response rules).
func (e *Env) CompileRewrite(rules []*config.Rule) (*Program, error) {
	if len(rules) == 0 {
		return noRules, nil
	}
	return e.compile(func(c *compiler) {
		for _, r := range rules {
			c.rule(r)
		}
		c.emit(instr{op: opEnd})
	})
}

// compile runs emit with a compiler whose code grows in a reused buffer
// and returns the program with its code at exact length: a load compiles
// a program per service, and the code grown and dropped on the way was
// garbage among what the build keeps (2 MB at 10,000 services, issue 36).
func (e *Env) compile(emit func(c *compiler)) (*Program, error) {
	c := scratchCompilers.Get().(*compiler)
	c.env = e
	emit(c)
	p, err := &Program{code: slices.Clone(c.code), env: e, scripts: c.scripts}, c.err
	clear(c.code) // no leaf or action kept alive by the buffer
	*c = compiler{code: c.code[:0]}
	scratchCompilers.Put(c)
	return p, err
}

// scratchCompilers are the compilers compile lends, with the buffers
// their code grows in (a compiler, which escapes, was 64 bytes of
// garbage per program).
var scratchCompilers = sync.Pool{New: func() any { return new(compiler) }}

// noRules is the program of an empty rule list, which every service
// without request or response rules shares (issue 36: two programs per
// service at 10,000 services). It never reads its Env.
var noRules = &Program{code: []instr{{op: opEnd}}}

// rule compiles one Rewrite with its Else branches: the first branch
// whose conditions hold runs its actions, then control leaves the rule.
func (c *compiler) rule(r *config.Rule) {
	var out []patch
	for br := r; br != nil; br = br.Else {
		t, f := c.and(br.Conds)
		c.resolve(t, c.here())
		for _, a := range br.Actions {
			c.action(a)
		}
		if br.Else != nil { // the last branch falls through to the end
			out = append(out, patch{i: c.emit(instr{op: opJump})})
		}
		c.resolve(f, c.here())
	}
	c.resolve(out, c.here())
}

// and compiles a conjunction, returning the jumps taken when it holds
// and when it fails. An empty list holds: it emits nothing and control
// falls through to what follows.
func (c *compiler) and(conds []*config.Condition) (t, f []patch) {
	if len(conds) == 0 {
		return nil, nil
	}
	for i, x := range conds {
		ct, cf := c.cond(x)
		f = join(f, cf)
		if i == len(conds)-1 {
			t = ct
		} else {
			c.resolve(ct, c.here())
		}
	}
	return t, f
}

// or compiles a disjunction; an empty one fails.
func (c *compiler) or(conds []*config.Condition) (t, f []patch) {
	if len(conds) == 0 {
		return nil, []patch{{i: c.emit(instr{op: opJump})}}
	}
	for i, x := range conds {
		ct, cf := c.cond(x)
		t = join(t, ct)
		if i == len(conds)-1 {
			f = cf
		} else {
			c.resolve(cf, c.here())
		}
	}
	return t, f
}

// join is the patch list a followed by b. Every list is owned by the
// one who holds it (a condition's lists are returned, never kept), so
// the first one is taken as it is rather than copied.
func join(a, b []patch) []patch {
	if a == nil {
		return b
	}
	return append(a, b...)
}

func (c *compiler) cond(x *config.Condition) (t, f []patch) {
	if x.Kind == config.CondMatch {
		if x.Or {
			t, f = c.or(x.Sub)
		} else {
			t, f = c.and(x.Sub)
		}
		if len(t) == 0 && len(f) == 0 {
			// An empty group holds; inside OR or Not that must be a jump,
			// not a fall-through.
			t = []patch{{i: c.emit(instr{op: opJump})}}
		}
	} else {
		l, err := c.leaf(x)
		if err != nil && c.err == nil {
			c.err = err
		}
		i := c.emit(instr{op: opTest, leaf: l})
		both := []patch{{i: i}, {i: i, f: true}} // one allocation, not two
		t, f = both[:1:1], both[1:]
	}
	if x.Not {
		return f, t
	}
	return t, f
}
