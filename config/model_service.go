package config

import (
	"regexp"
	"strconv"
	"sync/atomic"

	"github.com/dlclark/regexp2"
)

// PatternKind is how a Pound 4 pattern matches (-re -exact -beg -end -contain).
type PatternKind string

const (
	// MatchRegex is a regular expression (the default for most directives).
	MatchRegex PatternKind = "re"
	// MatchExact compares the whole string (Host's default).
	MatchExact PatternKind = "exact"
	// MatchPrefix matches a leading substring (-beg).
	MatchPrefix PatternKind = "beg"
	// MatchSuffix matches a trailing substring (-end).
	MatchSuffix PatternKind = "end"
	// MatchContain matches any substring (-contain).
	MatchContain PatternKind = "contain"
)

// Pattern is a compiled matcher. Regexes compile once at load (Go RE2
// syntax, a superset of the POSIX ERE Pound uses); plain kinds never run a
// regex. Use MatchString/Match on the hot path: they do not allocate.
type Pattern struct {
	Kind       PatternKind `json:"kind"`
	Text       string      `json:"text"`
	IgnoreCase bool        `json:"icase,omitempty"`
	// PCRE patterns (-pcre, RegexType pcre) need a backtracking engine
	// for look-around and back-references; Re is nil then. Re is nil
	// too for a regex that reduces to literals (lits), which compiles
	// only when groups are asked for: use Regexp.
	PCRE bool `json:"pcre,omitempty"`
	// foldKS: a literal of a case-folding regex that has k or s, which
	// regexp also folds with the Kelvin sign and the long s (matchLit).
	foldKS bool
	// anchor is a byte of a plain -contain Text to search for with
	// IndexByte (both cases in anchorLo/Up), at offset anchorAt; with
	// anchorExact no k or s comes before it, so it is at that offset in
	// any match. (The flags and the offset share a word: 20,000
	// patterns at 10,000 services, issue 36.)
	anchorOK, anchorExact bool
	anchorLo, anchorUp    byte
	anchorAt              int32
	Re                    *regexp.Regexp  `json:"-"`
	Re2                   *regexp2.Regexp `json:"-"`
	// lazy is Re of a regex of literals, compiled when groups are first
	// asked for (Regexp).
	lazy atomic.Pointer[regexp.Regexp]
	// lits are the plain matchers a regex of literals reduces to
	// (literalSet): it matches where one of them does.
	lits []*Pattern
}

// CondKind names a service condition.
type CondKind string

const (
	// CondURL matches the request target (URL "re").
	CondURL CondKind = "url"
	// CondHost matches the Host header value (exact, case-insensitive by default).
	CondHost CondKind = "host"
	// CondHeader matches a whole header line (HeadRequire, Header "re"), or
	// with Name set the value of that header (Header "Name" "re").
	CondHeader CondKind = "header"
	// CondPath matches the path part of the URL.
	CondPath CondKind = "path"
	// CondQuery matches the query string.
	CondQuery CondKind = "query"
	// CondQueryParam matches the value of query parameter Name.
	CondQueryParam CondKind = "queryparam"
	// CondMethod matches the request method.
	CondMethod CondKind = "method"
	// CondMatch is a Match AND|OR ... End group (Sub), also produced by
	// pattern -file options.
	CondMatch CondKind = "match"
)

// Condition is one Pound 4 service condition. HeadDeny is a negated header
// condition; `Not X` sets Not on X. What only some kinds of condition
// have (ACL, StringMatch, Lua, authentication...) is in Rare, so that a
// URL, Host or header condition costs 144 bytes instead of 256 (issue
// 36). MarshalJSON writes every field in one object (conditionJSON).
type Condition struct {
	// Pos is where the condition is written (not dumped: positions of
	// conditions would make every --dump-config golden file move).
	Pos     Locus
	Kind    CondKind
	Name    string // header name / query param name
	Pattern *Pattern
	Sub     []*Condition
	Not     bool
	Or      bool // for CondMatch: OR instead of AND
	// Decode percent-decodes the subject first (-decode; Path, QueryParam).
	Decode bool
	// Forwarded is CondACL's address source.
	Forwarded bool
	// rare is nil when every rare setting is zero; read it with Rare,
	// write it with SetRare.
	rare *ConditionRare
}

// ConditionRare are the settings of the less common conditions.
type ConditionRare struct {
	// owner is the Condition the value was made for: a copy of that
	// Condition shares it until its first SetRare.
	owner *Condition
	// Tag names the condition's groups for $N(tag) back-references.
	Tag string
	// ACL is CondACL's list.
	ACL *ACL
	// Subject is StringMatch's string, expanded per request.
	Subject string
	// Target and List are CondWatched's kind and live patterns.
	Target CondKind
	List   *PatternList
	// Auth is CondBasicAuth's password file, TBF CondTBF's filter.
	Auth *PasswordFile
	TBF  *TBF
	// Lua is CondLua's call.
	Lua *LuaCall
	// Authn is CondJWT's and CondAPIKey's block.
	Authn *Authn
}

// newCond is c with the rare settings r (none when r is zero).
func newCond(c Condition, r ConditionRare) *Condition {
	if r != (ConditionRare{}) {
		r.owner = &c
		c.rare = &r
	}
	return &c
}

// noConditionRare is what Rare returns for a condition without rare
// settings.
var noConditionRare ConditionRare

// Rare returns c's rare settings, for reading only: a condition without
// any shares one zero value.
func (c *Condition) Rare() *ConditionRare {
	if c.rare == nil {
		return &noConditionRare
	}
	return c.rare
}

// SetRare returns c's own rare settings to write, made on first use; a
// copy of another Condition gets its own copy of the original's.
func (c *Condition) SetRare() *ConditionRare {
	if c.rare == nil {
		c.rare = &ConditionRare{owner: c}
	} else if c.rare.owner != c {
		r := *c.rare
		r.owner = c
		c.rare = &r
	}
	return c.rare
}

// Service is a Service block, in a listener or global. The settings
// most services leave alone (header and rewrite rules, constants,
// Emergency backends, the cache...) are in Rare, so that a plain
// service costs 192 bytes instead of 576 (issue 36: 10,000 of them are
// kept for runtime edits and listings). MarshalJSON writes every field
// in one object, in the order of serviceJSON.
type Service struct {
	Pos        Locus
	Name       string
	Disabled   bool
	IgnoreCase bool
	// FallThrough: a matching service applies its request rules and
	// selection goes on with the next service.
	FallThrough bool
	Conditions  []*Condition // all must match

	// Exactly one of Balancer and RoutingPolicy is set once the file is
	// loaded. Balancer is Pound's algorithm (random|iwrr; backend Priority
	// is the weight), resolved from the global Balancer when the service
	// names neither. RoutingPolicy is zproxy's (ROUND_ROBIN, the default
	// in the zproxy dialect, LEAST_CONNECTIONS, RESPONSE_TIME,
	// PENDING_CONNECTIONS; Priority is a tier, Weight the weight).
	Balancer      string
	RoutingPolicy string

	Session *Session
	// Backends are regular backends and Pound 4 special backends (Kind
	// redirect, error, metrics, control, file, success, acme), in file
	// order; named-backend references are already resolved.
	Backends []*Backend

	// rare is nil when every rare setting is zero; read it with Rare,
	// write it with SetRare.
	rare *ServiceRare
}

// ServiceRare are a service's settings that few services have.
type ServiceRare struct {
	// owner is the Service the value was made for: a copy of that
	// Service shares it until its first SetRare.
	owner *Service
	// Authenticate are the checks a request must pass once the service
	// is chosen (lbd's edge authentication).
	Authenticate []*Authn
	Headers      HeaderRules
	Rewrites     Rewrites
	// RewriteErrors applies the response rules to error replies too (nil:
	// the listener's setting).
	RewriteErrors *bool
	// LogSuppress lists the status classes (1..5) not logged.
	LogSuppress []int
	// Constants are the service's Constant definitions (they shadow the
	// listener's and the global ones).
	Constants map[string]string
	// TrustedIP is the service's list of trusted proxies for
	// X-Forwarded-For (nil: the listener's).
	TrustedIP       *ACL
	ForwardedHeader string
	RewriteURL      []RewriteURL
	// RewriteLoc is zproxy's per-service RewriteLocation override.
	RewriteLoc *int
	// ContentCapture is the largest request body kept for Lua
	// (http.req.body) and for resending (0: none is kept).
	ContentCapture int64
	// STS is zproxy's StrictTransportSecurity max-age in seconds.
	STS       int
	Emergency []*Backend
	// Cache is the service's shared HTTP cache (nil: none).
	Cache *Cache
}

// noServiceRare is what Rare returns for a service without rare settings.
var noServiceRare ServiceRare

// Rare returns s's rare settings, for reading only: a service without
// any shares one zero value.
func (s *Service) Rare() *ServiceRare {
	if s.rare == nil {
		return &noServiceRare
	}
	return s.rare
}

// SetRare returns s's own rare settings to write, made on first use; a
// copy of another Service gets its own copy of the original's.
func (s *Service) SetRare() *ServiceRare {
	if s.rare == nil {
		s.rare = &ServiceRare{owner: s}
	} else if s.rare.owner != s {
		r := *s.rare
		r.owner = s
		s.rare = &r
	}
	return s.rare
}

// RewriteURL is zproxy's RewriteUrl "re" "repl" [last].
type RewriteURL struct {
	Pattern     *Pattern `json:"pattern"`
	Replacement string   `json:"replacement"`
	Last        bool     `json:"last,omitempty"`
}

// Redirect is a redirect backend (Redirect [code] "url").
type Redirect struct {
	Code int `json:"code"` // 301 302 303 307 308; default 302
	// URL is as written, except that a lone "/" path is dropped, as Pound
	// does; $N, ${VHOST} and %[...] are expanded per request.
	URL string `json:"url"`
	// HasURI is Pound's has_uri: the URL had a path, so the request path is
	// not appended.
	HasURI bool `json:"has_uri"`
	Append bool `json:"append,omitempty"` // zproxy RedirectAppend
}

// SessionType is a session pinning kind.
type SessionType string

const (
	// SessionNone means no session pinning.
	SessionNone SessionType = "NONE"
	// SessionIP keys on the client address.
	SessionIP SessionType = "IP"
	// SessionBasic keys on the Basic-auth credentials.
	SessionBasic SessionType = "BASIC"
	// SessionURL keys on the query parameter named by ID.
	SessionURL SessionType = "URL"
	// SessionParm keys on the ;param part of the path.
	SessionParm SessionType = "PARM"
	// SessionCookie keys on the cookie named by ID.
	SessionCookie SessionType = "COOKIE"
	// SessionHeader keys on the header named by ID.
	SessionHeader SessionType = "HEADER"
	// SessionCookieInsert is zproxy's injected cookie; BACKENDCOOKIE is an alias.
	SessionCookieInsert SessionType = "COOKIEINSERT"
)

// String returns the type's name as Pound's control API prints it.
func (t SessionType) String() string { return string(t) }

// Session is a Session block.
type Session struct {
	Pos    Locus       `json:"pos"`
	Type   SessionType `json:"type"`
	TTL    Duration    `json:"ttl"`
	ID     string      `json:"id,omitempty"`
	Path   string      `json:"path,omitempty"`
	Domain string      `json:"domain,omitempty"`
	// Max caps the number of sessions kept (lbd's MaxSessions; default
	// DefaultMaxSessions); the oldest are evicted first.
	Max int `json:"max"`
}

// BackendKind distinguishes regular backends from Pound 4 special ones.
//
// It is a byte (the model keeps one per backend: 20,000 at 10,000
// services, where a string made config.Backend 8 bytes over the
// allocator's 128-byte class, issue 36); it prints, marshals and
// unmarshals as its name ("backend", "redirect", ...).
type BackendKind uint8

const (
	// BackendRegular proxies to Address:Port.
	BackendRegular BackendKind = iota
	// BackendRedirect answers with a redirect (Redirect field).
	BackendRedirect
	// BackendError answers with Status and an optional Page.
	BackendError
	// BackendMetrics serves OpenMetrics text.
	BackendMetrics
	// BackendControl serves the control API over HTTP.
	BackendControl
	// BackendDashboard serves lbd's live dashboard (an lbd extension).
	BackendDashboard
	// BackendFile serves static files from Dir (SendFile).
	BackendFile
	// BackendSuccess answers 200 with an empty body (Success).
	BackendSuccess
	// BackendLua answers with the response a Lua function builds
	// (LuaBackend).
	BackendLua
	// BackendACME serves ACME HTTP-01 challenges from Dir (the listener's
	// ACME statement, which adds a service of its own).
	BackendACME
)

var backendKindNames = [...]string{
	BackendRegular: "backend", BackendRedirect: "redirect", BackendError: "error",
	BackendMetrics: "metrics", BackendControl: "control", BackendDashboard: "dashboard",
	BackendFile: "file", BackendSuccess: "success", BackendLua: "lua", BackendACME: "acme",
}

// String is the kind's name.
func (k BackendKind) String() string {
	if int(k) < len(backendKindNames) {
		return backendKindNames[k]
	}
	return "BackendKind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the kind's name.
func (k BackendKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Backend is a BackEnd or Emergency block, a named backend, or a special
// backend. The settings most backends leave alone (TLS, dynamic
// resolution, the special backends' fields...) are in Rare, so that a
// plain backend costs 192 bytes instead of 512 (issue 36: 20,000 of them
// are kept for runtime edits and listings). MarshalJSON writes every
// field in one object, in the order of backendJSON.
type Backend struct {
	Pos  Locus
	Kind BackendKind
	// Name is the named backend's name, or the name a reference used.
	Name    string
	Address string
	Port    int // default 80, 443 with HTTPS; 0 for UNIX
	// Priority is Pound's weight (default 5) or zproxy's priority (default 1).
	Priority  int
	Weight    int // zproxy weight (default 1)
	ConnLimit int // zproxy; 0 = unlimited
	// Timeouts, resolved against the global values (Emergency: 120 s).
	TimeOut   Duration
	ConnTO    Duration
	WSTimeOut Duration
	Unix      bool // Address is a UNIX socket path
	Disabled  bool
	Emergency bool
	// Unresolved marks a static backend whose host name did not resolve
	// at load: it starts dead, and its health probe resolves it again.
	Unresolved bool
	HTTPS      bool // implied by Cert, Ciphers, Disable
	// rare is nil when every rare setting is zero; read it with Rare,
	// write it with SetRare.
	rare *BackendRare
}

// BackendRare are a backend's settings that few backends have.
type BackendRare struct {
	// owner is the Backend the value was made for: a copy of that
	// Backend (nb := *b) shares it until its first SetRare.
	owner  *Backend
	NfMark int // zproxy SO_MARK
	// HAPort is the classic `HAport [addr] port` liveness probe target.
	HAPort *HAPort

	// Resolve is Pound 4's resolve mode: "" (immediate: a static backend)
	// or first, all, srv: a matrix that expands at run time into one
	// backend per address the DNS gives (see ResolveFirst).
	Resolve         string
	Family          string // "" (any), inet, inet6 or unix
	IgnoreSRVWeight bool
	OverrideTTL     Duration // 0 = the DNS TTL
	RetryInterval   Duration // 0 = the Resolver's

	ServerName   string
	Cert         *CertFile
	Ciphers      string
	CipherSuites string
	ECDHCurve    string
	Disable      string // as ListenerTLS
	NoTLS13      bool
	VerifyList   *FileData // lbd: verify the backend's certificate
	// Protocol is ProtocolHTTP1, ProtocolH2 or ProtocolAuto (lbd:
	// config/h2backend.go); ProtocolPos is where it was set.
	Protocol    string
	ProtocolPos Locus
	GRPCHealth  *GRPCHealth

	Redirect *Redirect  // Kind == redirect
	Status   int        // Kind == error
	Page     *ErrorPage // Kind == error
	// Dir is the directory a file or acme backend serves, resolved
	// against the include directory; it was a directory at load time.
	Dir string
	// Lua is a LuaBackend's call (Kind == lua).
	Lua *LuaCall
}

// noRare is what Rare returns for a backend without rare settings.
var noRare BackendRare

// Rare returns b's rare settings, for reading only: a backend without
// any shares one zero value.
func (b *Backend) Rare() *BackendRare {
	if b.rare == nil {
		return &noRare
	}
	return b.rare
}

// SetRare returns b's own rare settings to write, made on first use; a
// copy of another Backend gets its own copy of the original's.
func (b *Backend) SetRare() *BackendRare {
	if b.rare == nil {
		b.rare = &BackendRare{owner: b}
	} else if b.rare.owner != b {
		r := *b.rare
		r.owner = b
		b.rare = &r
	}
	return b.rare
}

// Resolve modes of a dynamic backend.
const (
	// ResolveFirst makes one backend from the first address.
	ResolveFirst = "first"
	// ResolveAll makes one backend per address.
	ResolveAll = "all"
	// ResolveSRV reads SRV records; each target is resolved as with
	// ResolveAll, its port and weight taken from the record and its
	// priority choosing the balancer group.
	ResolveSRV = "srv"
)

// Dynamic reports whether the backend is a matrix resolved at run time.
func (b *Backend) Dynamic() bool { return b.rare != nil && b.rare.Resolve != "" }

// HAPort is the classic `HAport [addr] port` liveness probe target.
type HAPort struct {
	Address string `json:"address,omitempty"`
	Port    int    `json:"port"`
}
