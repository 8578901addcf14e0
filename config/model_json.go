package config

import "encoding/json"

// backendJSON is a Backend as the configuration dump writes it: every
// field, rare or not, in one object, in the order of the dump's golden
// files.
type backendJSON struct {
	Pos             Locus       `json:"pos"`
	Kind            BackendKind `json:"kind"`
	Name            string      `json:"name,omitempty"`
	Address         string      `json:"address,omitempty"`
	Port            int         `json:"port,omitempty"`
	Unix            bool        `json:"unix,omitempty"`
	Priority        int         `json:"priority"`
	Weight          int         `json:"weight"`
	ConnLimit       int         `json:"conn_limit,omitempty"`
	NfMark          int         `json:"nfmark,omitempty"`
	Disabled        bool        `json:"disabled"`
	Emergency       bool        `json:"emergency,omitempty"`
	HAPort          *HAPort     `json:"haport,omitempty"`
	Resolve         string      `json:"resolve,omitempty"`
	Family          string      `json:"family,omitempty"`
	IgnoreSRVWeight bool        `json:"ignore_srv_weight,omitempty"`
	OverrideTTL     Duration    `json:"override_ttl,omitempty"`
	RetryInterval   Duration    `json:"retry_interval,omitempty"`
	Unresolved      bool        `json:"unresolved,omitempty"`
	TimeOut         Duration    `json:"timeout"`
	ConnTO          Duration    `json:"connto"`
	WSTimeOut       Duration    `json:"ws_timeout"`
	HTTPS           bool        `json:"https"`
	ServerName      string      `json:"server_name,omitempty"`
	Cert            *CertFile   `json:"cert,omitempty"`
	Ciphers         string      `json:"ciphers,omitempty"`
	CipherSuites    string      `json:"cipher_suites,omitempty"`
	ECDHCurve       string      `json:"ecdh_curve,omitempty"`
	Disable         string      `json:"disable,omitempty"`
	NoTLS13         bool        `json:"no_tls13,omitempty"`
	VerifyList      *FileData   `json:"verify_list,omitempty"`
	Protocol        string      `json:"protocol,omitempty"`
	GRPCHealth      *GRPCHealth `json:"grpc_health,omitempty"`
	Redirect        *Redirect   `json:"redirect,omitempty"`
	Status          int         `json:"status,omitempty"`
	Page            *ErrorPage  `json:"page,omitempty"`
	Dir             string      `json:"dir,omitempty"`
	Lua             *LuaCall    `json:"lua,omitempty"`
}

// MarshalJSON writes the backend and its rare settings as one object.
func (b *Backend) MarshalJSON() ([]byte, error) {
	r := b.Rare()
	return json.Marshal(backendJSON{
		Pos: b.Pos, Kind: b.Kind, Name: b.Name, Address: b.Address, Port: b.Port, Unix: b.Unix,
		Priority: b.Priority, Weight: b.Weight, ConnLimit: b.ConnLimit, NfMark: r.NfMark,
		Disabled: b.Disabled, Emergency: b.Emergency, HAPort: r.HAPort,
		Resolve: r.Resolve, Family: r.Family, IgnoreSRVWeight: r.IgnoreSRVWeight,
		OverrideTTL: r.OverrideTTL, RetryInterval: r.RetryInterval, Unresolved: b.Unresolved,
		TimeOut: b.TimeOut, ConnTO: b.ConnTO, WSTimeOut: b.WSTimeOut,
		HTTPS: b.HTTPS, ServerName: r.ServerName, Cert: r.Cert, Ciphers: r.Ciphers,
		CipherSuites: r.CipherSuites, ECDHCurve: r.ECDHCurve, Disable: r.Disable,
		NoTLS13: r.NoTLS13, VerifyList: r.VerifyList, Protocol: r.Protocol,
		GRPCHealth: r.GRPCHealth, Redirect: r.Redirect, Status: r.Status, Page: r.Page,
		Dir: r.Dir, Lua: r.Lua,
	})
}

// serviceJSON is a Service as the configuration dump writes it, rare
// settings included, in the order of the dump's golden files.
type serviceJSON struct {
	Pos             Locus             `json:"pos"`
	Name            string            `json:"name,omitempty"`
	Disabled        bool              `json:"disabled"`
	Conditions      []*Condition      `json:"conditions,omitempty"`
	Authenticate    []*Authn          `json:"authenticate,omitempty"`
	IgnoreCase      bool              `json:"ignore_case"`
	Balancer        string            `json:"balancer,omitempty"`
	RoutingPolicy   string            `json:"routing_policy,omitempty"`
	Headers         HeaderRules       `json:"headers"`
	Rewrites        Rewrites          `json:"rewrites,omitzero"`
	FallThrough     bool              `json:"fall_through,omitempty"`
	RewriteErrors   *bool             `json:"rewrite_errors,omitempty"`
	LogSuppress     []int             `json:"log_suppress,omitempty"`
	Constants       map[string]string `json:"constants,omitempty"`
	TrustedIP       *ACL              `json:"trusted_ip,omitempty"`
	ForwardedHeader string            `json:"forwarded_header,omitempty"`
	RewriteURL      []RewriteURL      `json:"rewrite_url,omitempty"`
	RewriteLoc      *int              `json:"rewrite_location,omitempty"`
	ContentCapture  int64             `json:"content_capture,omitempty"`
	STS             int               `json:"strict_transport_security,omitempty"`
	Session         *Session          `json:"session,omitempty"`
	Backends        []*Backend        `json:"backends"`
	Emergency       []*Backend        `json:"emergency,omitempty"`
	Cache           *Cache            `json:"cache,omitempty"`
}

// MarshalJSON writes the service and its rare settings as one object.
func (s *Service) MarshalJSON() ([]byte, error) {
	r := s.Rare()
	return json.Marshal(serviceJSON{
		Pos: s.Pos, Name: s.Name, Disabled: s.Disabled, Conditions: s.Conditions,
		Authenticate: r.Authenticate, IgnoreCase: s.IgnoreCase, Balancer: s.Balancer,
		RoutingPolicy: s.RoutingPolicy, Headers: r.Headers, Rewrites: r.Rewrites,
		FallThrough: s.FallThrough, RewriteErrors: r.RewriteErrors, LogSuppress: r.LogSuppress,
		Constants: r.Constants, TrustedIP: r.TrustedIP, ForwardedHeader: r.ForwardedHeader,
		RewriteURL: r.RewriteURL, RewriteLoc: r.RewriteLoc, ContentCapture: r.ContentCapture,
		STS: r.STS, Session: s.Session, Backends: s.Backends, Emergency: r.Emergency, Cache: r.Cache,
	})
}

// conditionJSON is a Condition as the configuration dump writes it.
type conditionJSON struct {
	Kind      CondKind      `json:"kind"`
	Not       bool          `json:"not,omitempty"`
	Name      string        `json:"name,omitempty"`
	Pattern   *Pattern      `json:"pattern,omitempty"`
	Or        bool          `json:"or,omitempty"`
	Sub       []*Condition  `json:"sub,omitempty"`
	Tag       string        `json:"tag,omitempty"`
	Decode    bool          `json:"decode,omitempty"`
	ACL       *ACL          `json:"acl,omitempty"`
	Forwarded bool          `json:"forwarded,omitempty"`
	Subject   string        `json:"subject,omitempty"`
	Target    CondKind      `json:"target,omitempty"`
	List      *PatternList  `json:"list,omitempty"`
	Auth      *PasswordFile `json:"basic_auth,omitempty"`
	TBF       *TBF          `json:"tbf,omitempty"`
	Lua       *LuaCall      `json:"lua,omitempty"`
	Authn     *Authn        `json:"authn,omitempty"`
}

// MarshalJSON writes the condition and its rare settings as one object.
func (c *Condition) MarshalJSON() ([]byte, error) {
	r := c.Rare()
	return json.Marshal(conditionJSON{
		Kind: c.Kind, Not: c.Not, Name: c.Name, Pattern: c.Pattern, Or: c.Or, Sub: c.Sub,
		Tag: r.Tag, Decode: c.Decode, ACL: r.ACL, Forwarded: c.Forwarded, Subject: r.Subject,
		Target: r.Target, List: r.List, Auth: r.Auth, TBF: r.TBF, Lua: r.Lua, Authn: r.Authn,
	})
}
