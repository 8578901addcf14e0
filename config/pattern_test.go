package config

import (
	"reflect"
	"strings"
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
		{"k after the anchor", "x-kk", true, true, []string{"aX-\u212aK", "x-\u212a", "x-kK", "-kk"}},
		{"k before the anchor", "kk-x", true, true, []string{"\u212a\u212a-X", "zk\u212a-x", "k-x"}},
		{"k in a suffix", "ks$", true, true, []string{"a\u212a\u017f", "aKS", "ks!"}},
		{"an alternation of strings is compared", "^(GET|HEAD)$", false, true, []string{"GET", "HEAD", "PUT", "GETS", "HEA"}},
		{"a factored alternation too", "^(POST|PUT|PATCH)", true, true, []string{"post", "PUTX", "PATC", "patch", "GET"}},
		{"s folds to the long s", "^(x-Sid|y)$", true, true, []string{"x-sid", "x-ſid", "y", "Y", "x-si"}},
		{"contained, found by a byte that has one case", "a-b", true, true, []string{"xxA-Byy", "a-", "-b", "aa-b", "A-BA-b"}},
		{"contained, letters only", "Host", true, true, []string{"xhOsT", "hos", "hhost", "HOS T"}},
		{"contained, case kept", "Ab", false, true, []string{"xAb", "ab", "AB", "AAb"}},
		{"an optional group is two strings", "^(www\\.)?a\\.example$", true, true, []string{"a.example", "WWW.a.example", "ww.a.example", "www.a.example.x", "wwwa.example"}},
		{"an optional group unanchored", "x(ab)?y", false, true, []string{"xy", "xaby", "xay", "-xaby-"}},
		{"too many strings stay a regex", "(a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q)(x|y)", false, false, []string{"ax", "qy", "z"}},
		{"a small class is its characters", "^[ab]x$", false, true, []string{"ax", "bx", "cx", "Ax"}},
		{"a class folded by (?i) lists both cases", "^[ab]x$", true, false, []string{"Ax", "bX", "cx"}},
		{"a class of many characters stays a regex", "^[a-z]x$", false, false, []string{"ax", "Ax"}},
		{"(a|b) is simplified to a class", "^/(a|b)/", false, true, []string{"/a/", "/b/x", "/c/"}},
		{"non-ASCII stays a regex", "é", true, false, []string{"É", "e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPattern(MatchRegex, tc.expr, tc.icase)
			if err != nil {
				t.Fatal(err)
			}
			if (p.lits != nil) != tc.plain {
				t.Fatalf("reduced to plain matchers: %v, want %v", p.lits != nil, tc.plain)
			}
			for _, s := range tc.subjects {
				if got, want := p.MatchString(s), p.Regexp().MatchString(s); got != want {
					t.Errorf("%q: %v, the regex says %v", s, got, want)
				}
				if got, want := p.Match([]byte(s)), p.Regexp().MatchString(s); got != want {
					t.Errorf("%q as bytes: %v, the regex says %v", s, got, want)
				}
			}
		})
	}
}

// FuzzLiteralRegexes: a regex reduced to plain comparisons answers as the
// regex does on any subject.
func FuzzLiteralRegexes(f *testing.F) {
	for _, c := range [][2]string{{"^(GET|HEAD)$", "HEAD"}, {"X-Block", "x-bloc\u212a"}, {"^Cookie:", "cOOkie:"},
		{"a-b|c", "xA-b"}, {"(?i)s", "\u017f"}, {"\\.html$", "/a.HTML"}, {"x-kk", "aX-\u212ak"},
		{"kk-x", "\u212a\u212a-X"}, {"s$", "x\u017f"}, {"^(k|s)$", "\u212a"}, {"^(www\\.)?a$", "WWW.a"}, {"^[ab]x$", "Bx"}, {"(?i)[ks]", "\u212a"}} {
		f.Add(c[0], c[1], true)
	}
	f.Fuzz(func(t *testing.T, expr, subject string, icase bool) {
		p, err := NewPattern(MatchRegex, expr, icase)
		if err != nil || p.lits == nil {
			return
		}
		if got, want := p.MatchString(subject), p.Regexp().MatchString(subject); got != want {
			t.Fatalf("%q on %q: %v, the regex says %v", expr, subject, got, want)
		}
		if got, want := p.Match([]byte(subject)), p.Regexp().MatchString(subject); got != want {
			t.Fatalf("%q on %q as bytes: %v, the regex says %v", expr, subject, got, want)
		}
	})
}

func TestFieldName(t *testing.T) {
	cases := []struct {
		name  string
		kind  PatternKind
		text  string
		icase bool
		want  string // "" : not a field name
	}{
		{"regex prefix with colon", MatchRegex, "^Cookie:", true, "Cookie"},
		{"-beg with colon", MatchPrefix, "X-Forwarded-For:", true, "X-Forwarded-For"},
		{"no colon: Cookies would match too", MatchRegex, "^Cookie", true, ""},
		{"case kept: the name's case matters", MatchRegex, "^Cookie:", false, ""},
		{"not anchored", MatchRegex, "Cookie:", true, ""},
		{"more than the name", MatchRegex, "^Cookie: a", true, ""},
		{"alternation", MatchRegex, "^(Cookie|Host):", true, ""},
		{"not a token", MatchRegex, "^X Y:", true, ""},
		{"a real regex", MatchRegex, "^X-[a-z]+:", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPattern(tc.kind, tc.text, tc.icase)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := p.FieldName()
			if !strings.EqualFold(got, tc.want) || ok != (tc.want != "") {
				t.Errorf("FieldName() = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestPlainLiteralMatchesParse checks that a regex plainLiteral takes
// gives what parsing it gives, and that it leaves the others to the parse.
func TestPlainLiteralMatchesParse(t *testing.T) {
	cases := []struct {
		expr  string
		plain bool
	}{
		{"^/app12/", true},
		{"/app12/", true},
		{"\\.html$", false},
		{"html$", true},
		{"^GET$", true},
		{"^/a b,c-d_e~f#g%h!i@j&k=l;m:n'o\"p`q<r>s/", true},
		{"^", false},
		{"$", false},
		{"^$", false},
		{"^^a", false},
		{"a$$", false},
		{"^a.b", false},
		{"^/x(y)", false},
		{"^/x|y", false},
		{"^/x[y]", false},
		{"^/x{2}", false},
		{"^/x+", false},
		{"^/x*", false},
		{"^/x?", false},
		{"(?i)^/x", false},
		{"^/é", false},
		{"^/\t", false},
	}
	for _, tc := range cases {
		got := plainLiteral(tc.expr)
		if (got != nil) != tc.plain {
			t.Errorf("%q: taken %v, want %v", tc.expr, got != nil, tc.plain)
		}
		if got == nil {
			continue
		}
		want := literalSetParsed(tc.expr)
		if len(want) != 1 || !reflect.DeepEqual(got, want[0]) {
			t.Errorf("%q: %+v, the parse gives %+v", tc.expr, got, want)
		}
	}
}
