package rules

import (
	"fmt"

	"lbd/config"
)

// Lua functions (Pound 4's LuaMatch, LuaModify and LuaBackend) run
// through these types: package lua implements Scripts and Script, the
// compiler binds each call once, and the proxy fills the State's
// Exchange with what the scripts may see beyond the heads.

// ScriptMode is what a function is called for; it decides which parts of
// Pound's Lua API it reaches.
type ScriptMode uint8

const (
	// ScriptMatch is LuaMatch: http.req is readable, the function's
	// result is the condition.
	ScriptMatch ScriptMode = iota
	// ScriptRequest is LuaModify on a request.
	ScriptRequest
	// ScriptResponse is LuaModify in Rewrite response: http.resp,
	// http.resend, http.service and http.balancer too.
	ScriptResponse
	// ScriptBackend is LuaBackend: the function builds http.resp.
	ScriptBackend
)

// Scripts resolves the functions a configuration calls.
type Scripts interface {
	Resolve(call *config.LuaCall) (Script, error)
}

// Script is one resolved function. Call runs it for the request in st
// with args (already expanded); m is the message the rules edit (st.Req,
// or st.Resp in Rewrite response). The boolean is LuaMatch's result.
type Script interface {
	Call(env *Env, st *State, m *Message, args [][]byte, mode ScriptMode) (bool, error)
}

// scriptCall is a compiled call: the function and its argument strings.
type scriptCall struct {
	fn   Script
	args []*template
	src  *config.LuaCall
}

// script binds call to its function.
func (c *compiler) script(call *config.LuaCall) (*scriptCall, error) {
	c.scripts = true
	sc := &scriptCall{src: call}
	for _, a := range call.Args {
		sc.args = append(sc.args, c.env.template(a))
	}
	if c.env.Scripts == nil {
		return sc, fmt.Errorf("%s: Lua function %s not defined", call.Pos, call.Func)
	}
	fn, err := c.env.Scripts.Resolve(call)
	sc.fn = fn
	return sc, err
}

// DryScriptError is a Lua call a dry run (the routing explainer) did not
// make: a script may do anything, so the outcome depends on it.
type DryScriptError struct{ Call *config.LuaCall }

func (e *DryScriptError) Error() string {
	return fmt.Sprintf("%s: Lua function %s decides here, and a dry run does not call Lua", e.Call.Pos, e.Call.Func)
}

// runScript expands the call's arguments into the arena and runs it.
func (st *State) runScript(env *Env, sc *scriptCall, m *Message, mode ScriptMode) (bool, error) {
	if st.Dry {
		return false, &DryScriptError{Call: sc.src}
	}
	st.scriptArgs = st.scriptArgs[:0]
	for _, t := range sc.args {
		start := len(st.arena)
		out, err := st.expand(env, t, st.arena, "lua")
		st.arena = out
		if err != nil {
			return false, err
		}
		st.scriptArgs = append(st.scriptArgs, st.arena[start:len(st.arena):len(st.arena)])
	}
	if sc.fn == nil { // a listing, never run
		return false, fmt.Errorf("%s: Lua function %s not defined", sc.src.Pos, sc.src.Func)
	}
	return sc.fn.Call(env, st, m, st.scriptArgs, mode)
}

// ScriptCall is a compiled LuaBackend call.
type ScriptCall struct {
	env *Env
	sc  *scriptCall
}

// CompileScript binds a LuaBackend's call in scope e.
func (e *Env) CompileScript(call *config.LuaCall) (*ScriptCall, error) {
	c := &compiler{env: e}
	sc, err := c.script(call)
	if err != nil {
		return nil, err
	}
	return &ScriptCall{env: e, sc: sc}, nil
}

// Run calls the function for the request in st, building st.Resp.
func (c *ScriptCall) Run(st *State) error {
	_, err := st.runScript(c.env, c.sc, &st.Resp, ScriptBackend)
	return err
}

// Func is the name of the function called.
func (c *ScriptCall) Func() string { return c.sc.src.Func }

// ScriptSession is what one request holds of a Lua runtime from its
// first call until the proxy ends it (EndScripts): the per-thread state
// it was given, and whether it used the global state. Pound's stash
// lives that long.
type ScriptSession struct {
	Owner  ScriptOwner // nil: the request has called no function
	VM     any         // the per-thread state held, if any
	Gen    uint64      // identifies the request's stash
	Global bool        // the global state has a stash for Gen
}

// ScriptOwner is the runtime a session came from.
type ScriptOwner interface {
	Release(s *ScriptSession)
}

// EndScripts gives back what the request holds of a Lua runtime.
func (st *State) EndScripts() {
	if st.Script.Owner != nil {
		st.Script.Owner.Release(&st.Script)
	}
	st.Script = ScriptSession{}
}

// ResendMode is what a response script asked to do with the request
// (Pound's http.resend, http.balancer and http.service.name).
type ResendMode uint8

const (
	ResendNone    ResendMode = iota
	ResendSame               // http.resend = true: the same service again
	ResendBackend            // http.balancer = n: a backend of group n or above
	ResendService            // http.service.name = ...: another service
)

// MaxResends is how often one request may be resent (Pound's
// MAX_REQUEST_RESEND): a script that always asks gets a 500.
const MaxResends = 4

// Resend is a pending request to send the request again.
type Resend struct {
	Mode ResendMode
	// Service is the target of ResendService; nil selects one again.
	Service ServiceRef
	// MinWeight is the lowest balancer group to pick from.
	MinWeight int
	// Count is how many times the request was resent.
	Count int
}

// ServiceRef is a service as scripts see it (http.service).
type ServiceRef interface {
	// ScriptName is the service's name, "/name" for a global one, ""
	// for one without a name.
	ScriptName() string
	// ScriptLocus is where it is defined (FILE:L.C-L.C).
	ScriptLocus() string
}

// ServiceFinder finds the service a script names (http.service.name).
type ServiceFinder interface {
	FindService(name string, global bool) (ServiceRef, bool)
}

// Exchange is what scripts reach of a request beyond its heads; the
// proxy fills it as the request goes along.
type Exchange struct {
	// Minor is the request's HTTP minor version.
	Minor int
	// Body is the request body ContentCapture kept; HasBody says it is
	// complete.
	Body    []byte
	HasBody bool
	// Status and Reason are the response status line (DefaultReason:
	// the status's standard reason instead, a script changed it);
	// RespBody replaces the backend's body when BodySet.
	Status        int
	Reason        []byte
	DefaultReason bool
	RespBody      []byte
	BodySet       bool
	// Service is the service serving the request and Services finds
	// the others; Tier is the balancer group of the backend that
	// answered.
	Service  ServiceRef
	Services ServiceFinder
	Tier     int
	Resend   Resend
}

// SetRespBody replaces the response body (a copy of b, nil: none).
func (st *State) SetRespBody(b []byte) {
	st.bodyBuf = append(st.bodyBuf[:0], b...)
	st.X.RespBody, st.X.BodySet = st.bodyBuf, true
}

// SetReason sets the response reason phrase (a copy of b).
func (st *State) SetReason(b []byte) { st.X.Reason, st.X.DefaultReason = st.keep(b), false }

// Keep copies b into the request's arena, where it stays valid until the
// next request (scripts' header and URL values).
func (st *State) Keep(b []byte) []byte { return st.keep(b) }

// Constant is the value of a constant in scope.
func (e *Env) Constant(name string) (string, bool) { return e.constant(name) }
