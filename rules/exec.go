package rules

// run executes p on m until it accepts, rejects or ends. Every jump goes
// forward (conditions and branches are compiled in order), so a program
// runs at most len(code) instructions.
func (p *Program) run(st *State, m *Message) (opcode, error) {
	pc := int32(0)
	for {
		in := &p.code[pc]
		switch in.op {
		case opTest:
			ok, err := st.test(p.env, in.leaf, m)
			if err != nil {
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
			if err := st.act(p.env, in.act, m); err != nil {
				return opEnd, err
			}
			pc++
		case opEdit:
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

// Select reports whether the request in st satisfies a selection
// program. A nil program accepts.
func (p *Program) Select(st *State) (bool, error) {
	if p == nil {
		return true, nil
	}
	op, err := p.run(st, &st.Req)
	return op == opAccept, err
}

// Rewrite runs a rewrite program on m (st.Req, or st.Resp for response
// rules; accessors always read the request).
func (p *Program) Rewrite(st *State, m *Message) error {
	if p == nil {
		return nil
	}
	_, err := p.run(st, m)
	return err
}
