package config

import "testing"

func TestRequiredPrefix(t *testing.T) {
	cases := []struct {
		name, expr    string
		icase         bool
		prefix        string
		wantI, foldKS bool
		ok            bool
	}{
		{"literal then a class", "^/api/v[0-9]+/", false, "/api/v", false, false, true},
		{"the literal before a repetition", "^/ab*", false, "/a", false, false, true},
		{"folding, with an s (the parser writes folded runes in upper case)", "^/Sk[0-9]", true, "/SK", true, true, true},
		{"not anchored", "/api/[0-9]", false, "", false, false, false},
		{"anchored at a line, not the text", "(?m)^/api/[0-9]", false, "", false, false, false},
		{"a group first", "^(/a|/b)[0-9]", false, "", false, false, false},
		{"nothing literal", "^[0-9]+", false, "", false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPattern(MatchRegex, tc.expr, tc.icase)
			if err != nil {
				t.Fatal(err)
			}
			prefix, icase, foldKS, ok := p.RequiredPrefix()
			if prefix != tc.prefix || icase != tc.wantI || foldKS != tc.foldKS || ok != tc.ok {
				t.Fatalf("got %q %v %v %v, want %q %v %v %v", prefix, icase, foldKS, ok, tc.prefix, tc.wantI, tc.foldKS, tc.ok)
			}
			// Whatever matches must start with the prefix (folded).
			for _, s := range []string{"/api/v1/x", "/a", "/abbb", "/sK1", "/SK9", "/x"} {
				if ok && p.MatchString(s) && (len(s) < len(prefix) || !eqAt(s, 0, prefix, icase)) {
					t.Errorf("%q matches without the prefix %q", s, prefix)
				}
			}
		})
	}
}
