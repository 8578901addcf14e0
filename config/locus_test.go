package config

import (
	"testing"
	"unsafe"

	"lbd/parser"
)

// TestLocusKeepsTheSpan: a Locus gives back the span it was made of, and
// prints as the span does, whatever its shape; the ones that do not fit
// 16 bytes are kept whole.
func TestLocusKeepsTheSpan(t *testing.T) {
	at := func(file string, line, col int) parser.Pos { return parser.Pos{File: file, Line: line, Col: col} }
	tests := []struct {
		name string
		span parser.Span
		want string
	}{
		{"none", parser.Span{}, ":0"},
		{"one line", parser.Span{Start: at("a.cfg", 3, 5), End: at("a.cfg", 3, 20)}, "a.cfg:3.5-20"},
		{"a block", parser.Span{Start: at("a.cfg", 3, 1), End: at("a.cfg", 9, 3)}, "a.cfg:3.1-9.3"},
		{"no end", parser.Span{Start: at("a.cfg", 7, 0)}, "a.cfg:7"},
		{"across files", parser.Span{Start: at("a.cfg", 2, 1), End: at("b.cfg", 4, 3)}, "a.cfg:2.1-b.cfg:4.3"},
		{"an included file", parser.Span{Start: at("/etc/lbd/conf.d/x.cfg", 1, 1), End: at("/etc/lbd/conf.d/x.cfg", 1, 9)}, "/etc/lbd/conf.d/x.cfg:1.1-9"},
		{"a column past 16 bits", parser.Span{Start: at("a.cfg", 1, 1), End: at("a.cfg", 1, 70000)}, "a.cfg:1.1-70000"},
		{"a line past 32 bits", parser.Span{Start: at("a.cfg", 1<<33, 1), End: at("a.cfg", 1<<33, 2)}, "a.cfg:8589934592.1-2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := LocusOf(tc.span)
			if got := l.Span(); got != tc.span {
				t.Errorf("Span() = %+v, want %+v", got, tc.span)
			}
			if got := l.String(); got != tc.want || got != tc.span.String() {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if l.Line() != tc.span.Start.Line {
				t.Errorf("Line() = %d, want %d", l.Line(), tc.span.Start.Line)
			}
			if again := LocusOf(tc.span); again != l {
				t.Errorf("the same span packs to %+v and %+v", l, again)
			}
		})
	}
	if (LocusOf(parser.Span{}) != Locus{}) {
		t.Error("the zero span is not the zero Locus")
	}
	if n := unsafe.Sizeof(Locus{}); n != 16 {
		t.Errorf("Locus is %d bytes, want 16", n)
	}
}

// TestLocusOfAllocatesNothing: a load makes a Locus for every statement.
func TestLocusOfAllocatesNothing(t *testing.T) {
	span := parser.Span{Start: parser.Pos{File: "a.cfg", Line: 3, Col: 5}, End: parser.Pos{File: "a.cfg", Line: 3, Col: 20}}
	LocusOf(span)
	if n := testing.AllocsPerRun(100, func() { LocusOf(span) }); n != 0 {
		t.Errorf("LocusOf allocates %v times", n)
	}
}

// TestPointIsTheStart: a Locus's Point gives its start's file and line,
// for a wide span too.
func TestPointIsTheStart(t *testing.T) {
	for _, s := range []parser.Span{
		{},
		{Start: parser.Pos{File: "a.cfg", Line: 3, Col: 5}, End: parser.Pos{File: "a.cfg", Line: 4, Col: 1}},
		{Start: parser.Pos{File: "a.cfg", Line: 9, Col: 1}, End: parser.Pos{File: "a.cfg", Line: 9, Col: 80000}},
	} {
		p := LocusOf(s).Start()
		if p.File() != s.Start.File || p.Line() != s.Start.Line {
			t.Errorf("%s: point %s:%d", s, p.File(), p.Line())
		}
	}
	if n := unsafe.Sizeof(Point{}); n != 8 {
		t.Errorf("Point is %d bytes, want 8", n)
	}
}
