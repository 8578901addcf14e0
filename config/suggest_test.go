package config

import "testing"

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       int
	}{
		{name: "equal", a: "weight", b: "weight", want: 0},
		{name: "empty", a: "", b: "port", want: 4},
		{name: "substitution", a: "port", b: "part", want: 1},
		{name: "insertion", a: "adress", b: "address", want: 1},
		{name: "transposition is one edit", a: "wieght", b: "weight", want: 1},
		{name: "transposition and insertion", a: "prot", b: "porta", want: 2},
		{name: "unrelated", a: "frobnicate", b: "port", want: 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := levenshtein(tc.a, tc.b); got != tc.want {
				t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := levenshtein(tc.b, tc.a); got != tc.want {
				t.Errorf("not symmetric: levenshtein(%q, %q) = %d", tc.b, tc.a, got)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	names := []string{"Address", "Port", "Priority", "Weight", "TimeOut", "ConnTO"}
	tests := []struct {
		name, kw, want string
		names          []string // nil: names
	}{
		{name: "case is ignored", kw: "ADRESS", want: "Address"},
		{name: "within a third of the length", kw: "Wieght", want: "Weight"},
		{name: "a short keyword allows one edit", kw: "Prt", want: "Port"},
		{name: "swapped letters", kw: "Prot", want: "Port"},
		{name: "two edits in a short keyword are too many", kw: "Pxrq", want: ""},
		{name: "too far", kw: "Frobnicate", want: ""},
		{name: "the keyword itself is not a suggestion", kw: "port", want: ""},
		{name: "ties go to the alphabetically first", kw: "Pxrt", want: "Part", names: []string{"Port", "Part"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.names
			if in == nil {
				in = append([]string(nil), names...)
			}
			if got := closest(tc.kw, in); got != tc.want {
				t.Errorf("closest(%q) = %q, want %q", tc.kw, got, tc.want)
			}
		})
	}
}
