package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/balancer"
	"lbd/config"
	"lbd/handoff"
	"lbd/http1"
	"lbd/internal/msglog"
	"lbd/lua"
	"lbd/proxy"
	"lbd/rules"
	"lbd/service"
	"lbd/session"
)

// graph is one built configuration: the runtime objects the data path
// reads. A reload builds a new graph, reusing backends and session tables
// of the previous one by identity, and swaps it in.
type graph struct {
	cfg       *config.Config
	listeners []*proxy.Listener
	services  [][]*service.Service // per listener: its own services
	global    []*service.Service
	backends  map[string]*backend.Backend
	// matrices are the dynamic backends, by matrixKey: the dynamic
	// state follows this set after every swap.
	matrices map[string]*config.Backend
	// lua is the configuration's Lua states (nil without Lua); a graph
	// rebuilt from the same configuration shares them.
	lua    *lua.Runtime
	detach []func()
	// dashboard: some service has a Dashboard or Control backend, which
	// serves the graphs the engine's sampler feeds (HistoryWanted).
	dashboard bool
}

// builder carries what building one graph needs.
type builder struct {
	cfg  *config.Config
	prev *graph
	next *graph
	// replaced maps a previous backend whose settings changed to the new
	// object that takes its place (its sessions move to it).
	replaced map[*backend.Backend]*backend.Backend
	// env is the configuration's rule scope (detached conditions,
	// constants, trusted proxies); listeners and services narrow it.
	env  *rules.Env
	log  logrus.FieldLogger
	dyn  *dynamic // what matrices expand to
	opts buildOptions
	// addrs are the backends' address strings, made once per address.
	addrs map[hostPort]backendAddress
	// lnames are the listeners' names in messages (listenerName).
	lnames []string
}

// buildOptions say what a build takes from the running engine besides
// what every rebuild carries over.
type buildOptions struct {
	// settings are the Priority, Weight and ConnLimit values the control
	// API set, by backend key: they win over the configuration's, so a
	// rebuild for another reason keeps them.
	settings map[string]handoff.BackendSettings
	// keepServices carries each service's enabled flag over by identity,
	// for a rebuild of the running configuration (a runtime change, DNS);
	// a reload of the file sets them as the file says.
	keepServices bool
	// events is the timeline the backends' down and up go to.
	events *adminapi.Events
}

// configBackends counts the backends cfg configures: the size of the
// graph's backend map, which grew through a dozen rehashes to 20,000
// backends at start and at each reload (issue 36). Matrices add theirs.
func configBackends(cfg *config.Config) int {
	n := 0
	for _, s := range cfg.Services {
		n += len(s.Backends)
	}
	for _, l := range cfg.Listeners {
		for _, s := range l.Services {
			n += len(s.Backends)
		}
	}
	return n
}

// build makes the graph for cfg, reusing state of prev (nil at start),
// with the matrices expanded as dyn has them now. On error nothing of
// prev changes and the half-built graph is released.
func build(cfg *config.Config, prev *graph, log logrus.FieldLogger, dyn *dynamic, opts buildOptions) (*graph, error) {
	b := &builder{cfg: cfg, prev: prev, log: log, dyn: dyn, opts: opts,
		next: &graph{cfg: cfg, backends: make(map[string]*backend.Backend, configBackends(cfg)),
			matrices: map[string]*config.Backend{}},
		replaced: map[*backend.Backend]*backend.Backend{}}
	fail := func(err error) (*graph, error) {
		for _, d := range b.next.detach {
			d()
		}
		return nil, err
	}
	rt, err := b.luaRuntime()
	if err != nil {
		return fail(err)
	}
	var scripts rules.Scripts
	if rt != nil {
		b.next.lua, scripts = rt, rt
		b.next.detach = append(b.next.detach, rt.Unref)
	}
	env, err := rules.NewEnvScripts(cfg, scripts)
	if err != nil {
		return fail(err)
	}
	b.env = env
	for i, s := range cfg.Services {
		svc, err := b.service("g", i, s, env)
		if err != nil {
			return fail(err)
		}
		b.next.global = append(b.next.global, svc)
	}
	for li, l := range cfg.Listeners {
		var own []*service.Service
		lenv := env.Scope(l.Constants, l.TrustedIP, l.ForwardedHeader)
		for si, s := range l.Services {
			svc, err := b.service("l"+strconv.Itoa(li), si, s, lenv)
			if err != nil {
				return fail(err)
			}
			own = append(own, svc)
		}
		b.next.services = append(b.next.services, own)
		st, err := b.listener(l, own, lenv)
		if err != nil {
			return fail(err)
		}
		b.next.listeners = append(b.next.listeners, st)
	}
	for _, list := range append(b.next.services, b.next.global) {
		for _, s := range list {
			b.next.dashboard = b.next.dashboard || (s.Special != nil && (s.Special.Kind == config.BackendDashboard || s.Special.Kind == config.BackendControl))
		}
	}
	fw, err := watchFiles(cfg.Watched, log)
	if err != nil {
		return fail(fmt.Errorf("-filewatch: %w", err))
	}
	if fw != nil {
		b.next.detach = append(b.next.detach, fw.Close)
	}
	setCacheMemoryLimit(b.next)
	return b.next, nil
}

// luaRuntime loads the configuration's Lua sources, or shares the states
// of the previous graph when it was built from the same configuration
// (a DNS change rebuilds the graph; it must not reload every script).
func (b *builder) luaRuntime() (*lua.Runtime, error) {
	if b.prev != nil && b.prev.cfg == b.cfg && b.prev.lua != nil {
		b.prev.lua.Ref()
		return b.prev.lua, nil
	}
	return lua.New(b.cfg, lua.Options{Threads: b.cfg.Threads, Wait: time.Duration(b.cfg.Timeouts.TimeOut), Log: b.log})
}

// algorithm is the balancing a service asked for: a RoutingPolicy gives
// zproxy's algorithm and reading of Priority (a tier) and Weight, a
// Balancer Pound's (Priority is the weight), whatever the file's dialect.
func algorithm(s *config.Service) (balancer.Kind, balancer.Mode, error) {
	kind, err := balancer.ParseKind(s.Balancer, s.RoutingPolicy)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", s.Pos, err)
	}
	if s.RoutingPolicy != "" {
		return kind, balancer.ZproxyMode, nil
	}
	return kind, balancer.PoundMode, nil
}

func (b *builder) service(scope string, idx int, s *config.Service, env *rules.Env) (*service.Service, error) {
	entries, bes := b.layout(scope, idx, s)
	kind, mode, err := algorithm(s)
	if err != nil {
		return nil, err
	}
	algo := balancer.New(kind, bes, balancer.WithMode(mode))
	b.next.detach = append(b.next.detach, algo.Close)
	o := service.Options{Backends: bes, Listing: entries, Algo: algo, Env: env, Global: scope == "g"}
	if o.Root, err = serviceRoot(s); err != nil {
		return nil, err
	}
	if s.Session != nil && s.Session.Type != config.SessionNone {
		t, err := session.ParseType(string(s.Session.Type))
		if err != nil { // config holds only the names session knows
			return nil, fmt.Errorf("%s: %w", s.Pos, err)
		}
		o.Sessions, o.Extractor = b.sessions(scope, idx, s, t, bes)
	}
	svc, err := service.New(s, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Pos, err)
	}
	old := b.prev.findService(scope, idx, s.Name)
	if svc.Cache, err = serviceCache(old, s); err != nil {
		return nil, err
	}
	if old != nil {
		// The same service (by position and name) keeps counting.
		svc.Stats = old.Stats
		if old.Cfg == s || b.opts.keepServices {
			// The running configuration rebuilt (DNS changes, log level,
			// backends added or removed): what the operator set stays.
			svc.SetEnabled(old.Enabled())
		}
	}
	return svc, nil
}

// serviceRoot opens the directory of a SendFile or ACME backend. It is
// not closed on reload: requests in flight may still open files in it,
// and the garbage collector closes it once the old graph is gone.
func serviceRoot(s *config.Service) (*os.Root, error) {
	for _, cb := range s.Backends {
		if cb.Kind == config.BackendFile || cb.Kind == config.BackendACME {
			r, err := os.OpenRoot(cb.Rare().Dir)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cb.Pos, err)
			}
			return r, nil
		}
	}
	return nil, nil
}

// sessions returns the service's session table: the previous one when the
// service's session settings did not change (sessions survive reloads),
// else a new one.
func (b *builder) sessions(scope string, idx int, s *config.Service, t session.Type, bes []*backend.Backend) (*session.Table[*backend.Backend], session.Extractor) {
	ex := session.Extractor{Type: t, ID: []byte(s.Session.ID)}
	if old := b.prev.findService(scope, idx, s.Name); old != nil && old.Sessions != nil &&
		sameSession(old.Cfg.Session, s.Session) {
		// Sessions of backends that left the service disappear; the
		// others keep pointing at the same (reused) backend objects.
		keep := make(map[*backend.Backend]bool, len(bes))
		for _, be := range bes {
			keep[be] = true
		}
		old.Sessions.Remap(func(be *backend.Backend) (*backend.Backend, bool) {
			if nb, ok := b.replaced[be]; ok {
				be = nb
			}
			return be, keep[be]
		})
		return old.Sessions, ex
	}
	return session.NewTable[*backend.Backend](time.Duration(s.Session.TTL), s.Session.Max, time.Now), ex
}

// sameSession compares what defines a session table (not its position
// in the file, which moves when lines are added above it).
func sameSession(a, b *config.Session) bool {
	return a != nil && b != nil && a.Type == b.Type && a.TTL == b.TTL &&
		a.ID == b.ID && a.Path == b.Path && a.Domain == b.Domain && a.Max == b.Max
}

func (g *graph) findService(scope string, idx int, name string) *service.Service {
	if g == nil {
		return nil
	}
	var list []*service.Service
	if scope == "g" {
		list = g.global
	} else if li, err := strconv.Atoi(scope[1:]); err == nil && li < len(g.services) {
		list = g.services[li]
	}
	if idx < len(list) && list[idx].Name == name {
		return list[idx]
	}
	return nil
}

// backend returns the backend object for key; src names its service
// and listener in its messages.
func (b *builder) backend(key string, cb *config.Backend, group int, src *serviceSource) *backend.Backend {
	if set, ok := b.opts.settings[key]; ok {
		cb = withSettings(cb, set)
	}
	var old *backend.Backend
	if b.prev != nil {
		old = b.prev.backends[key]
	}
	if old != nil && sameBackend(old, cb, group) {
		b.next.backends[key] = old
		return old
	}
	o := backendOptions(cb, b.address(cb))
	o.Group = group
	// Dead and resurrected messages say which backend and where the
	// file defines it.
	o.Logger = newBackendLog(src, o.Address, cb.Pos)
	be := backend.New(o)
	switch {
	case old != nil:
		// Same backend, new settings: keep what the operator and the
		// health checks decided, and its sessions (see sessions).
		be.SetEnabled(old.Enabled())
		be.SetAlive(old.Alive(), "state carried over from the previous configuration")
		b.replaced[old] = be
	case cb.Unresolved:
		be.SetAlive(false, "host name does not resolve")
	}
	b.next.backends[key] = be
	return be
}

// sameBackend tells whether a backend's settings allow reusing its state.
func sameBackend(old *backend.Backend, cb *config.Backend, group int) bool {
	return old.Priority() == cb.Priority && old.Weight() == max(cb.Weight, 1) &&
		old.ConnLimit() == cb.ConnLimit && old.Group() == group &&
		old.TimeOut() == time.Duration(cb.TimeOut) &&
		old.ConnTO() == time.Duration(cb.ConnTO) &&
		old.WSTimeOut() == time.Duration(cb.WSTimeOut)
}

func backendOptions(cb *config.Backend, addr backendAddress) backend.Options {
	o := backend.Options{
		Address:   addr.dial,
		Priority:  cb.Priority,
		Weight:    cb.Weight,
		ConnLimit: cb.ConnLimit,
		ConnTO:    time.Duration(cb.ConnTO),
		TimeOut:   time.Duration(cb.TimeOut),
		WSTimeOut: time.Duration(cb.WSTimeOut),
		Disabled:  cb.Disabled,
		Emergency: cb.Emergency,
		// A backend whose connect fails is dead until a probe revives
		// it, in both dialects (zproxy waits for its health monitor and
		// keeps offering it requests meanwhile).
	}
	if cb.Unix {
		o.Network = "unix"
	} else {
		o.Network = "tcp"
		o.ID = addr.id
	}
	backendTLS(&o, cb)
	backendHTTP2(&o, cb)
	familyDial(&o, cb.Rare().Family)
	if cb.Rare().HAPort != nil {
		host := cb.Rare().HAPort.Address
		if host == "" {
			host = cb.Address
		}
		o.HAPort = net.JoinHostPort(host, strconv.Itoa(cb.Rare().HAPort.Port))
	}
	return o
}

// familyDial makes a static backend's host name resolve in its Family
// only (a matrix's backends have an address already).
func familyDial(o *backend.Options, family string) {
	network := map[string]string{"inet": "tcp4", "inet6": "tcp6"}[family]
	if network == "" || o.Network != "tcp" {
		return
	}
	dial := o.DialContext
	if dial == nil {
		dial = backend.DefaultDial
	}
	o.DialContext = func(ctx context.Context, nw, addr string) (net.Conn, error) {
		if nw == "tcp" {
			nw = network
		}
		return dial(ctx, nw, addr)
	}
}

// listener builds the data-path view of a listener.
func (b *builder) listener(l *config.Listener, own []*service.Service, env *rules.Env) (*proxy.Listener, error) {
	cfg := b.cfg
	st := &proxy.Listener{
		Cfg:       l,
		Dialect:   cfg.Dialect,
		Limits:    http1.DefaultLimits,
		XHTTP:     l.XHTTP,
		Client:    time.Duration(l.Client),
		Scheme:    "http",
		Port:      strconv.Itoa(l.Port),
		Forwarded: forwarded(cfg, l),
		MaxTries:  3,
		Tunnel:    l.Tunnel,
		H2C:       l.H2C,
	}
	if l.HTTPS {
		st.Scheme = "https"
	}
	if st.Client <= 0 {
		st.Client = time.Duration(cfg.Timeouts.Client)
	}
	st.Limits.CheckMethods, st.Limits.XHTTP = true, l.XHTTP
	st.Limits.ConnectPath = cfg.Dialect == config.DialectPound
	if l.MaxURI > 0 {
		st.Limits.MaxURI = l.MaxURI
	}
	if l.LineBuffer > 0 {
		st.Limits.MaxRequestLine, st.Limits.MaxHeaderLine = l.LineBuffer, l.LineBuffer
	}
	routed := append([]*service.Service{}, own...)
	if !l.Tunnel {
		routed = append(routed, b.next.global...)
	}
	st.Router = service.NewRouter(routed)
	st.Limits.Purge = takesPurge(routed)
	st.Errors = proxy.NewErrorPages(cfg.Dialect, errorBodies(l.ErrorFiles))
	var err error
	if st.Edits, err = b.edits(l, nil, env); err != nil {
		return nil, err
	}
	st.SvcEdits = make(map[*service.Service]*proxy.HeaderEdits)
	for _, s := range st.Router.Services {
		if b.sharesListenerEdits(s.Cfg) {
			continue
		}
		if st.SvcEdits[s], err = b.edits(l, s.Cfg, env); err != nil {
			return nil, err
		}
	}
	if cfg.Dialect == config.DialectZproxy {
		// zproxy's order: its edits program rebuilds X-Forwarded-For,
		// the X-SSL-* lines come last, response framing stays in place.
		st.Forwarded, st.TLSHeadersLast, st.FramingInPlace = false, true, true
	}
	st.Log = accessLog(cfg, l)
	if st.ReqRules, err = env.CompileRewrite(l.Rewrites.Request); err != nil {
		return nil, atStatement(l.Pos, "", err)
	}
	if st.RespRules, err = env.CompileRewrite(l.Rewrites.Response); err != nil {
		return nil, atStatement(l.Pos, "", err)
	}
	st.Detached = len(env.Detached)
	st.Combine = cfg.CombineHeaders
	// A diagnostic is about a request on this listener: it names it.
	// The closures take the logger, not b: the builder's prev is the
	// previous graph, which a closure on b would keep alive (and through
	// its own listeners' closures every graph before it, issue 36).
	name, log := listenerName(l), b.log
	st.Diag = func(msg string) { log.WithField(msglog.Listener, name).Warn(msg) }
	if l.WAF != nil && l.WAF.Engine != nil {
		st.WAF = l.WAF.Engine
		st.WAF.SetLog(func(msg string) { log.WithField(msglog.Listener, name).Warn("[WAF] " + msg) })
	}
	return st, nil
}

// edits compiles what the proxy does to requests routed to service s of
// listener l (s nil: the listener's own replies) beside the listener's
// and the service's programs: zproxy's header and URL directives, and
// Pound's RewriteLocation, which the proxy applies in place.
func (b *builder) edits(l *config.Listener, s *config.Service, env *rules.Env) (*proxy.HeaderEdits, error) {
	ec := proxy.EditsConfig{Listener: l, Service: s, Anonymise: b.cfg.Anonymise}
	if b.cfg.Dialect != config.DialectZproxy {
		ec.LocationInPlace = true
		return proxy.NewEdits(ec), nil
	}
	var err error
	if ec.Req, ec.Resp, err = env.CompileZproxyEdits(rules.NewZproxyEdits(b.cfg, l, s)); err != nil {
		return nil, atStatement(l.Pos, "", err)
	}
	return proxy.NewEdits(ec), nil
}

// sharesListenerEdits reports whether a service's edits would be its
// listener's own: a Pound service without a RewriteLocation of its own
// (the proxy takes the listener's when the service has no entry). At
// 10,000 services a copy each was 0.9 MB (issue 36).
func (b *builder) sharesListenerEdits(s *config.Service) bool {
	return b.cfg.Dialect != config.DialectZproxy && s.Rare().RewriteLoc == nil
}

// forwarded reports whether X-Forwarded-* headers are added (Pound 4
// HeaderOption, default "forwarded ssl"; zproxy always adds XFF).
func forwarded(cfg *config.Config, l *config.Listener) bool {
	opts := l.HeaderOption
	if opts == nil {
		opts = cfg.HeaderOption
	}
	return config.ForwardedOn(opts)
}

func errorBodies(local map[int]*config.ErrorPage) map[int][]byte {
	m := map[int][]byte{}
	for k, v := range local {
		m[k] = v.Body
	}
	return m
}
