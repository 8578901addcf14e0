package parser

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The participle grammar of one configuration file: the specification that
// the production line reader (scanner.readLine) is checked against.
//
// It is deliberately flat: a file is a list of lines, a line is its tokens,
// an end of line and, for "ConfigText", the verbatim body. Which lines open
// and close blocks depends on context (ACL "name" at top level versus ACL
// inside a Service, Control with or without an argument, Not Match ...),
// which a context-free grammar could only express by duplicating every rule
// per scope, so nesting is a separate pass (nest.go). The grammar is total:
// every token stream the scanner produces matches it, which is what lets
// the parser report every error in one run instead of stopping at the first.
type fileAST struct {
	Lines []*lineAST `parser:"@@*"`
}

var grammar = participle.MustBuild[fileAST](participle.Lexer(tokenDef{}))

// grammarLines parses src with the participle grammar.
func grammarLines(name, src string) ([]*lineAST, error) {
	peek, err := lexer.Upgrade(newScanner(name, src))
	if err != nil {
		return nil, err
	}
	f, err := grammar.ParseFromLexer(peek)
	if err != nil {
		return nil, err
	}
	return f.Lines, nil
}

// readerLines reads src with the production line reader, copying each line
// because readLine reuses its token storage.
func readerLines(name, src string) []*lineAST {
	sc := newScanner(name, src)
	var out []*lineAST
	var l lineAST
	for sc.readLine(&l) {
		c := l
		c.Tokens = append([]lexer.Token(nil), l.Tokens...)
		out = append(out, &c)
	}
	return out
}

// TestReaderMatchesGrammar is the check that makes the participle grammar
// the specification: for every input, the production line reader and the
// grammar must produce exactly the same lines (tokens, values, positions).
func TestReaderMatchesGrammar(t *testing.T) {
	inputs := map[string]string{
		"empty":        "",
		"one line":     "User \"root\"",
		"ConfigText":   "Resolver\n ConfigText\n  nameserver 1.1.1.1\n End\nEnd\n",
		"trailing raw": "ConfigText\nabc",
		"continuation": "A \\\n b \"c\\\nd\"\r\n# x\n\n",
		"bad strings":  "User \"root\nGroup \"g",
	}
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzParse/*")
	for _, p := range seeds {
		inputs[p] = string(fuzzSeed(t, p))
	}
	if _, err := os.Stat(compatDir); err == nil {
		for _, p := range compatConfigs(t) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			inputs[p] = string(b)
		}
	}
	if len(inputs) < 20 {
		t.Fatalf("only %d inputs; the seed corpus is missing", len(inputs))
	}
	for name, src := range inputs {
		t.Run(filepath.Base(name), func(t *testing.T) {
			if err := sameLines(src); err != nil {
				t.Error(err)
			}
		})
	}
}

// sameLines parses src both ways and describes the first difference.
func sameLines(src string) error {
	want, err := grammarLines("t.cfg", src)
	if err != nil {
		return fmt.Errorf("grammar rejected input the scanner produced: %v", err)
	}
	got := readerLines("t.cfg", src)
	if len(got) != len(want) {
		return fmt.Errorf("reader produced %d lines, grammar %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !slices.Equal(g.Tokens, w.Tokens) || g.EOL != w.EOL || g.Text != w.Text {
			return fmt.Errorf("line %d differs:\nreader:  %+v\ngrammar: %+v", i, *g, *w)
		}
	}
	return nil
}

// fuzzSeed decodes a seed file of the "go test fuzz v1" format holding one
// []byte value.
func fuzzSeed(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(b), "\n")
	body = strings.TrimSpace(body)
	if !ok || head != "go test fuzz v1" || !strings.HasPrefix(body, "[]byte(") || !strings.HasSuffix(body, ")") {
		t.Fatalf("%s is not a go test fuzz v1 []byte seed", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(body, "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}
