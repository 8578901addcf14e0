package tmpl

// pipelineTo reads a pipeline and the token that must end it: "}}" or
// ")". A pipeline may be empty (its value is null) and may end in '|'.
func (p *parser) pipelineTo(end tokKind) (pipeline, error) {
	var pipe pipeline
	for {
		c, err := p.operand()
		if err != nil {
			return nil, err
		}
		if c == nil {
			break
		}
		pipe = append(pipe, c)
		t, err := p.next()
		if err != nil {
			return nil, err
		}
		if t.kind != tChar || t.text != "|" {
			p.lex.backup(t)
			break
		}
	}
	if end == tClose {
		return pipe, p.expect(tClose, "")
	}
	return pipe, p.expect(tChar, ")")
}

// operand reads one operand: a constant, ., .name, $name, ( pipeline ), or
// a function with its arguments, each an operand (so "printf "%d" len .x"
// gives .x to len). It returns nil, with the token put back, when the
// next token starts no operand.
func (p *parser) operand() (*command, error) {
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	c := &command{pos: t.pos}
	switch {
	case t.kind == tDot:
		c.kind = cmdDot
		return c, nil
	case t.kind == tNumber:
		// Pound keeps a number written in a template as an integer.
		c.kind, c.lit = cmdLit, int64(t.num)
		return c, nil
	case t.kind == tString:
		c.kind, c.lit = cmdLit, t.text
		return c, nil
	case t.kind == tIdent && (t.text == "true" || t.text == "false"):
		c.kind, c.lit = cmdLit, t.text == "true"
		return c, nil
	case t.kind == tIdent:
		return p.call(c, t)
	case t.kind == tField:
		c.kind, c.name = cmdField, t.text
	case t.kind == tVar:
		c.kind, c.name = cmdVar, t.text
	case t.kind == tChar && t.text == "(":
		c.kind = cmdParen
		if c.sub, err = p.pipelineTo(tChar); err != nil {
			return nil, err
		}
	default:
		p.lex.backup(t)
		return nil, nil
	}
	return c, p.chain(c)
}

// call reads a function's arguments: operands up to one that is not.
func (p *parser) call(c *command, t token) (*command, error) {
	fn, ok := functions[t.text]
	if !ok {
		return nil, p.lex.errorf(t.pos, "no such function: %s", t.text)
	}
	c.kind, c.name, c.fn = cmdFunc, t.text, fn
	for {
		arg, err := p.operand()
		if err != nil || arg == nil {
			return c, err
		}
		c.args = append(c.args, arg)
	}
}

// chain reads the members written right after an operand: .a.b, $v.key,
// (pipeline).key.
func (p *parser) chain(c *command) error {
	for !p.lex.spaceNext() {
		t, err := p.next()
		if err != nil {
			return err
		}
		if t.kind != tField {
			p.lex.backup(t)
			return nil
		}
		c.chain = append(c.chain, t.text)
	}
	return nil
}
