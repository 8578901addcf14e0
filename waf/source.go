package waf

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
)

// directive is one logical SecLang directive as Coraza's parser sees it
// (continuation lines joined), with where it starts and ends.
type directive struct {
	file       string
	line, last int    // first and last physical line, from 1
	name       string // lower case
	args       string
	// chain holds, for each file on the include path that leads to this
	// directive, the occurrence of that file and the last line of its
	// Include directive; the directive's own file comes last.
	chain []cut
}

// cut keeps the first lines of one reading (occurrence) of a file; seq
// numbers the readings of all rule files in the order Coraza makes them.
type cut struct {
	file  string
	occ   int
	seq   int
	lines int
}

// walk lists the directives of the rule files in the order Coraza parses
// them, following Include as its parser does (relative to the including
// file's directory, globs relative to the working directory).
type walk struct {
	root  fs.FS
	dirs  []directive
	seen  map[string]int // readings of each file so far
	rules map[string]bool
	depth int
	// defaults holds the first SecDefaultAction of each phase; drops the
	// lines of the repeats that are left out (see defaultAction).
	defaults map[int]*directive
	drops    map[string]map[int][]int
	reads    int
}

// errMissing is a rule file (or included file) that cannot be read.
type errMissing struct {
	at   *directive // the Include directive, nil for a top-level file
	path string
	err  error
}

func (e *errMissing) Error() string {
	return fmt.Sprintf("can't open %s: %s", e.path, unwrapPathErr(e.err))
}

func unwrapPathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// maxIncludeDepth matches Coraza's recursion limit in spirit: a file that
// includes itself is an error, not a stack overflow.
const maxIncludeDepth = 100

func (w *walk) file(path string, chain []cut, from *directive) error {
	if w.depth >= maxIncludeDepth {
		return &errMissing{at: from, path: path, err: errors.New("includes nested too deeply")}
	}
	data, err := fs.ReadFile(w.root, path)
	if err != nil {
		return &errMissing{at: from, path: path, err: err}
	}
	w.rules[path] = true
	occ := w.seen[path]
	w.seen[path] = occ + 1
	seq := w.reads
	w.reads++
	w.depth++
	defer func() { w.depth-- }()
	for _, d := range splitDirectives(path, normalize(string(data), 0)) {
		d.chain = append(append([]cut{}, chain...), cut{file: path, occ: occ, seq: seq, lines: d.last})
		w.dirs = append(w.dirs, d)
		var err error
		switch d.name {
		case "include":
			err = w.include(&w.dirs[len(w.dirs)-1])
		case "secdefaultaction":
			err = w.defaultAction(&w.dirs[len(w.dirs)-1])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// defaultAction handles a SecDefaultAction. libmodsecurity parses each
// rule file given to it (zproxy's WafRules) on its own, so two files may
// each set a phase's default, and merges them into one rule set whose
// rules all see every default of their phase; Coraza refuses a second
// default for a phase. A repeat in a later file that decides the same
// (disruptive action, status, transformations: it may differ in log and
// auditlog only) is left out; one that decides otherwise is an error.
func (w *walk) defaultAction(d *directive) error {
	phase := defaultPhase(unquote(d.args))
	first, ok := w.defaults[phase]
	if !ok {
		w.defaults[phase] = d
		return nil
	}
	if first.chain[0].file == d.chain[0].file {
		return nil // the same file: Coraza refuses it, as libmodsecurity does
	}
	if !sameDecision(unquote(first.args), unquote(d.args)) {
		return &errConflict{at: d, first: first}
	}
	own := d.chain[len(d.chain)-1]
	if w.drops[d.file] == nil {
		w.drops[d.file] = map[int][]int{}
	}
	for l := d.line; l <= d.last; l++ {
		w.drops[d.file][own.occ] = append(w.drops[d.file][own.occ], l)
	}
	return nil
}

// defaultPhase is the phase a SecDefaultAction's actions name (2 when
// they name none, as in ModSecurity).
func defaultPhase(actions string) int {
	for _, a := range strings.Split(actions, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(a), ":")
		if strings.ToLower(k) != "phase" {
			continue
		}
		switch v = strings.ToLower(strings.Trim(v, "'")); v {
		case "request":
			return 2
		case "response":
			return 4
		case "logging":
			return 5
		}
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return 2
}

// sameDecision compares two SecDefaultAction lists without their
// logging actions and phase.
func sameDecision(a, b string) bool {
	key := func(s string) string {
		var kept []string
		for _, act := range strings.Split(s, ",") {
			act = strings.TrimSpace(act)
			name, _, _ := strings.Cut(act, ":")
			switch strings.ToLower(name) {
			case "log", "nolog", "auditlog", "noauditlog", "phase":
				continue
			}
			kept = append(kept, act)
		}
		sort.Strings(kept)
		return strings.Join(kept, ",")
	}
	return key(a) == key(b)
}

// errConflict is a SecDefaultAction that the rule set cannot hold.
type errConflict struct{ at, first *directive }

func (e *errConflict) Error() string {
	return fmt.Sprintf("SecDefaultAction for phase %d decides otherwise than the one at %s:%d: lbd keeps one default per phase for all WafRules files",
		defaultPhase(unquote(e.at.args)), e.first.file, e.first.line)
}

// include follows an Include directive.
func (w *walk) include(d *directive) error {
	target := unquote(d.args)
	var files []string
	if strings.Contains(target, "*") {
		m, err := fs.Glob(w.root, target)
		if err != nil {
			return &errMissing{at: d, path: target, err: err}
		}
		files = m
	} else {
		if !strings.HasPrefix(target, "/") {
			target = filepath.Join(filepath.Dir(d.file), target)
		}
		files = []string{target}
	}
	chain := d.chain
	for _, f := range files {
		if err := w.file(strings.TrimSpace(f), chain, d); err != nil {
			return err
		}
	}
	return nil
}

// unquote strips the quotes Coraza's parser strips from a directive's
// arguments.
func unquote(opts string) string {
	if len(opts) >= 3 && opts[0] == '"' && opts[len(opts)-1] == '"' {
		return strings.Trim(opts, `"`)
	}
	return opts
}

// splitDirectives cuts a rule file into logical directives exactly as
// Coraza's parser does (parser.go parseString): lines are trimmed, empty
// lines and comment lines skipped, a trailing backslash continues the
// directive, a backtick block runs to the line starting with a backtick.
func splitDirectives(file, data string) []directive {
	var out []directive
	sc := bufio.NewScanner(strings.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var buf strings.Builder
	first, n := 0, 0
	inBackticks := false
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if buf.Len() == 0 {
			first = n
		}
		if !inBackticks && line[len(line)-1] == '`' {
			inBackticks = true
		} else if inBackticks && line[0] == '`' {
			inBackticks = false
		}
		if inBackticks {
			buf.WriteString(line)
			buf.WriteString("\n")
			continue
		}
		if line[len(line)-1] == '\\' {
			buf.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		buf.WriteString(line)
		name, args, _ := strings.Cut(buf.String(), " ")
		out = append(out, directive{file: file, line: first, last: n, name: strings.ToLower(name), args: strings.TrimSpace(args)})
		buf.Reset()
	}
	return out
}

// stripTrailingComment removes a comment that follows the last argument
// of a directive on its final line ("deny" #): libmodsecurity's lexer
// skips it, Coraza's parser takes it for part of the arguments. Quotes
// are honoured, so a '#' inside an argument stays.
func stripTrailingComment(lines []string) {
	inDouble, inSingle := false, false
	for li, line := range lines {
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case c == '\\':
				i++ // an escaped character is never a quote
			case c == '"' && !inSingle:
				inDouble = !inDouble
			case c == '\'' && !inDouble:
				inSingle = !inSingle
			case c == '#' && !inDouble && !inSingle && i > 0 && (line[i-1] == ' ' || line[i-1] == '\t'):
				if li == len(lines)-1 {
					lines[li] = strings.TrimRight(line[:i], " \t")
				}
				return
			}
		}
	}
}

// normalize rewrites a rule file's text for Coraza: trailing comments
// after a directive are removed (see stripTrailingComment), and with
// keep > 0 only the first keep lines are served (the error locator's
// prefixes). Line numbers are preserved.
func normalize(data string, keep int, drop ...int) string {
	data = persistentToTX(data)
	lines := strings.Split(data, "\n")
	if keep > 0 && keep < len(lines) {
		lines = lines[:keep]
	}
	for _, l := range drop {
		if l-1 < len(lines) {
			lines[l-1] = ""
		}
	}
	start := -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if start < 0 {
			if t == "" || t[0] == '#' {
				continue
			}
			start = i
		}
		if strings.HasSuffix(t, "\\") || strings.HasSuffix(t, "`") {
			continue
		}
		stripTrailingComment(lines[start : i+1])
		lines[start] = pcreOperatorLine(lines[start])
		start = -1
	}
	return strings.Join(lines, "\n")
}

// Persistent collections (IP, GLOBAL, SESSION, USER, RESOURCE) keep
// values across requests in ModSecurity; Coraza has none and refuses a
// rule that reads one (CRS 3's IP reputation, DoS protection and
// blocking evaluation do). lbd renames them to transaction variables
// (IP:x is TX:lbd_ip_x): rules that set and read them in one request
// work, and across requests they start empty, as in a ModSecurity that
// has never seen the client. The patterns are compiled at their first
// use, not at start: most configurations have no rule file.
var (
	persistentVar   = lazyRegexp(`(?i)(^|[|!&'"])(ip|global|session|user|resource):`)
	persistentWrite = lazyRegexp(`(?i)((?:setvar|expirevar|deprecatevar):'?!?|%\{)(ip|global|session|user|resource)\.`)
	secRuleHead     = lazyRegexp(`(?im)^(\s*secrule\s+)(\S+)`)
)

func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

func persistentToTX(data string) string {
	if !strings.ContainsAny(data, ":.") {
		return data
	}
	persistentVar, persistentWrite, secRuleHead := persistentVar(), persistentWrite(), secRuleHead()
	data = secRuleHead.ReplaceAllStringFunc(data, func(m string) string {
		g := secRuleHead.FindStringSubmatch(m)
		return g[1] + persistentVar.ReplaceAllStringFunc(g[2], func(v string) string {
			sub := persistentVar.FindStringSubmatch(v)
			return sub[1] + "TX:lbd_" + strings.ToLower(sub[2]) + "_"
		})
	})
	return persistentWrite.ReplaceAllStringFunc(data, func(m string) string {
		sub := persistentWrite.FindStringSubmatch(m)
		return sub[1] + "tx.lbd_" + strings.ToLower(sub[2]) + "_"
	})
}

// rootFS is what Coraza reads rules and data files through: the built-in
// names (@crs and the embedded Core Rule Set, whose names start with @)
// and the operating system's files. Files the walk found to be rule
// files are normalized; with cuts set, readings of those files are cut
// short (the error locator).
type rootFS struct {
	rules map[string]bool
	drops map[string]map[int][]int // file → occurrence → lines left out
	cuts  map[string]map[int]int   // file → occurrence → lines kept
	reads map[string]int
	// seq counts the readings of rule files; with last >= 0, readings
	// after the last-th are served empty (the error locator: the parse
	// must end where the prefix ends, also in the rest of a glob).
	seq, last int
	// virtual holds files lbd makes up (the @crs entry point).
	virtual map[string]string
}

func (r *rootFS) base(name string) bool { return strings.HasPrefix(name, "@") }

func (r *rootFS) Open(name string) (fs.File, error) {
	if r.base(name) {
		return coreruleset.FS.Open(name)
	}
	return os.Open(name)
}

func (r *rootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if r.base(name) {
		return fs.ReadDir(coreruleset.FS, name)
	}
	return os.ReadDir(name)
}

func (r *rootFS) ReadFile(name string) ([]byte, error) {
	var data []byte
	var err error
	if v, ok := r.virtual[name]; ok {
		data = []byte(v)
	} else if r.base(name) {
		data, err = fs.ReadFile(coreruleset.FS, name)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil || !r.rules[name] {
		return data, err
	}
	occ := r.reads[name]
	r.reads[name] = occ + 1
	seq := r.seq
	r.seq++
	if r.last >= 0 && seq > r.last {
		return nil, nil
	}
	keep := 0
	if r.cuts != nil {
		if k, ok := r.cuts[name][occ]; ok {
			keep = k
		}
	}
	return []byte(normalize(string(data), keep, r.drops[name][occ]...)), nil
}

// Glob lets fs.Glob list the embedded rule set and the file system.
func (r *rootFS) Glob(pattern string) ([]string, error) {
	if r.base(pattern) {
		return fs.Glob(coreruleset.FS, pattern)
	}
	return filepath.Glob(pattern)
}
