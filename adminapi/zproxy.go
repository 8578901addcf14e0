package adminapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
)

// zproxyAPI serves the zproxy 0.9.5 dialect (zproxy.md §1, src/ctl_handler.c).
type zproxyAPI struct {
	c      Controller
	router *mux.Router
	ext    *lbdExtensions
}

// zreq is one request handed to a zproxy endpoint.
type zreq struct {
	r    *http.Request // for who made a change (the timeline)
	vars map[string]string
	st   *State
	body []byte
}

// zreply is an endpoint's answer; a nil body sends no body and no
// Content-Type/Length (zproxy's bare 400/405), unless the client accepts
// JSON: it then gets reason (refusal.go).
type zreply struct {
	status int
	body   []byte
	reason string
}

// zbare is zproxy's bare refusal, with the reason a JSON client gets.
func zbare(status int, format string, a ...any) zreply {
	return zreply{status: status, reason: fmt.Sprintf(format, a...)}
}

// forClient gives a bare refusal its JSON body when the client asks for
// JSON, in zproxy's compact result form.
func (z zreply) forClient(r *http.Request) zreply {
	if z.body == nil && z.reason != "" && wantsJSON(r) {
		o := jobject{}.add("result", "error").add("reason", z.reason)
		z.body = encodeJSON(o, zproxyCompact)
	}
	return z
}

// zproxyFunc is a zproxy endpoint.
type zproxyFunc func(q *zreq) zreply

// NewZproxyHandler returns the zproxy control API: the GET listings of
// listeners, services, backends and sessions, backend status changes,
// runtime backends, session add/move/delete/flush/sync, and PATCH /config,
// plus lbd's PATCH and DELETE of a backend (zproxy_backend.go).
// Paths are matched case-insensitively with repeated and trailing slashes
// tolerated; other methods get 405 and unknown paths 400, both without a
// body. Replies carry zproxy's exact header set and order.
func NewZproxyHandler(c Controller) http.Handler {
	a := &zproxyAPI{c: c, ext: newExtensions(c, zproxyNumbering)}
	r := mux.NewRouter()
	r.SkipClean(true)
	bare400 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeZproxy(w, zbare(http.StatusBadRequest, "no such endpoint: %s %s", r.Method, r.URL.Path).forClient(r))
	})
	r.NotFoundHandler, r.MethodNotAllowedHandler = bare400, bare400

	const (
		get, put, patch, del = http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete
		lst                  = "/listener/{listener:[0-9]+}"
		svc                  = lst + "/service/{service}"
	)
	routes := []struct {
		method, path string
		fn           zproxyFunc
	}{
		{get, "/listeners", a.getListeners},
		{get, lst, a.getListener},
		{get, lst + "/services", a.getServices},
		{get, svc, a.getService},
		{get, svc + "/backends", a.getBackends},
		{get, svc + "/backend/{backend}", a.getBackend},
		{get, svc + "/sessions", a.getServiceSessions},
		{get, "/sessions", a.getSessions},
		{patch, "/config", a.reload},
		{patch, svc + "/backend/{backend}/status", a.setBackendStatus},
		{patch, svc + "/backend/{backend}", a.setBackend},
		{del, svc + "/backend/{backend}", a.removeBackend},
		{put, svc + "/backends", a.addBackend},
		{put, svc + "/sessions", a.addSession},
		{patch, svc + "/session/{key:(?s:.+)}", a.moveSession},
		{patch, svc + "/sessions", a.syncService},
		{patch, "/sessions", a.syncAll},
		{del, svc + "/sessions", a.deleteSessions},
		{get, "/cluster", a.getCluster},
	}
	// A service's sessions, paged (session_page.go), when the query
	// asks for a page; without ?limit or ?after, zproxy's whole list.
	r.Methods(get).Path(svc + "/sessions").MatcherFunc(func(r *http.Request, _ *mux.RouteMatch) bool {
		q := r.URL.Query()
		return canPage(c) && (q.Has("limit") || q.Has("after"))
	}).HandlerFunc(a.zproxySessionPage)
	for _, rt := range routes {
		r.Methods(rt.method).Path(rt.path).Handler(a.wrap(rt.fn))
	}
	r.Methods(patch).Path("/upgrade").HandlerFunc(a.zproxyUpgrade)
	a.router = r
	return a
}

// ServeHTTP serves lbd's own endpoints (POST /route, /dashboard/), and
// otherwise refuses unknown methods with 405, normalises the path and
// routes it.
func (a *zproxyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.ext.owns(r.URL.Path) {
		a.ext.ServeHTTP(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		writeZproxy(w, zbare(http.StatusMethodNotAllowed, "%s is not a method of this API: use GET, PUT, PATCH or DELETE", r.Method).forClient(r))
		return
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = normalizeZproxyPath(r.URL.Path), ""
	r2.URL = &u
	a.router.ServeHTTP(w, r2)
}

// normalizeZproxyPath collapses repeated slashes, drops a trailing one and
// lower-cases the keyword segments (even positions), which zproxy's
// case-insensitive `^[/]+listener[/]+...[/]*$` regexes allow. Names, ids
// and the session key keep their case; a session key keeps its inner
// slashes, since zproxy matches it with (.+).
func normalizeZproxyPath(p string) string {
	segs := strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	for i := range segs {
		if i > 4 && strings.EqualFold(segs[4], "session") {
			break
		}
		if i%2 == 0 {
			segs[i] = strings.ToLower(segs[i])
		}
	}
	return "/" + strings.Join(segs, "/")
}

// wrap reads the body, takes the snapshot and writes the endpoint's reply.
func (a *zproxyAPI) wrap(fn zproxyFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The Server caps bodies too; this covers the handler used alone.
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err == nil && len(body) > MaxBodyBytes {
			err = &http.MaxBytesError{Limit: MaxBodyBytes}
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeZproxy(w, zerr(http.StatusRequestEntityTooLarge, "CTL request too long."))
				return
			}
			writeZproxy(w, zerr(http.StatusBadRequest, "Failed to parse CTL request."))
			return
		}
		writeZproxy(w, fn(&zreq{r: r, vars: mux.Vars(r), st: a.c.State(), body: body}).forClient(r))
	})
}

// writeZproxy sends a reply with zproxy's header set in zproxy's order.
func writeZproxy(w http.ResponseWriter, z zreply) {
	h := make([][2]string, 0, 6)
	if z.body != nil {
		h = append(h,
			[2]string{"Content-Type", "application/json"},
			[2]string{"Content-Length", strconv.Itoa(len(z.body))})
	}
	h = append(h,
		[2]string{"Expires", "now"},
		[2]string{"Pragma", "no-cache"},
		[2]string{"Server", "zproxy/"},
		[2]string{"Cache-control", "no-cache,no-store"})
	writeRaw(w, rawResponse{status: z.status, minor: 1, headers: h, body: z.body})
}

// zjson is a 200 with a pretty-printed value.
func zjson(v any) zreply {
	return zreply{status: http.StatusOK, body: encodeJSON(v, zproxyPretty)}
}

// zok is {"result":"ok"} with the given status.
func zok(status int) zreply {
	return zreply{status: status, body: encodeJSON(jobject{}.add("result", "ok"), zproxyCompact)}
}

// zerr is {"result":"error","reason":...}.
func zerr(status int, format string, args ...any) zreply {
	o := jobject{}.add("result", "error").add("reason", fmt.Sprintf(format, args...))
	return zreply{status: status, body: encodeJSON(o, zproxyCompact)}
}

// zpath is the listener, service and backend named by the route, resolved
// against one snapshot. Indices are -1 when absent or not found.
type zpath struct {
	st            *State
	lid, sid, bid string // as printed in zproxy's messages
	li, si, bi    int
}

// resolve looks up the route variables. Services are found by name, then
// (C++-era form) by index; backends by id, then by index.
func resolve(st *State, vars map[string]string) zpath {
	p := zpath{st: st, lid: vars["listener"], sid: vars["service"], bid: vars["backend"], li: -1, si: -1, bi: -1}
	if n, err := strconv.Atoi(p.lid); err == nil {
		p.lid = strconv.Itoa(n)
		if n >= 0 && n < len(st.Listeners) {
			p.li = n
		}
	}
	if p.li < 0 {
		return p
	}
	svcs := st.Listeners[p.li].Services
	p.si = lookup(len(svcs), p.sid, func(i int) string { return svcs[i].Name })
	if p.si < 0 || p.bid == "" {
		return p
	}
	bs := svcs[p.si].Backends
	p.bi = lookup(len(bs), p.bid, func(i int) string { return backendID(&bs[i]) })
	return p
}

// lookup finds key among n names, falling back to a decimal index.
func lookup(n int, key string, name func(int) string) int {
	for i := 0; i < n; i++ {
		if name(i) == key {
			return i
		}
	}
	if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < n && strconv.Itoa(i) == key {
		return i
	}
	return -1
}

func (p *zpath) listener() *Listener { return &p.st.Listeners[p.li] }
func (p *zpath) service() *Service   { return &p.st.Listeners[p.li].Services[p.si] }
func (p *zpath) ref() Ref            { return Ref{Listener: p.li, Service: p.si, Backend: -1} }

// findBackendID resolves a backend id given in a body within the service.
func (p *zpath) findBackendID(id string) int {
	bs := p.service().Backends
	return lookup(len(bs), id, func(i int) string { return backendID(&bs[i]) })
}

func (p *zpath) listenerNotFound() zreply {
	return zerr(http.StatusNotFound, "Listener %s not found.", p.lid)
}

func (p *zpath) serviceNotFound() zreply {
	return zerr(http.StatusNotFound, "Service %s in listener %s not found.", p.sid, p.lid)
}

func (p *zpath) backendNotFound(id string) zreply {
	return zerr(http.StatusNotFound, "Backend %s in service %s in listener %s not found.", id, p.sid, p.lid)
}

// shortServiceNotFound is the message zproxy uses where it looks the
// service up in the session state rather than in the configuration.
func (p *zpath) shortServiceNotFound() zreply {
	return zerr(http.StatusNotFound, "Service %s not found.", p.sid)
}
