// Package config is lbd's typed, inert configuration model: what a Pound or
// zproxy configuration file says, with Pound's defaults applied and every
// value validated. It holds no runtime state; the engine builds live objects
// from it. The JSON form (lbd --dump-config) is used by the golden tests.
//
// Load turns a file into a *Config. Every diagnostic (error or warning) has
// Pound 4's form FILE:L.C-L.C: message, and all of them are reported in one
// run. A directive lbd knows but does not implement is an error
// (`"X" is not supported by lbd`); only settings with no meaning in lbd
// warn, and are listed in Config.Unsupported.
package config

import (
	"crypto/tls"

	"lbd/waf"
)

// Dialect says whose semantics a configuration expects where Pound and
// zproxy differ (generated responses, timeout status, control API, backend
// priority).
type Dialect string

const (
	// DialectPound is the default: Pound 4 behaviour.
	DialectPound Dialect = "pound"
	// DialectZproxy is chosen by the command line (-C, or lbd invoked as
	// zproxy) or when the file uses zproxy-only directives (Weight,
	// ConnLimit, Name in a listener, ...).
	DialectZproxy Dialect = "zproxy"
)

// Config is one whole configuration file.
type Config struct {
	File    string  `json:"file"`
	Dialect Dialect `json:"dialect"`
	// DialectReason says why Dialect was chosen (lbd -c -v prints it).
	DialectReason string `json:"dialect_reason"`

	User     string `json:"user,omitempty"`
	Group    string `json:"group,omitempty"`
	RootJail string `json:"root_jail,omitempty"`
	// UserPos, GroupPos and RootJailPos locate those statements: lbd
	// acts on them after loading (the privilege drop), and its errors
	// name them.
	UserPos     Locus `json:"-"`
	GroupPos    Locus `json:"-"`
	RootJailPos Locus `json:"-"`
	Daemon      bool  `json:"daemon"`
	// Threads is the classic worker count (Pound default 128); lbd uses
	// goroutines, so it is advisory.
	Threads int `json:"threads"`
	// WorkerMin and WorkerIdle are Pound 4's WorkerMinCount and
	// WorkerIdleTimeout (WorkerMaxCount sets Threads). lbd serves each
	// connection on a goroutine; the control API reports the pool they
	// describe (defaults 5 and 30 s).
	WorkerMin   int      `json:"worker_min"`
	WorkerIdle  Duration `json:"worker_idle"`
	LogFacility string   `json:"log_facility"` // syslog name, or "-" = stderr
	LogTag      string   `json:"log_tag,omitempty"`
	// MessageFormat is the form of lbd's own messages (not the request
	// log): "" or "text", Pound's "prog: message" line; "json", one
	// object a line. The -message-format flag overrides it.
	MessageFormat string `json:"message_format,omitempty"`
	// LogLevel is a format name: null, regular, extended, vhost_combined,
	// combined, detailed, or a LogFormat name. Numbers 0..5 map to the
	// built-in names; zproxy's 6..9 (syslog verbosities) map to "detailed".
	LogLevel string `json:"log_level"`
	// LogFormats are the LogFormat "name" "format" definitions.
	LogFormats map[string]string `json:"log_formats,omitempty"`
	Anonymise  bool              `json:"anonymise"`
	PIDFile    string            `json:"pid_file,omitempty"` // "-" = none
	// LineBufferSize is Pound 4's maximum request line length (bytes).
	LineBufferSize int `json:"line_buffer_size"`

	Timeouts Timeouts `json:"timeouts"`
	Grace    Duration `json:"grace"`

	Balancer string `json:"balancer"` // "random" (Pound default) or "iwrr"
	// HeaderOption is the enabled subset of "forwarded" and "ssl".
	HeaderOption []string `json:"header_option"`
	IgnoreCase   bool     `json:"ignore_case"`

	Control *Control `json:"control,omitempty"`
	// Resolver is nil without a Resolver section (DefaultResolver applies).
	Resolver *Resolver `json:"resolver,omitempty"`
	// Cluster is nil without a Cluster section: the instance runs alone.
	Cluster *Cluster `json:"cluster,omitempty"`
	// ACME is nil without an ACMEAccount section (acme.go).
	ACME *ACMEAccount `json:"acme,omitempty"`
	// Lua is nil without a Lua section. LuaCalls are every LuaMatch,
	// LuaModify and LuaBackend of the file, for package lua to resolve.
	Lua      *Lua       `json:"lua,omitempty"`
	LuaCalls []*LuaCall `json:"-"`

	Listeners     []*Listener `json:"listeners"`
	Services      []*Service  `json:"services,omitempty"` // global services
	NamedBackends []*Backend  `json:"named_backends,omitempty"`

	// Pound 4's request language at top level: detached conditions (for
	// Eval), constants, the trusted proxies and the forwarded header that
	// decide the originator address, and the headers to combine.
	Detached        []*Detached       `json:"detached,omitempty"`
	Constants       map[string]string `json:"constants,omitempty"`
	TrustedIP       *ACL              `json:"trusted_ip,omitempty"`
	ForwardedHeader string            `json:"forwarded_header,omitempty"`
	CombineHeaders  []string          `json:"combine_headers,omitempty"`
	// ECDHCurve is the default key-exchange groups of HTTPS listeners.
	ECDHCurve string `json:"ecdh_curve,omitempty"`
	// Watched are the -filewatch files (patterns, ACLs, constants) the
	// engine keeps up to date while running.
	Watched []Watched `json:"-"`
	// Authns are the edge authentication blocks (JWTAuth, APIKeyAuth,
	// ForwardAuth) in file order.
	Authns []*Authn `json:"authn,omitempty"`

	// Programs are the compiled rule programs, filled in only for
	// --dump-config.
	Programs []ProgramListing `json:"programs,omitempty"`

	// Unsupported lists the directives that have no meaning in lbd (worker
	// and OpenSSL tuning); each was reported as a warning. Canonical
	// spelling, first use order.
	Unsupported []string `json:"unsupported,omitempty"`
}

// Timeouts are the global Pound timers. Listeners and backends carry their
// own copies, already resolved against these.
type Timeouts struct {
	Alive   Duration `json:"alive"`      // dead-backend probe interval
	Client  Duration `json:"client"`     // client idle/read timeout
	TimeOut Duration `json:"timeout"`    // backend response timeout
	ConnTO  Duration `json:"connto"`     // backend connect timeout
	WSTime  Duration `json:"ws_timeout"` // idle timeout of an upgraded connection
}

// Control is the control socket (Pound `Control "path"` or its block form).
type Control struct {
	Pos         Locus  `json:"pos"`
	Socket      string `json:"socket"`
	Mode        uint32 `json:"mode"` // default 0600; written octal in the file
	ChangeOwner bool   `json:"change_owner"`
}

// ErrorPage is a custom error body, read once at load.
type ErrorPage struct {
	Path string `json:"path"`
	Body []byte `json:"-"`
}

// FileData is a file named by the configuration (CA list, CRL list), read
// at load so an unreadable file is a configuration error.
type FileData struct {
	Path string `json:"path"`
	Data []byte `json:"-"`
}

// CertFile is one PEM certificate chain with its private key, parsed at
// load time as Pound does.
type CertFile struct {
	Path string `json:"path"`
	// Source is the Cert argument the file came from, resolved: the file
	// itself, its directory or a glob; the certificate watcher re-reads
	// what changes under it.
	Source string `json:"-"`
	// Sum is the SHA-256 of the file's bytes, so a watcher can tell a
	// changed file without keeping its content.
	Sum  [32]byte        `json:"-"`
	Cert tls.Certificate `json:"-"`
}

// Listener is a ListenHTTP, ListenHTTPS or Tunnel block. A tunnel has
// one unnamed service holding its backends and none of the HTTP settings.
type Listener struct {
	Pos   Locus  `json:"pos"`
	Name  string `json:"name,omitempty"`
	HTTPS bool   `json:"https"`
	// Tunnel relays bytes to the backends without reading HTTP.
	Tunnel bool `json:"tunnel,omitempty"`
	// Address is an IP, a host name, or a UNIX socket path; "" = all
	// interfaces.
	Address string `json:"address,omitempty"`
	Unix    bool   `json:"unix,omitempty"`
	// Port defaults to 80 (443 for HTTPS); 0 when SocketFrom or a UNIX
	// socket is used.
	Port       int    `json:"port,omitempty"`
	SocketFrom string `json:"socket_from,omitempty"`

	XHTTP      int      `json:"xhttp"`
	Client     Duration `json:"client"` // resolved: global Client when unset
	CheckURL   *Pattern `json:"check_url,omitempty"`
	MaxRequest int64    `json:"max_request,omitempty"` // 0 = unlimited
	MaxURI     int      `json:"max_uri,omitempty"`     // 0 = unlimited
	LineBuffer int      `json:"line_buffer_size"`      // resolved: global value
	LogLevel   string   `json:"log_level,omitempty"`   // "" = follow global
	// RewriteLoc is RewriteLocation 0..2 (Pound default 1).
	RewriteLoc int `json:"rewrite_location"`
	// RewriteLocURL is zproxy's second RewriteLocation argument: also undo
	// RewriteUrl in Location (default true).
	RewriteLocURL bool `json:"rewrite_location_url"`
	RewriteDest   bool `json:"rewrite_destination"`
	RewriteHost   bool `json:"rewrite_host"`
	// H2C: a ListenHTTP also accepts cleartext HTTP/2 with prior
	// knowledge (its HTTP2 directive; config/h2backend.go).
	H2C bool `json:"h2c,omitempty"`

	HeaderOption []string    `json:"header_option"` // resolved
	Headers      HeaderRules `json:"headers"`
	Rewrites     Rewrites    `json:"rewrites,omitzero"`
	// RewriteErrors applies response rules to error replies lbd makes
	// from an ErrorFile in place of a backend's error.
	RewriteErrors   bool               `json:"rewrite_errors,omitempty"`
	Constants       map[string]string  `json:"constants,omitempty"`
	TrustedIP       *ACL               `json:"trusted_ip,omitempty"`
	ForwardedHeader string             `json:"forwarded_header,omitempty"`
	ErrorFiles      map[int]*ErrorPage `json:"error_files,omitempty"`
	ErrNoSSL        *ErrNoSSL          `json:"err_nossl,omitempty"`
	TLS             *ListenerTLS       `json:"tls,omitempty"`
	// WAF holds the listener's firewall (zproxy's WafRules and ErrWAF;
	// an lbd extension in Pound files); nil: none.
	WAF *WAF `json:"waf,omitempty"`

	Services []*Service `json:"services"`
}

// WAF is a listener's web application firewall: ModSecurity rule files
// run by Coraza (package waf), compiled when the configuration loads.
type WAF struct {
	Rules []string `json:"rules"` // as named, in order; waf.CRS is the built-in set
	// Page is the body of the reply to a deny (ErrWAF "file"); Pages those
	// for one status (ErrWAF NNN "file").
	Page  *ErrorPage         `json:"page,omitempty"`
	Pages map[int]*ErrorPage `json:"pages,omitempty"`
	// Paranoia and Threshold tune the built-in Core Rule Set.
	Paranoia  int `json:"paranoia,omitempty"`
	Threshold int `json:"anomaly_threshold,omitempty"`
	// Engine is the compiled rule set.
	Engine *waf.Engine `json:"-"`
}

// ErrNoSSL is zproxy's answer to plain HTTP sent to a TLS port: an error
// page (ErrNoSsl [code] "file") or a redirect (NoSslRedirect [code] "url").
type ErrNoSSL struct {
	Status   int        `json:"status,omitempty"`
	Page     *ErrorPage `json:"page,omitempty"`
	Redirect string     `json:"redirect,omitempty"`
	Code     int        `json:"code,omitempty"` // redirect status
}

// ListenerTLS holds ListenHTTPS settings.
type ListenerTLS struct {
	Certs []*CertFile `json:"certs"` // first is the default, the rest SNI
	// Disable is the highest disabled protocol (SSLv2 ... TLSv1_3); it and
	// every lower one are off. NoTLS13 is zproxy's Disable TLSv1_3, which
	// turns off TLS 1.3 alone.
	Disable      string `json:"disable,omitempty"`
	NoTLS13      bool   `json:"no_tls13,omitempty"`
	Ciphers      string `json:"ciphers,omitempty"`
	CipherSuites string `json:"cipher_suites,omitempty"` // TLS 1.3
	// ECDHCurve is the key-exchange groups in preference order
	// (resolved: the listener's, else the global ECDHCurve).
	ECDHCurve        string    `json:"ecdh_curve,omitempty"`
	HonorCipherOrder bool      `json:"honor_cipher_order"`
	ClientCert       int       `json:"client_cert"`                 // 0..3
	ClientCertDepth  int       `json:"client_cert_depth,omitempty"` // default 9 when ClientCert > 0
	CAList           *FileData `json:"ca_list,omitempty"`
	VerifyList       *FileData `json:"verify_list,omitempty"`
	CRLList          *FileData `json:"crl_list,omitempty"`
	NoHTTPS11        int       `json:"no_https11"` // default 2
	// HTTP2 offers h2 by ALPN (lbd extension; default on in the Pound
	// dialect, off in zproxy's, which speaks HTTP/1.1 only).
	HTTP2         bool `json:"http2"`
	Renegotiation int  `json:"renegotiation"`
	// ACME is the listener's automatic certificates (nil: none).
	ACME *ListenerACME `json:"acme,omitempty"`
}

// HeaderRules are the request/response header edits of a listener or
// service. The engine applies removals first, then Set, then Add, as
// classic Pound and zproxy do. Header values are "Name: value".
type HeaderRules struct {
	// RequestAdd appends (zproxy AddHeader/AddRequestHeader).
	RequestAdd []string `json:"request_add,omitempty"`
	// RequestSet replaces a header of the same name (Pound 4 SetHeader and
	// its deprecated alias AddHeader).
	RequestSet []string `json:"request_set,omitempty"`
	// RequestRemove patterns match the whole header line.
	RequestRemove  []*Pattern      `json:"request_remove,omitempty"`
	ResponseAdd    []string        `json:"response_add,omitempty"`
	ResponseRemove []*Pattern      `json:"response_remove,omitempty"`
	Replace        []ReplaceHeader `json:"replace,omitempty"`
}

// ReplaceHeader is zproxy's ReplaceHeader Request|Response name match repl:
// in the first header whose name matches Name, the value's Match is
// replaced by Replacement ($1... expand).
type ReplaceHeader struct {
	Response    bool     `json:"response"`
	Name        *Pattern `json:"name"`
	Match       *Pattern `json:"match"`
	Replacement string   `json:"replacement"`
}

// ForwardedOn reports whether a HeaderOption set adds the X-Forwarded-*
// headers: nil is the default ("forwarded ssl"); otherwise the last of
// forwarded/all and no-forwarded/none wins.
func ForwardedOn(opts []string) bool {
	on := opts == nil
	for _, o := range opts {
		switch o {
		case "forwarded", "all":
			on = true
		case "no-forwarded", "none":
			on = false
		}
	}
	return on
}
