package adminapi

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
)

// restVar captures the object path after an endpoint prefix ("" or "/...").
const restVar = "{rest:(?s:/.*)?}"

// poundAPI serves the Pound 4 dialect (pound.md §3.2, Pound's svc.c
// control_endpoint table).
type poundAPI struct {
	c Controller
}

// poundReq is one parsed request handed to a Pound endpoint.
type poundReq struct {
	r    *http.Request
	rest string // object path after the endpoint prefix
	view *poundView
}

// poundFunc is a Pound endpoint: it returns the JSON value to send, or a
// status (400/404/405/409/500) for Pound's HTML error page.
type poundFunc func(q *poundReq) (any, int)

// NewPoundHandler returns the Pound 4 control API: GET / and /core,
// GET/PUT/DELETE /listener/L[/S[/B]] and /service/S[/B] (list, enable,
// disable), PUT/DELETE /session, GET/PUT/DELETE /log, and lbd's GET
// /metrics, PATCH /config (reload, as on the zproxy socket; Pound
// itself cannot reload), PATCH /upgrade (binary upgrade, Upgrader), POST
// /route (the routing explainer) and the dashboard under /dashboard/. JSON has sorted keys and honours ?indent=N (0..80); errors are
// Pound's HTML pages. Unknown paths answer 404 to GET and 405 to anything
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
	}{
		{get, "/", a.listAll},
		{get, "/core{slash:/?}", a.core},
		{get, "/listener" + restVar, a.listListener},
		{put, "/listener" + restVar, a.enableListener(true)},
		{del, "/listener" + restVar, a.enableListener(false)},
		{get, "/service" + restVar, a.listService},
		{put, "/service" + restVar, a.enableService(true)},
		{del, "/service" + restVar, a.enableService(false)},
		{put, "/session" + restVar, a.addSession},
		{del, "/session" + restVar, a.deleteSession},
		{get, "/log" + restVar, a.getLog},
		{put, "/log" + restVar, a.setLog},
		{del, "/log" + restVar, a.clearLog},
		{http.MethodPatch, "/config{slash:/?}", a.reload},
		{get, "/cluster" + restVar, a.cluster},
	}
	for _, rt := range routes {
		r.Methods(rt.method).Path(rt.path).Handler(a.wrap(rt.fn))
	}
	r.Methods(get).Path("/metrics{slash:/?}").HandlerFunc(a.metrics)
	r.Methods(http.MethodPatch).Path("/upgrade{slash:/?}").HandlerFunc(a.upgrade)
	return withExtensions(r, c)
}

// withExtensions serves lbd's own endpoints (POST /route, /dashboard/)
// before the dialect's router.
func withExtensions(h http.Handler, c Controller) http.Handler {
	x := newExtensions(c)
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
		poundError(w, r, http.StatusNotFound)
		return
	}
	poundError(w, r, http.StatusMethodNotAllowed)
}

// wrap validates ?indent, takes the snapshot, runs the endpoint and sends
// its reply. indent is checked before any change is made (Pound checks it
// only when sending, after the change).
func (a *poundAPI) wrap(fn poundFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		indent, ok := parseIndent(r.URL.RawQuery)
		if !ok {
			poundError(w, r, http.StatusBadRequest)
			return
		}
		q := &poundReq{r: r, rest: mux.Vars(r)["rest"], view: newPoundView(a.c.State())}
		v, status := fn(q)
		if status != 0 && status != http.StatusOK {
			poundError(w, r, status)
			return
		}
		writePoundReply(w, "application/json", encodeJSON(v, poundStyle(indent)))
	})
}

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
	minor := 1
	if r.ProtoMajor == 1 && r.ProtoMinor == 0 {
		minor = 0
	}
	writeRaw(w, rawResponse{
		status: status,
		reason: t[0],
		minor:  minor,
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

// metrics serves the OpenMetrics exposition on the control socket.
func (a *poundAPI) metrics(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	if err := WriteMetrics(&b, a.c.State()); err != nil {
		poundError(w, r, http.StatusInternalServerError)
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
