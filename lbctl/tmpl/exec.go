package tmpl

import (
	"fmt"
	"io"
	"strings"
)

// maxDepth bounds template calls, so a template that calls itself without
// end fails instead of exhausting the stack.
const maxDepth = 1000

// vars is a chain of variable bindings, innermost first. A template
// called from another sees its caller's variables, as in Pound.
type vars struct {
	name string
	val  any
	up   *vars
}

func (v *vars) lookup(name string) any {
	for ; v != nil; v = v.up {
		if v.name == name {
			return v.val
		}
	}
	return nil // an unset variable is null
}

func (v *vars) bind(name string, val any) *vars {
	if name == "" {
		return v
	}
	return &vars{name: name, val: val, up: v}
}

type env struct {
	dot  any
	vars *vars
}

// flow is how a list of actions ended: normally, or at break or continue.
type flow int

const (
	flowNext flow = iota
	flowBreak
	flowContinue
)

type state struct {
	set   *Set
	out   strings.Builder
	depth int
}

// Execute runs template name on data (a value as FromJSON returns) and
// writes its output to w. On a run-time error the output produced until
// then is written, as poundctl prints as it goes, and the error returned.
func (s *Set) Execute(w io.Writer, name string, data any) error {
	body, ok := s.defs[name]
	if !ok {
		return fmt.Errorf("template %s not defined", name)
	}
	st := &state{set: s}
	_, err := st.list(env{dot: data}, body)
	if _, werr := io.WriteString(w, st.out.String()); err == nil {
		err = werr
	}
	return err
}

func (st *state) list(e env, nodes []node) (flow, error) {
	for _, n := range nodes {
		f, err := st.node(e, n)
		if err != nil || f != flowNext {
			return f, err
		}
	}
	return flowNext, nil
}

func (st *state) node(e env, n node) (flow, error) {
	switch n := n.(type) {
	case textNode:
		st.out.WriteString(string(n))
	case outputNode:
		v, err := st.pipe(e, n.pipe)
		if err != nil {
			return flowNext, err
		}
		writeValue(&st.out, v)
	case *ifNode:
		v, err := st.pipe(e, n.cond)
		if err != nil {
			return flowNext, err
		}
		if truth(v) {
			return st.list(e, n.then)
		}
		return st.list(e, n.els)
	case *withNode:
		return st.with(e, n)
	case *rangeNode:
		return flowNext, st.rangeOver(e, n)
	case callNode:
		return flowNext, st.call(e, n)
	case breakNode:
		return flowBreak, nil
	case continueNode:
		return flowContinue, nil
	}
	return flowNext, nil
}

func (st *state) with(e env, n *withNode) (flow, error) {
	v, err := st.pipe(e, n.cond)
	if err != nil {
		return flowNext, err
	}
	if !truth(v) {
		return st.list(e, n.els)
	}
	if n.bind != "" {
		return st.list(env{dot: e.dot, vars: e.vars.bind(n.bind, v)}, n.then)
	}
	return st.list(env{dot: v, vars: e.vars}, n.then)
}

// rangeOver runs the body for each element of an array or member of an
// object (in key order); anything else, or an empty one, runs the else
// branch. break and continue act on the innermost range only.
func (st *state) rangeOver(e env, n *rangeNode) error {
	v, err := st.pipe(e, n.over)
	if err != nil {
		return err
	}
	each := func(k, elem any) (bool, error) {
		sub := env{dot: elem, vars: e.vars}
		if n.vars {
			sub = env{dot: e.dot, vars: e.vars.bind(n.key, k).bind(n.elem, elem)}
		}
		f, err := st.list(sub, n.body)
		return f == flowBreak || err != nil, err
	}
	switch x := v.(type) {
	case []any:
		for i, elem := range x {
			if stop, err := each(int64(i), elem); stop {
				return err
			}
		}
		if len(x) > 0 {
			return nil
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if stop, err := each(k, x[k]); stop {
				return err
			}
		}
		if len(x) > 0 {
			return nil
		}
	}
	_, err = st.list(e, n.els)
	return err
}

func (st *state) call(e env, n callNode) error {
	arg, err := st.pipe(e, n.arg)
	if err != nil {
		return err
	}
	if st.depth >= maxDepth {
		return fmt.Errorf("template %s: calls nested more than %d deep", n.name, maxDepth)
	}
	st.depth++
	defer func() { st.depth-- }()
	_, err = st.list(env{dot: arg, vars: e.vars}, st.set.defs[n.name])
	return err
}

// pipe evaluates a pipeline; an empty one is null.
func (st *state) pipe(e env, p pipeline) (any, error) {
	var prev any
	for i, c := range p {
		v, err := st.command(e, c, prev, i > 0)
		if err != nil {
			return nil, err
		}
		prev = v
	}
	return prev, nil
}

// command evaluates one command; piped says prev is the result of the
// command before it, which a function gets as its last argument.
func (st *state) command(e env, c *command, prev any, piped bool) (any, error) {
	var v any
	switch c.kind {
	case cmdLit:
		return c.lit, nil
	case cmdDot:
		return e.dot, nil
	case cmdField:
		v = member(e.dot, c.name)
	case cmdVar:
		v = e.vars.lookup(c.name)
	case cmdParen:
		var err error
		if v, err = st.pipe(e, c.sub); err != nil {
			return nil, err
		}
	case cmdFunc:
		args := make([]any, 0, len(c.args)+1)
		for _, a := range c.args {
			av, err := st.command(e, a, nil, false)
			if err != nil {
				return nil, err
			}
			args = append(args, av)
		}
		if piped {
			args = append(args, prev)
		}
		return c.fn(args)
	}
	for _, name := range c.chain {
		v = member(v, name)
	}
	return v, nil
}
