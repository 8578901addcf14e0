package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"lbd/parser"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/config")

// goldenDir holds the golden configurations, relative to this package so
// positions in the expected files are stable.
const goldenDir = "../testdata/config"

// goldenOptions reads test options from a first line such as
// "# lbd-test: warn-deprecated no-include-dir" (first-error: as pound).
func goldenOptions(t *testing.T, path string) LoadOptions {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{NoDNS: true}
	first, _, _ := strings.Cut(string(src), "\n")
	spec, ok := strings.CutPrefix(first, "# lbd-test:")
	if !ok {
		return opts
	}
	for _, w := range strings.Fields(spec) {
		switch {
		case w == "warn-deprecated":
			opts.WarnDeprecated = true
		case w == "no-include-dir":
			opts.NoIncludeDir = true
		case w == "dns":
			opts.NoDNS = false
		case w == "first-error":
			opts.FirstError = true // lbd invoked as pound
		case strings.HasPrefix(w, "include-dir="):
			opts.IncludeDir = strings.TrimPrefix(w, "include-dir=")
		default:
			t.Fatalf("%s: unknown lbd-test option %q", path, w)
		}
	}
	return opts
}

// diagText renders diagnostics one per line: errors, then warnings.
func diagText(warns []*parser.Diagnostic, err error) []byte {
	var buf bytes.Buffer
	if err != nil {
		buf.WriteString(err.Error())
		buf.WriteByte('\n')
	}
	for _, w := range warns {
		buf.WriteString(w.Error())
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// TestGolden loads every testdata/config/*.cfg and compares the result
// with NAME.json (and NAME.warn for its warnings) when it loads, or with
// NAME.err when it does not. -update rewrites them.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.cfg"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden configs in %s: %v", goldenDir, err)
	}
	sort.Strings(files)
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".cfg")
		t.Run(name, func(t *testing.T) {
			base := strings.TrimSuffix(path, ".cfg")
			cfg, warns, err := Load(path, goldenOptions(t, path))
			got := map[string][]byte{".json": nil, ".warn": nil, ".err": nil}
			if err != nil {
				got[".err"] = diagText(warns, err)
			} else {
				js, jerr := cfg.DumpJSON()
				if jerr != nil {
					t.Fatal(jerr)
				}
				got[".json"] = js
				got[".warn"] = diagText(warns, nil)
			}
			for ext, want := range got {
				checkGolden(t, base+ext, want)
			}
		})
	}
}

// checkGolden compares got with the file; nil or empty got means the file
// must not exist.
func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if len(got) == 0 {
			if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	switch {
	case errors.Is(err, os.ErrNotExist) && len(got) == 0:
	case errors.Is(err, os.ErrNotExist):
		t.Errorf("%s missing; got:\n%s", file, got)
	case err != nil:
		t.Fatal(err)
	case len(got) == 0:
		t.Errorf("%s exists but the load produced nothing for it:\n%s", file, want)
	case !bytes.Equal(got, want):
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", file, got, want)
	}
}

// TestGoldenCounts keeps the corpus at the size the issue asks for.
func TestGoldenCounts(t *testing.T) {
	valid, _ := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	broken, _ := filepath.Glob(filepath.Join(goldenDir, "*.err"))
	if len(valid) < 40 {
		t.Errorf("%d valid golden configs, want at least 40", len(valid))
	}
	if len(broken) < 30 {
		t.Errorf("%d broken golden configs, want at least 30", len(broken))
	}
}

// TestGoldenCoverage checks that every supported directive of every
// section appears in at least one golden configuration that loads.
func TestGoldenCoverage(t *testing.T) {
	seen := map[string]bool{}
	valid, _ := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	for _, js := range valid {
		cfgPath := strings.TrimSuffix(js, ".json") + ".cfg"
		tree, _ := parser.ParseFile(cfgPath, parser.Options{})
		markKeywords(tree.Nodes, seen)
	}
	for _, name := range supportedDirectives() {
		if !seen[lower(name)] {
			t.Errorf("directive %s appears in no valid golden config", name)
		}
	}
}

func markKeywords(nodes []*parser.Node, seen map[string]bool) {
	for _, n := range nodes {
		seen[lower(n.Keyword)] = true
		if n.Is("Not") && len(n.Args) > 0 {
			seen[lower(n.Args[0].Text)] = true
		}
		markKeywords(n.Children, seen)
	}
}

// supportedDirectives lists every keyword of every table (aliases too).
func supportedDirectives() []string {
	var names []string
	for k := range globalTable {
		names = append(names, k)
	}
	for k := range controlTable {
		names = append(names, k)
	}
	for k := range httpsTable {
		names = append(names, k)
	}
	for k := range svcTable {
		names = append(names, k)
	}
	for k := range sessionTable {
		names = append(names, k)
	}
	for k := range beTable {
		names = append(names, k)
	}
	for k := range resolverTable {
		names = append(names, k)
	}
	for k := range luaTable {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
