package adminapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// request builds a request without httptest.NewRequest, which panics on
// the malformed targets the fuzzer produces.
func request(method, target string, body []byte) *http.Request {
	path, query, _ := strings.Cut(target, "?")
	return &http.Request{
		Method:     method,
		URL:        &url.URL{Path: path, RawQuery: query},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{},
		Host:       "localhost",
		RequestURI: target,
		Body:       io.NopCloser(bytes.NewReader(body)),
	}
}

// Statuses each dialect may answer.
var (
	poundStatuses  = map[int]bool{200: true, 400: true, 404: true, 405: true, 409: true, 500: true}
	zproxyStatuses = map[int]bool{200: true, 201: true, 204: true, 400: true, 404: true, 405: true, 409: true, 413: true, 500: true}
)

// checkReply asserts the dialect's status set and body format.
func checkReply(t *testing.T, dialect string, rec *httptest.ResponseRecorder) {
	t.Helper()
	body := rec.Body.Bytes()
	switch dialect {
	case "pound":
		if !poundStatuses[rec.Code] {
			t.Fatalf("pound status %d", rec.Code)
		}
		ct := rec.Header().Get("Content-Type")
		if rec.Code == 200 && ct == "application/json" && !json.Valid(body) {
			t.Fatalf("pound reply is not JSON: %q", body)
		}
		if rec.Code != 200 && ct != "text/html" {
			t.Fatalf("pound error with Content-Type %q", ct)
		}
	case "zproxy":
		if !zproxyStatuses[rec.Code] {
			t.Fatalf("zproxy status %d", rec.Code)
		}
		if len(body) > 0 && !json.Valid(body) {
			t.Fatalf("zproxy reply is not JSON: %q", body)
		}
	}
}

// swapCtl lets one handler (whose router is costly to build) serve a fresh
// fake per fuzz input; inputs run one at a time in each worker.
type swapCtl struct{ Controller }

// FuzzRoute sends random methods and targets to both dialects: no panic,
// only the dialect's statuses, and well-formed bodies.
func FuzzRoute(f *testing.F) {
	for _, s := range [][2]string{
		{"GET", "/"}, {"GET", "/listener/1/0/0?indent=3"}, {"PUT", "/listener/main/web"},
		{"DELETE", "/session/1/0?key=abc"}, {"PUT", "/log/-?level=combined"}, {"GET", "/metrics"},
		{"GET", "//LISTENER//0//service/web/backend/127.0.0.1-8081/"}, {"PATCH", "/listener/0/service/web/session/a/b"},
		{"DELETE", "/listener/0/service/0/sessions"}, {"PEST", "/config"}, {"GET", "/listener/99999999999999999999"},
		{"GET", "/dashboard"}, {"GET", "/dashboard/"}, {"GET", "/dashboard/api/state"}, {"POST", "/dashboard/api/enable"},
		{"GET", "/DASHBOARD/x/api/token"}, {"POST", "/route"}, {"GET", "/route/"},
	} {
		f.Add(s[0], s[1])
	}
	ctl := &swapCtl{}
	pound, zproxy := NewPoundHandler(ctl), NewZproxyHandler(ctl)
	f.Fuzz(func(t *testing.T, method, target string) {
		for _, d := range []struct {
			name string
			h    http.Handler
		}{{"pound", pound}, {"zproxy", zproxy}} {
			ctl.Controller = newFake()
			rec := httptest.NewRecorder()
			req := request(method, target, nil)
			d.h.ServeHTTP(rec, req)
			if (&lbdExtensions{}).owns(req.URL.Path) {
				checkExtensionReply(t, rec)
				continue
			}
			checkReply(t, d.name, rec)
		}
	})
}

// checkExtensionReply asserts what lbd's own endpoints answer on either
// socket: the dashboard page, a redirect to it, or JSON.
func checkExtensionReply(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	ct := rec.Header().Get("Content-Type")
	switch {
	case rec.Code == 301:
		if rec.Header().Get("Location") == "" {
			t.Fatalf("redirect without a Location")
		}
	case rec.Code == 200 && strings.HasPrefix(ct, "text/html"):
	case ct == "application/json" && json.Valid(rec.Body.Bytes()):
	default:
		t.Fatalf("extension reply %d %q: %q", rec.Code, ct, rec.Body.Bytes())
	}
}

// FuzzJSONBody feeds random bodies to the strict decoders and to every
// zproxy endpoint that takes a body. A body that decodes must survive a
// round trip through encoding/json unchanged.
func FuzzJSONBody(f *testing.F) {
	for _, s := range []string{
		`{"status":"active"}`, `{"status":"disabled","x":1}`, `{"id":"k","backend-id":"127.0.0.1-8081","last-seen":0}`,
		`[{"id":"s","backend-id":"127.0.0.1-8082"}]`, `{"address":"10.0.0.9","port":80,"https":true}`,
		`[{"id":0,"services":[{"name":"web","sessions":[]}]}]`, `{"ID":"k"}`, `{"id":"a","id":"b"}`, `{"status":"active"} x`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	ctl := &swapCtl{}
	h := NewZproxyHandler(ctl)
	f.Fuzz(func(t *testing.T, body []byte) {
		roundTrip(t, body, &statusBody{})
		roundTrip(t, body, &sessionBody{})
		roundTrip(t, body, &backendBody{})
		roundTrip(t, body, &[]sessionBody{})
		roundTrip(t, body, &[]listenerSessions{})
		for _, ep := range [][2]string{
			{"PATCH", webSvc + "/backend/127.0.0.1-8081/status"}, {"PUT", webSvc + "/backends"},
			{"PUT", webSvc + "/sessions"}, {"PATCH", webSvc + "/session/abc"}, {"PATCH", webSvc + "/sessions"},
			{"PATCH", "/sessions"}, {"DELETE", webSvc + "/sessions"},
		} {
			ctl.Controller = newFake()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, request(ep[0], ep[1], body))
			checkReply(t, "zproxy", rec)
		}
	})
}

// roundTrip decodes body into v; on success, v re-encoded must decode to
// an equal value.
func roundTrip(t *testing.T, body []byte, v any) {
	t.Helper()
	if decodeStrict(body, v) != nil {
		return
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encoding %T: %v", v, err)
	}
	w := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	if err := decodeStrict(again, w); err != nil {
		t.Fatalf("%s decoded, but its re-encoding %s does not: %v", body, again, err)
	}
	if !reflect.DeepEqual(v, w) {
		t.Fatalf("round trip changed %T: %s -> %s", v, body, again)
	}
}
