package config

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"lbd/parser"
)

// Files named in the configuration (error pages, certificates, CA lists)
// resolve against the include directory, as Pound 4 does, and are read at
// load time so a missing file is a configuration error, not a runtime one.

// maxFileSize bounds what a configuration may make lbd read into memory
// (error pages, certificates, pattern lists).
const maxFileSize = 16 << 20

// fileSystem is what loading needs from the operating system; the fuzz
// target substitutes an in-memory one so arbitrary input cannot make it
// read devices or glob the whole disk.
type fileSystem interface {
	Stat(name string) (fs.FileInfo, error)
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Glob(pattern string) ([]string, error)
}

// osFS is the real file system.
type osFS struct{}

func (osFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (osFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFS) Glob(pattern string) ([]string, error)      { return filepath.Glob(pattern) }

// readRegular reads a regular file of at most maxFileSize bytes.
func (b *builder) readRegular(path string) ([]byte, error) {
	st, err := b.fs.Stat(path)
	switch {
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, errNotRegular
	case st.Size() > maxFileSize:
		return nil, errTooBig
	}
	return b.fs.ReadFile(path)
}

var (
	errNotRegular = errors.New("not a regular file")
	errTooBig     = errors.New("file too big")
)

// resolve returns the path a file argument names.
func (b *builder) resolve(name string) string {
	if filepath.IsAbs(name) || b.incDir == "" {
		return name
	}
	return filepath.Join(b.incDir, name)
}

// readFile reads the regular, non-empty file named by a, reporting
// Pound's messages at the argument.
func (b *builder) readFile(a parser.Arg) (string, []byte, bool) {
	path := b.resolve(a.Text)
	data, err := b.readRegular(path)
	switch {
	case errors.Is(err, errNotRegular) || errors.Is(err, errTooBig):
		b.errorf(a.Span, "%s: %s", path, err.Error())
	case err != nil:
		b.errorf(a.Span, "can't open %s: %s", path, parser.ErrText(err))
	case len(data) == 0:
		b.errorf(a.Span, "%s: empty file", path)
	default:
		return path, data, true
	}
	return path, nil, false
}

// errorPage reads a custom error body.
func (b *builder) errorPage(a parser.Arg) (*ErrorPage, bool) {
	path, data, ok := b.readFile(a)
	if !ok {
		return nil, false
	}
	return &ErrorPage{Path: path, Body: data}, true
}

// fileData reads a CA or CRL list.
func (b *builder) fileData(a parser.Arg) *FileData {
	path, data, ok := b.readFile(a)
	if !ok {
		return nil
	}
	return &FileData{Path: path, Data: data}
}

// certFile loads one PEM file holding a certificate chain and its key;
// source is the Cert argument it came from (a file, directory or glob).
// It only reads and parses, so certs can run it in parallel; a failure
// is the message to report at the statement.
func (b *builder) certFile(source, path string) (*CertFile, string) {
	data, err := b.readRegular(path)
	if err != nil {
		return nil, fmt.Sprintf("can't open %s: %s", path, parser.ErrText(err))
	}
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, fmt.Sprintf("%s: can't load certificate: %s", path, err.Error())
	}
	return &CertFile{Path: path, Source: source, Sum: sha256.Sum256(data), Cert: cert}, ""
}

// certs loads a Cert argument: a file, a directory of files, or (Pound 4)
// a glob pattern.
func (b *builder) certs(a parser.Arg) []*CertFile {
	path := b.resolve(a.Text)
	var names []string
	st, err := b.fs.Stat(path)
	switch {
	case err == nil && st.IsDir():
		ents, rerr := b.fs.ReadDir(path)
		if rerr != nil {
			b.errorf(a.Span, "%s: error opening directory: %s", path, parser.ErrText(rerr))
			return nil
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				names = append(names, filepath.Join(path, e.Name()))
			}
		}
	case err == nil:
		names = []string{path}
	default:
		// Glob fails only on a malformed pattern, which matches nothing:
		// either way the stat error below is the one to report.
		names, _ = b.fs.Glob(path)
		if len(names) == 0 {
			b.errorf(a.Span, "%s: stat error: %s", path, parser.ErrText(err))
			return nil
		}
	}
	sort.Strings(names)
	certs, errs := b.loadCerts(path, names)
	var out []*CertFile
	for i, c := range certs {
		if errs[i] != "" {
			b.errorf(a.Span, "%s", errs[i])
		} else {
			out = append(out, c)
		}
	}
	return out
}

// loadCerts loads names on every core: a directory of 10,000
// certificates is mostly key parsing (deriving an ECDSA public key) and
// file system calls, and a reload waits for it. Results keep the order
// of names.
func (b *builder) loadCerts(source string, names []string) ([]*CertFile, []string) {
	certs := make([]*CertFile, len(names))
	errs := make([]string, len(names))
	workers := min(runtime.GOMAXPROCS(0), (len(names)+63)/64)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
				certs[i], errs[i] = b.certFile(source, names[i])
			}
		}()
	}
	wg.Wait()
	return certs, errs
}
