package adminapi

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gorilla/mux"
)

// restVar captures the object path after an endpoint prefix ("" or "/...").
const restVar = "{rest:(?s:/.*)?}"

// poundAPI serves the Pound 4 dialect (pound.md §3.2, Pound's svc.c
// control_endpoint table).
type poundAPI struct {
	c Controller
	// listingSize is the length of the last full listing, which the
	// next one's buffer starts at (a bit more than it, as a service
	// more would otherwise double the buffer).
	listingSize atomic.Int64
}

// poundReq is one parsed request handed to a Pound endpoint.
type poundReq struct {
	r    *http.Request
	rest string // object path after the endpoint prefix
	view *poundView
}

// poundFunc is a Pound endpoint: it returns the JSON value to send, or
// the refusal (400/404/405/409/500): Pound's HTML error page, or the
// reason in JSON to a client that asks for it (refusal.go).
type poundFunc func(q *poundReq) (any, *apiError)

// NewPoundHandler returns the Pound 4 control API: GET / and /core,
// GET/PUT/DELETE /listener/L[/S[/B]] and /service/S[/B] (list, enable,
// disable), PUT/DELETE /session, GET/PUT/DELETE /log, and lbd's GET
// /metrics, PATCH /config (reload, as on the zproxy socket; Pound
// itself cannot reload), PATCH of a backend and DELETE /backend/L/S/B
// (settings and removal, pound_backend.go), PATCH /upgrade (binary
// upgrade, Upgrader), POST /route (the routing explainer) and the
// dashboard under /dashboard/. JSON has sorted keys and honours ?indent=N (0..80); errors are
// Pound's HTML pages, or JSON with the reason when the request accepts
// application/json. Unknown paths answer 404 to GET and 405 to anything
// else, as Pound's prefix-matching endpoint table does.
func NewPoundHandler(c Controller) http.Handler {
	a := &poundAPI{c: c}
	r := mux.NewRouter()
	r.SkipClean(true) // Pound does not clean paths; mux would redirect
	r.NotFoundHandler = http.HandlerFunc(poundNotFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(poundNotFound)
	const get, put, del = http.MethodGet, http.MethodPut, http.MethodDelete
	routes := []struct {
		method, path string
		fn           poundFunc
		reads        viewKind
	}{
		{get, "/", a.listAll, readsListing},
		{get, "/core{slash:/?}", a.core, readsHead},
		{get, "/listener" + restVar, a.listListener, readsListing},
		{put, "/listener" + restVar, a.enableListener(true), readsState},
		{del, "/listener" + restVar, a.enableListener(false), readsState},
		{get, "/service" + restVar, a.listService, readsState},
		{put, "/service" + restVar, a.enableService(true), readsState},
		{del, "/service" + restVar, a.enableService(false), readsState},
		{put, "/session" + restVar, a.addSession, readsState},
		{del, "/session" + restVar, a.deleteSession, readsState},
		{get, "/log" + restVar, a.getLog, readsState},
		{put, "/log" + restVar, a.setLog, readsState},
		{del, "/log" + restVar, a.clearLog, readsState},
		{http.MethodPatch, "/config{slash:/?}", a.reload, readsState},
		{get, "/cluster" + restVar, a.cluster, readsHead},
	}
	// A service's sessions, paged (session_page.go); before the routes,
	// whose GET /listener would read "sessions" as a backend.
	r.Methods(get).Path("/listener{rest:/[^/]+/[^/]+}/sessions").HandlerFunc(a.poundSessionPage)
	for _, rt := range routes {
		r.Methods(rt.method).Path(rt.path).Handler(a.wrapView(rt.fn, rt.reads))
	}
	// lbd's backend changes (pound_backend.go).
	r.Methods(http.MethodPatch).Path("/listener" + restVar).Handler(a.wrapExt(a.patchBackend(false)))
	r.Methods(http.MethodPatch).Path("/service" + restVar).Handler(a.wrapExt(a.patchBackend(true)))
	r.Methods(del).Path("/backend" + restVar).Handler(a.wrapExt(a.deleteBackend))
	r.Methods(get).Path("/metrics{slash:/?}").HandlerFunc(a.metrics)
	r.Methods(http.MethodPatch).Path("/upgrade{slash:/?}").HandlerFunc(a.upgrade)
	return withExtensions(r, c)
}

// withExtensions serves lbd's own endpoints (POST /route, /dashboard/)
// before the dialect's router.
func withExtensions(h http.Handler, c Controller) http.Handler {
	x := newExtensions(c, poundNumbering)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if x.owns(r.URL.Path) {
			x.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// poundNotFound answers requests no route takes. Pound's "" endpoint (GET
// only) prefix-matches every path, so a GET always reaches a handler that
// answers 404, and any other method gets 405.
func poundNotFound(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		poundRefuse(w, r, refuse(http.StatusNotFound, "no such endpoint: GET %s", r.URL.Path))
		return
	}
	poundRefuse(w, r, refuse(http.StatusMethodNotAllowed, "%s is not a method of %s", r.Method, r.URL.Path))
}

// viewKind says what of the State an endpoint reads.
type viewKind int

const (
	readsState   viewKind = iota // any of it
	readsListing                 // the full listing when the path selects no listener
	readsHead                    // Core and Cluster, no service (GET /core, which every lbctl command sends, and /cluster)
)

// wrapView validates ?indent, takes the snapshot, runs the endpoint and
// sends its reply. indent is checked before any change is made (Pound
// checks it only when sending, after the change). The snapshot is what
// the endpoint reads: a full listing with ?sessions=count streams the
// services, /core takes none of them.
func (a *poundAPI) wrapView(fn poundFunc, reads viewKind) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		indent, ok := parseIndent(r.URL.RawQuery)
		if !ok {
			poundRefuse(w, r, errIndent)
			return
		}
		rest := mux.Vars(r)["rest"]
		var view *poundView
		var e *apiError
		if reads == readsHead {
			if mode, ok := queryParam(r.URL.RawQuery, "sessions"); ok && mode != "count" {
				e = badSessions(mode)
			} else {
				view = a.headView()
			}
		} else {
			view, e = a.view(r, reads == readsListing && fullListing(rest))
		}
		if e != nil {
			poundRefuse(w, r, e)
			return
		}
		if view.stream != nil {
			defer view.stream.close()
		}
		q := &poundReq{r: r, rest: rest, view: view}
		v, e := fn(q)
		if e != nil {
			poundRefuse(w, r, e)
			return
		}
		if view.stream == nil {
			writePoundReply(w, "application/json", encodeJSON(v, poundStyle(indent)))
			return
		}
		last := a.listingSize.Load()
		size := int(last + last/16)
		if last == 0 {
			// The first listing: ~0.5 kB a service with two backends,
			// rather than growing to 5 MB through a dozen copies.
			size = firstListingBytes * view.stream.total()
		}
		body := encodeJSONSized(v, poundStyle(indent), size)
		a.listingSize.Store(int64(len(body)))
		writePoundReply(w, "application/json", body)
	})
}

// firstListingBytes is what a streamed listing's buffer starts with per
// service when no listing has been made yet.
const firstListingBytes = 512

// view takes the snapshot a request needs: the whole State, or with
// ?sessions=count (an lbd extension) a Summary whose services show
// their session counts instead of copying every session.
func (a *poundAPI) view(r *http.Request, full bool) (*poundView, *apiError) {
	mode, ok := queryParam(r.URL.RawQuery, "sessions")
	var v *poundView
	switch {
	case !ok:
		v = newPoundView(a.c.State())
	case mode == "count" && full:
		s := streamSummary(a.c)
		v = newPoundView(s.st)
		v.opts.countSessions, v.stream = true, s
	case mode == "count":
		v = newPoundView(summary(a.c))
		v.opts.countSessions = true
	default:
		return nil, badSessions(mode)
	}
	// ?requests=1 (an lbd extension): backends carry the two numbers
	// lbctl's table shows, which it read from GET /metrics before.
	req, _ := queryParam(r.URL.RawQuery, "requests") // absent is the same as not "1"
	v.opts.requests = req == "1"
	return v, nil
}

// badSessions refuses ?sessions=mode, which is not count.
func badSessions(mode string) *apiError {
	return refuse(http.StatusBadRequest, "sessions=%s: the one value is count (the sessions themselves: GET /listener/L/S/sessions)", mode)
}

// headView is a view for Core and Cluster: a streamed Summary, whose
// services are never made, costs no service at all, where State copied every
// service, backend and session (27 MB at 10,000 services / 20,000
// backends, for each lbctl command's GET /core).
func (a *poundAPI) headView() *poundView {
	if s, ok := a.c.(SummaryStreamer); ok {
		st, _, _ := s.StreamedSummary() // the services are not read
		return newPoundView(st)
	}
	return newPoundView(a.c.State())
}

// fullListing reports whether the object path after /listener (or /)
// selects the full listing, as parseListenerPath reads it.
func fullListing(rest string) bool { return rest == "" || rest == "/" || rest == "/-" }

// errIndent refuses a bad ?indent.
var errIndent = &apiError{status: http.StatusBadRequest, reason: "indent must be a number from 0 to 80"}

// parseIndent reads ?indent=N, 0..80 (Pound's send_json_reply).
func parseIndent(rawQuery string) (int, bool) {
	s, ok := queryParam(rawQuery, "indent")
	if !ok {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 80 {
		return 0, false
	}
	return n, true
}

// queryParam returns the raw value of the first name=value pair, like
// Pound's get_param.
func queryParam(rawQuery, name string) (string, bool) {
	for _, kv := range strings.Split(rawQuery, "&") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// writePoundReply sends a 200 the way Pound does: HTTP/1.1, three headers,
// connection closed.
func writePoundReply(w http.ResponseWriter, ctype string, body []byte) {
	writeRaw(w, rawResponse{
		status: http.StatusOK,
		minor:  1,
		headers: [][2]string{
			{"Content-Type", ctype},
			{"Content-Length", strconv.Itoa(len(body))},
			{"Connection", "close"},
		},
		body: body,
	})
}

// poundErrorText holds Pound's reason and page text per status (http.c).
var poundErrorText = map[int][2]string{
	400: {"Bad Request", "Your browser (or proxy) sent a request that this server could not understand."},
	404: {"Not Found", "The requested URL was not found on this server."},
	405: {"Method Not Allowed", "The request method is not supported for the requested resource."},
	409: {"Conflict", "The request conflicts with the current state of the server."},
	413: {"Payload Too Large", "The request content is larger than the proxy server is able to process."},
	500: {"Internal Server Error", "The server encountered an internal error and was unable to complete your request."},
}

// poundRefuse answers a refusal: Pound's HTML page, or the reason in
// JSON when the client accepts it (refusal.go), with the same status
// line and Pound's reply headers.
func poundRefuse(w http.ResponseWriter, r *http.Request, e *apiError) {
	if !wantsJSON(r) {
		poundError(w, r, e.status)
		return
	}
	body := errorBody(e)
	reason := http.StatusText(e.status)
	if t, ok := poundErrorText[e.status]; ok {
		reason = t[0]
	}
	writeRaw(w, rawResponse{
		status: e.status,
		reason: reason,
		minor:  replyMinor(r),
		headers: [][2]string{
			{"Content-Type", "application/json"},
			{"Content-Length", strconv.Itoa(len(body))},
			{"Connection", "close"},
		},
		body: body,
	})
}

// replyMinor is the HTTP/1 minor version of an error reply: the
// request's, as Pound answers.
func replyMinor(r *http.Request) int {
	if r.ProtoMajor == 1 && r.ProtoMinor == 0 {
		return 0
	}
	return 1
}

// poundError sends Pound's default HTML error page for status.
func poundError(w http.ResponseWriter, r *http.Request, status int) {
	t, ok := poundErrorText[status]
	if !ok {
		status, t = 500, poundErrorText[500]
	}
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN"><html><head><title>`)
	b.WriteString(strconv.Itoa(status) + " " + t[0])
	b.WriteString(`</title></head><body><h1>` + t[0] + `</h1><p>` + t[1] + `</p></body></html>`)
	writeRaw(w, rawResponse{
		status: status,
		reason: t[0],
		minor:  replyMinor(r),
		headers: [][2]string{
			{"Content-Type", "text/html"},
			{"Expires", "now"},
			{"Pragma", "no-cache"},
			{"Cache-control", "no-cache,no-store"},
			{"Content-Length", strconv.Itoa(b.Len())},
			{"Connection", "close"},
		},
		body: b.Bytes(),
	})
}

// metrics serves the OpenMetrics exposition on the control socket, from
// a Summary: the metrics count sessions, they do not list them, and a
// State copies every session table (a million sessions on each scrape);
// streamed when the Controller can (summary_stream.go).
func (a *poundAPI) metrics(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	s := streamSummary(a.c)
	defer s.close()
	if err := writeMetrics(&b, s, r.URL.Query()["family"]); err != nil {
		poundRefuse(w, r, refuse(http.StatusInternalServerError, "metrics: %v", err))
		return
	}
	writePoundReply(w, MetricsContentType, b.Bytes())
}

// sessionKey reads ?key=K for the session endpoints. The value is
// URL-decoded (falling back to the raw text) and limited like Pound's
// KEY_SIZE.
func sessionKey(rawQuery string) (string, bool) {
	const maxKey = 127
	raw, ok := queryParam(rawQuery, "key")
	if !ok || raw == "" {
		return "", false
	}
	key, err := url.QueryUnescape(raw)
	if err != nil {
		key = raw
	}
	return key, len(key) <= maxKey
}
