package routeindex

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"lbd/config"
)

func cond(t testing.TB, kind config.CondKind, pk config.PatternKind, text string, icase bool) *config.Condition {
	t.Helper()
	p, err := config.NewPattern(pk, text, icase)
	if err != nil {
		t.Fatal(err)
	}
	return &config.Condition{Kind: kind, Pattern: p}
}

// offered lists what Lookup offers, in order.
func offered(ix *Index, host, url string, from int) []int {
	var it Iter
	ix.Lookup(&Request{Host: []byte(host), HasHost: host != "-", URL: []byte(url)}, from, &it)
	out := []int{}
	for i := it.Next(); i >= 0; i = it.Next() {
		out = append(out, i)
	}
	return out
}

func TestLookupOffersTheServicesThatMayMatch(t *testing.T) {
	re := config.MatchRegex
	services := [][]*config.Condition{
		0: {cond(t, config.CondHost, config.MatchExact, "a.example", true)},
		1: {cond(t, config.CondURL, re, "^/app1/", false)},
		2: {cond(t, config.CondHost, config.MatchSuffix, ".example", true), cond(t, config.CondURL, re, "x", false)},
		3: {cond(t, config.CondMethod, re, "^GET$", false)}, // not indexed: always offered
		4: {cond(t, config.CondPath, config.MatchExact, "/app1/x", false)},
		5: {{Kind: config.CondMatch, Or: true, Sub: []*config.Condition{
			cond(t, config.CondHost, re, "^(www\\.)?b\\.example$", false),
			cond(t, config.CondURL, config.MatchPrefix, "/b", false)}}},
		6: {{Kind: config.CondHost, Not: true, Pattern: services0(t)}}, // Not: always offered
		7: nil,                                                         // no condition: always offered
		8: {cond(t, config.CondHost, config.MatchExact, "A.EXAMPLE", false)},
	}
	ix := Build(services)
	cases := []struct {
		name, host, url string
		from            int
		want            []int
	}{
		{"host exact, any case", "A.Example", "/", 0, []int{0, 2, 3, 6, 7, 8}},
		{"url prefix and path exact", "c.test", "/app1/x?q", 0, []int{1, 3, 4, 6, 7}},
		{"or group by its second alternative", "c.test", "/bb", 0, []int{3, 5, 6, 7}},
		{"or group by its first alternative", "WWW.b.example", "/", 0, []int{2, 3, 5, 6, 7}},
		{"no Host header", "-", "/", 0, []int{3, 6, 7}},
		{"from skips the earlier ones", "a.example", "/app1/", 2, []int{2, 3, 6, 7, 8}},
		{"host with a port is not the host", "a.example:80", "/", 0, []int{3, 6, 7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := offered(ix, tc.host, tc.url, tc.from); !slices.Equal(got, tc.want) {
				t.Errorf("offered %v, want %v", got, tc.want)
			}
		})
	}
	if got := ix.Indexed(); got != 6 {
		t.Errorf("Indexed() = %d, want 6", got)
	}
}

func services0(t testing.TB) *config.Pattern {
	p, err := config.NewPattern(config.MatchExact, "a.example", true)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLookupTooManyListsOffersAll: a URL with more indexed prefixes than
// an Iter can merge gets every service, which is slower but correct.
func TestLookupTooManyListsOffersAll(t *testing.T) {
	var services [][]*config.Condition
	for i := range maxLists + 4 {
		services = append(services, []*config.Condition{cond(t, config.CondURL, config.MatchPrefix, "/"+strings.Repeat("a", i), false)})
	}
	services = append(services, []*config.Condition{cond(t, config.CondHost, config.MatchExact, "z", false)})
	ix := Build(services)
	got := offered(ix, "a", "/"+strings.Repeat("a", 40), 0)
	if len(got) != len(services) {
		t.Fatalf("offered %d services, want all %d", len(got), len(services))
	}
	got = offered(ix, "a", "/aa", 0)
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("offered %v, want [0 1 2]", got)
	}
}

// TestLookupFoldKSSubject: a case-folding regex with a k or an s also
// matches the Kelvin sign and the long s; a subject with non-ASCII
// bytes is then decided by the service, not the index.
func TestLookupFoldKSSubject(t *testing.T) {
	services := [][]*config.Condition{
		{cond(t, config.CondHost, config.MatchRegex, "(?i)^key$", false)},
		{cond(t, config.CondHost, config.MatchExact, "other", false)},
	}
	ix := Build(services)
	if got := offered(ix, "\u212aey", "/", 0); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("offered %v for a Kelvin sign, want both", got)
	}
	if got := offered(ix, "KEY", "/", 0); !slices.Equal(got, []int{0}) {
		t.Fatalf("offered %v, want [0]", got)
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		var services [][]*config.Condition
		for i := range n {
			services = append(services, []*config.Condition{cond(b, config.CondHost, config.MatchExact, fmt.Sprintf("site%d.example.com", i), true)})
		}
		ix := Build(services)
		q := &Request{Host: []byte(fmt.Sprintf("site%d.example.com", n-1)), HasHost: true, URL: []byte("/index.html")}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var it Iter
				ix.Lookup(q, 0, &it)
				if it.Next() != n-1 {
					b.Fatal("wrong service")
				}
			}
		})
	}
}

// TestLookupLongExactKeys: exact keys longer than the hash map takes are
// found through the trie, and a subject of that length with them.
func TestLookupLongExactKeys(t *testing.T) {
	long := strings.Repeat("x", maxMapKey+10)
	services := [][]*config.Condition{
		{cond(t, config.CondPath, config.MatchExact, "/"+long, true)},
		{cond(t, config.CondPath, config.MatchExact, "/short", true)},
	}
	ix := Build(services)
	cases := []struct {
		url  string
		want []int
	}{
		{"/" + strings.ToUpper(long), []int{0}},
		{"/" + long + "?q", []int{0}},
		{"/" + long + "y", []int{}},
		{"/SHORT", []int{1}},
	}
	for _, tc := range cases {
		if got := offered(ix, "-", tc.url, 0); !slices.Equal(got, tc.want) {
			t.Errorf("%.20q: offered %v, want %v", tc.url, got, tc.want)
		}
	}
}

// TestLookupHeaderValues: a Header condition with a name and an exact
// value is found through any of the header's lines, values trimmed and
// folded as the rules read them.
func TestLookupHeaderValues(t *testing.T) {
	hdr := func(name, value string, kind config.PatternKind) []*config.Condition {
		c := cond(t, config.CondHeader, kind, value, false)
		c.Name = name
		return []*config.Condition{c}
	}
	ix := Build([][]*config.Condition{
		0: hdr("X-Tenant", "a", config.MatchExact),
		1: hdr("x-tenant", "^(b|c)$", config.MatchRegex),
		2: hdr("X-Tenant", "b", config.MatchPrefix), // not exact: always offered
		3: hdr("X-Other", "a", config.MatchExact),
	})
	cases := []struct {
		name  string
		lines []string
		want  []int
	}{
		{"exact value", []string{"X-Tenant: a"}, []int{0, 2}},
		{"blanks trimmed, name and value folded", []string{"x-TENANT:\t A \t"}, []int{0, 2}},
		{"a regex of two strings", []string{"X-Tenant: c"}, []int{1, 2}},
		{"any of the lines", []string{"X-Tenant: z", "X-Tenant: b", "X-Other: a"}, []int{1, 2, 3}},
		{"no such header", []string{"X-Tenants: a"}, []int{2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var it Iter
			q := &Request{URL: []byte("/")}
			for _, l := range tc.lines {
				q.Lines = append(q.Lines, []byte(l))
			}
			ix.Lookup(q, 0, &it)
			got := []int{}
			for i := it.Next(); i >= 0; i = it.Next() {
				got = append(got, i)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("offered %v, want %v", got, tc.want)
			}
		})
	}
}
