package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"lbd/parser"
)

// LoadOptions are the -W features of Pound 4 that change how a file loads.
type LoadOptions struct {
	IncludeDir   string // -W include-dir=DIR; "" = dir of the config file
	NoIncludeDir bool   // -W no-include-dir: relative names from the working dir
	NoDNS        bool   // -W no-dns: do not resolve hostnames
	// WarnDeprecated prints Pound 4's "deprecated statement, use X
	// instead" warnings for a file in the Pound dialect (lbd turns it on
	// by default, as Pound 4.23 does; -W no-warn-deprecated turns it off).
	// zproxy files are never warned: those statements are zproxy's own.
	WarnDeprecated bool
	// Dialect forces the dialect ("" = decided by the file); Why says
	// what on the command line forced it.
	Dialect    Dialect
	DialectWhy string
	// FirstError reports only the first error (with the lines that
	// explain it) and nothing after it, as Pound's parser, which stops
	// there, does; lbd invoked as pound sets it.
	FirstError bool
	// NoLua makes every Lua statement an error: this lbd was built
	// without Lua.
	NoLua bool
	// AuthLog reports what edge authentication notices while lbd runs
	// (a JWKS URL that fails: the last good key set stays in use).
	AuthLog func(msg string)

	fsys fileSystem // nil = the operating system; tests substitute one
}

// Load parses, builds and validates the configuration file at path.
// warnings are always returned; err is errors.Join of every error
// diagnostic (each formatted FILE:L.C-L.C: msg), nil on success, in which
// case cfg is complete: defaults applied and inherited values resolved.
func Load(path string, opts LoadOptions) (cfg *Config, warnings []*parser.Diagnostic, err error) {
	inc := includeDir(path, opts)
	tree, diags := parseFile(path, inc)
	return build(path, tree, diags, inc, opts)
}

// LoadBytes is Load for an in-memory file called name (fuzzing, tests).
// Relative file names resolve as if the file were at name.
func LoadBytes(name string, src []byte, opts LoadOptions) (*Config, []*parser.Diagnostic, error) {
	inc := includeDir(name, opts)
	tree, diags := parseBytes(name, src, inc)
	return build(name, tree, diags, inc, opts)
}

// includeDir is where relative Include, Err*, Cert ... names resolve.
func includeDir(path string, opts LoadOptions) string {
	switch {
	case opts.NoIncludeDir:
		return "."
	case opts.IncludeDir != "":
		return opts.IncludeDir
	}
	return filepath.Dir(path)
}

// builder carries the state of one Load: the model under construction and
// every diagnostic so far.
type builder struct {
	fs       fileSystem
	opts     LoadOptions
	cfg      *Config
	incDir   string
	diags    []*parser.Diagnostic
	unsup    map[string]bool
	unitSlab []unit // see units
	// named backends by name, and the references to resolve in finish
	named map[string]*Backend
	refs  []*Backend
	// acmeNames are the ACMECert names in file order (acme.go).
	acmeNames []acmeName
	// what each object set explicitly, for resolution in finish
	lst  map[*Listener]*listenerExtra
	svcs map[*Service]*serviceExtra
	bes  map[*Backend]*backendExtra
	// Pound 4 language state: RegexType's current dialect, the named
	// ACLs and the detached conditions defined so far.
	pcre     bool
	acls     map[string]*ACL
	detached map[string]bool
	// authns are the JWTAuth, APIKeyAuth and ForwardAuth blocks so far.
	authns map[string]*Authn
	// requestOnly locates, for each detached condition that looks at
	// the request, its first such statement (Eval in Rewrite response
	// refuses those).
	requestOnly map[string]parser.Span
	// resolverSrc is the last ConfigFile or ConfigText seen
	resolverSrc resolverExtra
}

// warnDeprecated reports whether Pound 4's deprecation warnings apply.
func (b *builder) warnDeprecated() bool {
	return b.opts.WarnDeprecated && b.cfg.Dialect == DialectPound
}

// build turns a parsed tree into a validated Config.
func build(path string, tree *parser.File, pdiags []*parser.Diagnostic, inc string, opts LoadOptions) (*Config, []*parser.Diagnostic, error) {
	b := &builder{
		fs:          opts.fsys,
		opts:        opts,
		incDir:      inc,
		diags:       append([]*parser.Diagnostic(nil), pdiags...),
		unsup:       map[string]bool{},
		named:       map[string]*Backend{},
		lst:         map[*Listener]*listenerExtra{},
		svcs:        map[*Service]*serviceExtra{},
		bes:         map[*Backend]*backendExtra{},
		acls:        map[string]*ACL{},
		detached:    map[string]bool{},
		requestOnly: map[string]parser.Span{},
	}
	if b.fs == nil {
		b.fs = osFS{}
	}
	b.cfg = newConfig(path)
	if tree != nil {
		b.cfg.Dialect, b.cfg.DialectReason = detectDialect(tree.Nodes)
		if opts.Dialect != "" {
			b.cfg.Dialect, b.cfg.DialectReason = opts.Dialect, opts.DialectWhy
		}
		if b.cfg.Dialect == DialectZproxy {
			b.diags = dropEscapeWarnings(b.diags)
		}
		walk(b, globalTable, globalUnsupported, b.cfg, tree.Nodes)
		b.finish()
		b.needListener(path)
		for _, l := range b.cfg.Listeners {
			if l.TLS != nil && l.TLS.ECDHCurve == "" {
				l.TLS.ECDHCurve = b.cfg.ECDHCurve
			}
		}
	}
	return b.result()
}

// needListener refuses a file that defines nothing to serve: no
// listener and no Control socket, which Pound 4 counts as a listener.
// Pound's pound -c passes such a file and its start stops with "no
// listeners defined"; lbd refuses it already at -c and at a reload (a
// reload to it would close every listener), as pound (FirstError) only
// when it starts (cmd/lbd). Said only when nothing else is wrong: a
// listener with an error is not missing.
func (b *builder) needListener(path string) {
	if len(b.cfg.Listeners) > 0 || b.cfg.Control != nil || b.opts.FirstError {
		return
	}
	for _, d := range b.diags {
		if !d.Warning {
			return
		}
	}
	b.errorf(parser.Span{Start: parser.Pos{File: path}}, "%s: no listeners defined", path)
}

// dropEscapeWarnings removes the parser's Pound 4 "unrecognized escape"
// warnings: zproxy has no string escapes, so "\d" in a zproxy regex is
// simply what was meant, and the text is kept as written either way.
func dropEscapeWarnings(diags []*parser.Diagnostic) []*parser.Diagnostic {
	out := diags[:0]
	for _, d := range diags {
		if !(d.Warning && strings.HasPrefix(d.Msg, "unrecognized escape")) {
			out = append(out, d)
		}
	}
	return out
}

// result splits the diagnostics into warnings and a joined error.
func (b *builder) result() (*Config, []*parser.Diagnostic, error) {
	var warns []*parser.Diagnostic
	var errs []error
	diags := b.diags
	if b.opts.FirstError {
		diags = firstError(diags)
	}
	for _, d := range diags {
		if d.Warning {
			warns = append(warns, d)
		} else {
			errs = append(errs, d)
		}
	}
	if len(errs) > 0 {
		return nil, warns, errors.Join(errs...)
	}
	return b.cfg, warns, nil
}

// firstError cuts diags after the first error and its follow-ups.
func firstError(diags []*parser.Diagnostic) []*parser.Diagnostic {
	for i, d := range diags {
		if d.Warning {
			continue
		}
		j := i + 1
		for j < len(diags) && diags[j].Follows {
			j++
		}
		return diags[:j]
	}
	return diags
}

// followf adds an error that explains the one just reported.
func (b *builder) followf(s parser.Span, format string, a ...any) {
	b.diags = append(b.diags, &parser.Diagnostic{Span: s, Msg: fmt.Sprintf(format, a...), Follows: true})
}

func (b *builder) errorf(s parser.Span, format string, a ...any) {
	b.diags = append(b.diags, &parser.Diagnostic{Span: s, Msg: fmt.Sprintf(format, a...)})
}

func (b *builder) warnf(s parser.Span, format string, a ...any) {
	b.diags = append(b.diags, &parser.Diagnostic{Span: s, Msg: fmt.Sprintf(format, a...), Warning: true})
}

// notef adds the second line of the warning before it.
func (b *builder) notef(s parser.Span, format string, a ...any) {
	b.diags = append(b.diags, &parser.Diagnostic{Span: s, Msg: fmt.Sprintf(format, a...), Warning: true, Note: true})
}

// meaningless are the settings of Pound's and zproxy's process and
// OpenSSL models that have nothing to set in lbd (goroutines, not worker
// threads; Go's TLS, which has no engines and no finite-field DHE);
// zproxy's Ignore100continue is read and never used by zproxy itself.
// They alone are accepted with a warning.
var meaningless = canonSet("ThreadModel", "Supervisor", "WorkerStackSize",
	"ConnectionQueueSize", "ReserveFD", "BackendStats", "DynScale",
	"HTTPTracerDir", "SSLEngine", "DHParams", "Name", "Ignore100continue")

// unsupported reports a directive lbd knows but does not implement: an
// error, so a configuration that starts does what it says, unless the
// directive has no meaning in lbd at all.
func (b *builder) unsupported(name string, s parser.Span) {
	if meaningless[lower(name)] == "" {
		b.errorf(s, "%q is not supported by lbd", name)
		return
	}
	b.warnf(s, "%q has no effect in lbd", name)
	if !b.unsup[name] {
		b.unsup[name] = true
		b.cfg.Unsupported = append(b.cfg.Unsupported, name)
	}
}

// stmtSpan is Pound's statement locus: keyword start to the end of the
// last argument, or to End for a block.
func stmtSpan(n *parser.Node) parser.Span {
	s := n.Span
	if n.Block && n.EndSpan.End.Line > 0 {
		s.End = n.EndSpan.End
	} else if len(n.Args) > 0 {
		s.End = n.Args[len(n.Args)-1].Span.End
	}
	return s
}

// Directive forms: a plain line, a block (Keyword ... End), or either.
const (
	formLine  = 'l'
	formBlock = 'b'
	formAny   = 'e'
)

// directive describes one keyword of a section.
type directive[T any] struct {
	name  string // canonical spelling, for messages
	items []argItem
	flags map[string]bool // -flag → takes an argument; nil = none
	form  byte
	fn    func(b *builder, x T, n *parser.Node, u []unit)
	depr  string // Pound 4 deprecation message, shown with WarnDeprecated
}

// table maps a lower-cased keyword to its directive.
type table[T any] map[string]*directive[T]

// add registers a line directive with argument definition args.
func (t table[T]) add(name, args string, fn func(*builder, T, *parser.Node, []unit)) *directive[T] {
	d := &directive[T]{name: name, items: parseArgdef(args), form: formLine, fn: fn}
	t[lower(name)] = d
	return d
}

// alias makes name another spelling of an existing directive.
func (t table[T]) alias(name, of, depr string) {
	d := *t[lower(of)]
	d.depr = depr
	t[lower(name)] = &d
}

func (d *directive[T]) block() *directive[T] { d.form = formBlock; return d }
func (d *directive[T]) either() *directive[T] {
	d.form = formAny
	return d
}
func (d *directive[T]) deprecated(msg string) *directive[T] { d.depr = msg; return d }

// withFlags declares the -flags a directive takes; "name=" takes an argument.
func (d *directive[T]) withFlags(names ...string) *directive[T] {
	d.flags = map[string]bool{}
	for _, f := range names {
		if f[len(f)-1] == '=' {
			d.flags[f[:len(f)-1]] = true
		} else {
			d.flags[f] = false
		}
	}
	return d
}

// walk dispatches every node of a section to its directive.
func walk[T any](b *builder, t table[T], unsup map[string]string, x T, nodes []*parser.Node) {
	for _, n := range nodes {
		dispatch(b, t, unsup, x, n)
	}
}

func dispatch[T any](b *builder, t table[T], unsup map[string]string, x T, n *parser.Node) {
	var buf [32]byte
	key := lowerKey(&buf, n.Keyword)
	d := t[string(key)]
	if d == nil {
		if canon, ok := unsup[string(key)]; ok {
			b.unsupported(canon, n.Span)
		} else {
			unrecognized(b, t, unsup, n)
		}
		return
	}
	if d.form == formLine && n.Block || d.form == formBlock && !n.Block {
		b.errorf(n.Span, "syntax error")
		return
	}
	if d.depr != "" && b.warnDeprecated() {
		b.warnf(n.Span, "deprecated statement, %s", d.depr)
	}
	units, ok := b.classify(n.Args, d.flags, n)
	if !ok || !b.matchArgs(d.items, units, n) {
		return
	}
	d.fn(b, x, n, units)
}

// lowerKey lower-cases an ASCII keyword into buf; map lookups with
// string(key) then do not allocate. Keywords longer than buf are returned
// as is, and so match nothing (no directive is that long).
func lowerKey(buf *[32]byte, kw string) []byte {
	if len(kw) > len(buf) {
		return []byte(kw)
	}
	for i := 0; i < len(kw); i++ {
		c := kw[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(kw)]
}

// keywordIs reports whether kw is the keyword lower (lower case), with
// ASCII case folding only, as the directive tables match: strings.EqualFold
// would also take "Uſe" for "use".
func keywordIs(kw, lower string) bool {
	var buf [32]byte
	return len(kw) == len(lower) && string(lowerKey(&buf, kw)) == lower
}

// lower is an ASCII strings.ToLower that does not allocate for keywords
// already in lower case.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			buf := []byte(s)
			for j := i; j < len(buf); j++ {
				if c := buf[j]; c >= 'A' && c <= 'Z' {
					buf[j] = c + 'a' - 'A'
				}
			}
			return string(buf)
		}
	}
	return s
}

// useInstead is Pound's standard deprecation text.
func useInstead(name string) string { return fmt.Sprintf("use %q instead", name) }

// The keyword tables refer to handlers that walk the tables themselves, so
// they are filled here rather than in variable initialisers (which would
// be an initialisation cycle). Order matters: the service table embeds the
// condition table and the HTTPS table copies the HTTP one.
func init() {
	initGlobalTable()
	initControlTable()
	initListenerTables()
	initCondTable()
	initRewriteTables()
	initLangGlobal(globalTable)
	initServiceTable()
	initSessionTable()
	initBackendTable()
	initResolverTable()
	initClusterTable()
	initACMETable()
	initLuaTable()
	initTunnelTables()
	addAuthnDirectives()
}
