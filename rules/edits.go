package rules

import (
	"strconv"

	"lbd/config"
)

// zproxy's header and URL directives (AddRequestHeader,
// RemoveRequestHeader, ReplaceHeader, RewriteUrl, AddResponseHeader,
// RemoveResponseHeader, StrictTransportSecurity, RewriteHost,
// RewriteDestination, RewriteLocation) are not statements in order, as
// Pound's are: zproxy applies them in a fixed order (http_manager.cpp
// validateRequest and validateResponse), a service's list of a kind
// replacing its listener's. CompileZproxyEdits turns them into the same
// instructions Pound's rules compile to, plus the few that order lines
// the way zproxy does, so the proxy runs one kind of program whichever
// dialect the file is in.

// Kinds of the edits only zproxy's directives compile to.
const (
	actMark            config.ActionKind = "mark"             // the received lines end here
	actHoldHeader      config.ActionKind = "hold_header"      // remove the lines of a name, keeping their values
	actAppendHeader    config.ActionKind = "append_header"    // append a literal line
	actReplaceHeader   config.ActionKind = "replace_header"   // zproxy ReplaceHeader: edit a value, move the line last
	actAppendForwarded config.ActionKind = "append_forwarded" // held chain, then the client address
	actAppendHeld      config.ActionKind = "append_held"      // the held value, when there was one
	actBackendHost     config.ActionKind = "backend_host"     // a Host line the proxy fills with the backend
	actRewriteURL      config.ActionKind = "rewrite_url"      // zproxy RewriteUrl
	actTrimParam       config.ActionKind = "trim_param"       // drop the ;param a PARM session keys on
	actRewriteLocation config.ActionKind = "rewrite_location" // zproxy RewriteLocation, by the proxy's LocationRewriter
)

// Held-value slots of hold_header.
const (
	heldNone      = -1 // drop the lines
	heldForwarded = 0
	heldDest      = 1
	heldSlots     = 2
)

// replaceRule is one ReplaceHeader.
type replaceRule struct {
	name, match *config.Pattern
	repl        string
}

// ZproxyEdits says what CompileZproxyEdits compiles: a listener and the
// service requests are routed to (nil: the listener's own edits, for the
// replies lbd writes before a service is chosen).
type ZproxyEdits struct {
	Listener *config.Listener
	Service  *config.Service
	// Forwarded rebuilds X-Forwarded-For (zproxy always does).
	Forwarded bool
}

// NewZproxyEdits says what to compile for service s of listener l of cfg
// (s nil: the listener's own edits).
func NewZproxyEdits(cfg *config.Config, l *config.Listener, s *config.Service) ZproxyEdits {
	opts := l.HeaderOption
	if opts == nil {
		opts = cfg.HeaderOption
	}
	return ZproxyEdits{Listener: l, Service: s, Forwarded: config.ForwardedOn(opts)}
}

// zproxyScope is what one listener-service pair's edits are made of: a
// service's list of a kind replaces its listener's.
type zproxyScope struct {
	z                        ZproxyEdits
	lh, sh                   config.HeaderRules
	rewriteHost, rewriteDest bool
	loc                      int
	locURL                   bool
	replReq, replResp        []replaceRule
}

func newZproxyScope(z ZproxyEdits) *zproxyScope {
	x := &zproxyScope{z: z}
	if l := z.Listener; l != nil {
		x.lh = l.Headers
		x.rewriteHost, x.rewriteDest = l.RewriteHost, l.RewriteDest
		x.loc, x.locURL = l.RewriteLoc, l.RewriteLocURL
	}
	if s := z.Service; s != nil {
		x.sh = s.Rare().Headers
		if s.Rare().RewriteLoc != nil {
			x.loc = *s.Rare().RewriteLoc
		}
	}
	// Unlike the other kinds, the replacements of both apply, the
	// service's first (as lbd always did).
	for _, rs := range [][]config.ReplaceHeader{x.sh.Replace, x.lh.Replace} {
		for _, r := range rs {
			rr := replaceRule{name: r.Name, match: r.Match, repl: r.Replacement}
			if r.Response {
				x.replResp = append(x.replResp, rr)
			} else {
				x.replReq = append(x.replReq, rr)
			}
		}
	}
	return x
}

// CompileZproxyEdits compiles zproxy's edits of requests and responses
// routed to one service of a listener. Order of the request program:
// received lines in place but the removed ones; the replaced ones; then
// X-Forwarded-For, AddRequestHeader lines, the Host RewriteHost writes
// and the Destination RewriteDestination rewrites; the proxy's own
// framing lines go where mark is. RewriteUrl and the PARM trim edit the
// URL. The response program: received lines in place but the removed and
// the replaced ones, then the replaced ones, rewritten locations,
// AddResponseHeader lines and Strict-Transport-Security.
func (e *Env) CompileZproxyEdits(z ZproxyEdits) (req, resp *Program, err error) {
	x := newZproxyScope(z)
	req, err = e.zproxyRequest(x)
	if err != nil {
		return nil, nil, err
	}
	resp, err = e.zproxyResponse(x)
	return req, resp, err
}

func (e *Env) zproxyRequest(x *zproxyScope) (*Program, error) {
	c := &compiler{env: e}
	slot := heldForwarded
	if !x.z.Forwarded {
		slot = heldNone
	}
	c.edit(&action{kind: actHoldHeader, name: "X-Forwarded-For", slot: slot})
	if x.rewriteHost {
		c.edit(&action{kind: actHoldHeader, name: "Host", slot: heldNone})
	}
	if x.rewriteDest {
		c.edit(&action{kind: actHoldHeader, name: "Destination", slot: heldDest})
	}
	for _, p := range override(x.sh.RequestRemove, x.lh.RequestRemove) {
		c.emit(instr{op: opAct, act: &action{kind: config.ActDeleteHeader, pat: p}})
	}
	c.edit(&action{kind: actMark})
	if len(x.replReq) > 0 {
		c.edit(&action{kind: actReplaceHeader, repls: x.replReq})
	}
	if x.z.Forwarded {
		c.edit(&action{kind: actAppendForwarded, name: "X-Forwarded-For", slot: heldForwarded})
	}
	adds := override(append(append([]string{}, x.sh.RequestAdd...), x.sh.RequestSet...),
		append(append([]string{}, x.lh.RequestAdd...), x.lh.RequestSet...))
	for _, line := range adds {
		c.edit(&action{kind: actAppendHeader, line: []byte(line)})
	}
	if x.rewriteHost {
		c.edit(&action{kind: actBackendHost})
	}
	if x.rewriteDest {
		c.edit(&action{kind: actAppendHeld, name: "Destination", slot: heldDest})
	}
	if s := x.z.Service; s != nil {
		c.rewriteURLs(s.Rare().RewriteURL)
		if s.Session != nil && s.Session.Type == config.SessionParm {
			c.edit(&action{kind: actTrimParam})
		}
	}
	c.emit(instr{op: opEnd})
	return &Program{code: c.code, env: e}, c.err
}

func (e *Env) zproxyResponse(x *zproxyScope) (*Program, error) {
	c := &compiler{env: e}
	s := x.z.Service
	sts := s != nil && s.Rare().STS > 0
	if sts {
		c.edit(&action{kind: actHoldHeader, name: "Strict-Transport-Security", slot: heldNone})
	}
	for _, p := range override(x.sh.ResponseRemove, x.lh.ResponseRemove) {
		c.emit(instr{op: opAct, act: &action{kind: config.ActDeleteHeader, pat: p}})
	}
	c.edit(&action{kind: actMark})
	if len(x.replResp) > 0 {
		c.edit(&action{kind: actReplaceHeader, repls: x.replResp})
	}
	if x.loc != 0 || x.locURL {
		c.edit(&action{kind: actRewriteLocation, mode: x.loc, undoURL: x.locURL})
	}
	for _, line := range override(x.sh.ResponseAdd, x.lh.ResponseAdd) {
		c.edit(&action{kind: actAppendHeader, line: []byte(line)})
	}
	if sts {
		c.edit(&action{kind: actAppendHeader, line: []byte("Strict-Transport-Security: max-age=" + strconv.Itoa(s.Rare().STS))})
	}
	c.emit(instr{op: opEnd})
	return &Program{code: c.code, env: e}, c.err
}

// rewriteURLs compiles RewriteUrl rules: each is applied once, in
// order; one marked last that matched ends the list.
func (c *compiler) rewriteURLs(rs []config.RewriteURL) {
	var out []patch
	for _, r := range rs {
		i := c.emit(instr{op: opEdit, act: &action{kind: actRewriteURL, pat: r.Pattern, repl: r.Replacement}})
		c.code[i].t = i + 1
		if r.Last {
			out = append(out, patch{i: i})
		}
	}
	c.resolve(out, c.here())
}

// edit emits one of zproxy's edits that goes on to the next instruction.
func (c *compiler) edit(a *action) {
	i := c.emit(instr{op: opEdit, act: a})
	c.code[i].t = i + 1
}

func override[T any](svc, lst []T) []T {
	if len(svc) > 0 {
		return svc
	}
	return lst
}
