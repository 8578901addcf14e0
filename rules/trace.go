package rules

import (
	"strconv"

	"lbd/explain"
)

// The tracing evaluator serves the routing explainer (lbctl route). It is
// a second interpreter of the same programs, so the one the data path
// runs carries no tracing branch at all: run stays as it is, and this one
// may allocate. It is also a dry run: a TBF condition reads its bucket
// without taking a token (or creating the bucket), a BasicAuth check
// reads the password cache without filling it; everything else a program
// touches is the State, which the caller owns.

// SelectTrace is Select that also returns the instructions it ran.
func (p *Program) SelectTrace(st *State) (bool, []explain.Step, error) {
	if p == nil {
		return true, nil, nil
	}
	var steps []explain.Step
	op, err := p.runTrace(st, &st.Req, &steps)
	return op == opAccept, steps, err
}

// RewriteTrace is Rewrite that also returns the instructions it ran.
func (p *Program) RewriteTrace(st *State, m *Message) ([]explain.Step, error) {
	if p == nil {
		return nil, nil
	}
	var steps []explain.Step
	_, err := p.runTrace(st, m, &steps)
	return steps, err
}

// runTrace is run, recording each test and action in *steps.
func (p *Program) runTrace(st *State, m *Message, steps *[]explain.Step) (opcode, error) {
	pc := int32(0)
	for {
		in := &p.code[pc]
		switch in.op {
		case opTest:
			s := st.traceSubject(p.env, in.leaf, m)
			ok, err := st.testDry(p.env, in.leaf, m, &s)
			*steps = append(*steps, s)
			if err != nil {
				(*steps)[len(*steps)-1].Error = err.Error()
				return opReject, err
			}
			if ok {
				pc = in.t
			} else {
				pc = in.f
			}
		case opJump:
			pc = in.t
		case opAct:
			err := st.act(p.env, in.act, m)
			s := explain.Step{Action: in.act.describe()}
			if err != nil {
				s.Error = err.Error()
			}
			*steps = append(*steps, s)
			if err != nil {
				return opEnd, err
			}
			pc++
		case opEdit:
			*steps = append(*steps, explain.Step{Action: in.act.describeEdit()})
			if st.edit(in.act, m) {
				pc = in.t
			} else {
				pc++
			}
		default:
			return in.op, nil
		}
	}
}

// testDry evaluates l like test, without side effects outside st, and
// completes the step s with the result.
func (st *State) testDry(env *Env, l *leaf, m *Message, s *explain.Step) (bool, error) {
	var ok bool
	var err error
	switch l.kind {
	case lkTBF:
		ok, err = st.tbfPeek(env, l, s)
	case lkACL:
		ok = st.inACL(env, l) // without counting a decision
	case lkBasicAuth:
		ok, err = st.checkBasicAuth(l.auth, true)
	case lkEval:
		ok, err = st.evalTrace(env, int(l.eval), m, s)
	case lkJWT, lkAPIKey:
		s.Detail = st.authDetail(l)
		ok, err = st.test(env, l, m)
	default:
		ok, err = st.test(env, l, m)
	}
	s.Matched = &ok
	holds := ok != s.Not
	s.Holds = &holds
	return ok, err
}

// traceSubject starts the step of leaf l: its description and what it
// will look at.
func (st *State) traceSubject(env *Env, l *leaf, m *Message) explain.Step {
	s := explain.Step{Test: l.describe(env)}
	if l.src != nil {
		s.Not = l.src.Not
		if l.src.Pos.Line() > 0 {
			s.Pos = l.src.Pos.String()
		}
	}
	kind := l.kind
	if kind == lkWatched {
		kind = l.target
	}
	if v, ok := st.subjectOf(env, l, kind, m); ok {
		s.Subject = &v
	}
	return s
}

// subjectOf is the text a leaf of kind k examines, when it has one.
func (st *State) subjectOf(env *Env, l *leaf, k leafKind, m *Message) (string, bool) {
	switch k {
	case lkURL:
		return string(m.URL), true
	case lkPath:
		return string(m.Path()), true
	case lkQuery:
		q, ok := m.Query()
		return string(q), ok
	case lkParam:
		q, _ := m.Query()
		v, ok := queryParam(q, l.name)
		return string(v), ok
	case lkMethod:
		return string(m.Method), true
	case lkHost:
		v, ok := m.Header("Host")
		return string(v), ok
	case lkHeaderNamed:
		v, ok := m.Header(l.name)
		return string(v), ok
	case lkACL:
		return st.RemoteIP(env, l.fwd).String(), true
	case lkBasicAuth:
		if u := basicUser(&st.Req); u != nil {
			return "user " + string(u), true
		}
		return "", false
	case lkString:
		// Expanded once more into the arena, which only this request
		// uses; the test expands it again.
		out, err := st.expand(env, l.subject, nil, "string_match")
		return string(out), err == nil
	}
	return "", false
}

// tbfPeek is the TBF condition without taking a token.
func (st *State) tbfPeek(env *Env, l *leaf, s *explain.Step) (bool, error) {
	key, err := st.expand(env, l.subject, nil, "tbf")
	if err != nil {
		return false, err
	}
	k := string(key)
	s.Subject = &k
	tokens, err := l.tbf.Limiter.Peek(key)
	if err != nil {
		return false, err
	}
	s.Detail = strconv.FormatUint(tokens, 10) + " token(s) in the bucket (none taken: dry run)"
	return tokens > 0, nil
}

// evalTrace is eval, recording the detached condition's own steps the
// first time the request evaluates it.
func (st *State) evalTrace(env *Env, i int, m *Message, s *explain.Step) (bool, error) {
	switch st.evals[i] {
	case 1, 2:
		s.Detail = "evaluated earlier in this request"
		return st.evals[i] == 2, nil
	}
	saved, cur, n := st.smq, st.smCur, st.smLen
	st.smCur, st.smLen = 0, 0
	op, err := env.Detached[i].runTrace(st, m, &s.Eval)
	st.smq, st.smCur, st.smLen = saved, cur, n
	if err != nil {
		return false, err
	}
	res := op == opAccept
	st.evals[i] = 1
	if res {
		st.evals[i] = 2
	}
	return res, nil
}
