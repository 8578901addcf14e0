package adminapi

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// poundTimeFormat is how Pound prints timestamps (strftime + microseconds).
const poundTimeFormat = "2006-01-02T15:04:05.000000"

// poundEmergencyGroup is the balancer-group weight Pound shows for
// emergency backends.
const poundEmergencyGroup = 65535

// poundView is a State as Pound numbers it: the control socket, when
// configured, is listener 0 and the engine's listeners follow.
type poundView struct {
	st        *State
	listeners []Listener
	control   bool // listeners[0] is the synthesised control listener
	opts      poundOpts
	// stream, for a full listing, hands over st's services as they
	// are printed (summary_stream.go); nil: st holds them.
	stream *summaryStream
}

// poundOpts are how a view serialises services and backends.
type poundOpts struct {
	stats bool // backend statistics (Pound's -S)
	// countSessions: a service shows "session_count" instead of its
	// "sessions" list (?sessions=count, an lbd extension: a listing that
	// does not copy a table of a million sessions).
	countSessions bool
	// requests: a backend shows "requests" and "response_time", its
	// pound_backend_requests_total and pound_backend_response_time_seconds
	// samples (?requests=1, an lbd extension: lbctl's table without a
	// GET /metrics of 20,000 backends).
	requests bool
}

// newPoundView wraps a snapshot, synthesising the control listener.
func newPoundView(st *State) *poundView {
	v := &poundView{st: st, listeners: st.Listeners, opts: poundOpts{stats: st.BackendStats}}
	if st.ControlSocket != "" {
		v.control = true
		v.listeners = make([]Listener, 0, len(st.Listeners)+1)
		v.listeners = append(v.listeners, controlListener(st.ControlSocket))
		v.listeners = append(v.listeners, st.Listeners...)
	}
	return v
}

// controlListener is the listener Pound shows for its control socket.
func controlListener(path string) Listener {
	return Listener{
		Address: path,
		Enabled: true,
		Services: []Service{{
			Enabled: true,
			Backends: []Backend{{
				Kind: KindControl, Enabled: true, Alive: true, Priority: 1, ResponseTime: -1,
			}},
		}},
	}
}

// isControl reports whether view listener li is the control socket.
func (v *poundView) isControl(li int) bool { return v.control && li == 0 }

// stateIndex converts a view listener index to a State index (-1 stays -1).
func (v *poundView) stateIndex(li int) int {
	if v.control && li >= 0 {
		return li - 1
	}
	return li
}

// services returns the services of view listener li, or the global ones.
func (v *poundView) services(li int) []Service {
	if li < 0 {
		return v.st.Services
	}
	return v.listeners[li].Services
}

// poundTarget is an object addressed by a Pound path: listener (view
// index, -1 for none/global), service and backend (-1 for none).
type poundTarget struct {
	lst, svc, be int
}

// ref converts a target to a Controller reference.
func (v *poundView) ref(t poundTarget) Ref {
	return Ref{Listener: v.stateIndex(t.lst), Service: t.svc, Backend: t.be}
}

// identKind says how a path segment identifies an object.
type identKind int

const (
	identErr  identKind = iota // empty or malformed
	identNum                   // an index
	identName                  // a name
)

// ident is one /segment of a Pound object path.
type ident struct {
	kind identKind
	num  int
	name string
}

// getIdent parses the segment at the start of s (which must begin with
// '/') the way Pound's ctl_getident does: a number is an index, anything
// else up to the next '/' is a name, an empty segment is an error. It
// returns the identifier and the rest of the path.
func getIdent(s string) (ident, string) {
	if !strings.HasPrefix(s, "/") {
		return ident{}, s
	}
	s = s[1:]
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	digits := end
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == digits {
		end = 0 // no conversion, as strtol reports it
	}
	if end < len(s) && s[end] != '/' {
		j := strings.IndexByte(s, '/')
		if j < 0 {
			j = len(s)
		}
		return ident{kind: identName, name: s[:j]}, s[j:]
	}
	if end == 0 {
		return ident{}, s
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil || n > math.MaxInt32 {
		return ident{}, s[end:]
	}
	return ident{kind: identNum, num: n}, s[end:]
}

// findListener returns the view index the identifier names, or -1.
func (v *poundView) findListener(id ident) int {
	switch id.kind {
	case identNum:
		if id.num >= 0 && id.num < len(v.listeners) {
			return id.num
		}
	case identName:
		for i := range v.listeners {
			if v.listeners[i].Name != "" && v.listeners[i].Name == id.name {
				return i
			}
		}
	}
	return -1
}

// findService returns the index of the service the identifier names, or -1.
func findService(svcs []Service, id ident) int {
	switch id.kind {
	case identNum:
		if id.num >= 0 && id.num < len(svcs) {
			return id.num
		}
	case identName:
		for i := range svcs {
			if svcs[i].Name != "" && svcs[i].Name == id.name {
				return i
			}
		}
	}
	return -1
}

// parseListenerPath resolves what follows "/listener" (Pound's
// ctl_listener): "", "/" and "/-" select no listener (the whole listing,
// or the global services when a service follows).
func (v *poundView) parseListenerPath(rest string) (poundTarget, *apiError) {
	t := poundTarget{lst: -1, svc: -1, be: -1}
	switch {
	case rest == "":
	case rest == "/":
		rest = ""
	case rest == "/-" || strings.HasPrefix(rest, "/-/"):
		rest = rest[2:]
	default:
		id, r := getIdent(rest)
		if t.lst = v.findListener(id); t.lst < 0 {
			return t, refuse(http.StatusNotFound, "listener %s not found", segment(rest))
		}
		rest = r
	}
	if rest == "" {
		return t, nil
	}
	return v.parseServicePath(t, rest)
}

// parseServicePath resolves "/S[/B]" below t.lst (Pound's ctl_service and
// ctl_backend). Backends are addressed by index only; anything left over is
// an unknown object.
func (v *poundView) parseServicePath(t poundTarget, rest string) (poundTarget, *apiError) {
	where := "the global services"
	if t.lst >= 0 {
		where = "listener " + strconv.Itoa(t.lst)
	}
	id, after := getIdent(rest)
	svcs := v.services(t.lst)
	if t.svc = findService(svcs, id); t.svc < 0 {
		return t, refuse(http.StatusNotFound, "service %s not found in %s", segment(rest), where)
	}
	rest = after
	if rest != "" {
		id, r := getIdent(rest)
		n := len(svcs[t.svc].Backends)
		if id.kind != identNum || id.num < 0 || id.num >= n {
			return t, refuse(http.StatusNotFound, "backend %s not found in service %d of %s (%s)",
				segment(rest), t.svc, where, backendRange(n))
		}
		t.be, rest = id.num, r
	}
	if rest != "" {
		return t, refuse(http.StatusNotFound, "nothing is below a backend: %q", rest)
	}
	return t, nil
}

// backendRange says how a service's backends are numbered.
func backendRange(n int) string {
	if n == 0 {
		return "it has no backends"
	}
	return "backends are numbered by index, 0 to " + strconv.Itoa(n-1)
}

// segment is the first /segment of a path, for messages.
func segment(rest string) string {
	s := strings.TrimPrefix(rest, "/")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return `""`
	}
	return s
}

// object serialises the target (whole listing when nothing is selected).
func (v *poundView) object(t poundTarget) jobject {
	switch {
	case t.svc < 0 && t.lst < 0:
		return v.all()
	case t.svc < 0:
		return v.listener(t.lst)
	}
	svc := &v.services(t.lst)[t.svc]
	if t.be < 0 {
		return poundService(svc, v.opts)
	}
	return poundBackendOpts(&svc.Backends[t.be], v.opts)
}

// all is Pound's full listing (GET /).
func (v *poundView) all() jobject {
	ls := make(jarray, len(v.listeners))
	for i := range v.listeners {
		ls[i] = v.listener(i)
	}
	return jobject{}.
		add("core", poundCore(&v.st.Core)).
		add("kind", "pound").
		add("listeners", ls).
		add("services", v.serviceList(v.st.Services, -1))
}

// poundCore is GET /core.
func poundCore(c *Core) jobject {
	return jobject{}.
		add("kind", "core").
		add("pid", c.PID).
		add("queue", jobject{}.add("len", c.QueueLen).add("max", c.QueueMax)).
		add("queue_len", c.QueueLen). // Pound 4.5-4.22 compatibility
		add("timestamp", c.Timestamp.Format(poundTimeFormat)).
		add("uptime", c.Uptime.Microseconds()).
		add("version", c.Version).
		add("workers", jobject{}.
			add("active", c.Workers.Active).
			add("count", c.Workers.Count).
			add("max", c.Workers.Max).
			add("min", c.Workers.Min).
			add("timeout", seconds(c.Workers.IdleTimeout)))
}

// listener serialises view listener vi.
func (v *poundView) listener(vi int) jobject {
	l := &v.listeners[vi]
	o := jobject{}.
		add("address", poundAddress(l)).
		add("enabled", l.Enabled).
		add("kind", "listener").
		add("name", strOrNull(l.Name)).
		add("services", v.serviceList(l.Services, vi))
	if l.HTTPS {
		o = o.add("nohttps11", l.NoHTTPS11)
	}
	return poundLimits(o.add("protocol", l.protocol()), &l.Limits)
}

// poundLimits adds lbd's "tbf" and "basic_auth" members to an object
// that has any, so Pound's objects stay as Pound prints them otherwise.
func poundLimits(o jobject, lm *Limits) jobject {
	if len(lm.RateLimits) > 0 {
		a := make(jarray, len(lm.RateLimits))
		for i, r := range lm.RateLimits {
			a[i] = jobject{}.
				add("buckets", r.Buckets).
				add("burst", r.Burst).
				add("interval", r.Interval.Nanoseconds()).
				add("key", r.Key)
		}
		o = o.add("tbf", a)
	}
	if len(lm.PasswordFiles) > 0 {
		a := make(jarray, len(lm.PasswordFiles))
		for i, f := range lm.PasswordFiles {
			a[i] = jobject{}.
				add("file", f.Path).
				add("generation", f.Generation).
				add("users", f.Users).
				add("watch", f.Watched)
		}
		o = o.add("basic_auth", a)
	}
	return o
}

// poundAddress prints a listener address as Pound's addr2str: ip:port,
// [ipv6]:port, or the UNIX socket path.
func poundAddress(l *Listener) string {
	if l.Port == 0 {
		return l.Address
	}
	return net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
}

// serviceList serialises svcs, the services of view listener vi (-1:
// the global ones), each service as it is printed: from the view's
// stream, when it has one, unless they are the synthesised control
// listener's.
func (v *poundView) serviceList(svcs []Service, vi int) jlist {
	o, stream := v.opts, v.stream
	if stream == nil || v.isControl(vi) {
		return jlist{n: len(svcs), item: func(i int) any { return poundService(&svcs[i], o) }}
	}
	n := stream.count(v.stateIndex(vi), svcs)
	return jlist{n: n, item: func(i int) any { return poundService(stream.take(svcs, i), o) }}
}

// poundSessions serialises sessions as Pound lists them in a service.
func poundSessions(ss []Session) jarray {
	a := make(jarray, len(ss))
	for i, x := range ss {
		a[i] = jobject{}.
			add("backend", x.Backend).
			add("expire", x.Expire.Format(poundTimeFormat)).
			add("key", x.Key)
	}
	return a
}

// poundService serialises a service; sessions are null without a session
// type and backends null when there are none, as in Pound.
func poundService(s *Service, o poundOpts) jobject {
	var backends any
	if len(s.Backends) > 0 {
		a := make(jarray, len(s.Backends))
		for i := range s.Backends {
			a[i] = poundBackendValue(&s.Backends[i], o)
		}
		backends = a
	}
	obj := make(jobject, 0, 8)
	switch {
	case s.sessionType() == "NONE" && !o.countSessions:
		obj = obj.add("sessions", nil)
	case o.countSessions:
		obj = obj.add("session_count", max(s.SessionCount, len(s.Sessions)))
	default:
		obj = obj.add("sessions", poundSessions(s.Sessions))
	}
	return poundLimits(obj.
		add("backends", backends).
		add("enabled", s.Enabled).
		add("kind", "service").
		add("name", strOrNull(s.Name)).
		add("session_type", s.sessionType()), &s.Limits)
}

// poundBackend serialises a backend with its type-specific members.
func poundBackend(b *Backend, stats bool) jobject {
	group := b.Group
	if b.Emergency {
		group = poundEmergencyGroup
	}
	// Sized for a regular backend with stats: 20,000 of them in a
	// listing would otherwise each grow their members five times.
	o := make(jobject, 0, 14).
		add("alive", b.Alive).
		add("enabled", b.Enabled).
		add("kind", "backend").
		add("priority", b.Priority).
		add("type", string(b.kind())).
		add("weight", group)
	switch b.kind() {
	case KindRegular:
		addr := b.Address
		if b.Port != 0 {
			addr = net.JoinHostPort(b.Address, strconv.Itoa(b.Port))
		}
		o = o.add("address", addr).
			add("conn_to", seconds(b.ConnTimeout)).
			add("io_to", seconds(b.IOTimeout)).
			add("protocol", b.protocol()).
			add("servername", strOrNull(b.ServerName)).
			add("ws_to", seconds(b.WSTimeout))
		if b.HasParent {
			o = o.add("parent", b.Parent)
		}
	case KindMatrix:
		o = o.add("family", b.Family).
			add("hostname", b.Hostname).
			add("resolve_mode", b.ResolveMode).
			add("servername", strOrNull(b.ServerName))
		if !b.Expire.IsZero() {
			o = o.add("expire", b.Expire.Format(poundTimeFormat))
		}
	case KindRedirect:
		o = o.add("code", b.RedirectCode).add("has_uri", b.HasURI).add("url", b.RedirectURL)
	case KindError:
		o = o.add("status", b.ErrorStatus).add("text", strOrNull(b.ErrorText))
	case KindLua:
		o = o.add("function", b.LuaFunction)
	}
	if stats && b.kind() != KindMatrix {
		o = o.add("stats", poundStats(b))
	}
	return o
}

// poundStats is Pound's BackendStats object (times in nanoseconds).
func poundStats(b *Backend) jobject {
	o := jobject{}.add("request_count", b.Requests)
	if b.Requests > 0 {
		o = o.add("request_time_avg", jfixed(b.RequestTimeAvg.Nanoseconds())).
			add("request_time_stddev", jfixed(b.RequestTimeStddev.Nanoseconds()))
	}
	return o
}

// logObject is Pound's log level reply. The listener is echoed the way it
// was addressed (listener_index or listener_name).
func logObject(id *ident, level, global string) jobject {
	o := jobject{}.
		add("global", strOrNull(global)).
		add("kind", "log").
		add("level", strOrNull(level))
	if id != nil && id.kind == identNum {
		o = o.add("listener_index", id.num)
	} else if id != nil {
		o = o.add("listener_name", id.name)
	}
	return o
}

// strOrNull maps "" to JSON null.
func strOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// seconds prints a duration as whole seconds, as Pound's timeouts are.
func seconds(d time.Duration) int64 { return int64(d / time.Second) }
