package config

import (
	"net"
	"strconv"
)

// finish runs once the whole tree is read: it resolves what depends on
// values that may appear anywhere in the file (global timeouts, named
// backends, HeaderOption) and checks cross-statement rules.
func (b *builder) finish() {
	c := b.cfg
	for _, be := range c.NamedBackends {
		b.inheritTimeouts(be, false)
	}
	b.resolveRefs()
	for _, l := range c.Listeners {
		b.finishListener(l)
		b.finishServices(l.Services)
	}
	b.finishServices(c.Services)
	b.finishACME()
}

// finishServices completes one list of services and checks that their
// names are unique in it.
func (b *builder) finishServices(list []*Service) {
	names := make(map[string]bool, len(list))
	for _, s := range list {
		if s.Name != "" {
			if names[s.Name] {
				b.errorf(b.svcs[s].nameSpan, "service name is not unique")
			}
			names[s.Name] = true
		}
		b.finishService(s)
	}
}

func (b *builder) finishListener(l *Listener) {
	ex := b.lst[l]
	if !ex.clientSet {
		l.Client = b.cfg.Timeouts.Client
	}
	if !ex.lineSet {
		l.LineBuffer = b.cfg.LineBufferSize
	}
	if l.MaxURI > l.LineBuffer {
		l.MaxURI = l.LineBuffer // Pound clamps MaxURI to the line buffer
	}
	l.HeaderOption = append([]string{}, b.cfg.HeaderOption...)
	for _, ops := range ex.hdrOps {
		l.HeaderOption = b.headerOptions(l.HeaderOption, ops)
	}
	b.finishTLS(l)
}

// resolveRefs replaces every reference by a copy of its named backend,
// keeping the reference's position and its Priority/Disabled overrides.
func (b *builder) resolveRefs() {
	for _, ref := range b.refs {
		nb, ok := b.named[ref.Name]
		if !ok {
			b.errorf(ref.Pos.Span(), "named backend %s is not declared", ref.Name)
			continue
		}
		ex := b.bes[ref]
		prio, dis, pos, emerg := ref.Priority, ref.Disabled, ref.Pos, ref.Emergency
		*ref = *nb
		ref.Pos, ref.Emergency = pos, emerg
		if ex.prioSet {
			ref.Priority = prio
		}
		if ex.disabledSet {
			ref.Disabled = dis
		}
	}
}

// inheritTimeouts fills the timeouts a backend did not set: the global
// values, or Pound's fixed 120 s for Emergency backends.
func (b *builder) inheritTimeouts(be *Backend, emergency bool) {
	ex := b.bes[be]
	if ex == nil || ex.ref {
		return
	}
	t := b.cfg.Timeouts
	if emergency {
		t = Timeouts{TimeOut: Seconds(120), ConnTO: Seconds(120), WSTime: Seconds(120)}
	}
	if !ex.timeoutSet {
		be.TimeOut = t.TimeOut
	}
	if !ex.conntoSet {
		be.ConnTO = t.ConnTO
	}
	if !ex.wsSet {
		be.WSTimeOut = t.WSTime
	}
}

func (b *builder) finishService(s *Service) {
	// A service's own Balancer or RoutingPolicy wins over the file's
	// dialect and the global Balancer; exactly one of the two is set
	// from here on.
	if s.Balancer == "" && s.RoutingPolicy == "" {
		s.Balancer = b.cfg.Balancer
	}
	b.zproxyPriorities(s)
	for _, be := range s.Backends {
		b.inheritTimeouts(be, false)
	}
	for _, be := range s.Rare().Emergency {
		b.inheritTimeouts(be, true)
	}
	b.checkDuplicates(s.Backends)
	b.checkDuplicates(s.Rare().Emergency)
	b.checkBackendMix(s)
	b.checkHTTP2Backends(s)
}

// backendKey identifies a regular backend's target.
func backendKey(be *Backend) string {
	if be.Unix {
		return be.Address
	}
	return net.JoinHostPort(be.Address, strconv.Itoa(be.Port))
}

// checkDuplicates rejects the same address:port twice in one service, as
// zproxy does. Pound accepts it (the address gets two shares), and so
// does lbd for a Pound file.
func (b *builder) checkDuplicates(list []*Backend) {
	if b.cfg.Dialect == DialectPound {
		return
	}
	seen := make(map[string]*Backend, len(list))
	for _, be := range list {
		if be.Kind != BackendRegular || be.Address == "" {
			continue
		}
		k := backendKey(be)
		if first, ok := seen[k]; ok {
			b.errorf(be.Pos.Span(), "duplicate backend %s", k)
			b.followf(first.Pos.Span(), "original definition was here")
			continue
		}
		seen[k] = be
	}
}

// checkBackendMix applies Pound 4's rules on special backends
// (service_finalize): at most one error/metrics/control backend, not mixed
// with others; redirects mixed with backends only warn.
func (b *builder) checkBackendMix(s *Service) {
	span := s.Pos.Span()
	if len(s.Backends)+len(s.Rare().Emergency) == 0 {
		// zproxy answers 503 "no backend" and its tests rely on such
		// services, so only Pound's dialect warns; after an error the
		// backend may simply have been rejected, so stay quiet then.
		if b.cfg.Dialect == DialectPound && !b.hasErrors() {
			b.warnf(span, "no backends defined")
		}
		return
	}
	if len(s.Backends) < 2 {
		return
	}
	kinds := map[BackendKind]int{}
	for _, be := range s.Backends {
		kinds[be.Kind]++
	}
	special := len(s.Backends) - kinds[BackendRegular] - kinds[BackendRedirect]
	switch {
	case special > 0 && len(kinds) == 1:
		b.errorf(span, "multiple backends of this type are not allowed")
	case special > 0:
		b.errorf(span, "service mixes backends of different types")
	case kinds[BackendRedirect] > 0 && kinds[BackendRegular] > 0:
		b.warnf(span, "service mixes regular and redirect backends")
		b.notef(span, "see section \"DEPRECATED FEATURES\" in pound(8)")
	case kinds[BackendRedirect] > 1:
		b.warnf(span, "service uses multiple redirect backends")
		b.notef(span, "see section \"DEPRECATED FEATURES\" in pound(8)")
	}
}

// hasErrors reports whether an error has been diagnosed so far.
func (b *builder) hasErrors() bool {
	for _, d := range b.diags {
		if !d.Warning {
			return true
		}
	}
	return false
}

// zproxyPriorities gives the backends of a RoutingPolicy service in a
// Pound file zproxy's meaning of Priority: a tier from 1 to 9, 1 when
// unset (Pound's default of 5 would put every backend above the
// service's tier 1, leaving none eligible).
func (b *builder) zproxyPriorities(s *Service) {
	if s.RoutingPolicy == "" || b.cfg.Dialect == DialectZproxy {
		return
	}
	for _, list := range [][]*Backend{s.Backends, s.Rare().Emergency} {
		for _, be := range list {
			if be.Kind != BackendRegular {
				continue
			}
			if !b.prioritySet(be) {
				be.Priority = 1
				continue
			}
			if be.Priority < 1 || be.Priority > 9 {
				b.errorf(be.Pos.Span(), "in a RoutingPolicy service Priority is a tier from 1 to 9, not %d", be.Priority)
			}
		}
	}
}

// prioritySet reports whether the file gave be a Priority, directly or
// on the named backend it refers to.
func (b *builder) prioritySet(be *Backend) bool {
	ex := b.bes[be]
	if ex == nil {
		return false
	}
	if ex.prioSet {
		return true
	}
	if nb, ok := b.named[be.Name]; ok && ex.ref {
		if nx := b.bes[nb]; nx != nil {
			return nx.prioSet
		}
	}
	return false
}
