// Package waf is lbd's web application firewall: ModSecurity rules
// (SecLang) run by Coraza, the OWASP project's ModSecurity-compatible
// engine. The proxy sees a narrow interface: an Engine compiled once per
// configuration, and a Tx per request that it feeds the request and
// response phase by phase, getting back a Verdict when a rule decides
// the answer. A listener without rules has no Engine and pays nothing.
package waf

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/types"
)

// CRS is the WafRules name of the built-in OWASP Core Rule Set 4 (with
// Coraza's recommended settings, rule engine on).
const CRS = "@crs"

// CRSVersion is the version of the embedded Core Rule Set.
const CRSVersion = "4.25.0"

// Options are what a configuration sets beside the rule files.
type Options struct {
	// Paranoia and Threshold set the built-in CRS's blocking paranoia
	// level and inbound anomaly score threshold (0: CRS's defaults, 1
	// and 5).
	Paranoia, Threshold int
}

// Engine is a compiled rule set, shared by every request of the listeners
// that name it. It is immutable; a reload compiles a new one.
type Engine struct {
	waf   coraza.WAF
	files []string
	log   atomic.Pointer[func(string)]
}

// SetLog sends the log lines of matched rules that log (ModSecurity's
// error log format) to log; without it they are discarded.
func (e *Engine) SetLog(log func(msg string)) { e.log.Store(&log) }

func (e *Engine) logMatch(r types.MatchedRule) {
	if f := e.log.Load(); f != nil && !strings.HasPrefix(r.TransactionID(), dryPrefix) {
		(*f)(r.ErrorLog())
	}
}

// Files are the rule files the engine was compiled from, includes
// expanded, in the order they were read.
func (e *Engine) Files() []string { return e.files }

// Error is a rule file that cannot be loaded: File and Line locate the
// directive at fault when it could be found (Line 0: the file as a whole).
type Error struct {
	File string
	Line int
	Msg  string
	// Top is the rule file given to Compile that the failing file was
	// read for (itself, or a file that includes it).
	Top string
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return e.Msg
	case e.Line == 0:
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// forceBodyRuleID is the id of the rule lbd adds when no
// SecResponseBodyMimeType is configured (see Compile).
const forceBodyRuleID = 4000000001

// Compile loads the rule files in order (CRS names the built-in rule
// set). Errors name the rule file and line of the directive at fault.
func Compile(files []string, opt Options) (*Engine, error) {
	if len(files) == 0 {
		return nil, errors.New("no rule files")
	}
	root := &rootFS{rules: map[string]bool{}, drops: map[string]map[int][]int{}, last: -1,
		reads: map[string]int{}, virtual: map[string]string{CRS: crsEntry(opt)}}
	w := &walk{root: root, seen: map[string]int{}, rules: root.rules, defaults: map[int]*directive{}, drops: root.drops}
	for _, f := range files {
		if err := w.file(f, nil, nil); err != nil {
			return nil, missingError(err)
		}
	}
	root.reads, root.seq = map[string]int{}, 0 // the walk's readings are not Coraza's
	e := &Engine{}
	eng, err := build(root, files, w.dirs, e.logMatch)
	if err != nil {
		return nil, locate(files, w, opt, err)
	}
	seen := make([]string, 0, len(w.seen))
	for _, d := range w.dirs {
		if n := len(seen); n == 0 || seen[n-1] != d.file {
			seen = append(seen, d.file)
		}
	}
	e.waf, e.files = eng, seen
	return e, nil
}

// build makes the Coraza WAF from the files, each read through root.
func build(root *rootFS, files []string, dirs []directive, onMatch func(types.MatchedRule)) (coraza.WAF, error) {
	cfg := coraza.NewWAFConfig().WithRootFS(root)
	for _, f := range files {
		cfg = cfg.WithDirectivesFromFile(f)
	}
	if !setsMimeTypes(dirs) {
		// libmodsecurity inspects every response body when no
		// SecResponseBodyMimeType is given; Coraza inspects none. This
		// rule (after the files: Coraza numbers the lines of everything
		// it parses as one) keeps ModSecurity's meaning.
		cfg = cfg.WithDirectives(fmt.Sprintf(
			`SecAction "id:%d,phase:3,pass,nolog,noauditlog,ctl:forceResponseBodyVariable=On"`, forceBodyRuleID))
	}
	if onMatch != nil {
		cfg = cfg.WithErrorCallback(onMatch)
	}
	return coraza.NewWAF(cfg)
}

func setsMimeTypes(dirs []directive) bool {
	for _, d := range dirs {
		if d.name == "secresponsebodymimetype" {
			return true
		}
	}
	return false
}

// crsEntry is the rule file behind the name CRS.
func crsEntry(opt Options) string {
	var b strings.Builder
	b.WriteString("Include @coraza.conf-recommended\nSecRuleEngine On\n")
	if opt.Paranoia > 0 {
		fmt.Fprintf(&b, "SecAction \"id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d\"\n", opt.Paranoia)
	}
	if opt.Threshold > 0 {
		fmt.Fprintf(&b, "SecAction \"id:900110,phase:1,pass,t:none,nolog,setvar:tx.inbound_anomaly_score_threshold=%d\"\n", opt.Threshold)
	}
	b.WriteString("Include @crs-setup.conf.example\nInclude @owasp_crs/*.conf\n")
	return b.String()
}

func missingError(err error) error {
	var c *errConflict
	if errors.As(err, &c) {
		return &Error{File: c.at.file, Line: c.at.line, Msg: c.Error(), Top: c.at.chain[0].file}
	}
	var m *errMissing
	if errors.As(err, &m) && m.at != nil {
		return &Error{File: m.at.file, Line: m.at.line, Msg: m.Error(), Top: m.at.chain[0].file}
	}
	if m != nil {
		return &Error{Msg: m.Error(), Top: m.path}
	}
	return &Error{Msg: err.Error()}
}

// locate finds the directive a build error comes from. Coraza's errors
// do not say where; parsing is sequential and stops at the first bad
// directive, so the shortest failing prefix of the directives (found by
// bisection, each prefix served by cutting the files short) ends at it.
func locate(files []string, w *walk, opt Options, buildErr error) error {
	msg := cleanMessage(buildErr)
	// An Include line is followed by what it includes, so a failure at
	// one is a failure in its files: only the other directives are
	// candidates.
	var cand []directive
	for _, d := range w.dirs {
		if d.name != "include" {
			cand = append(cand, d)
		}
	}
	fails := func(k int) bool { // the first k candidates fail to build
		d := cand[k-1]
		root := &rootFS{rules: w.rules, drops: w.drops, virtual: map[string]string{CRS: crsEntry(opt)},
			cuts: map[string]map[int]int{}, reads: map[string]int{}, last: d.chain[len(d.chain)-1].seq}
		for _, c := range d.chain {
			if root.cuts[c.file] == nil {
				root.cuts[c.file] = map[int]int{}
			}
			root.cuts[c.file][c.occ] = c.lines
		}
		top := d.chain[0].file
		var prefix []string
		for _, f := range files {
			prefix = append(prefix, f)
			if f == top {
				break
			}
		}
		_, err := build(root, prefix, w.dirs, nil)
		return err != nil && cleanMessage(err) == msg
	}
	lo, hi := 1, len(cand)
	if hi == 0 || !fails(hi) {
		return &Error{Msg: msg}
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	d := cand[lo-1]
	return &Error{File: d.file, Line: d.line, Msg: msg, Top: d.chain[0].file}
}

// cleanMessage drops the wrappers Coraza puts around a parse error.
func cleanMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"invalid WAF config from file: ", "invalid WAF config from string: ",
		"failed to parse string: ", "failed to readfile: "} {
		for strings.HasPrefix(msg, p) {
			msg = strings.TrimPrefix(msg, p)
		}
	}
	return msg
}
