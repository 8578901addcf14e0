package adminapi

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// The dashboard is one HTML page built into the binary (inline CSS and
// script, nothing fetched from anywhere: it works on an offline server)
// and four JSON endpoints beside it, found by the suffix of the path so
// that the same handler serves it at /dashboard/ on the control sockets
// and under whatever prefix a service gives a Dashboard backend:
//
//	GET  .../            the page (a path without the slash redirects)
//	GET  .../api/state   counters of every listener, service and backend
//	GET  .../api/history the graphs' points and the event timeline
//	GET  .../api/token   the token that POSTs must carry
//	POST .../api/enable  enable or disable a service or a backend
//
// The page polls api/state every second and computes rates from the
// counter deltas: polling rather than Server-Sent Events because a
// Dashboard backend answers one buffered response per request (as every
// special backend does), the control sockets cut connections after 30 s
// and cap them at 64, and lbctl dashboard's proxy stays a plain reverse
// proxy; one small GET a second per open page costs nothing.
//
// Cross-site requests cannot change anything: a POST must carry the
// per-process token in the X-LBD-Token header. A custom header cannot
// be sent cross-origin without a CORS preflight, which lbd never grants,
// and the token is served only to same-origin scripts (no CORS headers,
// Sec-Fetch-Site checked), so another site can neither forge nor read
// it. Browsers' Origin and Sec-Fetch-Site headers, when present, must
// also say same-origin, and the page forbids framing (clickjacking).

//go:embed dashboard
var dashboardFiles embed.FS

// The page, assembled once: the script and style inlined, and the
// Content-Security-Policy that allows exactly those two by hash.
var (
	pageOnce sync.Once
	pageHTML []byte
	pageCSP  string
)

func dashboardPage() ([]byte, string) {
	pageOnce.Do(func() {
		read := func(name string) string {
			b, err := dashboardFiles.ReadFile("dashboard/" + name)
			if err != nil {
				panic("adminapi: dashboard asset missing from the binary: " + err.Error())
			}
			return string(b)
		}
		js := strings.Replace(read("dashboard.js"), "/*GRAPHS*/", read("graphs.js"), 1)
		css := read("dashboard.css")
		html := strings.Replace(read("index.html"), "/*STYLE*/", css, 1)
		html = strings.Replace(html, "/*SCRIPT*/", js, 1)
		pageHTML = []byte(html)
		pageCSP = "default-src 'none'; script-src '" + sha(js) + "'; style-src '" + sha(css) + "'; " +
			"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	})
	return pageHTML, pageCSP
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}

// The per-process token of the dashboard's POSTs.
var (
	tokenOnce sync.Once
	token     string
)

// DashboardToken returns the token, made at first use from the system's
// random source.
func DashboardToken() string {
	tokenOnce.Do(func() {
		var b [32]byte
		// crypto/rand.Read does not fail (it panics instead, Go 1.24+).
		_, _ = rand.Read(b[:])
		token = hex.EncodeToString(b[:])
	})
	return token
}

// TokenHeader is the header a dashboard POST carries the token in.
const TokenHeader = "X-LBD-Token"

// dashboard serves the page and its endpoints for a Controller, showing
// listener numbers as num gives them.
type dashboard struct {
	c   Controller
	num numbering
}

// NewDashboard returns the dashboard handler (see above) of a Dashboard
// backend; its listeners are numbered as lbd's tools number them,
// Pound's way (numbering.go).
func NewDashboard(c Controller) http.Handler { return &dashboard{c: c, num: poundNumbering} }

func (d *dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/api/state"):
		d.state(w, r)
	case strings.HasSuffix(p, "/api/history"):
		d.history(w, r)
	case strings.HasSuffix(p, "/api/token"):
		d.token(w, r)
	case strings.HasSuffix(p, "/api/enable"):
		d.enable(w, r)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		writeJSONError(w, http.StatusMethodNotAllowed, "the dashboard page is read with GET")
	case !strings.HasSuffix(p, "/"):
		// Relative links (api/state) need the page's URL to end in "/".
		loc := (&url.URL{Path: p + "/"}).EscapedPath()
		writeRaw(w, rawResponse{status: http.StatusMovedPermanently, minor: 1, headers: [][2]string{
			{"Location", loc}, {"Content-Length", "0"}, {"Connection", "close"}}})
	default:
		page, csp := dashboardPage()
		writeRaw(w, rawResponse{status: http.StatusOK, minor: 1, headers: append(securityHeaders(csp),
			[2]string{"Content-Type", "text/html; charset=utf-8"},
			[2]string{"Content-Length", strconv.Itoa(len(page))},
			[2]string{"Connection", "close"}), body: page})
	}
}

// securityHeaders are sent with the page: no framing, no sniffing, no
// referrer, no caching, the CSP.
func securityHeaders(csp string) [][2]string {
	return [][2]string{
		{"Content-Security-Policy", csp},
		{"X-Frame-Options", "DENY"},
		{"X-Content-Type-Options", "nosniff"},
		{"Referrer-Policy", "no-referrer"},
		{"Cache-Control", "no-store"},
	}
}

// crossSite reports a request a browser sent on behalf of another site:
// Sec-Fetch-Site other than same-origin (or none, typed by the user), or
// an Origin whose host is not the Host asked for.
func crossSite(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || o == "null" || !strings.EqualFold(u.Host, r.Host) {
			return true
		}
	}
	return false
}

// state is GET api/state.
func (d *dashboard) state(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeJSONError(w, http.StatusMethodNotAllowed, "api/state is read with GET")
		return
	}
	page, bad := parseStatePage(r.URL.Query())
	if bad != "" {
		writeJSONError(w, http.StatusBadRequest, "api/state: "+bad)
		return
	}
	var st dashState
	if page.paged {
		st = pageState(summary(d.c), d.num, page)
	} else {
		st = dashboardState(summary(d.c), d.num)
	}
	js, err := json.Marshal(st)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, js)
}

// token is GET api/token: the token, for same-origin scripts only.
func (d *dashboard) token(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method != http.MethodGet:
		writeJSONError(w, http.StatusMethodNotAllowed, "api/token is read with GET")
	case crossSite(r):
		writeJSONError(w, http.StatusForbidden, "cross-site request refused")
	default:
		js, err := json.Marshal(map[string]string{"token": DashboardToken(), "header": TokenHeader})
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, js)
	}
}

// maxEnableBody bounds the body of api/enable.
const maxEnableBody = 4096

// enableRequest is the body of POST api/enable. Indices are those of
// api/state (listener -1: the global services); backend -1 names the
// service itself.
type enableRequest struct {
	Listener int  `json:"listener"`
	Service  int  `json:"service"`
	Backend  int  `json:"backend"`
	Enabled  bool `json:"enabled"`
}

// enable is POST api/enable: refused with 403 unless it carries the token
// and comes from the page's own origin.
func (d *dashboard) enable(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSONError(w, http.StatusMethodNotAllowed, "api/enable takes a POST")
		return
	}
	// The body is read before any answer: a refusal sent while the client
	// is still writing would reach it as a broken pipe, not as the 403.
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEnableBody+1))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	if len(body) > maxEnableBody {
		writeJSONError(w, http.StatusRequestEntityTooLarge, "api/enable takes at most 4096 bytes")
		return
	}
	got := r.Header.Get(TokenHeader)
	if crossSite(r) || subtle.ConstantTimeCompare([]byte(got), []byte(DashboardToken())) != 1 {
		writeJSONError(w, http.StatusForbidden, "cross-site request refused: the "+TokenHeader+" header must carry the dashboard's token")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeJSONError(w, http.StatusUnsupportedMediaType, "api/enable takes application/json")
		return
	}
	var q enableRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		writeJSONError(w, http.StatusBadRequest, "malformed request: "+err.Error())
		return
	}
	if q.Service < 0 {
		writeJSONError(w, http.StatusBadRequest, "the dashboard enables services and backends only")
		return
	}
	ref := Ref{Listener: q.Listener, Service: q.Service, Backend: q.Backend}
	if err := d.c.SetEnabled(ref, q.Enabled); err != nil {
		writeJSONError(w, statusOf(err), err.Error())
		return
	}
	recordEnable(d.c, r, ref, q.Enabled)
	writeJSON(w, http.StatusOK, []byte(`{"result":"ok"}`))
}
