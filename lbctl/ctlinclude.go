package lbctl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// include reads the file an Include statement names, or, when no file has
// that name, the files its glob pattern matches, in order (pound.cfg's
// Include, which poundctl's configuration file shares). A relative name
// is taken from the home directory.
func (p *ctlParser) include(kw string, args []ctlToken) error {
	var name string
	if err := p.value(kw, args, &name); err != nil {
		return err
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	files := []string{path}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		m, gerr := filepath.Glob(path)
		if gerr != nil {
			return p.errorf("%s: %v", kw, gerr)
		}
		if len(m) == 0 {
			return p.errorf("can't stat %s: no such file or directory", path)
		}
		files = m
	}
	for _, f := range files {
		if err := p.includeFile(f); err != nil {
			return err
		}
	}
	return nil
}

// includeFile reads one included file, refusing one already being read
// (which would include itself without end).
func (p *ctlParser) includeFile(file string) error {
	fi, err := os.Stat(file)
	if err != nil {
		return p.errorf("can't stat %s: %v", file, unwrapPath(err))
	}
	for _, o := range p.open {
		if ofi, err := os.Stat(o); err == nil && os.SameFile(fi, ofi) {
			return p.errorf("%s already included", file)
		}
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return p.errorf("can't open %s: %v", file, unwrapPath(err))
	}
	return p.text(file, string(src))
}

// unwrapPath drops the path and operation from an os error, which the
// message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
