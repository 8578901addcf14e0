package config

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"lbd/parser"
)

// memFS adapts an fstest.MapFS to the loader's paths (absolute or with
// "..": they are cleaned and looked up without the leading slash).
type memFS struct{ m fstest.MapFS }

func (f memFS) name(p string) string {
	p = strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "/")
	if p == ".." || strings.HasPrefix(p, "../") {
		return "\x00" // not a valid fs.FS name: every lookup fails
	}
	return p
}

func (f memFS) Stat(p string) (fs.FileInfo, error)      { return fs.Stat(f.m, f.name(p)) }
func (f memFS) ReadFile(p string) ([]byte, error)       { return fs.ReadFile(f.m, f.name(p)) }
func (f memFS) ReadDir(p string) ([]fs.DirEntry, error) { return fs.ReadDir(f.m, f.name(p)) }
func (f memFS) Glob(p string) ([]string, error)         { return fs.Glob(f.m, f.name(p)) }

// fuzzFS holds the files fuzz inputs may name.
var fuzzFS = memFS{m: fstest.MapFS{
	"err.html":        {Data: []byte("<html>oops</html>\n")},
	"empty.html":      {Data: nil},
	"hosts.txt":       {Data: []byte("a.example.com\n# comment\n\nb.example.com\n")},
	"bad.pem":         {Data: []byte("-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n")},
	"certs/dir/x.txt": {Data: []byte("not a cert")},
	"m.lua":           {Data: []byte("function f() end\n")},
}}

// FuzzLoadBytes checks that no input makes the loader panic, that a
// failed load always explains itself with positioned diagnostics, and
// that a successful one always dumps.
func FuzzLoadBytes(f *testing.F) {
	f.Add([]byte(minimalSrc))
	f.Add([]byte("ListenHTTP\n Name x\n ErrNoSsl \"err.html\"\n Service\n  Host -file \"hosts.txt\"\n  Session\n   Type COOKIE\n   TTL 1m\n  End\n End\nEnd\n"))
	f.Add([]byte("ListenHTTPS\n Cert \"certs/dir\"\n Cert \"bad.pem\"\n ErrorFile 503 \"empty.html\"\nEnd\nNot Not\n"))
	f.Add([]byte("Control\n Mode 0777\nEnd\nBackend \"a\"\n Use \"a\"\nEnd\n"))
	f.Add([]byte("Lua\n Path \"/a/?.lua;x\"\n Load \"m.lua\" \"1m\"\n LoadGlobal \"m.lua\"\nEnd\nListenHTTP\n LuaModify \"f\" \"$1\"\n Service\n  LuaMatch \"m.f\"\n  LuaBackend \"f\"\n End\nEnd\n"))
	f.Add([]byte("ACMEAccount\n Directory \"https://ca.example/d\"\n EAB \"k\" \"m\"\n CARoots \"bad.pem\"\nEnd\nListenHTTPS\n ACMECert \"a.example.com\" \"*.x.example\"\n ACMECertFromServices 1\n ACMEChallenge \"http-01\"\n Service\n  Match AND\n   Host \"b.example.com\"\n  End\n End\nEnd\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		// Include and IncludeDir are read by the parser from the real
		// disk; its own fuzz target covers them with a fake file system.
		if bytes.Contains(bytes.ToLower(src), []byte("include")) {
			return
		}
		cfg, warns, err := LoadBytes("fuzz.cfg", src, LoadOptions{NoDNS: true, fsys: fuzzFS})
		for _, w := range warns {
			if !w.Warning || w.Span.Start.Line == 0 {
				t.Errorf("bad warning %q", w.Error())
			}
		}
		if err == nil {
			if cfg == nil {
				t.Fatal("no error and no config")
			}
			if _, jerr := cfg.DumpJSON(); jerr != nil {
				t.Fatalf("dump: %v", jerr)
			}
			return
		}
		if cfg != nil {
			t.Fatal("config returned with an error")
		}
		var joined interface{ Unwrap() []error }
		if !errors.As(err, &joined) {
			t.Fatalf("error is not joined diagnostics: %v", err)
		}
		for _, e := range joined.Unwrap() {
			var d *parser.Diagnostic
			if !errors.As(e, &d) || d.Warning || d.Span.Start.Line == 0 || d.Msg == "" {
				t.Errorf("error without a position: %q", e.Error())
			}
		}
	})
}

// FuzzLuaNames checks the two pieces of text Lua statements derive: a
// source's global name is always a Lua name, and a path argument splits
// into components that join back to it, the bad ones exactly those
// without a '?'.
func FuzzLuaNames(f *testing.F) {
	for _, s := range []string{"auth-bearer.lua", "/usr/share/1x.lua", ".lua", "", "dir/", "a;b?;;?", "/one/?.lua;/two/?/init.lua"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if name := LuaModuleName(s); !IsLuaName(name) {
			t.Errorf("LuaModuleName(%q) = %q, not a Lua name", s, name)
		}
		comps, offs, bad := LuaPathComponents(s)
		if strings.Join(comps, ";") != s {
			t.Errorf("components %q do not join back to %q", comps, s)
		}
		nb := 0
		for i, c := range comps {
			if s[offs[i]:offs[i]+len(c)] != c {
				t.Errorf("component %d %q is not at offset %d of %q", i, c, offs[i], s)
			}
			if !strings.Contains(c, "?") {
				if nb >= len(bad) || bad[nb] != i {
					t.Errorf("component %d %q has no '?' but is not reported", i, c)
				}
				nb++
			}
		}
		if nb != len(bad) {
			t.Errorf("reported %v, want %d", bad, nb)
		}
	})
}
