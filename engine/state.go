package engine

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"time"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/config"
	"lbd/proxy"
	"lbd/service"
)

// Version is reported by the control API; cmd/lbd sets it (to Pound's
// version when lbd runs as pound).
var Version = "dev"

var processStart = time.Now()

// Pound's worker pool defaults (WorkerMinCount, WorkerIdleTimeout), which
// lbd accepts but does not use: it runs a goroutine per connection.
const (
	poundWorkerMin  = 5
	poundWorkerIdle = 30 * time.Second
)

// workers describes lbd's connections as the Pound pool that would serve
// them: never fewer than the minimum, one busy worker per active
// connection, Threads (WorkerMaxCount's old name) the maximum.
func workers(active int, cfg *config.Config) adminapi.Workers {
	w := adminapi.Workers{Active: active, Min: cfg.WorkerMin, Max: cfg.Threads, IdleTimeout: time.Duration(cfg.WorkerIdle)}
	if w.Min <= 0 {
		w.Min = poundWorkerMin
	}
	if w.IdleTimeout <= 0 {
		w.IdleTimeout = poundWorkerIdle
	}
	w.Count = max(active, w.Min)
	if w.Max > 0 {
		w.Count = min(w.Count, max(w.Max, w.Min))
	}
	return w
}

// State returns a snapshot of everything the control API shows. It reads
// atomics only, so it never stops traffic.
func (e *Engine) State() *adminapi.State { return e.snapshot(true) }

// Summary is State without the session lists (their counts only): what
// the dashboard polls every second, which must not copy a table of a
// million sessions each time.
func (e *Engine) Summary() *adminapi.State { return e.snapshot(false) }

// snapshot builds State, with or without the session lists.
func (e *Engine) snapshot(sessions bool) *adminapi.State {
	e.mu.Lock()
	g, servers := e.g, e.servers
	e.mu.Unlock()
	now := time.Now()
	st := e.stateHead(g, servers, now)
	for i, l := range g.cfg.Listeners {
		v := listenerView(g, servers, i)
		// Sized once: at thousands of services append's regrowth was
		// half the garbage of a snapshot.
		v.Services = make([]adminapi.Service, 0, len(g.services[i]))
		for _, s := range g.services[i] {
			v.Services = append(v.Services, e.listedService(g, s, l.Tunnel, now, sessions, nil))
		}
		st.Listeners = append(st.Listeners, v)
	}
	for _, s := range g.global {
		st.Services = append(st.Services, e.listedService(g, s, false, now, sessions, nil))
	}
	return st
}

// stateHead is the State of g but its listeners and services.
func (e *Engine) stateHead(g *graph, servers []*server, now time.Time) *adminapi.State {
	st := &adminapi.State{
		Core: adminapi.Core{
			Version: Version, GoVersion: runtime.Version(), PID: os.Getpid(), Timestamp: now, Uptime: now.Sub(processStart),
			Workers: workers(int(active(servers)), g.cfg),
			Reloads: e.reloads[0].Load(), ReloadFailures: e.reloads[1].Load(), StartedByUpgrade: e.upgraded.Load(), Upgrades: e.upgrades.Load(),
		},
		LogLevel: g.cfg.LogLevel,
		Cluster:  e.clusterStatus(),
		ACME:     e.acmeStatus(g.cfg),
	}
	for _, a := range g.cfg.Authns {
		s := a.Checker.Stats()
		st.Core.Auth = append(st.Core.Auth, adminapi.AuthStats{Name: a.Name, Kind: a.Kind,
			Passed: uint64(s.Passed.Load()), Refused: uint64(s.Refused.Load())})
	}
	if g.cfg.Control != nil {
		st.ControlSocket = g.cfg.Control.Socket
	}
	return st
}

// listenerView is the state of listener i of g, its services left out.
func listenerView(g *graph, servers []*server, i int) adminapi.Listener {
	l := g.cfg.Listeners[i]
	v := adminapi.Listener{
		Name: l.Name, Address: l.Address, Port: l.Port, HTTPS: l.HTTPS, Tunnel: l.Tunnel,
		Enabled: true, LogLevel: l.LogLevel,
	}
	if l.TLS != nil {
		v.NoHTTPS11 = l.TLS.NoHTTPS11
	}
	if i < len(servers) {
		if l.SocketFrom != "" {
			v.Address, v.Port = boundAddress(servers[i].ln, v.Address, v.Port)
		}
		v.Enabled = servers[i].srv.Enabled()
		v.Connections = servers[i].srv.Active.Load()
		v.Pending = v.Connections
		v.Hits3xx, v.Hits4xx, v.Hits5xx = servers[i].srv.Generated()
		v.WAFHits = servers[i].srv.WAFHits()
		v.Requests = adminapi.ReadRequests(servers[i].srv.Requests())
		v.GRPCStatus = servers[i].srv.GRPCStatuses()
	}
	v.Limits = limitsView(config.ListenerLimits(l, g.cfg.Detached))
	return v
}

// listedService is the state of service s, of a listener whose Tunnel
// is tunnel or global (false), with its limits. Its backends are built
// in buf's array when it has room (nil: a new one).
func (e *Engine) listedService(g *graph, s *service.Service, tunnel bool, now time.Time, sessions bool, buf []adminapi.Backend) adminapi.Service {
	sv := e.serviceView(s, now, sessions, buf)
	sv.Limits = limitsView(config.ServiceLimits(s.Cfg, g.cfg.Detached))
	for j := range sv.Backends {
		sv.Backends[j].Tunnel = tunnel
	}
	return sv
}

// limitsView is the state of rate limits and password files now.
func limitsView(lm config.Limits) adminapi.Limits {
	var v adminapi.Limits
	for _, t := range lm.TBFs {
		allowed, refused := t.Limiter.Decisions()
		v.RateLimits = append(v.RateLimits, adminapi.RateLimit{
			Key: t.Key, Interval: time.Duration(t.Interval), Burst: uint64(t.Burst), Buckets: t.Limiter.InUse(),
			Allowed: allowed, Refused: refused,
		})
	}
	for _, a := range lm.ACLs {
		m, n := a.Decisions()
		v.ACLs = append(v.ACLs, adminapi.ACLStats{Name: a.Name, Match: m, NoMatch: n})
	}
	for _, f := range lm.Files {
		pf := adminapi.PasswordFile{Path: f.Path, Watched: f.Watch, Generation: f.Generation()}
		if cur := f.Current(); cur != nil {
			pf.Users = cur.Len()
		}
		v.PasswordFiles = append(v.PasswordFiles, pf)
	}
	return v
}

// boundAddress is the address a socket is bound to, for a listener whose
// configuration has none (SocketFrom): host and port, or a UNIX path and
// 0. Without a socket it returns the configured ones.
func boundAddress(ln net.Listener, host string, port int) (string, int) {
	if ln == nil {
		return host, port
	}
	switch a := ln.Addr().(type) {
	case *net.TCPAddr:
		return a.IP.String(), a.Port
	case *net.UnixAddr:
		return a.Name, 0
	}
	return host, port
}

// active counts the connections of servers, the set snapshot read under
// e.mu: e.servers itself changes under a reload.
func active(servers []*server) int64 {
	var n int64
	for _, s := range servers {
		n += s.srv.Active.Load()
	}
	return n
}

func (e *Engine) serviceView(s *service.Service, now time.Time, sessions bool, buf []adminapi.Backend) adminapi.Service {
	v := adminapi.Service{Name: s.Name, Enabled: s.Enabled(), SessionType: "NONE", Priority: 1, Backends: buf[:0]}
	if s.Stats != nil {
		v.Requests = adminapi.ReadRequests(s.Stats)
	}
	if p, ok := s.Algo.(interface{ Priority() int }); ok {
		v.Priority = p.Priority()
	}
	if sp := s.Special; sp != nil {
		sv := specialView(sp)
		sv.Answered = s.SpecialRequests()
		v.Backends = append(v.Backends, sv)
		if sp.Kind == config.BackendRedirect && sp.Rare().Redirect != nil {
			v.RedirectCode = sp.Rare().Redirect.Code
		}
	}
	if v.Backends == nil {
		v.Backends = make([]adminapi.Backend, 0, len(s.Listing))
	}
	offset := len(v.Backends) // Listing indexes start after the special backend
	for _, en := range s.Listing {
		if en.Backend == nil {
			v.Backends = append(v.Backends, e.matrixView(en))
			continue
		}
		bv := backendView(en.Backend)
		bv.CookieKey = s.CookieKey(en.Backend)
		if en.Parent >= 0 {
			bv.HasParent, bv.Parent = true, en.Parent+offset
		}
		v.Backends = append(v.Backends, bv)
	}
	if s.Cache != nil {
		v.Cache = cacheStat(-1, -1, s)
	}
	if s.Sessions != nil {
		v.SessionType = s.Cfg.Session.Type.String()
		v.SessionsCreated, v.SessionsExpired = s.Sessions.Created(), s.Sessions.Expired()
		if !sessions {
			v.SessionCount = s.Sessions.Len()
			return v
		}
		ttl := s.Sessions.TTL()
		index := backendIndexes(s) // the position each backend has above
		s.Sessions.Each(func(key string, b *backend.Backend, last time.Time) bool {
			v.Sessions = append(v.Sessions, adminapi.Session{
				Key: key, Backend: index[b], LastSeen: last, Expire: last.Add(ttl),
			})
			return true
		})
		v.SessionCount = len(v.Sessions)
	}
	return v
}

// poundFamily is the address family number Pound shows (Linux AF_*).
var poundFamily = map[string]int{"": 0, "unix": 1, "inet": 2, "inet6": 10}

// matrixView shows a dynamic backend as Pound does.
func (e *Engine) matrixView(en service.Entry) adminapi.Backend {
	m := en.Matrix
	st := e.dyn.view(en.Key)
	v := adminapi.Backend{
		Kind: adminapi.KindMatrix, Emergency: m.Emergency, Enabled: !st.disabled,
		Priority: m.Priority, Hostname: m.Address, ResolveMode: m.Rare().Resolve, Family: poundFamily[m.Rare().Family],
		ServerName: m.Rare().ServerName, Expire: st.expire, ResponseTime: -1, ConnectTime: -1,
		Port: m.Port, HTTPS: m.HTTPS,
	}
	return v
}

func backendView(b *backend.Backend) adminapi.Backend {
	host, port := splitHostPort(b)
	passed, failed := b.Probes()
	var h2 *[2]uint64
	if pool := b.HTTP2(); pool != nil {
		frames, transport := pool.Streams()
		h2 = &[2]uint64{frames, transport}
	}
	return adminapi.Backend{
		H2Streams:    h2,
		ProbesPassed: passed, ProbesFailed: failed, ProbeDurations: b.ProbeDurations(),
		ID: b.ID(), Kind: adminapi.KindRegular, Emergency: b.Emergency(), Group: b.Group(),
		Address: host, Port: port, Enabled: b.Enabled(), Alive: b.Alive(),
		Priority: b.Priority(), Weight: b.Weight(), ConnLimit: b.ConnLimit(),
		ConnTimeout: b.ConnTO(), IOTimeout: b.TimeOut(), WSTimeout: b.WSTimeOut(),
		Hits1xx: b.StatusCount(1), Hits2xx: b.StatusCount(2), Hits3xx: b.StatusCount(3), Hits4xx: b.StatusCount(4), Hits5xx: b.StatusCount(5),
		Requests: b.Requests(), Errors: b.Errors(), Active: b.Active(), Pending: b.Pending(),
		ResponseTime: b.Latency(), ConnectTime: b.ConnectTime(), RequestTimeAvg: max(b.Latency(), 0),
		LatencyTotal: b.LatencyTotal(), Durations: b.Durations(), ConnectDurations: b.ConnectDurations(),
		HTTPS: b.HTTPS(), ServerName: b.ServerName(),
	}
}

func specialView(b *config.Backend) adminapi.Backend {
	v := adminapi.Backend{Enabled: true, Alive: true, Priority: 1}
	switch b.Kind {
	case config.BackendRedirect:
		v.Kind = adminapi.KindRedirect
		if b.Rare().Redirect != nil {
			v.RedirectURL, v.RedirectCode, v.HasURI = b.Rare().Redirect.URL, b.Rare().Redirect.Code, b.Rare().Redirect.HasURI
		}
	case config.BackendError:
		v.Kind, v.ErrorStatus = adminapi.KindError, b.Rare().Status
		if b.Rare().Page != nil {
			v.ErrorText = string(proxy.ErrorPageBody(b.Rare().Page.Body))
		}
	case config.BackendMetrics:
		v.Kind = adminapi.KindMetrics
	case config.BackendControl:
		v.Kind = adminapi.KindControl
	case config.BackendDashboard:
		v.Kind = adminapi.KindDashboard
	case config.BackendFile:
		v.Kind = adminapi.KindFile
	case config.BackendSuccess:
		v.Kind = adminapi.KindSuccess
	case config.BackendLua:
		v.Kind, v.LuaFunction = adminapi.KindLua, b.Rare().Lua.Func
	case config.BackendACME:
		v.Kind = adminapi.KindACME
	}
	return v
}

func splitHostPort(b *backend.Backend) (string, int) {
	if b.Network() == "unix" {
		return b.Address(), 0
	}
	a := b.Address()
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] == ':' {
			// Every address comes from dialAddress, which joins an int port.
			p, _ := strconv.Atoi(a[i+1:])
			host := a[:i]
			if len(host) > 1 && host[0] == '[' {
				host = host[1 : len(host)-1]
			}
			return host, p
		}
	}
	return a, 0
}
