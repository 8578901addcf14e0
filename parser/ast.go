// Package parser reads the syntax of Pound and zproxy configuration files.
//
// It knows lines, words, strings, numbers, blocks (Keyword ... End) and
// Include; it does not know what a directive means. The config package turns
// the tree into a typed, validated model. Every node keeps its position so a
// diagnostic can name FILE:L.C-L.C exactly as Pound 4 does.
package parser

import "fmt"

// Pos is one character position in a configuration file. Line and Col are
// 1-based; Col counts bytes, as Pound's lexer does.
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

// String formats the span as Pound 4 does: FILE:L.C-L.C.
func (s Span) String() string {
	return fmt.Sprintf("%s:%d.%d-%d.%d", s.Start.File, s.Start.Line, s.Start.Col, s.End.Line, s.End.Col)
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
type Node struct {
	Keyword  string  `json:"keyword"` // as written in the file
	Args     []Arg   `json:"args,omitempty"`
	Block    bool    `json:"block,omitempty"`
	Children []*Node `json:"children,omitempty"`
	Span     Span    `json:"span"` // the keyword
	EndSpan  Span    `json:"end_span,omitzero"`
}

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
}

// Error formats the diagnostic as Pound 4 does (without the program prefix):
// FILE:L.C-L.C: message, or FILE:L.C-L.C: warning: message.
func (d *Diagnostic) Error() string {
	if d.Warning {
		return d.Span.String() + ": warning: " + d.Msg
	}
	return d.Span.String() + ": " + d.Msg
}
