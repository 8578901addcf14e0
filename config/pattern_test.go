package config

import (
	"testing"
)

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		name  string
		kind  PatternKind
		text  string
		icase bool
		in    string
		want  bool
	}{
		{name: "regex match", kind: MatchRegex, text: "^/api/v[0-9]+", in: "/api/v2/x", want: true},
		{name: "regex miss", kind: MatchRegex, text: "^/api", in: "/API", want: false},
		{name: "regex icase", kind: MatchRegex, text: "^/api", icase: true, in: "/API", want: true},
		{name: "exact", kind: MatchExact, text: "www.example.com", in: "www.example.com", want: true},
		{name: "exact longer", kind: MatchExact, text: "www.example.com", in: "www.example.com.", want: false},
		{name: "exact icase", kind: MatchExact, text: "www.example.com", icase: true, in: "WWW.Example.COM", want: true},
		{name: "exact case", kind: MatchExact, text: "www.example.com", in: "WWW.example.com", want: false},
		{name: "prefix", kind: MatchPrefix, text: "/static/", in: "/static/a.css", want: true},
		{name: "prefix short input", kind: MatchPrefix, text: "/static/", in: "/st", want: false},
		{name: "suffix", kind: MatchSuffix, text: ".css", in: "/a/b.css", want: true},
		{name: "suffix icase", kind: MatchSuffix, text: ".css", icase: true, in: "/a/B.CSS", want: true},
		{name: "suffix miss", kind: MatchSuffix, text: ".css", in: "/a/b.js", want: false},
		{name: "contain", kind: MatchContain, text: "theme", in: "/x/theme/y", want: true},
		{name: "contain icase", kind: MatchContain, text: "theme", icase: true, in: "/x/THEME", want: true},
		{name: "contain miss", kind: MatchContain, text: "theme", in: "/x/them", want: false},
		{name: "contain empty input", kind: MatchContain, text: "a", in: "", want: false},
		{name: "non-ascii compared exactly", kind: MatchExact, text: "é", icase: true, in: "É", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPattern(tc.kind, tc.text, tc.icase)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.MatchString(tc.in); got != tc.want {
				t.Errorf("MatchString(%q) = %v, want %v", tc.in, got, tc.want)
			}
			if got := p.Match([]byte(tc.in)); got != tc.want {
				t.Errorf("Match(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestNewPatternError(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
	}{
		{name: "unclosed group", text: "(a", want: "invalid regular expression: missing closing ): `(a`"},
		{name: "bad repetition", text: "a**", want: "invalid regular expression: invalid nested repetition operator: `**`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPattern(MatchRegex, tc.text, false)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestPatternMatchAllocs proves matching is allocation-free: it runs per
// request on the hot path.
func TestPatternMatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race (sync.Pool drops objects)")
	}
	line := []byte("User-Agent: Mozilla/5.0 (X11; Linux x86_64)")
	tests := []struct {
		name  string
		kind  PatternKind
		text  string
		icase bool
	}{
		{name: "regex", kind: MatchRegex, text: "^user-agent:.*linux", icase: true},
		{name: "exact", kind: MatchExact, text: "user-agent", icase: true},
		{name: "prefix", kind: MatchPrefix, text: "User-Agent:"},
		{name: "suffix", kind: MatchSuffix, text: "X86_64)", icase: true},
		{name: "contain", kind: MatchContain, text: "LINUX", icase: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPattern(tc.kind, tc.text, tc.icase)
			if err != nil {
				t.Fatal(err)
			}
			s := string(line)
			if n := testing.AllocsPerRun(100, func() { p.Match(line); p.MatchString(s) }); n != 0 {
				t.Errorf("%v allocations per match, want 0", n)
			}
		})
	}
}

func BenchmarkPatternMatch(b *testing.B) {
	line := []byte("User-Agent: Mozilla/5.0 (X11; Linux x86_64)")
	for _, kind := range []PatternKind{MatchRegex, MatchContain} {
		p, err := NewPattern(kind, "linux", true)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(kind), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Match(line)
			}
		})
	}
}

// TestLiteralRegexesMatchLikeTheRegex: a regex that is a plain literal
// is matched by comparison, with exactly the regex's results.
func TestLiteralRegexesMatchLikeTheRegex(t *testing.T) {
	cases := []struct {
		name, expr string
		icase      bool
		plain      bool // reduced to a plain comparison
		subjects   []string
	}{
		{"contained", "X-Block", true, true, []string{"x-block: 1", "X-Blocked", "nope", "", "X-BLOC\u212a"}},
		{"prefix", "^Cookie:", true, true, []string{"Cookie: a", "cookie:b", "Set-Cookie: a", "Coo\u212aie: x", "Cookie: \u212a"}},
		{"suffix with escape", "\\.html$", false, true, []string{"/a.html", "/a.HTML", "/a.html?x", "/ahtml"}},
		{"exact", "^GET$", false, true, []string{"GET", "GETS", "get"}},
		{"k folds to the Kelvin sign: the regex decides non-ASCII subjects", "kk", true, true, []string{"KK", "\u212ak", "kK"}},
		{"no k or s: ASCII rules on any subject", "x-bar", true, true, []string{"X-BAR \u212a", "\u00e9x-Bar", "x-ba"}},
		{"alternation is a regex", "^(GET|HEAD)$", false, false, []string{"GET", "HEAD", "PUT"}},
		{"non-ASCII stays a regex", "é", true, false, []string{"É", "e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPattern(MatchRegex, tc.expr, tc.icase)
			if err != nil {
				t.Fatal(err)
			}
			if (p.lit != nil) != tc.plain {
				t.Fatalf("reduced to a plain matcher: %v, want %v", p.lit != nil, tc.plain)
			}
			for _, s := range tc.subjects {
				if got, want := p.MatchString(s), p.Re.MatchString(s); got != want {
					t.Errorf("%q: %v, the regex says %v", s, got, want)
				}
				if got, want := p.Match([]byte(s)), p.Re.MatchString(s); got != want {
					t.Errorf("%q as bytes: %v, the regex says %v", s, got, want)
				}
			}
		})
	}
}
