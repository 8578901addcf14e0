// Package parser reads the syntax of Pound and zproxy configuration files.
//
// It knows lines, words, strings, numbers, blocks (Keyword ... End) and
// Include; it does not know what a directive means. The config package turns
// the tree into a typed, validated model. Every node keeps its position so a
// diagnostic can name FILE:L.C-L.C exactly as Pound 4 does.
//
// Lexical rules, as in Pound: one directive per line; keywords are
// case-insensitive; '#' starts a comment where a token could start (inside
// a word or string it is text); a quoted string knows only the escapes
// \\ and \" (any other backslash stays, so "\.css$" is the regex \.css$, and
// draws Pound's "unrecognized escape character" warning); a backslash at
// the end of a line continues the line; CRLF line ends are accepted; a bare
// token of digits is a Number, any other bare token a Word; columns count
// bytes and a tab counts 8, as Pound's do.
//
// Include "file-or-glob" (allowed in any block) is expanded in place,
// relative to the include directory, which IncludeDir changes for the
// Includes after it. Errors do not stop the parse: ParseFile and Parse
// return the tree and every diagnostic found.
package parser

import (
	"strconv"
	"strings"
)

// Pos is one character position in a configuration file. Line and Col are
// 1-based; Col counts bytes, except that a tab advances it by 8, as Pound's
// lexer does (its testsuite expects "\tBackend" to start at column 9).
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// Span is the range of text a token or node covers, End inclusive.
type Span struct {
	Start Pos `json:"start"`
	End   Pos `json:"end"`
}

// String formats the span as Pound 4 does (locus_range_print), so messages
// compare byte for byte with Pound's: FILE:L.C-L.C across lines, FILE:L.C-C
// within a line, FILE:L.C for a single character; a zero column is omitted
// (Pound prints "2.4-3" for an error at the end of line 2).
func (s Span) String() string {
	b := make([]byte, 0, len(s.Start.File)+24)
	b = appendPoint(b, s.Start)
	e := s.End
	switch {
	case e.File == "":
	case e.File != s.Start.File:
		b = appendPoint(append(b, '-'), e)
	case e.Line != s.Start.Line:
		b = strconv.AppendInt(append(b, '-'), int64(e.Line), 10)
		if e.Col != 0 {
			b = strconv.AppendInt(append(b, '.'), int64(e.Col), 10)
		}
	case s.Start.Col != 0 && s.Start.Col != e.Col:
		b = strconv.AppendInt(append(b, '-'), int64(e.Col), 10)
	}
	return string(b)
}

func appendPoint(b []byte, p Pos) []byte {
	b = append(b, p.File...)
	b = strconv.AppendInt(append(b, ':'), int64(p.Line), 10)
	if p.Col != 0 {
		b = strconv.AppendInt(append(b, '.'), int64(p.Col), 10)
	}
	return b
}

// ArgKind tells how an argument was written, so the config layer can report
// "argument type mismatch: expected string, but found number" like Pound.
type ArgKind int

const (
	// Word is a bare token: an identifier, an address, a -option.
	Word ArgKind = iota
	// String is a double-quoted string; Text holds it unescaped (only \\ and
	// \" are escapes, every other backslash stays as written).
	String
	// Number is a bare token made only of digits (a size or duration suffix
	// such as 10s or 4k is a Word; the config layer converts it).
	Number
)

func (k ArgKind) String() string {
	switch k {
	case String:
		return "string"
	case Number:
		return "number"
	default:
		return "identifier"
	}
}

// Arg is one argument of a directive.
type Arg struct {
	Kind ArgKind `json:"kind"`
	Text string  `json:"text"`
	Span Span    `json:"span"`
}

// Node is one directive. A block directive (ListenHTTP, Service, BackEnd,
// Session, Match, ...) has Block set and its inner directives in Children;
// EndSpan is the position of its End keyword.
//
// Three shapes need to be known by readers of the tree:
//   - Inside a list block (ACL, TrustedIP, CombineHeaders and "Not ACL")
//     each line is a data node: Keyword is "" and Args holds the line's
//     tokens ("192.0.2.0/24", "Accept", ...).
//   - "Not X ..." is a node with Keyword "Not" whose Args start with the
//     negated keyword X; it is a block when X would be one ("Not Match OR").
//   - The Resolver's "ConfigText" is a block whose verbatim body (up to the
//     "End" line) is its single String argument.
type Node struct {
	Keyword  string  `json:"keyword"` // as written in the file
	Args     []Arg   `json:"args,omitempty"`
	Block    bool    `json:"block,omitempty"`
	Children []*Node `json:"children,omitempty"`
	Span     Span    `json:"span"` // the keyword
	EndSpan  Span    `json:"end_span,omitzero"`
}

// Is reports whether the node's keyword is kw, ignoring case as Pound does.
func (n *Node) Is(kw string) bool { return strings.EqualFold(n.Keyword, kw) }

// File is the parsed tree of a configuration, Includes already expanded in
// place.
type File struct {
	Nodes []*Node `json:"nodes"`
}

// Diagnostic is an error or warning at a position.
type Diagnostic struct {
	Span    Span
	Msg     string
	Warning bool
	// Follows marks an error that explains the one before it ("this is
	// the location of ..."); a report that stops at the first error keeps it.
	Follows bool
	// Note marks a warning's second line, which Pound prints without
	// "warning:" (it is no error either).
	Note bool
}

// Error formats the diagnostic as Pound 4 does (without the program prefix):
// FILE:L.C-L.C: message, or FILE:L.C-L.C: warning: message. A diagnostic
// with no line (only "the top file cannot be read" has one) is printed
// without a location, as Pound prints "can't stat pound.cfg: ...".
func (d *Diagnostic) Error() string {
	prefix := ""
	if d.Span.Start.Line > 0 {
		prefix = d.Span.String() + ": "
	}
	if d.Warning && !d.Note {
		return prefix + "warning: " + d.Msg
	}
	return prefix + d.Msg
}
