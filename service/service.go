// Package service holds lbd's runtime services: the compiled match
// conditions of each Service block, its balancer and session table, and the
// first-match Router of a listener.
//
// A Service is immutable once built except for its atomic enabled flag; the
// engine builds new ones on reload and swaps whole routers atomically.
package service

import (
	"lbd/cache"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync/atomic"

	"lbd/backend"
	"lbd/balancer"
	"lbd/config"
	"lbd/edgeauth"
	"lbd/http1"
	"lbd/internal/metrics"
	"lbd/routeindex"
	"lbd/rules"
	"lbd/session"
)

// Service is one Service block at runtime.
type Service struct {
	Name string
	Cfg  *config.Service
	// sel is the compiled conditions; ReqRules and RespRules the
	// service's request and response rules (Pound 4 Rewrite, SetHeader...).
	sel       *rules.Program
	ReqRules  *rules.Program
	RespRules *rules.Program
	// Env is the service's rule scope (constants, trusted proxies).
	Env *rules.Env
	// logMask has bit 1<<class set for each LogSuppress class.
	logMask uint8
	// mixedRedirect: Special is a Redirect that shares the requests with
	// the regular backends (UseSpecial).
	mixedRedirect bool

	enabled atomic.Bool
	// specials counts the requests the Special backend answered (the
	// control API shows them as its requests).
	specials atomic.Int64

	// Backends are the regular and Emergency backends in config order;
	// special backends (redirect, error, metrics, control, file,
	// success, acme) are in Special.
	Backends []*backend.Backend
	Special  *config.Backend
	// Root is the directory a file or acme backend serves: every name
	// is opened beneath it, so none can escape it.
	Root *os.Root
	Algo balancer.Algorithm
	// Listing is the order the control API shows and numbers backends
	// in, after Special: Backends plus Pound's matrix entries.
	Listing []Entry

	// Cache is the service's shared HTTP cache (nil: none; the proxy
	// then never calls package cache).
	Cache *cache.Cache

	// Sessions is nil when the service has no Session block; keys is
	// nil then too.
	Sessions *session.Table[*backend.Backend]
	keys     *sessionKeys

	// ALPN, for Protocol auto backends, is the protocol their TLS
	// handshakes chose (nil otherwise): HTTP/2 once it says h2.
	ALPN *backend.ALPNChoice
	// scriptName is the name Lua sees ("/name" for a global service).
	scriptName string
	// Lua is a LuaBackend's compiled call.
	Lua *rules.ScriptCall

	// Auth are the checks of the service's Authenticate (none: the
	// access stage is skipped).
	Auth []edgeauth.Checker

	// The flags share a word (issue 36: 10,000 services).
	// HTTP2: the service's backends speak HTTP/2 (config Protocol h2;
	// a service's backends share one protocol).
	HTTP2 bool
	// Global marks a top-level service (Lua sees its name as "/name").
	Global bool
	// respScripts says whether the response rules (the service's) call
	// Lua.
	respScripts bool
	// AuthForward says one of Auth is forward authentication, which
	// needs the exchange's details.
	AuthForward bool

	// Stats records the duration and status of every request the
	// service answered (lbd_service_* metrics). A reload that keeps the
	// service hands the previous Stats to the new Service, so the
	// counters survive it as the backends' do.
	Stats *metrics.Requests
}

// sessionKeys is how a service with sessions reads and sets their keys.
type sessionKeys struct {
	extractor session.Extractor
	// setCookie and cookieKeys serve COOKIEINSERT (see Learn).
	setCookie, cookieKeys map[*backend.Backend][]byte
}

// Entry is one backend of a service's Listing: a backend, or a matrix
// (a dynamic backend, Backend nil), or a backend that a matrix made.
type Entry struct {
	Backend *backend.Backend
	// Matrix is the matrix itself, or the one that made Backend.
	Matrix *config.Backend
	// Key names the matrix in the engine's dynamic state.
	Key string
	// Parent is the Listing index of the matrix that made Backend, -1
	// for a configured backend or a matrix.
	Parent int
}

// Options are what New needs beyond the config block.
type Options struct {
	Backends []*backend.Backend
	// Listing defaults to one entry per backend of Backends.
	Listing   []Entry
	Algo      balancer.Algorithm
	Root      *os.Root
	Sessions  *session.Table[*backend.Backend]
	Extractor session.Extractor
	// Env is the enclosing scope of the rules (the listener's, or the
	// configuration's for a global service); nil: an empty one.
	Env *rules.Env
	// Global marks a top-level service.
	Global bool
}

// New compiles a service from its config block.
func New(cfg *config.Service, o Options) (*Service, error) {
	env := o.Env
	if env == nil {
		var err error
		if env, err = rules.NewEnv(&config.Config{}); err != nil {
			return nil, err
		}
	}
	env = env.Scope(cfg.Rare().Constants, cfg.Rare().TrustedIP, cfg.Rare().ForwardedHeader)
	s := &Service{
		Name:     cfg.Name,
		Cfg:      cfg,
		Env:      env,
		Backends: o.Backends,
		Listing:  o.Listing,
		Algo:     o.Algo,
		Root:     o.Root,
		Sessions: o.Sessions,
		Global:   o.Global,
		Stats:    new(metrics.Requests),
	}
	for _, a := range cfg.Rare().Authenticate {
		s.Auth = append(s.Auth, a.Checker)
		s.AuthForward = s.AuthForward || a.Kind == "forward"
	}
	if s.Listing == nil {
		for _, b := range s.Backends {
			s.Listing = append(s.Listing, Entry{Backend: b, Parent: -1})
		}
	}
	for _, b := range cfg.Backends {
		if b.Kind != config.BackendRegular {
			s.Special = b
			break
		}
	}
	for _, b := range cfg.Backends {
		s.HTTP2 = s.HTTP2 || (b.Kind == config.BackendRegular && b.Rare().Protocol == config.ProtocolH2)
	}
	s.ALPN = backend.ShareALPN(s.Backends)
	// Pound balances a Redirect listed beside regular backends as one more
	// backend of its priority (it warns "service mixes regular and
	// redirect backends"); any other special backend stands alone.
	s.mixedRedirect = s.Special != nil && s.Special.Kind == config.BackendRedirect && len(s.Backends) > 0
	var err error
	if s.sel, err = env.CompileSelect(cfg.Conditions); err != nil {
		return nil, err
	}
	if s.ReqRules, err = env.CompileRewrite(cfg.Rare().Rewrites.Request); err != nil {
		return nil, err
	}
	if s.RespRules, err = env.CompileRewrite(cfg.Rare().Rewrites.Response); err != nil {
		return nil, err
	}
	s.respScripts = s.RespRules.HasScripts()
	s.scriptName = s.Name
	if s.Global && s.Name != "" {
		s.scriptName = "/" + s.Name
	}
	if s.Special != nil && s.Special.Kind == config.BackendLua {
		if s.Lua, err = env.CompileScript(s.Special.Rare().Lua); err != nil {
			return nil, err
		}
	}
	for _, c := range cfg.Rare().LogSuppress {
		s.logMask |= 1 << c
	}
	s.enabled.Store(!cfg.Disabled)
	if s.Sessions != nil {
		s.keys = &sessionKeys{extractor: o.Extractor}
		if o.Extractor.Type == session.CookieInsert {
			s.keys.cookieKeys = make(map[*backend.Backend][]byte, len(s.Backends))
			s.keys.setCookie = s.cookieLines()
		}
	}
	return s, nil
}

// UseSpecial reports whether this request goes to the special backend:
// always, unless it is a Redirect mixed with regular backends, which gets
// its priority's share of the priorities of the backends alive now (a
// weighted random pick, as Pound's balancer makes over all of them).
func (s *Service) UseSpecial() bool {
	if s.Special == nil || !s.mixedRedirect {
		return s.Special != nil
	}
	red := max(s.Special.Priority, 1)
	total := red
	for _, b := range s.Backends {
		if b.Available() {
			total += max(b.Priority(), 0)
		}
	}
	return rand.IntN(total) < red
}

// Enabled reports whether the operator has the service enabled.
func (s *Service) Enabled() bool { return s.enabled.Load() }

// SetEnabled enables or disables the service for new requests.
func (s *Service) SetEnabled(on bool) { s.enabled.Store(on) }

// Matches reports whether the request in st is for this service; an
// error (a StringMatch expansion that failed) is Pound's 500.
func (s *Service) Matches(st *rules.State) (bool, error) {
	return s.sel.Select(st)
}

// Pick chooses the backend for req: a live pinned session backend first,
// then the balancer. key is the request's session key (nil when none); the
// caller stores the session after a successful exchange via Pin.
func (s *Service) Pick(key []byte) *backend.Backend {
	if s.Sessions != nil && key != nil {
		if b, ok := s.Sessions.Lookup(key); ok && b.Available() {
			return b
		}
	}
	if s.Algo == nil {
		return nil
	}
	return s.Algo.Pick()
}

// minPicker is a balancer that can start at a balancer group.
type minPicker interface {
	PickMin(min int) *backend.Backend
}

// PickMin is Pick restricted to the balancer groups of weight min and
// above (a Lua script's http.balancer), sessions included.
func (s *Service) PickMin(key []byte, min int) *backend.Backend {
	if min <= 0 {
		return s.Pick(key)
	}
	if s.Sessions != nil && key != nil {
		if b, ok := s.Sessions.Lookup(key); ok && b.Available() && balancer.Tier(b) >= min {
			return b
		}
	}
	if p, ok := s.Algo.(minPicker); ok {
		return p.PickMin(min)
	}
	return nil
}

// ScriptName is the service's name as Lua's http.service.name gives it.
func (s *Service) ScriptName() string { return s.scriptName }

// ScriptLocus is where the service is defined (http.service.locus).
func (s *Service) ScriptLocus() string { return s.Cfg.Pos.String() }

// RespScripts reports whether the service's response rules call Lua.
func (s *Service) RespScripts() bool { return s.respScripts }

// SessionKey extracts the session key of req (nil when the service has no
// sessions or the request carries no key). scratch backs IP keys.
func (s *Service) SessionKey(req *http1.Request, client netip.Addr, scratch []byte) []byte {
	if s.Sessions == nil {
		return nil
	}
	return s.keys.extractor.RequestKey(req, client, scratch)
}

// Pin records that key is served by b. It only writes to the table when
// the session is new or moved, so a steady session costs a lookup only.
func (s *Service) Pin(key []byte, b *backend.Backend) {
	if s.Sessions == nil || len(key) == 0 {
		return
	}
	if cur, ok := s.Sessions.Lookup(key); ok && cur == b {
		return
	}
	s.Sessions.Store(key, b)
}

// Router routes a request to the first matching enabled service: the
// listener's own services first, then the global ones.
type Router struct {
	Services []*Service
	// index narrows the services Route tries (package routeindex); nil
	// tries them all, as a small router does.
	index *routeindex.Index
}

// IndexMin is the number of services from which NewRouter builds a
// routing index: below it, trying the services in turn costs about as
// much as a lookup.
var IndexMin = 16

// NewRouter is the router of services, in order, with its routing index
// when there are IndexMin services or more and some can be indexed.
func NewRouter(services []*Service) Router {
	r := Router{Services: services}
	if len(services) < IndexMin {
		return r
	}
	conds := make([][]*config.Condition, len(services))
	for i, s := range services {
		conds[i] = s.Cfg.Conditions
	}
	if ix := routeindex.Build(conds); ix.Indexed() > 0 {
		r.index = ix
	}
	return r
}

// Indexed reports whether the router has a routing index.
func (r *Router) Indexed() bool { return r.index != nil }

// Route returns the service for the request in st, or nil (Pound answers
// 503). A matching FallThrough service applies its request rules and the
// search goes on, so later services see its changes.
func (r *Router) Route(st *rules.State) (*Service, error) {
	if r.index != nil {
		return r.routeIndexed(st)
	}
	for _, s := range r.Services {
		if done, _, err := r.try(s, st); done || err != nil {
			return r.chosen(s, done), err
		}
	}
	return nil, nil
}

// routeIndexed is Route over the services the index offers, which are
// the ones that can match, in the same order. A FallThrough service's
// rules may change what the index looked at, so it looks again after.
func (r *Router) routeIndexed(st *rules.State) (*Service, error) {
	var it routeindex.Iter
	r.lookup(st, 0, &it)
	for i := it.Next(); i >= 0; i = it.Next() {
		s := r.Services[i]
		done, rewrote, err := r.try(s, st)
		if done || err != nil {
			return r.chosen(s, done), err
		}
		if rewrote {
			r.lookup(st, i+1, &it)
		}
	}
	return nil, nil
}

func (r *Router) chosen(s *Service, done bool) *Service {
	if done {
		return s
	}
	return nil
}

// try runs service s's conditions: done when it takes the request. A
// FallThrough service that matches is not done: it applies its request
// rules (rewrote: it had some) and the search goes on.
func (r *Router) try(s *Service, st *rules.State) (done, rewrote bool, err error) {
	if !s.Enabled() {
		return false, false, nil
	}
	ok, err := s.sel.Select(st)
	if err != nil || !ok {
		return false, false, err
	}
	st.LogSuppress |= s.logMask
	if !s.Cfg.FallThrough {
		return true, false, nil
	}
	if s.ReqRules.Empty() {
		return false, false, nil
	}
	return false, true, s.ReqRules.Rewrite(st, &st.Req)
}

// lookup points it at the services from `from` on that the request in
// st may match.
func (r *Router) lookup(st *rules.State, from int, it *routeindex.Iter) {
	host, ok := st.Req.Header("Host")
	q := routeindex.Request{Host: host, HasHost: ok, URL: st.Req.URL, Lines: st.Req.Lines}
	r.index.Lookup(&q, from, it)
}

// FindService is the first service of the listener (or, global, of the
// top level) named name: where a Lua script resends a request.
func (r *Router) FindService(name string, global bool) (rules.ServiceRef, bool) {
	for _, s := range r.Services {
		if s.Global == global && s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// LoadRequest fills st.Req from a parsed request whose head was read
// into head: the header lines are the received ones, not copies.
func LoadRequest(st *rules.State, req *http1.Request, head []byte) {
	st.Req.Method, st.Req.URL = req.Method, req.Target
	for i := range req.Headers {
		st.Req.Lines = append(st.Req.Lines, HeaderLine(head, &req.Headers[i]))
	}
}

// CountSpecial records a request answered by the Special backend.
func (s *Service) CountSpecial() { s.specials.Add(1) }

// SpecialRequests is how many requests the Special backend answered.
func (s *Service) SpecialRequests() int64 { return s.specials.Load() }
