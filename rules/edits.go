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
	l, s := z.Listener, z.Service
	var lh, sh config.HeaderRules
	var rewriteHost, rewriteDest bool
	loc, locURL := 0, false
	if l != nil {
		lh = l.Headers
		rewriteHost, rewriteDest = l.RewriteHost, l.RewriteDest
		loc, locURL = l.RewriteLoc, l.RewriteLocURL
	}
	if s != nil {
		sh = s.Headers
		if s.RewriteLoc != nil {
			loc = *s.RewriteLoc
		}
	}
	var replReq, replResp []replaceRule
	for _, rs := range [][]config.ReplaceHeader{sh.Replace, lh.Replace} {
		for _, r := range rs {
			x := replaceRule{name: r.Name, match: r.Match, repl: r.Replacement}
			if r.Response {
				replResp = append(replResp, x)
			} else {
				replReq = append(replReq, x)
			}
		}
	}

	c := &compiler{env: e}
	if z.Forwarded {
		c.edit(&action{kind: actHoldHeader, name: "X-Forwarded-For", slot: heldForwarded})
	} else {
		c.edit(&action{kind: actHoldHeader, name: "X-Forwarded-For", slot: heldNone})
	}
	if rewriteHost {
		c.edit(&action{kind: actHoldHeader, name: "Host", slot: heldNone})
	}
	if rewriteDest {
		c.edit(&action{kind: actHoldHeader, name: "Destination", slot: heldDest})
	}
	for _, p := range override(sh.RequestRemove, lh.RequestRemove) {
		c.emit(instr{op: opAct, act: &action{kind: config.ActDeleteHeader, pat: p}})
	}
	c.edit(&action{kind: actMark})
	if len(replReq) > 0 {
		c.edit(&action{kind: actReplaceHeader, repls: replReq})
	}
	if z.Forwarded {
		c.edit(&action{kind: actAppendForwarded, name: "X-Forwarded-For", slot: heldForwarded})
	}
	adds := override(append(append([]string{}, sh.RequestAdd...), sh.RequestSet...),
		append(append([]string{}, lh.RequestAdd...), lh.RequestSet...))
	for _, line := range adds {
		c.edit(&action{kind: actAppendHeader, line: []byte(line)})
	}
	if rewriteHost {
		c.edit(&action{kind: actBackendHost})
	}
	if rewriteDest {
		c.edit(&action{kind: actAppendHeld, name: "Destination", slot: heldDest})
	}
	if s != nil {
		c.rewriteURLs(s.RewriteURL)
		if s.Session != nil && s.Session.Type == config.SessionParm {
			c.edit(&action{kind: actTrimParam})
		}
	}
	c.emit(instr{op: opEnd})
	req = &Program{code: c.code, env: e}

	c = &compiler{env: e}
	sts := s != nil && s.STS > 0
	if sts {
		c.edit(&action{kind: actHoldHeader, name: "Strict-Transport-Security", slot: heldNone})
	}
	for _, p := range override(sh.ResponseRemove, lh.ResponseRemove) {
		c.emit(instr{op: opAct, act: &action{kind: config.ActDeleteHeader, pat: p}})
	}
	c.edit(&action{kind: actMark})
	if len(replResp) > 0 {
		c.edit(&action{kind: actReplaceHeader, repls: replResp})
	}
	if loc != 0 || locURL {
		c.edit(&action{kind: actRewriteLocation, mode: loc, undoURL: locURL})
	}
	for _, line := range override(sh.ResponseAdd, lh.ResponseAdd) {
		c.edit(&action{kind: actAppendHeader, line: []byte(line)})
	}
	if sts {
		c.edit(&action{kind: actAppendHeader, line: []byte("Strict-Transport-Security: max-age=" + strconv.Itoa(s.STS))})
	}
	c.emit(instr{op: opEnd})
	resp = &Program{code: c.code, env: e}
	return req, resp, c.err
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
