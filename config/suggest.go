package config

import (
	"sort"
	"strings"

	"lbd/parser"
)

// unrecognized reports a keyword no directive of the section takes. lbd
// names it and suggests the closest keyword valid at that place; as
// pound (FirstError) it keeps Pound 4's bare "unrecognized keyword",
// which Pound's testsuite compares byte for byte.
func unrecognized[T any](b *builder, t table[T], unsup map[string]string, n *parser.Node) {
	if b.opts.FirstError {
		b.errorf(n.Span, "unrecognized keyword")
		return
	}
	names := make([]string, 0, len(t)+len(unsup))
	for _, d := range t {
		names = append(names, d.name)
	}
	for _, canon := range unsup {
		names = append(names, canon)
	}
	if s := closest(n.Keyword, names); s != "" {
		b.errorf(n.Span, "unrecognized keyword %q; did you mean %q?", n.Keyword, s)
		return
	}
	b.errorf(n.Span, "unrecognized keyword %q", n.Keyword)
}

// closest returns the name nearest to kw by Levenshtein distance, compared
// without case as keywords are, or "" when none is near enough to be a
// likely typo: at most a third of kw's length (and at least 1) edits.
// Ties go to the alphabetically first name, so the message is stable.
func closest(kw string, names []string) string {
	sort.Strings(names)
	limit := max(1, len(kw)/3)
	best, bestDist := "", limit+1
	low := strings.ToLower(kw)
	for _, name := range names {
		if d := levenshtein(low, strings.ToLower(name)); d < bestDist && d > 0 {
			best, bestDist = name, d
		}
	}
	return best
}

// levenshtein is the edit distance between a and b: insertions,
// deletions and substitutions, and (Damerau's optimal string alignment)
// the swap of two adjacent letters, the commonest typo, as one edit.
// Bytes are compared: keywords are ASCII.
func levenshtein(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
