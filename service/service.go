// Package service holds lbd's runtime services: the compiled match
// conditions of each Service block, its balancer and session table, and the
// first-match Router of a listener.
//
// A Service is immutable once built except for its atomic enabled flag; the
// engine builds new ones on reload and swaps whole routers atomically.
package service

import (
	"net/netip"
	"sync/atomic"

	"lbd/backend"
	"lbd/balancer"
	"lbd/config"
	"lbd/http1"
	"lbd/session"
)

// Service is one Service block at runtime.
type Service struct {
	Name  string
	Cfg   *config.Service
	match matcher

	enabled atomic.Bool

	// Backends are the regular and Emergency backends in config order;
	// special backends (redirect, error, metrics, control) are in Special.
	Backends []*backend.Backend
	Special  *config.Backend
	Algo     balancer.Algorithm

	// Sessions is nil when the service has no Session block.
	Sessions  *session.Table[*backend.Backend]
	Extractor session.Extractor
	// setCookie and cookieKeys serve COOKIEINSERT (see Learn).
	setCookie  map[*backend.Backend][]byte
	cookieKeys map[*backend.Backend][]byte
}

// Options are what New needs beyond the config block.
type Options struct {
	Backends  []*backend.Backend
	Algo      balancer.Algorithm
	Sessions  *session.Table[*backend.Backend]
	Extractor session.Extractor
}

// New compiles a service from its config block.
func New(cfg *config.Service, o Options) *Service {
	s := &Service{
		Name:      cfg.Name,
		Cfg:       cfg,
		match:     compile(cfg),
		Backends:  o.Backends,
		Algo:      o.Algo,
		Sessions:  o.Sessions,
		Extractor: o.Extractor,
	}
	for _, b := range cfg.Backends {
		if b.Kind != config.BackendRegular {
			s.Special = b
			break
		}
	}
	s.enabled.Store(!cfg.Disabled)
	if s.Sessions != nil && s.Extractor.Type == session.CookieInsert {
		s.cookieKeys = make(map[*backend.Backend][]byte, len(s.Backends))
		s.setCookie = s.cookieLines()
	}
	return s
}

// Enabled reports whether the operator has the service enabled.
func (s *Service) Enabled() bool { return s.enabled.Load() }

// SetEnabled enables or disables the service for new requests.
func (s *Service) SetEnabled(on bool) { s.enabled.Store(on) }

// Matches reports whether req is for this service. head is the buffer the
// request head was parsed from (header lines are matched as received).
func (s *Service) Matches(req *http1.Request, head []byte) bool {
	return s.match.matches(req, head)
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

// SessionKey extracts the session key of req (nil when the service has no
// sessions or the request carries no key). scratch backs IP keys.
func (s *Service) SessionKey(req *http1.Request, client netip.Addr, scratch []byte) []byte {
	if s.Sessions == nil {
		return nil
	}
	return s.Extractor.RequestKey(req, client, scratch)
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
}

// Route returns the service for req, or nil (Pound answers 503).
func (r *Router) Route(req *http1.Request, head []byte) *Service {
	for _, s := range r.Services {
		if s.Enabled() && s.Matches(req, head) {
			return s
		}
	}
	return nil
}
