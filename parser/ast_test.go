package parser

import (
	"errors"
	"testing"
)

func TestSpanString(t *testing.T) {
	tests := []struct {
		name string
		span Span
		want string
	}{
		{name: "same line range", span: sp("pound.cfg", 3, 1, 3, 6), want: "pound.cfg:3.1-6"},
		{name: "single character", span: sp("pound.cfg", 2, 11, 2, 11), want: "pound.cfg:2.11"},
		{name: "across lines", span: sp("pound.cfg", 3, 9, 4, 11), want: "pound.cfg:3.9-4.11"},
		{name: "end of line quirk", span: sp("pound.cfg", 2, 4, 3, 0), want: "pound.cfg:2.4-3"},
		{name: "no end", span: Span{Start: Pos{File: "a.cfg", Line: 5, Col: 2}}, want: "a.cfg:5.2"},
		{
			name: "across files",
			span: Span{Start: Pos{File: "a.cfg", Line: 1, Col: 1}, End: Pos{File: "b.cfg", Line: 2, Col: 3}},
			want: "a.cfg:1.1-b.cfg:2.3",
		},
		{name: "no column", span: sp("a.cfg", 4, 0, 4, 0), want: "a.cfg:4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.span.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDiagnosticError(t *testing.T) {
	tests := []struct {
		name string
		diag Diagnostic
		want string
	}{
		{name: "error", diag: Diagnostic{Span: sp("p.cfg", 3, 1, 3, 6), Msg: "unrecognized keyword"},
			want: "p.cfg:3.1-6: unrecognized keyword"},
		{name: "warning", diag: Diagnostic{Span: sp("p.cfg", 2, 11, 2, 11), Msg: "unrecognized escape character", Warning: true},
			want: "p.cfg:2.11: warning: unrecognized escape character"},
		{name: "a warning's second line", diag: Diagnostic{Span: sp("p.cfg", 4, 9, 14, 11), Msg: "see section \"DEPRECATED FEATURES\" in pound(8)", Warning: true, Note: true},
			want: "p.cfg:4.9-14.11: see section \"DEPRECATED FEATURES\" in pound(8)"},
		{name: "no position", diag: Diagnostic{Span: Span{Start: Pos{File: "p.cfg"}}, Msg: "can't open p.cfg: x"},
			want: "can't open p.cfg: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.diag.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDiagnosticsErr(t *testing.T) {
	warn := &Diagnostic{Span: sp("p.cfg", 1, 1, 1, 1), Msg: "w", Warning: true}
	e1 := &Diagnostic{Span: sp("p.cfg", 2, 1, 2, 1), Msg: "e1"}
	e2 := &Diagnostic{Span: sp("p.cfg", 3, 1, 3, 1), Msg: "e2"}
	tests := []struct {
		name      string
		diags     Diagnostics
		hasErrors bool
		err       string
	}{
		{name: "none", diags: nil, hasErrors: false, err: ""},
		{name: "warnings only", diags: Diagnostics{warn}, hasErrors: false, err: ""},
		{name: "errors joined, warnings left out", diags: Diagnostics{warn, e1, e2}, hasErrors: true,
			err: "p.cfg:2.1: e1\np.cfg:3.1: e2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.diags.HasErrors(); got != tt.hasErrors {
				t.Errorf("HasErrors() = %v, want %v", got, tt.hasErrors)
			}
			err := tt.diags.Err()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.err {
				t.Errorf("Err() = %q, want %q", got, tt.err)
			}
			if tt.hasErrors && !errors.Is(err, e1) {
				t.Errorf("errors.Is(Err(), e1) = false, want the diagnostic to be reachable")
			}
		})
	}
}

func TestNodeIs(t *testing.T) {
	n := &Node{Keyword: "BackEnd"}
	tests := []struct {
		name string
		kw   string
		want bool
	}{
		{name: "same case", kw: "BackEnd", want: true},
		{name: "other case", kw: "backend", want: true},
		{name: "other keyword", kw: "Backends", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := n.Is(tt.kw); got != tt.want {
				t.Errorf("Is(%q) = %v, want %v", tt.kw, got, tt.want)
			}
		})
	}
}

func TestArgKindString(t *testing.T) {
	tests := []struct {
		name string
		kind ArgKind
		want string
	}{
		{name: "word", kind: Word, want: "identifier"},
		{name: "string", kind: String, want: "string"},
		{name: "number", kind: Number, want: "number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.kind.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
