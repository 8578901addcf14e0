// Package config is lbd's typed, inert configuration model: what a Pound or
// zproxy configuration file says, with Pound's defaults applied and every
// value validated. It holds no runtime state; the engine builds live objects
// from it. The JSON form (lbd --dump-config) is used by the golden tests.
package config

import (
	"regexp"
	"time"

	"lbd/parser"
)

// Dialect says whose semantics a configuration expects where Pound and
// zproxy differ (generated responses, timeout status, control API).
type Dialect string

const (
	// DialectPound is the default: Pound 4 behaviour.
	DialectPound Dialect = "pound"
	// DialectZproxy is chosen when the file uses zproxy-only directives
	// (RoutingPolicy, Weight, ConnLimit, Name in a listener, ...).
	DialectZproxy Dialect = "zproxy"
)

// Config is one whole configuration file.
type Config struct {
	File    string  `json:"file"`
	Dialect Dialect `json:"dialect"`

	User        string `json:"user,omitempty"`
	Group       string `json:"group,omitempty"`
	RootJail    string `json:"root_jail,omitempty"`
	Daemon      bool   `json:"daemon"`
	Threads     int    `json:"threads,omitempty"`
	LogFacility string `json:"log_facility"` // "-" = stderr
	LogTag      string `json:"log_tag,omitempty"`
	// LogLevel is a format name: null, regular, extended, vhost_combined,
	// combined, detailed, or a LogFormat name. Numbers 0..5 map to the
	// built-in names.
	LogLevel   string            `json:"log_level"`
	LogFormats map[string]string `json:"log_formats,omitempty"`
	Anonymise  bool              `json:"anonymise"`
	PIDFile    string            `json:"pid_file,omitempty"`

	Timeouts Timeouts `json:"timeouts"`
	Grace    Duration `json:"grace"`

	Balancer     string   `json:"balancer"` // "random" (Pound default) or "iwrr"
	HeaderOption []string `json:"header_option,omitempty"`
	IgnoreCase   bool     `json:"ignore_case"`

	Control *Control `json:"control,omitempty"`

	// ErrorFiles maps a status code to a page body read at load time.
	ErrorFiles map[int]*ErrorPage `json:"error_files,omitempty"`

	Listeners     []*Listener `json:"listeners"`
	Services      []*Service  `json:"services,omitempty"` // global services
	NamedBackends []*Backend  `json:"named_backends,omitempty"`

	// Unsupported lists directives lbd accepts but does not implement; each
	// was reported as a warning.
	Unsupported []string `json:"unsupported,omitempty"`
}

// Timeouts are the Pound timers. The zero Duration means "not set here" in a
// listener or backend, which then inherits the global value.
type Timeouts struct {
	Alive   Duration `json:"alive"`
	Client  Duration `json:"client"`
	TimeOut Duration `json:"timeout"`
	ConnTO  Duration `json:"connto"`
	WSTime  Duration `json:"ws_timeout"`
}

// Duration is a time.Duration that marshals as seconds (float) in JSON.
type Duration time.Duration

// Control is the control socket (Pound `Control "path"` or its block form).
type Control struct {
	Socket      string `json:"socket"`
	Mode        uint32 `json:"mode"` // default 0600
	ChangeOwner bool   `json:"change_owner"`
}

// ErrorPage is a custom error body, read once at load.
type ErrorPage struct {
	Path string `json:"path"`
	Body []byte `json:"-"`
}

// Listener is a ListenHTTP or ListenHTTPS block.
type Listener struct {
	Pos        parser.Pos `json:"pos"`
	Name       string     `json:"name,omitempty"`
	HTTPS      bool       `json:"https"`
	Address    string     `json:"address,omitempty"` // IP, hostname, or UNIX path
	Port       int        `json:"port,omitempty"`
	SocketFrom string     `json:"socket_from,omitempty"`

	XHTTP       int      `json:"xhttp"`
	Client      Duration `json:"client,omitempty"`
	CheckURL    *Pattern `json:"check_url,omitempty"`
	MaxRequest  int64    `json:"max_request,omitempty"`
	MaxURI      int      `json:"max_uri,omitempty"`
	LineBuffer  int      `json:"line_buffer_size,omitempty"`
	LogLevel    string   `json:"log_level,omitempty"`
	RewriteLoc  int      `json:"rewrite_location"`
	RewriteDest bool     `json:"rewrite_destination"`
	RewriteHost bool     `json:"rewrite_host"`

	HeaderOption []string           `json:"header_option,omitempty"`
	Headers      HeaderRules        `json:"headers"`
	ErrorFiles   map[int]*ErrorPage `json:"error_files,omitempty"`
	ErrNoSSL     *ErrNoSSL          `json:"err_nossl,omitempty"`
	TLS          *ListenerTLS       `json:"tls,omitempty"`

	Services []*Service `json:"services"`
}

// ErrNoSSL is zproxy's answer to plain HTTP sent to a TLS port.
type ErrNoSSL struct {
	Status   int    `json:"status,omitempty"`
	File     string `json:"file,omitempty"`
	Redirect string `json:"redirect,omitempty"` // NoSslRedirect URL
	Code     int    `json:"code,omitempty"`     // NoSslRedirect code
}

// ListenerTLS holds ListenHTTPS settings.
type ListenerTLS struct {
	Certs            []string `json:"certs"`
	Disable          string   `json:"disable,omitempty"` // highest disabled protocol
	Ciphers          string   `json:"ciphers,omitempty"`
	HonorCipherOrder bool     `json:"honor_cipher_order"`
	ClientCert       int      `json:"client_cert"`
	ClientCertDepth  int      `json:"client_cert_depth,omitempty"`
	CAList           string   `json:"ca_list,omitempty"`
	VerifyList       string   `json:"verify_list,omitempty"`
	CRLList          string   `json:"crl_list,omitempty"`
	NoHTTPS11        int      `json:"no_https11"`
	Renegotiation    int      `json:"renegotiation"`
}

// HeaderRules are the request/response header edits of a listener or
// service (Pound AddHeader/HeadRemove/SetHeader/DeleteHeader, zproxy
// Add/Remove Request/Response Header, ReplaceHeader).
type HeaderRules struct {
	RequestAdd     []string        `json:"request_add,omitempty"`    // "Name: value"; SetHeader semantics replace same name
	RequestSet     []string        `json:"request_set,omitempty"`    // Pound 4 SetHeader
	RequestRemove  []*Pattern      `json:"request_remove,omitempty"` // regex on whole header line
	ResponseAdd    []string        `json:"response_add,omitempty"`
	ResponseRemove []*Pattern      `json:"response_remove,omitempty"`
	Replace        []ReplaceHeader `json:"replace,omitempty"`
}

// ReplaceHeader is zproxy's ReplaceHeader Request|Response name match repl.
type ReplaceHeader struct {
	Response    bool     `json:"response"`
	Name        *Pattern `json:"name"`
	Match       *Pattern `json:"match"`
	Replacement string   `json:"replacement"`
}

// PatternKind is how a Pound 4 pattern matches (-re -exact -beg -end -contain).
type PatternKind string

const (
	MatchRegex   PatternKind = "re"
	MatchExact   PatternKind = "exact"
	MatchPrefix  PatternKind = "beg"
	MatchSuffix  PatternKind = "end"
	MatchContain PatternKind = "contain"
)

// Pattern is a compiled matcher. Regexes compile once at load; plain kinds
// never run a regex.
type Pattern struct {
	Kind       PatternKind    `json:"kind"`
	Text       string         `json:"text"`
	IgnoreCase bool           `json:"icase,omitempty"`
	Re         *regexp.Regexp `json:"-"`
}

// CondKind names a service condition.
type CondKind string

const (
	CondURL        CondKind = "url"
	CondHost       CondKind = "host"
	CondHeader     CondKind = "header" // HeadRequire / Header
	CondPath       CondKind = "path"
	CondQuery      CondKind = "query"
	CondQueryParam CondKind = "queryparam"
	CondMethod     CondKind = "method"
	CondMatch      CondKind = "match" // Match AND|OR ... End
)

// Condition is one Pound 4 service condition. HeadDeny is a negated header
// condition.
type Condition struct {
	Kind    CondKind     `json:"kind"`
	Not     bool         `json:"not,omitempty"`
	Name    string       `json:"name,omitempty"` // header name / query param name
	Pattern *Pattern     `json:"pattern,omitempty"`
	Or      bool         `json:"or,omitempty"` // for CondMatch
	Sub     []*Condition `json:"sub,omitempty"`
}

// Service is a Service block, in a listener or global.
type Service struct {
	Pos        parser.Pos   `json:"pos"`
	Name       string       `json:"name,omitempty"`
	Disabled   bool         `json:"disabled"`
	Conditions []*Condition `json:"conditions,omitempty"` // all must match
	IgnoreCase bool         `json:"ignore_case"`

	Balancer      string `json:"balancer,omitempty"`       // Pound: random|iwrr
	RoutingPolicy string `json:"routing_policy,omitempty"` // zproxy policies

	Headers    HeaderRules        `json:"headers"`
	RewriteURL []RewriteURL       `json:"rewrite_url,omitempty"`
	RewriteLoc *int               `json:"rewrite_location,omitempty"`
	STS        int                `json:"strict_transport_security,omitempty"`
	Redirect   *Redirect          `json:"redirect,omitempty"`
	Session    *Session           `json:"session,omitempty"`
	Backends   []*Backend         `json:"backends"`
	Emergency  []*Backend         `json:"emergency,omitempty"`
	ErrorFiles map[int]*ErrorPage `json:"error_files,omitempty"`
}

// RewriteURL is zproxy's RewriteUrl "re" "repl" [last].
type RewriteURL struct {
	Pattern     *Pattern `json:"pattern"`
	Replacement string   `json:"replacement"`
	Last        bool     `json:"last,omitempty"`
}

// Redirect is a redirect service or backend.
type Redirect struct {
	Code   int    `json:"code"`
	URL    string `json:"url"`
	Append bool   `json:"append,omitempty"` // zproxy RedirectAppend
}

// SessionType is a session pinning kind.
type SessionType string

const (
	SessionNone         SessionType = "NONE"
	SessionIP           SessionType = "IP"
	SessionBasic        SessionType = "BASIC"
	SessionURL          SessionType = "URL"
	SessionParm         SessionType = "PARM"
	SessionCookie       SessionType = "COOKIE"
	SessionHeader       SessionType = "HEADER"
	SessionCookieInsert SessionType = "COOKIEINSERT" // zproxy; BACKENDCOOKIE is an alias
)

// Session is a Session block.
type Session struct {
	Type   SessionType `json:"type"`
	TTL    Duration    `json:"ttl"`
	ID     string      `json:"id,omitempty"`
	Path   string      `json:"path,omitempty"`
	Domain string      `json:"domain,omitempty"`
}

// BackendKind distinguishes regular backends from Pound 4 special ones.
type BackendKind string

const (
	BackendRegular  BackendKind = "backend"
	BackendRedirect BackendKind = "redirect"
	BackendError    BackendKind = "error"
	BackendMetrics  BackendKind = "metrics"
	BackendControl  BackendKind = "control"
)

// Backend is a BackEnd or Emergency block, or a special backend.
type Backend struct {
	Pos       parser.Pos  `json:"pos"`
	Kind      BackendKind `json:"kind"`
	Name      string      `json:"name,omitempty"` // named backend, or UseBackend reference
	Address   string      `json:"address,omitempty"`
	Port      int         `json:"port,omitempty"`
	Unix      bool        `json:"unix,omitempty"` // Address is a UNIX socket path
	Priority  int         `json:"priority"`       // Pound weight (default 5) / zproxy priority (default 1)
	Weight    int         `json:"weight"`         // zproxy weight (default 1)
	ConnLimit int         `json:"conn_limit,omitempty"`
	NfMark    int         `json:"nfmark,omitempty"`
	Disabled  bool        `json:"disabled"`
	Emergency bool        `json:"emergency,omitempty"`
	HAPort    *HAPort     `json:"haport,omitempty"`
	Timeouts  Timeouts    `json:"timeouts"`

	HTTPS      bool   `json:"https"`
	ServerName string `json:"server_name,omitempty"`
	Cert       string `json:"cert,omitempty"`
	Ciphers    string `json:"ciphers,omitempty"`
	Disable    string `json:"disable,omitempty"`

	Redirect *Redirect  `json:"redirect,omitempty"` // Kind == redirect
	Status   int        `json:"status,omitempty"`   // Kind == error
	Page     *ErrorPage `json:"page,omitempty"`     // Kind == error
}

// HAPort is the classic `HAport [addr] port` liveness probe target.
type HAPort struct {
	Address string `json:"address,omitempty"`
	Port    int    `json:"port"`
}
