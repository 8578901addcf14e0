package man

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"lbd/config"
	"lbd/lbctl"
)

// pages are the manual pages, rendered once per test run.
var pages = []string{"lbd.8", "lbd.cfg.5", "lbctl.8"}

// groff runs groff on a page and returns its output and diagnostics. The
// check cannot be skipped: without groff the test fails (CI installs
// groff-base).
func groff(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	path, err := exec.LookPath("groff")
	if err != nil {
		t.Fatalf("groff not found in PATH (%v): install groff-base to check the manual pages", err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("groff %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String()
}

// render returns a page as plain ASCII text without hyphenation, so every
// word of the source appears whole.
func render(t *testing.T, page string) string {
	t.Helper()
	out, _ := groff(t, "-man", "-Tascii", "-rHY=0", "-P-cbou", page)
	return out
}

// TestPagesRenderWithoutWarnings renders each page with all warnings
// enabled (groff -ww) and fails on any diagnostic.
func TestPagesRenderWithoutWarnings(t *testing.T) {
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			_, diag := groff(t, "-man", "-Tutf8", "-ww", "-z", page)
			if diag != "" {
				t.Errorf("groff warnings:\n%s", diag)
			}
			text := render(t, page)
			for _, section := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"} {
				if !strings.Contains(text, "\n"+section+"\n") {
					t.Errorf("no %s section", section)
				}
			}
		})
	}
}

// TestPageStructure checks what groff does not warn about: a section
// heading given twice, and a quotation inside quotes that renders as
// doubled quote marks (""X" is ...").
func TestPageStructure(t *testing.T) {
	doubled := regexp.MustCompile(`""[A-Za-z0-9]|[A-Za-z0-9.]""`)
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			src, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, line := range strings.Split(string(src), "\n") {
				if h, ok := strings.CutPrefix(line, ".SH "); ok {
					if seen[h] {
						t.Errorf("section %s appears twice", h)
					}
					seen[h] = true
				}
			}
			for _, m := range doubled.FindAllString(render(t, page), -1) {
				t.Errorf("doubled quotes: %q", m)
			}
		})
	}
}

// hasWord reports whether text contains word as a whole word (keyword
// characters on neither side), case-insensitively.
func hasWord(text, word string) bool {
	re := regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(word) + `($|[^A-Za-z0-9_])`)
	return re.MatchString(text)
}

// TestEveryDirectiveDocumented checks lbd.cfg.5 against the keyword
// tables of the configuration loader.
func TestEveryDirectiveDocumented(t *testing.T) {
	text := render(t, "lbd.cfg.5")
	seen := map[string]bool{}
	dirs := config.Directives()
	if len(dirs) < 100 {
		t.Fatalf("only %d directives: the keyword tables were not read", len(dirs))
	}
	for _, d := range dirs {
		key := strings.ToLower(d.Name)
		if seen[key] {
			continue
		}
		seen[key] = true
		t.Run(d.Section+"/"+d.Name, func(t *testing.T) {
			if !hasWord(text, d.Name) {
				t.Errorf("lbd.cfg.5 does not mention %s (section %s)", d.Name, d.Section)
			}
		})
	}
}

// TestEveryLbctlCommandDocumented checks lbctl.8 against lbctl's command
// tree and global options.
func TestEveryLbctlCommandDocumented(t *testing.T) {
	text := strings.Join(strings.Fields(render(t, "lbctl.8")), " ")
	app := lbctl.New("lbctl", lbctl.Env{})
	names := lbctl.CommandNames(app)
	if len(names) < 15 {
		t.Fatalf("only %d commands: %v", len(names), names)
	}
	for _, f := range app.Flags {
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "-"+n)
			} else {
				names = append(names, "--"+n)
			}
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if !hasWord(text, name) {
				t.Errorf("lbctl.8 does not mention %q", name)
			}
		})
	}
}

// TestEveryLbdFlagDocumented checks lbd.8 against the flags declared in
// cmd/lbd/app.go (read as source: the command is a main package).
func TestEveryLbdFlagDocumented(t *testing.T) {
	flags := lbdFlags(t, "../cmd/lbd/app.go")
	if len(flags) < 8 {
		t.Fatalf("only %d flags found in cmd/lbd/app.go: %v", len(flags), flags)
	}
	text := render(t, "lbd.8")
	for _, f := range flags {
		t.Run(f, func(t *testing.T) {
			if !hasWord(text, f) {
				t.Errorf("lbd.8 does not mention %s", f)
			}
		})
	}
}

// lbdFlags returns "-x" / "--name" for every Name of a cli.*Flag literal.
func lbdFlags(t *testing.T, path string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		sel, ok := lit.Type.(*ast.SelectorExpr)
		if !ok || !strings.HasSuffix(sel.Sel.Name, "Flag") {
			return true
		}
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if key, isIdent := kv.Key.(*ast.Ident); !ok || !isIdent || key.Name != "Name" {
				continue
			}
			if bl, ok := kv.Value.(*ast.BasicLit); ok {
				name, _ := strconv.Unquote(bl.Value)
				if len(name) == 1 {
					out = append(out, "-"+name)
				} else {
					out = append(out, "--"+name)
				}
			}
		}
		return true
	})
	return out
}
