package adminapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"lbd/explain"
)

// RouteExplainer is implemented by a Controller that can explain routing
// (the engine): which listener, service and backend a request would get,
// and why, in a dry run that changes nothing. Errors wrap ErrInvalid (a
// malformed question) or ErrNotFound (no such listener).
type RouteExplainer interface {
	ExplainRoute(q explain.Query) (*explain.Route, error)
}

// maxRouteBody bounds a POST /route body: a request head and a few
// fields.
const maxRouteBody = 128 << 10

// lbdExtensions are lbd's own endpoints, served alike on both sockets:
// POST /route (the routing explainer) and the dashboard under
// /dashboard.
type lbdExtensions struct {
	c    Controller
	dash http.Handler
	num  numbering // the socket's (numbering.go)
}

func newExtensions(c Controller, num numbering) *lbdExtensions {
	return &lbdExtensions{c: c, dash: &dashboard{c: c, num: num}, num: num}
}

// owns reports whether path is one of the extensions.
func (x *lbdExtensions) owns(path string) bool {
	p := strings.ToLower(path)
	return p == "/route" || p == "/route/" || p == "/dashboard" || strings.HasPrefix(p, "/dashboard/") || ownsACME(p) || ownsCache(p)
}

// ServeHTTP serves an extension path (owns is true).
func (x *lbdExtensions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(strings.ToLower(r.URL.Path), "/dashboard") {
		x.dash.ServeHTTP(w, r)
		return
	}
	if ownsACME(r.URL.Path) {
		x.acme(w, r)
		return
	}
	if ownsCache(strings.ToLower(r.URL.Path)) {
		x.cache(w, r)
		return
	}
	x.route(w, r)
}

// route is POST /route: the body is an explain.Query, the reply an
// explain.Route (both JSON), a listener numbered as the socket numbers
// it in both. A malformed question is a 400, an unknown listener a 404,
// both as {"result":"error","reason":...}.
func (x *lbdExtensions) route(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSONError(w, http.StatusMethodNotAllowed, "use POST /route with a JSON query")
		return
	}
	re, ok := x.c.(RouteExplainer)
	if !ok {
		writeJSONError(w, http.StatusNotImplemented, "this server cannot explain routing")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRouteBody+1))
	if err != nil || len(body) > maxRouteBody {
		writeJSONError(w, http.StatusRequestEntityTooLarge, "the query is too large")
		return
	}
	var q explain.Query
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		writeJSONError(w, http.StatusBadRequest, "malformed query: "+err.Error())
		return
	}
	if dec.More() {
		writeJSONError(w, http.StatusBadRequest, "malformed query: data after the JSON object")
		return
	}
	if q.Method == "" || q.URL == "" {
		writeJSONError(w, http.StatusBadRequest, `the query needs a "method" and a "url"`)
		return
	}
	st := x.c.State()
	if e := x.listenerIndex(st, &q); e != nil {
		writeRefusal(w, e)
		return
	}
	route, err := re.ExplainRoute(q)
	if err == nil {
		route.Listener.Index = x.num.number(st, route.Listener.Index)
	}
	if err != nil {
		status := statusOf(err)
		writeJSONError(w, status, strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
		return
	}
	// Generated pages are HTML: kept readable rather than \u003c-escaped
	// (the reply is JSON, sent with nosniff, never rendered).
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(route); err != nil {
		writeJSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, js.Bytes())
}

// listenerIndex turns a listener number of the query into the State
// index the Controller takes; a name is left to it.
func (x *lbdExtensions) listenerIndex(st *State, q *explain.Query) *apiError {
	n, err := strconv.Atoi(q.Listener)
	if err != nil {
		return nil
	}
	i, ok := x.num.index(st, n)
	switch {
	case ok:
		q.Listener = strconv.Itoa(i)
		return nil
	case x.num.offset(st) == 1 && n == 0:
		return refuse(http.StatusBadRequest, "listener 0 is the control socket: it routes no requests")
	}
	return refuse(http.StatusNotFound, "listener %d not found (listeners are numbered %d to %d here)",
		n, x.num.offset(st), x.num.number(st, len(st.Listeners)-1))
}

// writeJSON sends a JSON reply and closes the connection, as every
// control reply does.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	writeRaw(w, rawResponse{
		status: status,
		minor:  1,
		headers: [][2]string{
			{"Content-Type", "application/json"},
			{"Content-Length", strconv.Itoa(len(body))},
			{"Cache-Control", "no-store"},
			{"X-Content-Type-Options", "nosniff"},
			{"Connection", "close"},
		},
		body: body,
	})
}

// writeJSONError sends {"result":"error","reason":...}, the zproxy form
// lbctl already reads.
func writeJSONError(w http.ResponseWriter, status int, reason string) {
	writeRefusal(w, &apiError{status: status, reason: reason})
}

// writeRefusal sends a refusal as JSON (refusal.go).
func writeRefusal(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, errorBody(e))
}
