package config

import (
	"net/netip"
	"sync/atomic"

	"lbd/htpasswd"
	"lbd/tbf"
)

// Pound 4's request language, as the configuration states it: conditions
// (model_service.go), request and response modifications, Rewrite branches,
// ACLs and detached conditions. The rules package compiles these into the
// flat program the proxy runs; nothing here is evaluated directly.

// Further condition kinds of Pound 4.
const (
	// CondACL holds when the client address is in ACL (Forwarded: the
	// address X-Forwarded-For names, through TrustedIP).
	CondACL CondKind = "acl"
	// CondStringMatch matches Pattern against the expansion of Subject.
	CondStringMatch CondKind = "stringmatch"
	// CondEval evaluates the detached Condition named Name, once per request.
	CondEval CondKind = "eval"
	// CondWatched is a -filewatch pattern list: Target names the
	// condition kind the patterns apply to (URL, Header, ...) and Watch
	// holds the current patterns; an empty or missing file matches nothing.
	CondWatched CondKind = "watched"
	// CondBasicAuth holds when the request's Basic credentials are those
	// of a user of Auth's password file.
	CondBasicAuth CondKind = "basic_auth"
	// CondTBF holds when TBF's token bucket for the request's key has a
	// token left.
	CondTBF CondKind = "tbf"
	// CondLua holds when the Lua function Lua calls returns true.
	CondLua CondKind = "lua"
)

// PasswordFile is BasicAuth's user database. Unless read with -file, it
// is followed while lbd runs (Pound's default): each new content becomes
// a new htpasswd.File, whose cache of checked credentials starts empty.
type PasswordFile struct {
	Path  string `json:"path"`
	Watch bool   `json:"watch,omitempty"`
	live  atomic.Pointer[htpasswd.File]
	gen   atomic.Uint64
}

// Current is the file's content now; nil until it has been read.
func (p *PasswordFile) Current() *htpasswd.File { return p.live.Load() }

// Set installs new content (the loader and the watcher call it).
func (p *PasswordFile) Set(f *htpasswd.File) {
	p.live.Store(f)
	p.gen.Add(1)
}

// Generation counts the contents installed since the configuration was
// loaded: 1 is the file as read at load, 0 a file not read yet.
func (p *PasswordFile) Generation() uint64 { return p.gen.Load() }

// TBF is a token bucket filter condition: Key is expanded per request
// and names the bucket; one token is added every Interval nanoseconds,
// up to Burst. Limiter holds the buckets, shared by every program
// compiled from this configuration.
type TBF struct {
	Key      string       `json:"key"`
	Interval uint64       `json:"interval_ns"`
	Burst    uint32       `json:"burst"`
	Limiter  *tbf.Limiter `json:"-"`
}

// ACL is a list of networks (Pound's ACL section, -file or -filewatch).
// A watched ACL is replaced as a whole when its file changes.
type ACL struct {
	Name  string         `json:"name,omitempty"`
	Nets  []netip.Prefix `json:"nets,omitempty"`
	Watch *WatchedFile   `json:"watch,omitempty"`
	live  atomic.Pointer[[]netip.Prefix]
	// decided counts the ACL conditions evaluated on it: [0] the client
	// was in the list, [1] it was not (lbd_acl_decisions_total).
	decided [2]atomic.Uint64
}

// Decided counts one evaluation of an ACL condition; in says whether the
// address was in the list (whatever a Not around the condition makes
// of it).
func (a *ACL) Decided(in bool) {
	if in {
		a.decided[0].Add(1)
	} else {
		a.decided[1].Add(1)
	}
}

// Decisions returns how many evaluations found the address in the list
// and how many did not.
func (a *ACL) Decisions() (match, noMatch uint64) { return a.decided[0].Load(), a.decided[1].Load() }

// Networks returns the ACL's current list.
func (a *ACL) Networks() []netip.Prefix {
	if a.Watch == nil {
		return a.Nets
	}
	if p := a.live.Load(); p != nil {
		return *p
	}
	return nil
}

// SetNetworks replaces a watched ACL's list (the watcher calls it).
func (a *ACL) SetNetworks(n []netip.Prefix) { a.live.Store(&n) }

// Contains reports whether addr is in one of the ACL's networks.
func (a *ACL) Contains(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range a.Networks() {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// WatchedFile is a -filewatch file: read at start (a missing file is not an
// error) and again whenever it changes.
type WatchedFile struct {
	Path string `json:"path"`
}

// PatternList is the live content of a -filewatch pattern file.
type PatternList struct {
	Watch *WatchedFile `json:"watch"`
	Kind  PatternKind  `json:"kind"`
	ICase bool         `json:"icase,omitempty"`
	PCRE  bool         `json:"pcre,omitempty"`
	live  atomic.Pointer[[]*Pattern]
}

// Patterns returns the current patterns.
func (l *PatternList) Patterns() []*Pattern {
	if p := l.live.Load(); p != nil {
		return *p
	}
	return nil
}

// SetPatterns replaces the list (the watcher calls it).
func (l *PatternList) SetPatterns(p []*Pattern) { l.live.Store(&p) }

// ActionKind names a request or response modification.
type ActionKind string

const (
	ActSetHeader     ActionKind = "set_header"      // Value is "Name: value"
	ActDeleteHeader  ActionKind = "delete_header"   // Pattern on the whole line
	ActSetURL        ActionKind = "set_url"         // Value
	ActSetPath       ActionKind = "set_path"        // Value, Encode
	ActSetQuery      ActionKind = "set_query"       // Value
	ActDeleteQuery   ActionKind = "delete_query"    //
	ActSetQueryParam ActionKind = "set_query_param" // Name, Value (none: delete), Encode
	ActRewrite       ActionKind = "rewrite"         // a nested Rewrite: Rule
	ActLua           ActionKind = "lua"             // LuaModify: Lua
)

// Action is one modification statement.
type Action struct {
	Pos     Locus      `json:"pos"`
	Kind    ActionKind `json:"kind"`
	Name    string     `json:"name,omitempty"`
	Value   string     `json:"value,omitempty"`
	HasVal  bool       `json:"has_value,omitempty"`
	Encode  bool       `json:"encode,omitempty"`
	Pattern *Pattern   `json:"pattern,omitempty"`
	Rule    *Rule      `json:"rule,omitempty"`
	Lua     *LuaCall   `json:"lua,omitempty"`
}

// Rule is one Rewrite branch: when all Conds hold the Actions run,
// otherwise Else (the next branch) is tried. The implicit rule that
// collects a section's plain SetHeader, SetPath... has no conditions.
type Rule struct {
	Pos     Locus        `json:"pos"`
	Conds   []*Condition `json:"conds,omitempty"`
	Actions []*Action    `json:"actions"`
	Else    *Rule        `json:"else,omitempty"`
}

// Rewrites are a listener's or service's request and response rules.
type Rewrites struct {
	Request  []*Rule `json:"request,omitempty"`
	Response []*Rule `json:"response,omitempty"`
}

// Empty reports whether there is nothing to run.
func (r *Rewrites) Empty() bool { return len(r.Request) == 0 && len(r.Response) == 0 }

// Detached is a top-level Condition "name" ... End.
type Detached struct {
	Name  string       `json:"name"`
	Conds []*Condition `json:"conds"`
}

// Watched is a -filewatch file and what to do with its new content.
type Watched struct {
	Pos  Locus // the statement that names the file, for log lines
	Path string
	// Load parses the content (nil: the file is gone) and installs it; an
	// error leaves the previous content in place.
	Load func(data []byte) error
}

// ProgramListing is one compiled rule program as --dump-config shows it
// (filled in by the command from the rules package).
type ProgramListing struct {
	Scope string   `json:"scope"` // "listener 0 service 1 \"name\"", "condition \"x\""
	Kind  string   `json:"kind"`  // select, request or response
	Code  []string `json:"code"`
}
