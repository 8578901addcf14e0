package parser

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Limits that keep a hostile or broken configuration from hanging the
// parser: includes nested deeper than this are refused (loops are caught
// earlier by file identity), and so are files larger than maxFileSize.
const (
	maxIncludeDepth = 32
	maxFileSize     = 64 << 20
)

// fileSystem is what the parser needs from the operating system. Tests and
// the fuzz target substitute an in-memory one so that arbitrary input
// cannot make the parser read /dev/zero or glob the whole disk.
type fileSystem interface {
	Stat(name string) (fs.FileInfo, error)
	ReadFile(name string) ([]byte, error)
	Glob(pattern string) ([]string, error)
	SameFile(a, b fs.FileInfo) bool
}

// osFS is the real file system.
type osFS struct{}

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (osFS) ReadFile(name string) ([]byte, error)  { return os.ReadFile(name) }
func (osFS) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }
func (osFS) SameFile(a, b fs.FileInfo) bool        { return os.SameFile(a, b) }

// include expands an Include line in place.
func (b *builder) include(l *lineAST) {
	arg, ok := b.stringArg(l)
	if !ok {
		return
	}
	pattern := arg.Text
	path := b.resolve(pattern)
	info, err := b.fs.Stat(path)
	if err == nil {
		b.includeFile(path, info, arg.Span)
		return
	}
	if errors.Is(err, fs.ErrNotExist) && hasGlobMeta(pattern) {
		b.includeGlob(path, arg.Span)
		return
	}
	b.errorAt(arg.Span, "can't stat "+path+": "+ErrText(err))
}

// includeGlob includes every regular file matching path, in sorted order
// (Pound uses glob(3), which sorts). Matching directories are skipped and
// a pattern that matches nothing is not an error, so "conf.d/*.cfg" works
// with an empty conf.d.
func (b *builder) includeGlob(path string, at Span) {
	matches, err := b.fs.Glob(path)
	if err != nil {
		b.errorAt(at, "glob error: "+ErrText(err))
		return
	}
	for _, m := range matches {
		info, err := b.fs.Stat(m)
		if err != nil {
			b.errorAt(at, "can't stat "+m+": "+ErrText(err))
			continue
		}
		if !info.IsDir() {
			b.includeFile(m, info, at)
		}
	}
}

// includeFile reads one included file, refusing loops, devices and
// runaway nesting.
func (b *builder) includeFile(path string, info fs.FileInfo, at Span) {
	switch {
	case !info.Mode().IsRegular():
		b.errorAt(at, path+": not a regular file")
		return
	case info.Size() > maxFileSize:
		b.errorAt(at, path+": file too big")
		return
	case len(b.includes) > maxIncludeDepth:
		b.errorAt(at, path+": include nesting too deep")
		return
	}
	for i, inc := range b.includes {
		if inc.info == nil || !b.fs.SameFile(inc.info, info) {
			continue
		}
		if i == 0 {
			b.errorAt(at, path+" already included (at top level)")
		} else {
			b.errorAt(at, path+" already included")
			b.errorAt(inc.at, "here is the location of original inclusion")
		}
		return
	}
	src, err := b.fs.ReadFile(path)
	if err != nil {
		b.errorAt(at, "can't open "+path+": "+ErrText(err))
		return
	}
	b.includes = append(b.includes, inclusion{name: path, info: info, at: at})
	b.source(path, src)
	b.includes = b.includes[:len(b.includes)-1]
}

// includeDir applies an IncludeDir node: later relative Includes are
// looked up in its directory (itself relative to the current one).
func (b *builder) applyIncludeDir(n *Node) {
	if len(n.Args) == 0 {
		b.errorAt(n.Span, "not enough arguments")
		return
	}
	a := n.Args[0]
	switch {
	case a.Kind != String:
		b.errorAt(a.Span, "argument type mismatch: expected string, but found "+a.Kind.String())
		return
	case len(n.Args) > 1:
		b.errorAt(n.Args[1].Span, "extra arguments")
		return
	}
	dir := b.resolve(a.Text)
	info, err := b.fs.Stat(dir)
	if err == nil && !info.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		b.errorAt(a.Span, "can't open directory "+dir+": "+ErrText(err))
		return
	}
	b.includeDir = dir
}

// stringArg checks that an Include line has exactly one string argument.
func (b *builder) stringArg(l *lineAST) (Arg, bool) {
	if len(l.Tokens) < 2 {
		b.errorAt(tokenSpan(&l.Tokens[0]), "not enough arguments")
		return Arg{}, false
	}
	a := tokenArg(&l.Tokens[1])
	if a.Kind != String {
		b.errorAt(a.Span, "argument type mismatch: expected string, but found "+a.Kind.String())
		return Arg{}, false
	}
	if len(l.Tokens) > 2 {
		b.errorAt(tokenSpan(&l.Tokens[2]), "extra arguments")
		return Arg{}, false
	}
	return a, true
}

// resolve makes a relative path relative to the include directory.
func (b *builder) resolve(name string) string {
	if filepath.IsAbs(name) || b.includeDir == "" {
		return name
	}
	return filepath.Join(b.includeDir, name)
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, `*?[`) }

// ErrText is the system error message of err, without the path (so
// diagnostics do not depend on the machine), in glibc's spelling ("No
// such file or directory"), which is what Pound prints.
func ErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	msg := err.Error()
	if msg != "" && msg[0] >= 'a' && msg[0] <= 'z' {
		msg = string(msg[0]-'a'+'A') + msg[1:]
	}
	return msg
}
