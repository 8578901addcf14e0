package lbctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// poundctl's own configuration file, ~/.poundctl (pound.texi "Configuring
// poundctl"; src/poundctl.c). It uses pound.cfg's syntax:
//
//	URL "/run/pound.sock"          # or "https://host:port/path"
//	CAFile "/etc/ssl/ca.pem"
//	CAPath "/etc/ssl/certs"
//	ClientCert "/home/me/me.pem"   # certificate and key, PEM
//	Verify yes
//	TemplateFile "my.tmpl"
//	TemplateName "default"
//	TemplatePath "~/tmpl:/usr/share/lbd"
//	Server "web1"
//	    URL "https://web1.example:8443"
//	    ClientCert "/home/me/web1.pem"
//	End
//	Include "poundctl.d/*.conf"    # relative to the home directory
//
// The top-level URL, CAFile, CAPath, ClientCert and Verify form the
// default server; -S NAME selects a Server section instead, which, as in
// poundctl, stands alone: it inherits nothing from the top level. The
// Template statements are allowed at top level only.

// ctlConfName is the file's name in the home directory.
const ctlConfName = ".poundctl"

// serverDefn is the default server or one Server section.
type serverDefn struct {
	name       string // "" for the default server
	line       int    // of the Server statement
	url        string
	caFile     string
	caPath     string
	clientCert string
	verify     bool
}

// ctlConfig is a parsed ~/.poundctl.
type ctlConfig struct {
	file     string // "" when no file was read
	absent   string // why no file was read, for -S errors
	top      serverDefn
	servers  map[string]*serverDefn // by name, case-sensitive as poundctl's
	tmplFile string
	tmplName string
	tmplPath string
}

func newCtlConfig(file string) *ctlConfig {
	return &ctlConfig{file: file, top: serverDefn{verify: true}, servers: map[string]*serverDefn{}}
}

// server returns the default server, or the Server section name.
func (c *ctlConfig) server(name string) (*serverDefn, error) {
	if name == "" {
		return &c.top, nil
	}
	if s := c.servers[name]; s != nil {
		return s, nil
	}
	if c.file == "" {
		return nil, fmt.Errorf("%s: no such server defined: no configuration file was read (%s)", name, c.absent)
	}
	return nil, fmt.Errorf("%s: no such server defined in %s", name, c.file)
}

// ctlConfPath returns the configuration file to read, whether it must
// exist, and (when there is none) why. $POUNDCTL_CONF names it, relative
// to the home directory unless absolute; set but empty, it disables the
// file. Otherwise it is ~/.poundctl, which may be missing.
func ctlConfPath(env Env) (path string, required bool, absent string) {
	home := env.Getenv("HOME")
	if v, ok := env.LookupEnv("POUNDCTL_CONF"); ok {
		if v == "" {
			return "", false, "POUNDCTL_CONF is empty"
		}
		if !filepath.IsAbs(v) && home != "" {
			v = filepath.Join(home, v)
		}
		return v, true, ""
	}
	if home == "" {
		return "", false, "HOME is not set"
	}
	return filepath.Join(home, ctlConfName), false, ""
}

// loadCtlConfig reads and parses the configuration file of env. A missing
// ~/.poundctl is an empty configuration; a missing $POUNDCTL_CONF file,
// an unreadable file or a syntax error is an error.
func loadCtlConfig(env Env) (*ctlConfig, error) {
	path, required, absent := ctlConfPath(env)
	if path == "" {
		c := newCtlConfig("")
		c.absent = absent
		return c, nil
	}
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		c := newCtlConfig("")
		c.absent = path + " does not exist"
		return c, nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := env.Getenv("HOME")
	if dir == "" {
		dir = filepath.Dir(path)
	}
	return parseCtlConfigIn(path, dir, string(src))
}

// ctlParser is the state of one parse.
type ctlParser struct {
	cfg  *ctlConfig
	cur  *serverDefn // the open Server section; nil at top level
	dir  string      // relative Include names are taken from here
	file string      // being read: the configuration file or an included one
	line int
	open []string // files being read, outermost first (Include loops)
}

// errorf formats an error at the current line, as FILE:LINE: message.
func (p *ctlParser) errorf(format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, p.line, fmt.Sprintf(format, a...))
}

// parseCtlConfig parses the text of file, which includes files relative to
// its directory.
func parseCtlConfig(file, src string) (*ctlConfig, error) {
	return parseCtlConfigIn(file, filepath.Dir(file), src)
}

// parseCtlConfigIn parses the text of file, which includes files relative
// to dir. It stops at the first error, as poundctl does.
func parseCtlConfigIn(file, dir, src string) (*ctlConfig, error) {
	p := &ctlParser{cfg: newCtlConfig(file), dir: dir}
	if err := p.text(file, src); err != nil {
		return nil, err
	}
	if p.cur != nil {
		p.file, p.line = file, p.cur.line
		return nil, p.errorf("Server %q has no End", p.cur.name)
	}
	return p.cfg, nil
}

// text parses the lines of one file; an Include reads another in their
// midst, as if its lines stood there.
func (p *ctlParser) text(file, src string) error {
	outer, outerLine := p.file, p.line
	p.file = file
	p.open = append(p.open, file)
	for i, text := range strings.Split(src, "\n") {
		p.line = i + 1
		toks, err := splitCtlLine(strings.TrimSuffix(text, "\r"))
		if err != nil {
			return p.errorf("%v", err)
		}
		if len(toks) == 0 {
			continue
		}
		if toks[0].quoted {
			return p.errorf("syntax error: expected a keyword, found the string %q", toks[0].text)
		}
		if err := p.statement(toks[0].text, toks[1:]); err != nil {
			return err
		}
	}
	p.open = p.open[:len(p.open)-1]
	p.file, p.line = outer, outerLine
	return nil
}

// statement applies one line: keyword and arguments.
func (p *ctlParser) statement(kw string, args []ctlToken) error {
	srv := p.cur
	if srv == nil {
		srv = &p.cfg.top
	}
	switch strings.ToLower(kw) {
	case "end":
		if p.cur == nil {
			return p.errorf("End without Server")
		}
		if len(args) > 0 {
			return p.errorf("End takes no arguments")
		}
		p.cur = nil
		return nil
	case "server":
		return p.server(kw, args)
	case "include":
		return p.include(kw, args)
	case "url":
		return p.value(kw, args, &srv.url)
	case "cafile":
		return p.value(kw, args, &srv.caFile)
	case "capath":
		return p.value(kw, args, &srv.caPath)
	case "clientcert":
		return p.value(kw, args, &srv.clientCert)
	case "verify":
		return p.verify(kw, args, &srv.verify)
	case "templatefile", "templatename", "templatepath":
		return p.template(kw, args)
	}
	return p.errorf("unrecognized keyword %s", kw)
}

// server opens a Server section.
func (p *ctlParser) server(kw string, args []ctlToken) error {
	if p.cur != nil {
		return p.errorf("%s inside Server %q (missing End?)", kw, p.cur.name)
	}
	var name string
	if err := p.value(kw, args, &name); err != nil {
		return err
	}
	if old := p.cfg.servers[name]; old != nil {
		return p.errorf("redefinition of server %q (first defined at line %d)", name, old.line)
	}
	p.cur = &serverDefn{name: name, line: p.line, verify: true}
	p.cfg.servers[name] = p.cur
	return nil
}

// template sets a Template statement, which poundctl allows only at top
// level.
func (p *ctlParser) template(kw string, args []ctlToken) error {
	if p.cur != nil {
		return p.errorf("%s is not allowed in a Server section (only URL, CAFile, CAPath, ClientCert and Verify are)", kw)
	}
	dst := map[string]*string{
		"templatefile": &p.cfg.tmplFile,
		"templatename": &p.cfg.tmplName,
		"templatepath": &p.cfg.tmplPath,
	}[strings.ToLower(kw)]
	return p.value(kw, args, dst)
}

// value stores the single, non-empty argument of kw.
func (p *ctlParser) value(kw string, args []ctlToken, dst *string) error {
	switch {
	case len(args) == 0:
		return p.errorf("%s: missing value", kw)
	case len(args) > 1:
		return p.errorf("%s: too many arguments (quote a value that has spaces)", kw)
	case args[0].text == "":
		return p.errorf("%s: empty value", kw)
	}
	*dst = args[0].text
	return nil
}

// verify parses a boolean with the words pound.cfg accepts.
func (p *ctlParser) verify(kw string, args []ctlToken, dst *bool) error {
	var v string
	if err := p.value(kw, args, &v); err != nil {
		return err
	}
	switch strings.ToLower(v) {
	case "1", "yes", "true", "on":
		*dst = true
	case "0", "no", "false", "off":
		*dst = false
	default:
		return p.errorf("%s: %q is not a boolean (use yes or no, on or off, true or false, 1 or 0)", kw, v)
	}
	return nil
}

// ctlToken is one word of a line, unquoted.
type ctlToken struct {
	text   string
	quoted bool
}

// splitCtlLine splits a line into words and double-quoted strings. As in
// pound.cfg a '#' where a word could start begins a comment, and \\ and
// \" are the only escapes in a string (any other backslash stays).
func splitCtlLine(line string) ([]ctlToken, error) {
	var toks []ctlToken
	i := 0
	for i < len(line) {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '#':
			return toks, nil
		case c == '"':
			s, n, err := quoted(line[i+1:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, ctlToken{text: s, quoted: true})
			i += n + 1
		default:
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
			toks = append(toks, ctlToken{text: line[i:j]})
			i = j
		}
	}
	return toks, nil
}

// quoted reads a string body up to its closing quote and returns the text
// and the number of bytes consumed, the quote included.
func quoted(s string) (string, int, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), i + 1, nil
		case c == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '"'):
			b.WriteByte(s[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("missing closing double-quote")
}
