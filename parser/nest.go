package parser

import (
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// scope is the kind of block a line is read in; it decides which keywords
// open blocks (ACL, Control) and whether lines are directives or data.
type scope uint8

const (
	scopeTop scope = iota
	scopeListener
	scopeService
	scopeBackend
	scopeSession
	scopeMatch    // Match, Condition: conditions
	scopeRewrite  // Rewrite ... Else ... End
	scopeResolver // Resolver: holds ConfigText
	scopeLua
	scopeControl // block form of the top-level Control
	scopeList    // ACL, TrustedIP, CombineHeaders: one value per line
	scopeText    // ConfigText: verbatim body, then End
	scopeCluster // lbd's top-level Cluster block
	scopeAuth    // lbd's JWTAuth, APIKeyAuth and ForwardAuth blocks
)

// blockScopes maps the lower-cased keywords that always open a block to
// the scope of their body. Keywords whose block-ness depends on the
// arguments or on the enclosing scope are decided in opensBlock.
var blockScopes = map[string]scope{
	"listenhttp":     scopeListener,
	"listenhttps":    scopeListener,
	"tunnel":         scopeListener, // Pound 4.23 TCP listener
	"service":        scopeService,
	"backend":        scopeBackend,
	"emergency":      scopeBackend,
	"session":        scopeSession,
	"match":          scopeMatch,
	"condition":      scopeMatch,
	"rewrite":        scopeRewrite,
	"resolver":       scopeResolver,
	"lua":            scopeLua,
	"combineheaders": scopeList,
	"jwtauth":        scopeAuth,
	"apikeyauth":     scopeAuth,
	"forwardauth":    scopeAuth,
}

// lowerKey lower-cases an ASCII keyword into buf; map lookups with
// string(buf[:n]) do not allocate.
func lowerKey(buf *[32]byte, kw string) []byte {
	if len(kw) > len(buf) {
		return nil
	}
	for i := 0; i < len(kw); i++ {
		c := kw[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(kw)]
}

// opensBlock decides whether the directive kw args, read in scope in,
// opens a block and which scope its body has.
func opensBlock(in scope, kw string, args []Arg) (scope, bool) {
	var buf [32]byte
	key := lowerKey(&buf, kw)
	if s, ok := blockScopes[string(key)]; ok {
		return s, true
	}
	switch string(key) {
	case "acl":
		// ACL "name" defines a list at top level; elsewhere ACL "name"
		// references one and a bare ACL (flags allowed) lists addresses.
		// -file/-filewatch always read the list from a file.
		if hasFileFlag(args) {
			return 0, false
		}
		return scopeList, in == scopeTop || !hasString(args)
	case "trustedip", "cachepurge":
		// A bare TrustedIP or CachePurge (lbd's) lists addresses.
		return scopeList, len(args) == 0
	case "control":
		// Control "path" is a line; at top level a bare Control opens the
		// Socket/Mode/ChangeOwner block; inside a Service it is a backend.
		return scopeControl, in == scopeTop && len(args) == 0
	case "cluster", "acmeaccount":
		// lbd's Cluster and ACMEAccount sections, at top level only
		// (plain statements inside, as in the Cluster section).
		return scopeCluster, in == scopeTop && len(args) == 0
	case "not":
		// Not applies to the statement after it (after any further Nots),
		// which decides: "Not Match OR" and "Not ACL" open blocks.
		i := 0
		for i < len(args) && args[i].Kind == Word && strings.EqualFold(args[i].Text, "not") {
			i++
		}
		if i < len(args) && args[i].Kind == Word {
			return opensBlock(in, args[i].Text, args[i+1:])
		}
	}
	return 0, false
}

func hasFileFlag(args []Arg) bool {
	for _, a := range args {
		if a.Kind == Word && (strings.EqualFold(a.Text, "-file") || strings.EqualFold(a.Text, "-filewatch")) {
			return true
		}
	}
	return false
}

func hasString(args []Arg) bool {
	for _, a := range args {
		if a.Kind == String {
			return true
		}
	}
	return false
}

// frame is one open block.
type frame struct {
	node  *Node
	scope scope
}

// scopeNow is the scope lines are currently read in.
func (b *builder) scopeNow() scope {
	if len(b.stack) == 0 {
		return scopeTop
	}
	return b.stack[len(b.stack)-1].scope
}

// add appends n to the innermost open block, or to the file.
func (b *builder) add(n *Node) {
	if len(b.stack) == 0 {
		b.file.Nodes = append(b.file.Nodes, n)
		return
	}
	p := b.stack[len(b.stack)-1].node
	p.Children = append(p.Children, n)
}

func (b *builder) errorAt(sp Span, msg string) {
	b.diags = append(b.diags, &Diagnostic{Span: sp, Msg: msg})
}

// line places one line of input in the tree.
func (b *builder) line(l *lineAST) {
	head := &l.Tokens[0]
	if head.Type == tokWord {
		switch {
		case strings.EqualFold(head.Value, "End"):
			b.end(l)
			return
		case strings.EqualFold(head.Value, "Include"):
			b.include(l)
			return
		}
	}
	in := b.scopeNow()
	if in == scopeList || in == scopeText {
		n := b.newNode()
		n.Args, n.Span = b.args(l.Tokens), tokenSpan(head)
		b.add(n)
		return
	}
	if head.Type != tokWord {
		b.errorAt(tokenSpan(head), "syntax error")
		return
	}
	n := b.newNode()
	n.Keyword, n.Args, n.Span = head.Value, b.args(l.Tokens[1:]), tokenSpan(head)
	b.add(n)
	if n.Is("IncludeDir") {
		b.applyIncludeDir(n)
	}
	body, block := opensBlock(in, n.Keyword, n.Args)
	if l.Text.Type == tokText {
		n.Args = append(n.Args, tokenArg(&l.Text))
		body, block = scopeText, true
	}
	if block {
		n.Block = true
		n.Children = b.children()
		b.stack = append(b.stack, frame{node: n, scope: body})
	}
}

// Nodes and arguments are carved out of slabs: a large configuration has
// hundreds of thousands of lines, and one allocation per 256 nodes instead
// of two per line halves the parse time.
const slabSize = 256

func (b *builder) newNode() *Node {
	if len(b.nodeSlab) == 0 {
		b.nodeSlab = make([]Node, slabSize)
	}
	n := &b.nodeSlab[0]
	b.nodeSlab = b.nodeSlab[1:]
	return n
}

// children returns room for a block's first few children (most blocks
// have few: a BackEnd holds Address and Port).
func (b *builder) children() []*Node {
	const room = 4
	if len(b.childSlab) < room {
		b.childSlab = make([]*Node, slabSize*room)
	}
	c := b.childSlab[:0:room]
	b.childSlab = b.childSlab[room:]
	return c
}

// args converts tokens to arguments; nil for none. The result's capacity
// is its length, so an append by a later reader cannot overwrite the
// arguments of the next node in the slab.
func (b *builder) args(toks []lexer.Token) []Arg {
	if len(toks) == 0 {
		return nil
	}
	if len(b.argSlab) < len(toks) {
		b.argSlab = make([]Arg, max(slabSize, len(toks)))
	}
	out := b.argSlab[:len(toks):len(toks)]
	b.argSlab = b.argSlab[len(toks):]
	for i := range toks {
		out[i] = tokenArg(&toks[i])
	}
	return out
}

// end closes the innermost block.
func (b *builder) end(l *lineAST) {
	head := &l.Tokens[0]
	if len(b.stack) == 0 {
		b.errorAt(tokenSpan(head), "unexpected "+head.Value)
		return
	}
	f := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	f.node.EndSpan = tokenSpan(head)
	if len(l.Tokens) > 1 {
		extra := &l.Tokens[1]
		b.errorAt(tokenSpan(extra), "unexpected "+tokenName(extra))
	}
}

// finish reports a block left open at the end of input, once, at eof:
// the file's last line, as Pound 4.23 does ("pound.cfg:6: unexpected end
// of file" for a six-line file).
func (b *builder) finish(eof Pos) {
	if len(b.stack) == 0 {
		return
	}
	b.errorAt(Span{Start: eof, End: eof}, "unexpected end of file")
	b.stack = b.stack[:0]
}
