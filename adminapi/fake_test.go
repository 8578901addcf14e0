package adminapi

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"lbd/internal/metrics"
)

// fakeNow is the "now" of the fake controller, for sessions without a
// last-seen time.
var fakeNow = time.Date(2026, 11, 30, 5, 40, 0, 0, time.UTC)

// fixture is the snapshot behind every golden file: two listeners (one
// HTTPS, IPv6, disabled), named and unnamed services, regular, emergency,
// redirect, error and metrics backends, sessions, and a global service.
func fixture() *State {
	return &State{
		Core: Core{
			Version:   "0.1.0",
			GoVersion: "go1.25.0",
			PID:       27836,
			Timestamp: time.Date(2026, 11, 30, 5, 36, 2, 858185000, time.UTC),
			Uptime:    17365828 * time.Microsecond,
			QueueLen:  2,
			QueueMax:  19736,
			Reloads:   3, ReloadFailures: 1,
			Workers: Workers{Active: 1, Count: 5, Min: 5, Max: 128, IdleTimeout: 30 * time.Second},
		},
		ControlSocket: "/run/lbd/pound.ctl",
		LogLevel:      "regular",
		Listeners: []Listener{
			{
				Name: "main", Address: "127.0.0.1", Port: 8080, Enabled: true,
				Hits3xx: 3, Hits4xx: 4, Hits5xx: 5, Connections: 7, Pending: 2,
				Services: []Service{webService(), redirectService()},
				Requests: RequestStats{
					Duration: histogram(40*time.Microsecond, 3*time.Millisecond, 3*time.Millisecond, 45*time.Second),
					Codes:    [6]uint64{0, 0, 2, 1, 0, 1},
				},
			},
			{
				Address: "::1", Port: 8443, HTTPS: true, NoHTTPS11: 1, LogLevel: "combined",
				WAFHits:  9,
				Services: []Service{apiService()},
			},
		},
		Services: []Service{{
			Name: "fallback", Enabled: true,
			Backends: []Backend{{Kind: KindMetrics, Enabled: true, Alive: true, Priority: 1, ResponseTime: -1}},
		}},
	}
}

func webService() Service {
	return Service{
		Name: "web", Enabled: true, SessionType: "COOKIE", Priority: 1, SessionsCreated: 5, SessionsExpired: 3,
		Requests: RequestStats{Duration: histogram(3*time.Millisecond, 3*time.Millisecond), Codes: [6]uint64{0, 0, 2}},
		Backends: []Backend{
			{
				Address: "127.0.0.1", Port: 8081, Enabled: true, Alive: true, Priority: 5, Weight: 1,
				ConnTimeout: 15 * time.Second, IOTimeout: 15 * time.Second, WSTimeout: 600 * time.Second,
				Hits2xx: 13, Hits4xx: 1, Requests: 14, Errors: 1, Active: 2, Pending: 1,
				ResponseTime: 12300 * time.Microsecond, ConnectTime: 250 * time.Microsecond,
				RequestTimeAvg: 12345678, RequestTimeStddev: 2345678,
				Durations:        histogram(3*time.Millisecond, 3*time.Millisecond),
				ConnectDurations: histogram(250 * time.Microsecond),
				ProbesPassed:     2, ProbesFailed: 1,
				ProbeDurations: histogram(200*time.Microsecond, 200*time.Microsecond, 15*time.Second),
			},
			{
				Address: "127.0.0.1", Port: 8082, HTTPS: true, ServerName: "backend.example",
				Enabled: true, Alive: false, Priority: 5, Weight: 1, ResponseTime: -1,
				ConnTimeout: 15 * time.Second, IOTimeout: 15 * time.Second, WSTimeout: 600 * time.Second,
				Durations: histogram(), ConnectDurations: histogram(), ProbeDurations: histogram(),
			},
			{
				Address: "127.0.0.1", Port: 8083, Emergency: true, Enabled: true, Alive: true,
				Priority: 1, Weight: 1, ResponseTime: 1234 * time.Millisecond,
				ConnTimeout: 120 * time.Second, IOTimeout: 120 * time.Second, WSTimeout: 120 * time.Second,
			},
		},
		Sessions: []Session{
			{Key: "abc", Backend: 0, LastSeen: fakeNow.Add(-time.Minute), Expire: fakeNow.Add(4 * time.Minute)},
			{Key: "static", Backend: 1, Expire: fakeNow.Add(5 * time.Minute)},
		},
	}
}

func redirectService() Service {
	return Service{
		Enabled: true, RedirectCode: 301,
		Backends: []Backend{{
			Kind: KindRedirect, Enabled: true, Alive: true, Priority: 1,
			RedirectURL: "http://example.org", RedirectCode: 301, ResponseTime: -1,
		}},
	}
}

func apiService() Service {
	return Service{
		Name: "api", Enabled: true, SessionType: "COOKIEINSERT", Priority: 2,
		Backends: []Backend{
			{
				ID: "bck-a", Address: "10.0.0.1", Port: 80, Enabled: false, Alive: true,
				Priority: 1, Weight: 2, ConnLimit: 10, NfMark: 16, CookieKey: "4-0a000001-500000",
				ResponseTime: 50 * time.Microsecond,
			},
			{Kind: KindError, Enabled: true, Alive: true, Priority: 1, ErrorStatus: 404, ErrorText: "Not Found\n", ResponseTime: -1},
		},
	}
}

// fakeCtl is a Controller over a fixture. Mutations are recorded as text
// and applied to a copy of the state, so replies that re-read the state
// show them; err, when set, fails every mutation instead.
type fakeCtl struct {
	mu    sync.Mutex
	st    *State
	calls []string
	err   error
}

func newFake() *fakeCtl { return &fakeCtl{st: fixture()} }

func (f *fakeCtl) State() *State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeCtl) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// mutate records the call and, unless err is set, applies fn to a copy of
// the state (snapshots already handed out never change).
func (f *fakeCtl) mutate(call string, fn func(st *State) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if f.err != nil {
		return f.err
	}
	st := cloneState(f.st)
	if err := fn(st); err != nil {
		return err
	}
	f.st = st
	return nil
}

func cloneState(in *State) *State {
	st := *in
	st.Listeners = append([]Listener(nil), in.Listeners...)
	for i := range st.Listeners {
		st.Listeners[i].Services = cloneServices(st.Listeners[i].Services)
	}
	st.Services = cloneServices(in.Services)
	return &st
}

func cloneServices(in []Service) []Service {
	out := append([]Service(nil), in...)
	for i := range out {
		out[i].Backends = append([]Backend(nil), out[i].Backends...)
		out[i].Sessions = append([]Session(nil), out[i].Sessions...)
	}
	return out
}

// service resolves a ref to a service of st.
func service(st *State, ref Ref) (*Service, error) {
	svcs := st.Services
	if ref.Listener >= 0 {
		if ref.Listener >= len(st.Listeners) {
			return nil, fmt.Errorf("listener %d: %w", ref.Listener, ErrNotFound)
		}
		svcs = st.Listeners[ref.Listener].Services
	}
	if ref.Service < 0 || ref.Service >= len(svcs) {
		return nil, fmt.Errorf("service %d: %w", ref.Service, ErrNotFound)
	}
	return &svcs[ref.Service], nil
}

func (f *fakeCtl) SetEnabled(ref Ref, on bool) error {
	return f.mutate(fmt.Sprintf("SetEnabled %v %v", ref, on), func(st *State) error {
		if ref.Service < 0 {
			if ref.Listener < 0 || ref.Listener >= len(st.Listeners) {
				return ErrNotFound
			}
			st.Listeners[ref.Listener].Enabled = on
			return nil
		}
		s, err := service(st, ref)
		if err != nil {
			return err
		}
		if ref.Backend < 0 {
			s.Enabled = on
			return nil
		}
		if ref.Backend >= len(s.Backends) {
			return ErrNotFound
		}
		s.Backends[ref.Backend].Enabled = on
		return nil
	})
}

func (f *fakeCtl) AddBackend(ref Ref, b BackendSpec) error {
	return f.mutate(fmt.Sprintf("AddBackend %v %+v", ref, b), func(st *State) error {
		s, err := service(st, ref)
		if err != nil {
			return err
		}
		s.Backends = append(s.Backends, Backend{ID: b.ID, Address: b.Address, Port: b.Port, Enabled: true})
		return nil
	})
}

// settingsText prints BackendSettings, "-" for a value not given.
func settingsText(s BackendSettings) string {
	v := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("w%s p%s c%s", v(s.Weight), v(s.Priority), v(s.ConnLimit))
}

func (f *fakeCtl) SetBackend(ref Ref, set BackendSettings) error {
	return f.mutate(fmt.Sprintf("SetBackend %v %s", ref, settingsText(set)), func(st *State) error {
		s, err := service(st, ref)
		if err != nil {
			return err
		}
		if ref.Backend < 0 || ref.Backend >= len(s.Backends) {
			return fmt.Errorf("backend %d: %w", ref.Backend, ErrNotFound)
		}
		if set.Weight != nil && *set.Weight > 65535 {
			return fmt.Errorf("weight %d out of range 0-65535: %w", *set.Weight, ErrInvalid)
		}
		b := &s.Backends[ref.Backend]
		for _, p := range []struct{ src, dst *int }{{set.Weight, &b.Weight}, {set.Priority, &b.Priority}, {set.ConnLimit, &b.ConnLimit}} {
			if p.src != nil {
				*p.dst = *p.src
			}
		}
		return nil
	})
}

func (f *fakeCtl) RemoveBackend(ref Ref) error {
	return f.mutate(fmt.Sprintf("RemoveBackend %v", ref), func(st *State) error {
		s, err := service(st, ref)
		if err != nil {
			return err
		}
		if ref.Backend < 0 || ref.Backend >= len(s.Backends) {
			return fmt.Errorf("backend %d: %w", ref.Backend, ErrNotFound)
		}
		if s.Backends[ref.Backend].kind() != KindRegular {
			return fmt.Errorf("backend %d is special: %w", ref.Backend, ErrInvalid)
		}
		s.Backends = append(s.Backends[:ref.Backend], s.Backends[ref.Backend+1:]...)
		// Its sessions go; those of the backends after it follow them.
		kept := s.Sessions[:0]
		for _, ss := range s.Sessions {
			switch {
			case ss.Backend == ref.Backend:
				continue
			case ss.Backend > ref.Backend:
				ss.Backend--
			}
			kept = append(kept, ss)
		}
		s.Sessions = kept
		return nil
	})
}

// logNames are the formats the fake accepts (numbers map to names).
var logNames = []string{"null", "regular", "extended", "vhost_combined", "combined", "detailed"}

func (f *fakeCtl) SetLogLevel(li int, level string) error {
	return f.mutate(fmt.Sprintf("SetLogLevel %d %q", li, level), func(st *State) error {
		name := level
		if len(level) == 1 && level[0] >= '0' && level[0] <= '5' {
			name = logNames[level[0]-'0']
		}
		ok := level == "" && li >= 0
		for _, n := range logNames {
			ok = ok || n == name
		}
		if !ok {
			return fmt.Errorf("log format %q: %w", level, ErrInvalid)
		}
		if li < 0 {
			st.LogLevel = name
			return nil
		}
		if li >= len(st.Listeners) {
			return ErrNotFound
		}
		st.Listeners[li].LogLevel = name
		return nil
	})
}

func (f *fakeCtl) Reload() error {
	return f.mutate("Reload", func(*State) error { return nil })
}

func specText(s SessionSpec) string {
	return fmt.Sprintf("{%s %d %s %v}", s.Key, s.Backend, s.LastSeen.UTC().Format(time.RFC3339), s.Static)
}

// toSession applies the "now" and static conventions of SessionSpec.
func toSession(s SessionSpec) Session {
	ss := Session{Key: s.Key, Backend: s.Backend, LastSeen: s.LastSeen}
	if ss.LastSeen.IsZero() && !s.Static {
		ss.LastSeen = fakeNow
	}
	ss.Expire = fakeNow.Add(5 * time.Minute)
	return ss
}

func (f *fakeCtl) AddSession(ref Ref, s SessionSpec) error {
	return f.mutate(fmt.Sprintf("AddSession %v %s", ref, specText(s)), func(st *State) error {
		svc, err := service(st, ref)
		if err != nil {
			return err
		}
		if i := svc.findSession(s.Key); i >= 0 {
			svc.Sessions[i] = toSession(s)
			return nil
		}
		svc.Sessions = append(svc.Sessions, toSession(s))
		return nil
	})
}

func (f *fakeCtl) MoveSession(ref Ref, s SessionSpec) error {
	return f.mutate(fmt.Sprintf("MoveSession %v %s", ref, specText(s)), func(st *State) error {
		svc, err := service(st, ref)
		if err != nil {
			return err
		}
		i := svc.findSession(s.Key)
		if i < 0 {
			return ErrNotFound
		}
		svc.Sessions[i] = toSession(s)
		return nil
	})
}

func (f *fakeCtl) DeleteSession(ref Ref, key string) error {
	return f.mutate(fmt.Sprintf("DeleteSession %v %s", ref, key), func(st *State) error {
		svc, err := service(st, ref)
		if err != nil {
			return err
		}
		i := svc.findSession(key)
		if i < 0 {
			return ErrNotFound
		}
		svc.Sessions = append(svc.Sessions[:i], svc.Sessions[i+1:]...)
		return nil
	})
}

func (f *fakeCtl) FlushSessions(ref Ref) error {
	return f.mutate(fmt.Sprintf("FlushSessions %v", ref), func(st *State) error {
		svc, err := service(st, ref)
		if err != nil {
			return err
		}
		kept := svc.Sessions[:0]
		for _, s := range svc.Sessions {
			if ref.Backend >= 0 && s.Backend != ref.Backend {
				kept = append(kept, s)
			}
		}
		svc.Sessions = kept
		return nil
	})
}

func (f *fakeCtl) SyncSessions(ref Ref, ss []SessionSpec) error {
	texts := make([]string, len(ss))
	for i, s := range ss {
		texts[i] = specText(s)
	}
	return f.mutate(fmt.Sprintf("SyncSessions %v [%s]", ref, strings.Join(texts, " ")), func(st *State) error {
		svc, err := service(st, ref)
		if err != nil {
			return err
		}
		svc.Sessions = nil
		for _, s := range ss {
			svc.Sessions = append(svc.Sessions, toSession(s))
		}
		return nil
	})
}

// histogram is a histogram snapshot after observing ds.
func histogram(ds ...time.Duration) metrics.HistogramSnapshot {
	var h metrics.Histogram
	for _, d := range ds {
		h.Observe(d)
	}
	return h.Snapshot()
}
