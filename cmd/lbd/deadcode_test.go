package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lbd/lua"
)

// sizeTags reads the Makefile's SIZE_TAGS, which every build of lbd
// takes, so that this test links lbd as make does.
func sizeTags(t *testing.T) string {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if rest, ok := strings.CutPrefix(line, "SIZE_TAGS :="); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatal("no SIZE_TAGS line in the Makefile")
	return ""
}

// TestNoReflectMethodReachable links lbd as the Makefile does and fails
// when a reachable function calls reflect's Method, MethodByName with a
// name known only at run time, or an iterator over methods (the linker
// marks these REFLECTMETHOD). One such function anywhere makes the linker
// keep every exported method of every type converted to an interface
// (cmd/link/internal/ld/deadcode.go): ~9 MB of lbd's 37.8 MB were such
// methods (bench/RESULTS.md §42). text/template is the usual way in.
func TestNoReflectMethodReachable(t *testing.T) {
	tags := sizeTags(t)
	if lua.Available {
		tags += " lua"
	}
	out := filepath.Join(t.TempDir(), "lbd")
	deps, err := exec.Command("go", "build", "-tags", tags, "-ldflags=-dumpdep", "-o", out, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%.2000s", err, deps)
	}
	parent := map[string]string{} // the symbol that made the linker keep each one
	var found []string
	sc := bufio.NewScanner(bytes.NewReader(deps))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		from, to = symbol(from), symbol(to)
		if _, seen := parent[to]; !seen {
			parent[to] = from
		}
		if strings.HasSuffix(sc.Text(), " <ReflectMethod>") {
			found = append(found, to)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(parent) < 1000 {
		t.Fatalf("only %d symbols in the linker's -dumpdep output: not the format this test reads\n%.2000s", len(parent), deps)
	}
	for _, sym := range found {
		chain := []string{sym}
		for s := parent[sym]; s != "" && s != "_" && len(chain) < 30; s = parent[s] {
			chain = append(chain, s)
		}
		t.Errorf("%s calls reflect's Method or MethodByName: the linker keeps every exported method. "+
			"Reached through (a method: its type is in an interface and a call names it):\n\t%s",
			sym, strings.Join(chain[1:], "\n\t"))
	}
}

// symbol strips the linker's flags (" <ReflectMethod>", " <UsedInIface>")
// from a symbol of -dumpdep's output.
func symbol(s string) string {
	if i := strings.Index(s, " <"); i > 0 {
		return s[:i]
	}
	return s
}
