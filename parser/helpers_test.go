package parser

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// memFS is an in-memory fileSystem for tests and the fuzz target. Absolute
// paths are looked up without their leading slash, so "/x" and "x" are the
// same file; paths that fs.ValidPath rejects (such as "../x") do not exist.
type memFS struct{ m fstest.MapFS }

// memInfo remembers the full path, which SameFile compares.
type memInfo struct {
	fs.FileInfo
	path string
}

func newMemFS(files map[string]string) memFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return memFS{m: m}
}

func (m memFS) clean(name string) (string, error) {
	p := path.Clean(strings.TrimLeft(name, "/"))
	if p == "" || !fs.ValidPath(p) {
		return "", &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return p, nil
}

func (m memFS) Stat(name string) (fs.FileInfo, error) {
	p, err := m.clean(name)
	if err != nil {
		return nil, err
	}
	fi, err := m.m.Stat(p)
	if err != nil {
		return nil, err
	}
	return memInfo{FileInfo: fi, path: p}, nil
}

func (m memFS) ReadFile(name string) ([]byte, error) {
	p, err := m.clean(name)
	if err != nil {
		return nil, err
	}
	return m.m.ReadFile(p)
}

func (m memFS) Glob(pattern string) ([]string, error) {
	return fs.Glob(m.m, strings.TrimLeft(pattern, "/"))
}

func (m memFS) SameFile(a, b fs.FileInfo) bool {
	x, ok1 := a.(memInfo)
	y, ok2 := b.(memInfo)
	return ok1 && ok2 && x.path == y.path
}

// render prints a tree compactly: "Kw args { children }", nodes separated
// by "; ", strings quoted, words and numbers bare (a Number is exactly a
// bare token of digits, so the kind is still visible), data lines as
// "= args".
func render(nodes []*Node) string {
	var sb strings.Builder
	renderTo(&sb, nodes)
	return sb.String()
}

func renderTo(sb *strings.Builder, nodes []*Node) {
	for i, n := range nodes {
		if i > 0 {
			sb.WriteString("; ")
		}
		if n.Keyword == "" {
			sb.WriteString("=")
		}
		sb.WriteString(n.Keyword)
		for j, a := range n.Args {
			if j > 0 || n.Keyword != "" {
				sb.WriteByte(' ')
			}
			sb.WriteString(renderArg(a))
		}
		if n.Block {
			sb.WriteString(" {")
			if len(n.Children) > 0 {
				sb.WriteByte(' ')
				renderTo(sb, n.Children)
			}
			sb.WriteString(" }")
		}
	}
}

func renderArg(a Arg) string {
	if a.Kind == String {
		return strconv.Quote(a.Text)
	}
	return a.Text
}

// diagStrings formats diagnostics as Pound prints them.
func diagStrings(d Diagnostics) []string {
	out := make([]string, len(d))
	for i, x := range d {
		out[i] = x.Error()
	}
	return out
}

// checkDiags compares diagnostics with the expected Pound-style lines.
func checkDiags(t *testing.T, got Diagnostics, want []string) {
	t.Helper()
	g := diagStrings(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n got: %q\nwant: %q", g, want)
	}
}

// checkPositions verifies the invariant every diagnostic must satisfy: a
// real position inside a named file (only the end of file, the last line,
// has no column, as in Pound).
func checkPositions(t *testing.T, d Diagnostics) {
	t.Helper()
	for _, x := range d {
		s := x.Span
		if s.Start.File == "" || s.Start.Line <= 0 || s.Start.Col <= 0 && x.Msg != "unexpected end of file" {
			t.Errorf("diagnostic without a position: %#v", x)
		}
	}
}

// walk calls fn for every node of the tree, depth first.
func walk(nodes []*Node, fn func(*Node)) {
	for _, n := range nodes {
		fn(n)
		walk(n.Children, fn)
	}
}

func sp(file string, l1, c1, l2, c2 int) Span {
	return Span{Start: Pos{File: file, Line: l1, Col: c1}, End: Pos{File: file, Line: l2, Col: c2}}
}

func ExampleSpan_String() {
	fmt.Println(sp("pound.cfg", 3, 1, 3, 6))
	fmt.Println(sp("pound.cfg", 2, 11, 2, 11))
	fmt.Println(sp("pound.cfg", 3, 9, 4, 11))
	// Output:
	// pound.cfg:3.1-6
	// pound.cfg:2.11
	// pound.cfg:3.9-4.11
}
