package rules

import (
	"fmt"
	"strconv"
	"strings"

	"lbd/config"
)

// Listing renders p one instruction per line, for --dump-config and the
// golden tests:
//
//	0: test path re "^/x" tag=t ? 1 : 3
//	1: set_header "X-A: 1"
//	2: jump 4
func (p *Program) Listing() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.code))
	for i, in := range p.code {
		var s string
		switch in.op {
		case opTest:
			s = fmt.Sprintf("test %s ? %d : %d", in.leaf.describe(p.env), in.t, in.f)
		case opJump:
			s = "jump " + strconv.Itoa(int(in.t))
		case opAct:
			s = in.act.describe()
		case opEdit:
			s = in.act.describeEdit()
			if int(in.t) != i+1 {
				s += fmt.Sprintf(" ? %d : %d", in.t, i+1)
			}
		case opAccept:
			s = "accept"
		case opReject:
			s = "reject"
		case opEnd:
			s = "end"
		}
		out = append(out, strconv.Itoa(i)+": "+s)
	}
	return out
}

var leafNames = [...]string{lkURL: "url", lkPath: "path", lkQuery: "query", lkParam: "param",
	lkHeaderLine: "header", lkHeaderNamed: "header", lkHost: "host", lkMethod: "method",
	lkString: "string", lkACL: "acl", lkEval: "eval", lkWatched: "watched",
	lkBasicAuth: "basic_auth", lkTBF: "tbf", lkLua: "lua", lkJWT: "jwt", lkAPIKey: "apikey"}

func (l *leaf) describe(env *Env) string {
	var b strings.Builder
	b.WriteString(leafNames[l.kind])
	switch l.kind {
	case lkParam, lkHeaderNamed:
		fmt.Fprintf(&b, " %q", l.name)
	case lkString:
		fmt.Fprintf(&b, " %q", l.subject.src)
	case lkACL:
		b.WriteString(" " + describeACL(l.acl))
		if l.fwd {
			b.WriteString(" forwarded")
		}
	case lkEval:
		for name, i := range env.names {
			if i == int(l.eval) {
				fmt.Fprintf(&b, " %q", name)
			}
		}
	case lkWatched:
		fmt.Fprintf(&b, " %s %s file %q", leafNames[l.target], l.list.Kind, l.list.Watch.Path)
	case lkBasicAuth:
		fmt.Fprintf(&b, " file %q", l.auth.Path)
		if l.auth.Watch {
			b.WriteString(" watch")
		}
	case lkTBF:
		fmt.Fprintf(&b, " %q every %dns burst %d", l.subject.src, l.tbf.Interval, l.tbf.Burst)
	case lkLua:
		b.WriteString(" " + describeCall(l.script.src))
	case lkJWT, lkAPIKey:
		fmt.Fprintf(&b, " %q", l.authn.Name)
		if l.pat != nil {
			fmt.Fprintf(&b, " claim %q", l.name)
		}
	}
	if l.pat != nil {
		b.WriteString(" " + describePattern(l.pat))
	}
	if l.decode {
		b.WriteString(" decode")
	}
	if l.tag != "" {
		b.WriteString(" tag=" + l.tag)
	}
	return b.String()
}

func describePattern(p *config.Pattern) string {
	s := string(p.Kind)
	if p.PCRE {
		s = "pcre"
	}
	s += " " + strconv.Quote(p.Text)
	if p.IgnoreCase {
		s += " icase"
	}
	return s
}

func describeACL(a *config.ACL) string {
	switch {
	case a.Name != "":
		return strconv.Quote(a.Name)
	case a.Watch != nil:
		return "file " + strconv.Quote(a.Watch.Path)
	}
	nets := make([]string, len(a.Nets))
	for i, n := range a.Nets {
		nets[i] = n.String()
	}
	return "[" + strings.Join(nets, " ") + "]"
}

func (a *action) describe() string {
	s := string(a.kind)
	if a.kind == config.ActSetQueryParam {
		s += " " + strconv.Quote(a.name)
	}
	switch {
	case a.pat != nil:
		s += " " + describePattern(a.pat)
	case a.tmpl != nil && (a.hasVal || a.kind != config.ActSetQueryParam):
		s += " " + strconv.Quote(a.tmpl.src)
	case a.script != nil:
		s += " " + describeCall(a.script.src)
	}
	if a.encode {
		s += " encode"
	}
	return s
}

// describeEdit renders one of zproxy's edits.
func (a *action) describeEdit() string {
	switch a.kind {
	case actHoldHeader:
		if a.slot == heldNone {
			return "drop_header " + strconv.Quote(a.name)
		}
		return fmt.Sprintf("hold_header %q #%d", a.name, a.slot)
	case actAppendForwarded, actAppendHeld:
		return fmt.Sprintf("%s %q #%d", a.kind, a.name, a.slot)
	case actAppendHeader:
		return "append_header " + strconv.Quote(string(a.line))
	case actReplaceHeader:
		rs := make([]string, len(a.repls))
		for i, r := range a.repls {
			rs[i] = "name " + describePattern(r.name) + " value " + describePattern(r.match) + " " + strconv.Quote(r.repl)
		}
		return "replace_header " + strings.Join(rs, "; ")
	case actRewriteURL:
		return "rewrite_url " + describePattern(a.pat) + " " + strconv.Quote(a.repl)
	case actRewriteLocation:
		s := "rewrite_location " + strconv.Itoa(a.mode)
		if a.undoURL {
			s += " undo_url"
		}
		return s
	}
	return a.describe()
}

// Listings compiles every program of cfg and lists them by scope, for
// --dump-config; detached conditions come first.
func Listings(cfg *config.Config) ([]config.ProgramListing, error) {
	env, err := NewEnvScripts(cfg, listingScripts{})
	if err != nil {
		return nil, err
	}
	var out []config.ProgramListing
	for _, d := range cfg.Detached {
		out = append(out, config.ProgramListing{Scope: "condition " + strconv.Quote(d.Name), Kind: "select",
			Code: env.Detached[env.names[d.Name]].Listing()})
	}
	add := func(scope, kind string, p *Program, err error) error {
		if err != nil {
			return err
		}
		if kind == "select" && len(p.code) > 2 || kind != "select" && !p.Empty() {
			out = append(out, config.ProgramListing{Scope: scope, Kind: kind, Code: p.Listing()})
		}
		return nil
	}
	services := func(scope string, e *Env, svcs []*config.Service) error {
		for i, s := range svcs {
			se := e.Scope(s.Rare().Constants, s.Rare().TrustedIP, s.Rare().ForwardedHeader)
			sc := fmt.Sprintf("%s service %d %q", scope, i, s.Name)
			p, err := se.CompileSelect(s.Conditions)
			if err := add(sc, "select", p, err); err != nil {
				return err
			}
			p, err = se.CompileRewrite(s.Rare().Rewrites.Request)
			if err := add(sc, "request", p, err); err != nil {
				return err
			}
			p, err = se.CompileRewrite(s.Rare().Rewrites.Response)
			if err := add(sc, "response", p, err); err != nil {
				return err
			}
		}
		return nil
	}
	zproxy := func(scope string, e *Env, l *config.Listener, s *config.Service) error {
		if cfg.Dialect != config.DialectZproxy {
			return nil
		}
		req, resp, err := e.CompileZproxyEdits(NewZproxyEdits(cfg, l, s))
		if s != nil { // requests are forwarded only once a service is chosen
			if err := add(scope, "request", req, err); err != nil {
				return err
			}
		}
		return add(scope, "response", resp, err)
	}
	for i, l := range cfg.Listeners {
		le := env.Scope(l.Constants, l.TrustedIP, l.ForwardedHeader)
		sc := fmt.Sprintf("listener %d", i)
		if err := zproxy(sc, le, l, nil); err != nil {
			return nil, err
		}
		p, err := le.CompileRewrite(l.Rewrites.Request)
		if err := add(sc, "request", p, err); err != nil {
			return nil, err
		}
		p, err = le.CompileRewrite(l.Rewrites.Response)
		if err := add(sc, "response", p, err); err != nil {
			return nil, err
		}
		if err := services(sc, le, l.Services); err != nil {
			return nil, err
		}
		for j, s := range l.Services {
			if err := zproxy(fmt.Sprintf("%s service %d %q", sc, j, s.Name), le, l, s); err != nil {
				return nil, err
			}
		}
	}
	return out, services("global", env, cfg.Services)
}

// describeCall renders a Lua call: the function and its arguments.
func describeCall(c *config.LuaCall) string {
	s := strconv.Quote(c.Func)
	for _, a := range c.Args {
		s += " " + strconv.Quote(a)
	}
	return s
}

// listingScripts lets a listing compile Lua calls without loading Lua:
// every function resolves, to nothing that runs.
type listingScripts struct{}

func (listingScripts) Resolve(*config.LuaCall) (Script, error) { return nil, nil }
