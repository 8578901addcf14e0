package tmpl

import (
	"fmt"
	"strings"
)

// Set is a collection of named templates. Parsing adds to it; the text
// outside definitions is checked but not kept, as poundctl keeps only the
// definitions of its template file.
type Set struct {
	defs map[string][]node
}

// New returns an empty set.
func New() *Set { return &Set{defs: map[string][]node{}} }

// Defined reports whether the set has a template name.
func (s *Set) Defined(name string) bool {
	_, ok := s.defs[name]
	return ok
}

// Parse reads the definitions of text; file names it in errors, which
// read "file:LINE:COL: message". On error the set keeps the definitions
// read before it.
func (s *Set) Parse(file, text string) error {
	p := &parser{lex: &lexer{src: text}, set: s}
	_, _, err := p.list(scope{})
	if se, ok := err.(*syntaxError); ok {
		line := 1 + strings.Count(text[:se.pos], "\n")
		col := se.pos - strings.LastIndexByte(text[:se.pos], '\n')
		return fmt.Errorf("%s:%d:%d: %s", file, line, col, se.msg)
	}
	return err
}

// Nodes of a parsed template.
type (
	node       any
	textNode   string
	outputNode struct{ pipe pipeline }
	ifNode     struct {
		cond      pipeline
		then, els []node
	}
	withNode struct {
		bind      string // the variable set to the value; "" sets dot
		cond      pipeline
		then, els []node
	}
	rangeNode struct {
		key, elem string // variables ("" when none or "_")
		vars      bool   // a variable is named: dot stays
		over      pipeline
		body, els []node
	}
	callNode struct {
		name string
		arg  pipeline
	}
	breakNode    struct{}
	continueNode struct{}
)

// A pipeline is commands joined by '|': each result but the first is
// given to the next command, a function, as its last argument.
type pipeline []*command

type cmdKind int

const (
	cmdLit   cmdKind = iota // a constant
	cmdDot                  // .
	cmdField                // .name: a member of dot
	cmdVar                  // $name
	cmdParen                // ( pipeline )
	cmdFunc                 // name arg...
)

type command struct {
	kind  cmdKind
	lit   any
	name  string // field, variable or function
	fn    function
	args  []*command // a function's arguments, one operand each
	sub   pipeline   // of cmdParen
	chain []string   // members taken in turn of a field, variable or ( )
	pos   int
}

// scope says which of the context's keywords an action may be.
type scope struct {
	elseOK, endOK bool
	loop          bool // break and continue (inside range)
}

// stop says what ended a list of actions.
type stop int

const (
	stopEOF stop = iota
	stopEnd
	stopElse
	stopNone // the action was not a terminator
)

type parser struct {
	lex *lexer
	set *Set
}

func (p *parser) next() (token, error) { return p.lex.next() }

// expect reads the token that must come next.
func (p *parser) expect(kind tokKind, text string) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind != kind || kind == tChar && t.text != text {
		want := token{kind: kind, text: text}
		return p.lex.errorf(t.pos, "unexpected %s, expected %s", t, want)
	}
	return nil
}

// list reads text and actions up to a terminator the scope allows, or
// the end of the text (which, as in Pound, also ends an open action).
func (p *parser) list(sc scope) ([]node, stop, error) {
	var nodes []node
	for {
		t := p.lex.text()
		switch t.kind {
		case tEOF:
			return nodes, stopEOF, nil
		case tText:
			nodes = append(nodes, textNode(t.text))
			continue
		}
		n, st, err := p.action(sc)
		if err != nil {
			return nil, 0, err
		}
		if st != stopNone {
			return nodes, st, nil
		}
		if n != nil {
			nodes = append(nodes, n)
		}
	}
}

// action reads one action after its "{{".
func (p *parser) action(sc scope) (node, stop, error) {
	t, err := p.next()
	if err != nil || t.kind == tClose {
		return nil, stopNone, err // {{}} and {{/* comment */}} are nothing
	}
	if t.kind == tIdent {
		switch {
		case t.text == "end" && sc.endOK:
			return nil, stopEnd, p.expect(tClose, "")
		case t.text == "else" && sc.elseOK:
			return nil, stopElse, nil
		case (t.text == "break" || t.text == "continue") && sc.loop:
			if t.text == "break" {
				return breakNode{}, stopNone, p.expect(tClose, "")
			}
			return continueNode{}, stopNone, p.expect(tClose, "")
		}
		if kw, ok := keywords[t.text]; ok {
			n, err := kw(p, sc)
			return n, stopNone, err
		}
	}
	p.lex.backup(t)
	pipe, err := p.pipelineTo(tClose)
	return outputNode{pipe}, stopNone, err
}

// keywords are the actions allowed everywhere.
var keywords map[string]func(*parser, scope) (node, error)

func init() {
	keywords = map[string]func(*parser, scope) (node, error){
		"if":       (*parser).ifAction,
		"with":     (*parser).withAction,
		"range":    (*parser).rangeAction,
		"define":   (*parser).defineAction,
		"block":    (*parser).blockAction,
		"template": (*parser).templateAction,
	}
}

// ifAction reads "if pipeline}}" and what follows up to its end; an
// "else if" reads the rest of the chain as the else branch.
func (p *parser) ifAction(sc scope) (node, error) {
	cond, err := p.pipelineTo(tClose)
	if err != nil {
		return nil, err
	}
	n := &ifNode{cond: cond}
	var st stop
	n.then, st, err = p.list(scope{elseOK: true, endOK: true, loop: sc.loop})
	if err != nil || st != stopElse {
		return n, err
	}
	t, err := p.next()
	switch {
	case err != nil:
		return nil, err
	case t.kind == tIdent && t.text == "if":
		inner, err := p.ifAction(sc)
		n.els = []node{inner}
		return n, err
	case t.kind == tClose:
		n.els, _, err = p.list(scope{endOK: true, loop: sc.loop})
		return n, err
	}
	return nil, p.lex.errorf(t.pos, "unexpected %s after else", t)
}

// elseBranch reads what follows "else" in with and range: "}}", the
// branch, its end.
func (p *parser) elseBranch(st stop, sc scope) ([]node, error) {
	if st != stopElse {
		return nil, nil
	}
	if err := p.expect(tClose, ""); err != nil {
		return nil, err
	}
	els, _, err := p.list(scope{endOK: true, loop: sc.loop})
	return els, err
}

// withAction reads "with [$v =] pipeline}}" and its branches.
func (p *parser) withAction(sc scope) (node, error) {
	n := &withNode{}
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	if t.kind == tVar || t.kind == tChar && t.text == "_" {
		if t.kind == tVar {
			n.bind = t.text
		}
		if err := p.expect(tChar, "="); err != nil {
			return nil, err
		}
	} else {
		p.lex.backup(t)
	}
	if n.cond, err = p.pipelineTo(tClose); err != nil {
		return nil, err
	}
	var st stop
	if n.then, st, err = p.list(scope{elseOK: true, endOK: true, loop: sc.loop}); err != nil {
		return nil, err
	}
	n.els, err = p.elseBranch(st, sc)
	return n, err
}

// rangeVar reads one variable of range: $name, or _ for none.
func (p *parser) rangeVar() (string, error) {
	t, err := p.next()
	switch {
	case err != nil:
		return "", err
	case t.kind == tVar:
		return t.text, nil
	case t.kind == tChar && t.text == "_":
		return "", nil
	}
	return "", p.lex.errorf(t.pos, "unexpected %s in range variables", t)
}

// rangeAction reads "range [$k, $v =] pipeline}}" and its branches.
func (p *parser) rangeAction(sc scope) (node, error) {
	n := &rangeNode{}
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	p.lex.backup(t)
	if t.kind == tVar || t.kind == tChar && t.text == "_" {
		if n.key, err = p.rangeVar(); err != nil {
			return nil, err
		}
		if err := p.expect(tChar, ","); err != nil {
			return nil, err
		}
		if n.elem, err = p.rangeVar(); err != nil {
			return nil, err
		}
		if err := p.expect(tChar, "="); err != nil {
			return nil, err
		}
		// "_, _ =" names no variable: dot is set, as without any.
		n.vars = n.key != "" || n.elem != ""
	}
	if n.over, err = p.pipelineTo(tClose); err != nil {
		return nil, err
	}
	var st stop
	if n.body, st, err = p.list(scope{elseOK: true, endOK: true, loop: true}); err != nil {
		return nil, err
	}
	n.els, err = p.elseBranch(st, scope{loop: true})
	return n, err
}

// templateName reads the quoted name of define, block and template.
func (p *parser) templateName() (string, error) {
	t, err := p.next()
	if err != nil {
		return "", err
	}
	if t.kind != tString {
		return "", p.lex.errorf(t.pos, "unexpected %s, expected a template name in quotes", t)
	}
	return t.text, nil
}

// defineAction reads "define "name"}}" and the body, which (re)defines
// the template as soon as it is read.
func (p *parser) defineAction(scope) (node, error) {
	name, err := p.templateName()
	if err != nil {
		return nil, err
	}
	if err := p.expect(tClose, ""); err != nil {
		return nil, err
	}
	body, _, err := p.list(scope{endOK: true})
	if err != nil {
		return nil, err
	}
	p.set.defs[name] = body
	return nil, nil
}

// blockAction reads "block "name" pipeline}}": a call of name, which the
// body that follows defines unless name is defined already (then there
// is no body).
func (p *parser) blockAction(scope) (node, error) {
	name, err := p.templateName()
	if err != nil {
		return nil, err
	}
	arg, err := p.pipelineTo(tClose)
	if err != nil {
		return nil, err
	}
	if !p.set.Defined(name) {
		body, _, err := p.list(scope{endOK: true})
		if err != nil {
			return nil, err
		}
		p.set.defs[name] = body
	}
	return callNode{name: name, arg: arg}, nil
}

// templateAction reads "template "name" pipeline}}"; name must be defined
// already.
func (p *parser) templateAction(scope) (node, error) {
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	p.lex.backup(t)
	name, err := p.templateName()
	if err != nil {
		return nil, err
	}
	arg, err := p.pipelineTo(tClose)
	if err != nil {
		return nil, err
	}
	if !p.set.Defined(name) {
		return nil, p.lex.errorf(t.pos, "no such template defined: %s", name)
	}
	return callNode{name: name, arg: arg}, nil
}
