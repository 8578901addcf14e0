package parser

import (
	"encoding/json"
	"slices"
	"testing"
)

// fuzzFiles is the only file system the fuzz target can reach, so that
// inputs like `Include "/dev/zero"` or `Include "/*/*/*"` stay harmless.
var fuzzFiles = map[string]string{
	"inc/a.cfg":    "Service\n Backend\n  Address 1.2.3.4\n End\nEnd\n",
	"inc/loop.cfg": "Include \"inc/loop.cfg\"\n",
	"inc/open.cfg": "Service\n Host \"h\"\n",
	"inc/acl.txt":  "\"10.0.0.0/8\"\n\"192.0.2.0/24\"\n",
	"inc/d/1.cfg":  "User \"1\"\n",
	"inc/d/2.cfg":  "Include \"inc/d/*.cfg\"\n",
	"inc/bad.cfg":  "URL \"\\.x\nEnd\n",
}

// FuzzParse checks that the parser never panics or hangs, that every
// diagnostic has a position, that parsing is deterministic, and that the
// production line reader agrees with the participle grammar. The seed
// corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("ListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n\tService\n\t\tBackEnd\n\t\t\tAddress 10.0.0.1\n\t\tEnd\n\tEnd\nEnd\n"))
	f.Add([]byte("Include \"inc/d/*.cfg\"\nInclude \"inc/loop.cfg\"\nACL \"a\"\n Include \"inc/acl.txt\"\nEnd\n"))
	f.Add([]byte("Not Not Match OR\n\"x\" \\\n y\nEnd 1 2\nEnd\n"))
	fsys := newMemFS(fuzzFiles)
	f.Fuzz(func(t *testing.T, src []byte) {
		opts := Options{fsys: fsys}
		f1, d1 := Parse("fuzz.cfg", src, opts)
		if f1 == nil {
			t.Fatal("Parse returned no tree")
		}
		checkPositions(t, d1)
		walk(f1.Nodes, func(n *Node) {
			if n.Span.Start.Line <= 0 || n.Span.Start.Col <= 0 {
				t.Errorf("node %q without a position", n.Keyword)
			}
		})
		f2, d2 := Parse("fuzz.cfg", src, opts)
		j1, err1 := json.Marshal(f1)
		j2, err2 := json.Marshal(f2)
		if err1 != nil || err2 != nil {
			t.Fatalf("tree does not marshal: %v %v", err1, err2)
		}
		if string(j1) != string(j2) || !slices.Equal(diagStrings(d1), diagStrings(d2)) {
			t.Fatalf("parsing twice gave different results:\n%s\n%s", j1, j2)
		}
		if err := sameLines(string(src)); err != nil {
			t.Fatal(err)
		}
	})
}
