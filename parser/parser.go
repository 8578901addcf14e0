package parser

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"unsafe"
)

// Options controls how a configuration is read.
type Options struct {
	// IncludeDir is the base for relative Include paths; "" means the
	// directory of the top file (for Parse: the current directory). Pound's
	// equivalent is -W include-dir=DIR; an IncludeDir statement in the file
	// overrides it for the Includes that follow.
	IncludeDir string

	// fsys replaces the operating system in tests; nil means osFS.
	fsys fileSystem
}

// Diagnostics is every error and warning found in one run; the parser
// never stops at the first one.
type Diagnostics []*Diagnostic

// HasErrors reports whether any diagnostic is an error, not a warning.
func (d Diagnostics) HasErrors() bool {
	for _, x := range d {
		if !x.Warning {
			return true
		}
	}
	return false
}

// Err joins the errors (not the warnings) with errors.Join, so callers
// that only want pass/fail can use it as an error; nil if there are none.
func (d Diagnostics) Err() error {
	var errs []error
	for _, x := range d {
		if !x.Warning {
			errs = append(errs, x)
		}
	}
	return errors.Join(errs...)
}

// ParseFile reads path (and its Includes). Diagnostics holds every error
// found (never stop at the first). The returned File is never nil: it holds
// whatever could be parsed, so callers can still inspect a broken config.
func ParseFile(path string, opts Options) (*File, Diagnostics) {
	if opts.IncludeDir == "" {
		opts.IncludeDir = filepath.Dir(path)
	}
	b := newBuilder(opts)
	src, info, msg := b.readTop(path)
	if msg != "" {
		// The only diagnostic without a line: Pound prints it without a
		// location too ("can't stat pound.cfg: No such file or directory").
		return b.file, Diagnostics{{Span: Span{Start: Pos{File: path}}, Msg: msg}}
	}
	b.includes = append(b.includes, inclusion{name: path, info: info})
	return b.run(path, src)
}

// readTop reads the top configuration file, or explains why it cannot.
func (b *builder) readTop(path string) ([]byte, fs.FileInfo, string) {
	info, err := b.fs.Stat(path)
	switch {
	case err != nil:
		return nil, nil, "can't open " + path + ": " + ErrText(err)
	case !info.Mode().IsRegular():
		return nil, nil, path + ": not a regular file"
	case info.Size() > maxFileSize:
		return nil, nil, path + ": file too big"
	}
	src, err := b.fs.ReadFile(path)
	if err != nil {
		return nil, nil, "can't open " + path + ": " + ErrText(err)
	}
	return src, info, ""
}

// Parse parses src as if it were the file `name`. src must not change
// while Parse runs; nothing returned refers to it.
func Parse(name string, src []byte, opts Options) (*File, Diagnostics) {
	b := newBuilder(opts)
	// Remember the file's identity, if it exists, so that an Include of
	// the file itself is reported as a loop.
	info, err := b.fs.Stat(name)
	if err != nil || !info.Mode().IsRegular() {
		info = nil
	}
	b.includes = append(b.includes, inclusion{name: name, info: info})
	return b.run(name, src)
}

// builder holds the state of one ParseFile/Parse run.
type builder struct {
	fs         fileSystem
	includeDir string // base of relative Include paths (Pound's include_wd)
	file       *File
	stack      []frame
	includes   []inclusion // files being read, outermost first
	diags      Diagnostics
	texts      texts  // the token texts of every file read (lexer.go)
	nodeSlab   []Node // see newNode
	argSlab    []Arg
	childSlab  []*Node
}

// inclusion is one file on the include stack.
type inclusion struct {
	name string
	info fs.FileInfo // nil when the top source is not a file on disk
	at   Span        // the Include argument that opened it
}

func newBuilder(opts Options) *builder {
	b := &builder{fs: opts.fsys, includeDir: opts.IncludeDir, file: &File{}}
	if b.fs == nil {
		b.fs = osFS{}
	}
	return b
}

func (b *builder) run(name string, src []byte) (*File, Diagnostics) {
	b.source(name, src)
	// Pound reports a block left open at the file's last line.
	last := bytes.Count(src, []byte{'\n'}) // not a copy of the file as a string
	if len(src) == 0 || src[len(src)-1] != '\n' {
		last++
	}
	b.finish(Pos{File: name, Line: last})
	return b.file, b.diags
}

// source reads one file's lines and feeds them to the tree builder. The
// scanner's own diagnostics (escapes, unterminated strings) are emitted
// before those of the line they occur on, the order Pound prints them in.
//
// The scanner reads src in place, without a copy as a string: every
// token's text is a copy of its own (texts), so no string outlives the
// parse pointing into src. src must not change while it is read.
func (b *builder) source(name string, src []byte) {
	sc := newScanner(name, unsafe.String(unsafe.SliceData(src), len(src)))
	sc.texts = &b.texts
	var l lineAST
	for sc.readLine(&l) {
		b.diags = append(b.diags, sc.diags...)
		sc.diags = sc.diags[:0]
		b.line(&l)
	}
	b.diags = append(b.diags, sc.diags...)
}
