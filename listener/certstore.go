package listener

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"lbd/config"
)

// certStore holds a listener's certificates and reloads single files
// when they change on disk: a changed, added or removed file under a
// Cert statement's file, directory or glob is read and parsed alone, and
// the SNI index is rebuilt from the certificates already parsed. A file
// that does not load keeps its previous certificate: a half-written or
// mismatched file must never take a site down.
type certStore struct {
	set atomic.Pointer[certSet]

	mu      sync.Mutex   // serialises reloads; guards sources and entries
	sources []certSource // the Cert statements, config order
	entries []certEntry  // sorted by source, then path: config order
	// zproxy selects zproxy's SNI matching (see certSet).
	zproxy bool
	// auto supplies the automatic certificates, asked first (nil: none).
	auto Automatic
}

// certSource is one Cert statement's argument, absolute.
type certSource struct {
	pattern string
	kind    sourceKind
}

type sourceKind uint8

const (
	sourceFile sourceKind = iota // Cert "site.pem"
	sourceDir                    // Cert "dir": its regular files
	sourceGlob                   // Cert "dir/*.pem" (Pound 4)
)

// certEntry is one loaded certificate file.
type certEntry struct {
	source int
	path   string
	sum    [32]byte // SHA-256 of the bytes it was loaded from
	cert   *tls.Certificate
}

// newCertStore starts from the certificates the configuration loaded.
func newCertStore(files []*config.CertFile, zproxy bool) *certStore {
	st := &certStore{zproxy: zproxy}
	srcIndex := map[string]int{}
	for _, f := range files {
		path, source := absPath(f.Path), absPath(f.Source)
		if f.Source == "" {
			source = path
		}
		si, ok := srcIndex[source]
		if !ok {
			si = len(st.sources)
			srcIndex[source] = si
			st.sources = append(st.sources, certSource{pattern: source, kind: kindOf(source, path)})
		}
		c := f.Cert
		if c.Leaf == nil && len(c.Certificate) > 0 {
			// The configuration parsed it already.
			c.Leaf, _ = x509.ParseCertificate(c.Certificate[0]) // a nil Leaf only leaves it out of the name index
		}
		st.entries = append(st.entries, certEntry{source: si, path: path, sum: f.Sum, cert: &c})
	}
	st.publish()
	return st
}

// absPath makes p absolute, as events name absolute paths; Abs fails
// only without a working directory, and then p stays.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func kindOf(source, path string) sourceKind {
	switch {
	case source == path:
		return sourceFile
	case filepath.Dir(path) == source:
		if st, err := os.Stat(source); err == nil && st.IsDir() {
			return sourceDir
		}
	}
	return sourceGlob
}

// publish swaps in a new SNI index over the current entries.
func (st *certStore) publish() {
	certs := make([]*tls.Certificate, len(st.entries))
	for i, e := range st.entries {
		certs[i] = e.cert
	}
	st.set.Store(newCertSet(certs, st.zproxy))
}

// getCertificate is the tls.Config hook.
func (st *certStore) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if st.auto != nil {
		if c, err := st.auto.Certificate(hello); c != nil || err != nil {
			return c, err
		}
	}
	s := st.set.Load()
	if len(s.certs) == 0 {
		if st.auto != nil {
			if c := st.auto.Fallback(hello); c != nil {
				return c, nil
			}
		}
		return nil, errNoCert
	}
	return s.pick(hello), nil
}

var errNoCert = errors.New("no certificate")

// reloaded is the outcome for one certificate file that changed: Err
// says why its previous certificate (or none, for a new file) was kept.
type reloaded struct {
	Path    string
	Subject string
	Added   bool
	Removed bool
	Err     error
}

// watchDirs are the directories whose changes can concern the store.
func (st *certStore) watchDirs() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var dirs []string
	for _, s := range st.sources {
		switch d := filepath.Dir(s.pattern); {
		case s.kind == sourceDir:
			dirs = append(dirs, s.pattern)
		case !hasMeta(d):
			dirs = append(dirs, d)
		}
	}
	for _, e := range st.entries {
		dirs = append(dirs, filepath.Dir(e.path))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// claims reports which sources a file belongs to (its Cert file, the
// directory it is in, a glob it matches).
func (st *certStore) claims(path string) []int {
	var out []int
	for i, s := range st.sources {
		var ok bool
		switch s.kind {
		case sourceFile:
			ok = s.pattern == path
		case sourceDir:
			ok = filepath.Dir(path) == s.pattern
		case sourceGlob:
			ok, _ = filepath.Match(s.pattern, path) // a bad pattern matched nothing at load either
		}
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// ReloadFiles re-reads the named files (absolute paths) and applies what
// changed. Names that no Cert statement covers are returned in stray:
// they may be a symlink swap (Kubernetes secrets swap "..data") that
// changes files without naming them.
func (st *certStore) ReloadFiles(paths []string) (out []reloaded, stray []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	changed := false
	for _, p := range paths {
		p = filepath.Clean(p)
		srcs := st.claims(p)
		if len(srcs) == 0 {
			stray = append(stray, p)
			continue
		}
		var f fileState
		for _, si := range srcs {
			r, ok := st.apply(si, p, &f)
			if ok {
				out = append(out, r)
				changed = changed || r.Err == nil
			}
		}
	}
	if changed {
		st.publish()
	}
	return out, stray
}

// Reload re-reads every file of the Cert statements under dir ("" = all)
// and applies what changed: what a change no event names calls for.
func (st *certStore) Reload(dir string) []reloaded {
	st.mu.Lock()
	var paths []string
	for si, s := range st.sources {
		if dir != "" && !underDir(s.pattern, dir) {
			continue
		}
		paths = append(paths, st.members(si)...)
	}
	for _, e := range st.entries {
		if dir == "" || underDir(e.path, dir) {
			paths = append(paths, e.path)
		}
	}
	st.mu.Unlock()
	slices.Sort(paths)
	out, _ := st.ReloadFiles(slices.Compact(paths)) // no stray paths: each is an entry's
	return out
}

// members lists the files a source names on disk now.
func (st *certStore) members(si int) []string {
	s := st.sources[si]
	switch s.kind {
	case sourceDir:
		ents, err := os.ReadDir(s.pattern)
		if err != nil {
			return nil // its files' entries are re-read and report the error
		}
		var out []string
		for _, e := range ents {
			if e.Type().IsRegular() {
				out = append(out, filepath.Join(s.pattern, e.Name()))
			}
		}
		return out
	case sourceGlob:
		m, _ := filepath.Glob(s.pattern) // a bad pattern matched nothing at load either
		return m
	}
	return []string{s.pattern}
}

// fileState is one file read once for every source that claims it.
type fileState struct {
	read bool
	gone bool // missing, or not a regular file
	err  error
	sum  [32]byte
	cert *tls.Certificate
}

func (f *fileState) load(path string, dirSource bool) {
	if f.read {
		return
	}
	f.read = true
	st, err := os.Stat(path)
	if dirSource && err == nil {
		// A directory's members are its regular files, not symlinks
		// (as at load).
		st, err = os.Lstat(path)
	}
	if errors.Is(err, fs.ErrNotExist) || err == nil && !st.Mode().IsRegular() {
		f.gone = true
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		f.err = err
		return
	}
	f.sum = sha256.Sum256(data)
	f.cert, f.err = loadCert(data)
}

// apply brings source si's entry for path in line with the file; ok
// says whether anything happened that is worth a report.
func (st *certStore) apply(si int, path string, f *fileState) (reloaded, bool) {
	i, found := slices.BinarySearchFunc(st.entries, certEntry{source: si, path: path}, compareEntries)
	f.load(path, st.sources[si].kind == sourceDir)
	switch {
	case f.gone && !found:
		return reloaded{}, false
	case f.gone && st.sources[si].kind == sourceFile:
		return reloaded{Path: path, Err: errors.New("the file is gone")}, true
	case f.gone && len(st.entries) == 1 && st.auto == nil:
		return reloaded{Path: path, Err: errors.New("the file is gone, and it is the listener's last certificate")}, true
	case f.gone:
		st.entries = slices.Delete(st.entries, i, i+1)
		return reloaded{Path: path, Removed: true}, true
	case found && f.sum == st.entries[i].sum:
		return reloaded{}, false
	case f.err != nil:
		return reloaded{Path: path, Added: !found, Err: f.err}, true
	}
	e := certEntry{source: si, path: path, sum: f.sum, cert: f.cert}
	if found {
		st.entries[i] = e
	} else {
		st.entries = slices.Insert(st.entries, i, e)
	}
	return reloaded{Path: path, Subject: f.cert.Leaf.Subject.String(), Added: !found}, true
}

func compareEntries(a, b certEntry) int {
	if a.source != b.source {
		return a.source - b.source
	}
	return strings.Compare(a.path, b.path)
}

// loadCert validates a PEM chain with its key as Pound requires of a
// Cert file: it must parse and the key must match the leaf.
func loadCert(data []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, fmt.Errorf("can't load certificate: %w", err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

func underDir(path, dir string) bool {
	return strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
