package parser

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles creates files (and their directories) under dir; a name
// ending in "/" is an empty directory.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// includeCase is one TestInclude case: files under a temporary directory
// ("name/" is an empty directory), pound.cfg among them.
type includeCase struct {
	name       string
	files      map[string]string
	includeDir string // relative to the temp dir; "" = the top file's directory
	want       string
	diags      []string // "$D" stands for the temp dir
}

// includeTests returns the TestInclude cases.
func includeTests() []includeCase {
	svc := func(host string) string {
		return "Service\n\tHost \"" + host + "\"\n\tBackend\n\t\tAddress 127.0.0.1\n\tEnd\nEnd\n"
	}
	return []includeCase{
		{name: "relative to the top file, at any scope (pound include.at)",
			files: map[string]string{"svc1": svc("example.org"), "svc2": svc("example.com"),
				"pound.cfg": "ListenHTTP\nInclude \"svc1\"\nEnd\nInclude \"svc2\"\n"},
			want: `ListenHTTP { Service { Host "example.org"; Backend { Address 127.0.0.1 } } }; Service { Host "example.com"; Backend { Address 127.0.0.1 } }`},
		{name: "nested includes are relative to the include dir (pound inclnest.at)",
			files: map[string]string{"conf/svc1.cfg": svc("a") + "Include \"svc2.cfg\"\n", "conf/svc2.cfg": svc("b"),
				"conf/main.cfg": "ListenHTTP\nEnd\nInclude \"svc1.cfg\"\n", "pound.cfg": "Include \"main.cfg\"\n"},
			includeDir: "conf",
			want:       `ListenHTTP { }; Service { Host "a"; Backend { Address 127.0.0.1 } }; Service { Host "b"; Backend { Address 127.0.0.1 } }`},
		{name: "globs are sorted, skip directories, nest (pound inclglob.at)",
			files: map[string]string{"conf.d/svc2.conf": svc("2"), "conf.d/svc1.conf": svc("1"),
				"conf.d/svc3.conf": "Include \"conf.d/subdir/*.conf\"\n", "conf.d/noconf": "whatever\n",
				"conf.d/subdir/1.conf": svc("s1"), "conf.d/subdir/0.conf": svc("s0"), "conf.d/dir.conf/": "",
				"pound.cfg": "ListenHTTP\nInclude \"conf.d/*.conf\"\nEnd\n"},
			want: `ListenHTTP { Service { Host "1"; Backend { Address 127.0.0.1 } }; Service { Host "2"; Backend { Address 127.0.0.1 } }; ` +
				`Service { Host "s0"; Backend { Address 127.0.0.1 } }; Service { Host "s1"; Backend { Address 127.0.0.1 } } }`},
		{name: "a glob that matches nothing is not an error",
			files: map[string]string{"pound.cfg": "Include \"conf.d/*.cfg\"\nUser \"u\"\n", "conf.d/": ""},
			want:  `User "u"`},
		{name: "IncludeDir changes the directory of later Includes",
			files: map[string]string{"a.cfg": "User \"top\"\n", "conf/a.cfg": "User \"conf\"\n",
				"pound.cfg": "Include \"a.cfg\"\nIncludeDir \"conf\"\nInclude \"a.cfg\"\n"},
			want: `User "top"; IncludeDir "conf"; User "conf"`},
		{name: "the same file twice in a row is fine",
			files: map[string]string{"u.cfg": "User \"u\"\n", "pound.cfg": "Include \"u.cfg\"\nInclude \"u.cfg\"\n"},
			want:  `User "u"; User "u"`},
		{name: "a block may end in the including file, as Pound's lexer allows",
			files: map[string]string{"open.cfg": "Service\n Host \"h\"\n", "pound.cfg": "Include \"open.cfg\"\nEnd\n"},
			want:  `Service { Host "h" }`},
		{name: "list lines from a file (CombineHeaders + Include)",
			files: map[string]string{"multivalue.txt": "\"Accept\"\n\"Allow\"\n",
				"pound.cfg": "CombineHeaders\n Include \"multivalue.txt\"\nEnd\n"},
			want: `CombineHeaders { ="Accept"; ="Allow" }`},
		{name: "missing file",
			files: map[string]string{"pound.cfg": "User \"u\"\nInclude \"missing.cfg\"\n"},
			want:  `User "u"`,
			diags: []string{"$D/pound.cfg:2.9-21: can't stat $D/missing.cfg: No such file or directory"}},
		{name: "a directory is not a config file",
			files: map[string]string{"pound.cfg": "Include \"conf.d\"\n", "conf.d/": ""},
			diags: []string{"$D/pound.cfg:1.9-16: $D/conf.d: not a regular file"}},
		{name: "include loop",
			files: map[string]string{"a.cfg": "Include \"b.cfg\"\n", "b.cfg": "User \"b\"\nInclude \"a.cfg\"\n",
				"pound.cfg": "Include \"a.cfg\"\n"},
			want: `User "b"`,
			diags: []string{"$D/b.cfg:2.9-15: $D/a.cfg already included",
				"$D/pound.cfg:1.9-15: here is the location of original inclusion"}},
		{name: "including the main file",
			files: map[string]string{"pound.cfg": "User \"u\"\nInclude \"pound.cfg\"\n"},
			want:  `User "u"`,
			diags: []string{"$D/pound.cfg:2.9-19: $D/pound.cfg already included (at top level)"}},
		{name: "errors inside included files name those files",
			files: map[string]string{"bad.cfg": "Service\n URL \"\\.x\"\n", "pound.cfg": "Include \"bad.cfg\"\nEnd\nEnd\n"},
			want:  `Service { URL "\\.x" }`,
			diags: []string{"$D/bad.cfg:2.7-9: unrecognized escape sequence", "$D/pound.cfg:3.1-3: unexpected End"}},
		{name: "unclosed block at the end of an included file",
			files: map[string]string{"open.cfg": "User \"u\"\nService\n", "pound.cfg": "Include \"open.cfg\"\n"},
			want:  `User "u"; Service { }`,
			diags: []string{"$D/pound.cfg:1: unexpected end of file"}},
	}
}

func TestInclude(t *testing.T) {
	for _, tt := range includeTests() {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			opts := Options{}
			if tt.includeDir != "" {
				opts.IncludeDir = filepath.Join(dir, tt.includeDir)
			}
			f, d := ParseFile(filepath.Join(dir, "pound.cfg"), opts)
			var want []string
			for _, w := range tt.diags {
				want = append(want, strings.ReplaceAll(w, "$D", dir))
			}
			checkDiags(t, d, want)
			checkPositions(t, d)
			if got := render(f.Nodes); got != tt.want {
				t.Errorf("tree:\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

// TestIncludePositions checks that included nodes keep their own file.
func TestIncludePositions(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"conf/svc.cfg": "# svc\nService \"s\"\nEnd\n",
		"pound.cfg": "User \"u\"\nInclude \"conf/svc.cfg\"\n"})
	f, d := ParseFile(filepath.Join(dir, "pound.cfg"), Options{})
	checkDiags(t, d, nil)
	tests := []struct {
		name string
		node *Node
		want string
	}{
		{name: "top file node", node: f.Nodes[0], want: filepath.Join(dir, "pound.cfg") + ":1.1-4"},
		{name: "included node", node: f.Nodes[1], want: filepath.Join(dir, "conf/svc.cfg") + ":2.1-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.node.Span.String(); got != tt.want {
				t.Errorf("span = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestIncludeDepth builds a chain of distinct files longer than the limit.
func TestIncludeDepth(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"pound.cfg": "Include \"f0.cfg\"\n"}
	for i := 0; i < maxIncludeDepth+5; i++ {
		files[fmt.Sprintf("f%d.cfg", i)] = fmt.Sprintf("User \"%d\"\nInclude \"f%d.cfg\"\n", i, i+1)
	}
	writeFiles(t, dir, files)
	f, d := ParseFile(filepath.Join(dir, "pound.cfg"), Options{})
	msgs := diagStrings(d)
	if len(msgs) != 1 || !strings.HasSuffix(msgs[0], "include nesting too deep") {
		t.Fatalf("diagnostics = %q, want one \"include nesting too deep\"", msgs)
	}
	if got := len(f.Nodes); got != maxIncludeDepth {
		t.Errorf("%d files were read, want %d", got, maxIncludeDepth)
	}
}

func TestParseFileErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"conf.d/": ""})
	tests := []struct {
		name string
		path string
		want string
	}{
		{name: "missing top file", path: filepath.Join(dir, "none.cfg"),
			want: "can't open " + filepath.Join(dir, "none.cfg") + ": No such file or directory"},
		{name: "top file is a directory", path: filepath.Join(dir, "conf.d"),
			want: filepath.Join(dir, "conf.d") + ": not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, d := ParseFile(tt.path, Options{})
			checkDiags(t, d, []string{tt.want})
			if f == nil || len(f.Nodes) != 0 {
				t.Errorf("file = %v, want an empty tree", f)
			}
			if d[0].Span.Start.File != tt.path || d[0].Span.Start.Line != 0 {
				t.Errorf("span = %#v, want the file with no line", d[0].Span)
			}
		})
	}
}

// TestParseIncludeDirDefault: Parse resolves relative includes against
// Options.IncludeDir, or the current directory when it is empty.
func TestParseIncludeDirDefault(t *testing.T) {
	fsys := newMemFS(map[string]string{"inc/a.cfg": "User \"a\"\n", "etc/inc/a.cfg": "User \"etc\"\n"})
	tests := []struct {
		name       string
		includeDir string
		want       string
	}{
		{name: "current directory", includeDir: "", want: `User "a"`},
		{name: "explicit directory", includeDir: "etc", want: `User "etc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, d := Parse("main.cfg", []byte("Include \"inc/a.cfg\"\n"), Options{IncludeDir: tt.includeDir, fsys: fsys})
			checkDiags(t, d, nil)
			if got := render(f.Nodes); got != tt.want {
				t.Errorf("tree = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestNestedIncludeKeepsTexts: a file included while its includer is
// still being read, after an earlier Include, copies its token texts
// after everyone else's: none overwrites a text another file's tokens
// hold (they share one set of chunks).
func TestNestedIncludeKeepsTexts(t *testing.T) {
	fsys := newMemFS(map[string]string{
		"a.cfg": "User \"a-user\"\n",
		"b.cfg": "User \"b-user-name\"\nGroup \"b-group-name\"\nInclude \"c.cfg\"\nRootJail \"/b/jail\"\n",
		"c.cfg": "RootJail \"/c/jail\"\nControl \"/c/ctl.sock\"\n",
	})
	f, d := Parse("main.cfg", []byte("Include \"a.cfg\"\nInclude \"b.cfg\"\nAlive 30\n"), Options{fsys: fsys})
	checkDiags(t, d, nil)
	want := `User "a-user"; User "b-user-name"; Group "b-group-name"; RootJail "/c/jail"; Control "/c/ctl.sock"; RootJail "/b/jail"; Alive 30`
	if got := render(f.Nodes); got != want {
		t.Errorf("tree = %s\nwant   %s", got, want)
	}
}
