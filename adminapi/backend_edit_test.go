package adminapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// zproxyBackendCases are lbd's PATCH and DELETE of a backend on the
// zproxy socket.
var zproxyBackendCases = []zproxyCase{
	{name: "set weight", method: "PATCH", path: b1, body: `{"weight":3}`,
		status: 200, want: okBody, calls: []string{"SetBackend {0 0 0} w3 p- c-"}},
	{name: "set all three by index", method: "PATCH", path: "/listener/0/service/0/backend/1", body: `{"weight":2,"priority":0,"connlimit":10}`,
		status: 200, want: okBody, calls: []string{"SetBackend {0 0 1} w2 p0 c10"}},
	{name: "case and slashes as zproxy", method: "PATCH", path: "//LISTENER/0/Service/web/BACKEND/127.0.0.1-8081/", body: `{"connlimit":0}`,
		status: 200, want: okBody, calls: []string{"SetBackend {0 0 0} w- p- c0"}},
	{name: "nothing to set", method: "PATCH", path: b1, body: `{}`,
		status: 400, want: zfail("Invalid JSON format. Expected 'weight', 'priority' or 'connlimit' variable.")},
	{name: "empty body", method: "PATCH", path: b1,
		status: 400, want: zfail("Invalid JSON format.")},
	{name: "misspelt field", method: "PATCH", path: b1, body: `{"wieght":3}`,
		status: 400, want: zfail(`Invalid JSON format: unknown field \"wieght\"`)},
	{name: "field twice", method: "PATCH", path: b1, body: `{"weight":3,"weight":4}`,
		status: 400, want: zfail(`Invalid JSON format: duplicate field \"weight\"`)},
	{name: "not a number", method: "PATCH", path: b1, body: `{"weight":"3"}`,
		status: 400, want: `{"result":"error","reason":"Invalid JSON format: cannot unmarshal string *`},
	{name: "not an integer", method: "PATCH", path: b1, body: `{"weight":1.5}`,
		status: 400, want: `{"result":"error","reason":"Invalid JSON format: cannot unmarshal number 1.5 *`},
	{name: "out of range", method: "PATCH", path: b1, body: `{"weight":70000}`,
		status: 400, want: zfail("Invalid value: weight 70000 out of range 0-65535."), calls: []string{"SetBackend {0 0 0} w70000 p- c-"}},
	{name: "unknown backend", method: "PATCH", path: webSvc + "/backend/9.9.9.9-1", body: `{"weight":3}`,
		status: 404, want: zfail("Backend 9.9.9.9-1 in service web in listener 0 not found.")},
	{name: "unknown service", method: "PATCH", path: "/listener/0/service/nope/backend/0", body: `{"weight":3}`,
		status: 404, want: zfail("Backend 0 in service nope in listener 0 not found.")},
	{name: "controller failure", method: "PATCH", path: b1, body: `{"weight":3}`, ctlErr: fmt.Errorf("boom"),
		status: 500, want: zfail("Failed to change backend 127.0.0.1-8081."), calls: []string{"SetBackend {0 0 0} w3 p- c-"}},
	{name: "remove", method: "DELETE", path: b1,
		status: 200, want: okBody, calls: []string{"RemoveBackend {0 0 0}"}},
	{name: "remove by index", method: "DELETE", path: "/listener/1/service/api/backend/0",
		status: 200, want: okBody, calls: []string{"RemoveBackend {1 0 0}"}},
	{name: "remove with a body", method: "DELETE", path: b1, body: `{"id":"x"}`,
		status: 400, want: zfail("Invalid request: a DELETE of a backend takes no body.")},
	{name: "remove unknown", method: "DELETE", path: webSvc + "/backend/7",
		status: 404, want: zfail("Backend 7 in service web in listener 0 not found.")},
	{name: "remove refused", method: "DELETE", path: b1, ctlErr: fmt.Errorf("backend 0: its address is listed more than once: %w", ErrConflict),
		status: 409, want: zfail("backend 0: its address is listed more than once."), calls: []string{"RemoveBackend {0 0 0}"}},
	{name: "remove a special backend", method: "DELETE", path: "/listener/1/service/api/backend/1",
		status: 400, want: zfail("Invalid value: backend 1 is special."), calls: []string{"RemoveBackend {1 0 1}"}},
	{name: "no backend POST", method: "POST", path: b1, status: 405, want: ""},
	{name: "no backend PUT", method: "PUT", path: b1, status: 400, want: ""},
}

func TestZproxyBackendEdits(t *testing.T) {
	runZproxyCases(t, zproxyBackendCases)
}

// TestBackendEditsGolden: the replies that show the result, pinned.
func TestBackendEditsGolden(t *testing.T) {
	tests := []struct {
		name  string
		pound bool
		steps [][3]string // method, target, body; the last reply is the golden one
	}{
		{name: "pound_patch_backend", pound: true, steps: [][3]string{{"PATCH", "/listener/1/0/0?priority=9&connlimit=4&indent=2"}}},
		{name: "pound_delete_backend", pound: true, steps: [][3]string{{"DELETE", "/backend/main/web/1?indent=2"}}},
		{name: "zproxy_backend_patched", steps: [][3]string{
			{"PATCH", b1, `{"weight":7,"priority":2,"connlimit":30}`}, {"GET", b1}}},
		{name: "zproxy_backends_after_delete", steps: [][3]string{{"DELETE", b1}, {"GET", webSvc + "/backends"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newFake()
			h := NewZproxyHandler(ctl)
			if tc.pound {
				h = NewPoundHandler(ctl)
			}
			var body []byte
			for _, s := range tc.steps {
				rec := do(h, s[0], s[1], s[2])
				if rec.Code != http.StatusOK {
					t.Fatalf("%s %s: status %d, body %s", s[0], s[1], rec.Code, rec.Body)
				}
				body = rec.Body.Bytes()
			}
			checkGolden(t, tc.name+".json", body)
		})
	}
}

// poundBackendCases are lbd's PATCH of a backend and DELETE /backend on
// the Pound socket: failures are JSON, except a PATCH of something that
// is not a backend, which stays Pound's 405 page.
var poundBackendCases = []struct {
	name, method, path string
	ctlErr             error
	status             int
	reason             string // the JSON failure's reason; "" with a 405 page
	calls              []string
}{
	{name: "weight", method: "PATCH", path: "/listener/1/0/0?weight=3", status: 200, calls: []string{"SetBackend {0 0 0} w3 p- c-"}},
	{name: "by listener name, all three", method: "PATCH", path: "/listener/main/web/1?connlimit=5&priority=2&weight=2", status: 200,
		calls: []string{"SetBackend {0 0 1} w2 p2 c5"}},
	{name: "global via dash", method: "PATCH", path: "/listener/-/0/0?priority=1", status: 200, calls: []string{"SetBackend {-1 0 0} w- p1 c-"}},
	{name: "global service path", method: "PATCH", path: "/service/0/0?connlimit=0", status: 200, calls: []string{"SetBackend {-1 0 0} w- p- c0"}},
	{name: "nothing to set", method: "PATCH", path: "/listener/1/0/0", status: 400, reason: "nothing to change: give weight, priority or connlimit"},
	{name: "only indent", method: "PATCH", path: "/listener/1/0/0?indent=2", status: 400, reason: "nothing to change: give weight, priority or connlimit"},
	{name: "misspelt", method: "PATCH", path: "/listener/1/0/0?wieght=3", status: 400, reason: `unknown parameter "wieght": give weight, priority or connlimit`},
	{name: "twice", method: "PATCH", path: "/listener/1/0/0?weight=3&weight=4", status: 400, reason: "weight given 2 times"},
	{name: "not a number", method: "PATCH", path: "/listener/1/0/0?weight=x", status: 400, reason: `weight "x" is not a decimal number`},
	{name: "not canonical", method: "PATCH", path: "/listener/1/0/0?weight=+3", status: 400, reason: `weight " 3" is not a decimal number`},
	{name: "empty value", method: "PATCH", path: "/listener/1/0/0?priority=", status: 400, reason: `priority "" is not a decimal number`},
	{name: "bad escape", method: "PATCH", path: "/listener/1/0/0?weight=%zz", status: 400, reason: `malformed query: invalid URL escape "%zz"`},
	{name: "bad indent", method: "PATCH", path: "/listener/1/0/0?weight=3&indent=99", status: 400, reason: "indent must be a number from 0 to 80"},
	{name: "out of range", method: "PATCH", path: "/listener/1/0/0?weight=70000", status: 400, reason: "weight 70000 out of range 0-65535",
		calls: []string{"SetBackend {0 0 0} w70000 p- c-"}},
	{name: "unknown backend", method: "PATCH", path: "/listener/1/0/9?weight=3", status: 404, reason: "backend 9 not found in service 0 of listener 1 (backends are numbered by index, 0 to 2)"},
	{name: "unknown listener", method: "PATCH", path: "/listener/nope/0/0?weight=3", status: 404, reason: "listener nope not found"},
	{name: "control backend", method: "PATCH", path: "/listener/0/0/0?weight=3", status: 400, reason: "the control socket's backend cannot be changed"},
	{name: "controller failure", method: "PATCH", path: "/listener/1/0/0?weight=3", ctlErr: fmt.Errorf("boom"), status: 500, reason: "boom",
		calls: []string{"SetBackend {0 0 0} w3 p- c-"}},
	{name: "PATCH of a service is 405", method: "PATCH", path: "/listener/1/0?weight=3", status: 405},
	{name: "PATCH of a listener is 405", method: "PATCH", path: "/listener/1?weight=3", status: 405},
	{name: "PATCH of a global service is 405", method: "PATCH", path: "/service/0?weight=3", status: 405},
	{name: "remove", method: "DELETE", path: "/backend/1/0/1", status: 200, calls: []string{"RemoveBackend {0 0 1}"}},
	{name: "remove global (a special backend in the fixture)", method: "DELETE", path: "/backend/-/fallback/0", status: 400,
		reason: "backend 0 is special", calls: []string{"RemoveBackend {-1 0 0}"}},
	{name: "remove a service", method: "DELETE", path: "/backend/1/0", status: 400, reason: "DELETE /backend/L/S/B removes a backend: name one"},
	{name: "remove nothing", method: "DELETE", path: "/backend", status: 400, reason: "DELETE /backend/L/S/B removes a backend: name one"},
	{name: "remove below a backend", method: "DELETE", path: "/backend/1/0/0/x", status: 404, reason: `nothing is below a backend: "/x"`},
	{name: "PATCH of the whole listing is 405", method: "PATCH", path: "/listener?weight=3", status: 405},
	{name: "PATCH of the listing with a slash is 405", method: "PATCH", path: "/listener/?weight=3", status: 405},
	{name: "remove unknown", method: "DELETE", path: "/backend/1/0/5", status: 404, reason: "backend 5 not found in service 0 of listener 1 (backends are numbered by index, 0 to 2)"},
	{name: "remove the control backend", method: "DELETE", path: "/backend/0/0/0", status: 400, reason: "the control socket's backend cannot be changed"},
	{name: "remove a special backend", method: "DELETE", path: "/backend/1/1/0", status: 400, reason: "backend 0 is special",
		calls: []string{"RemoveBackend {0 1 0}"}},
	{name: "remove refused", method: "DELETE", path: "/backend/1/0/0", ctlErr: fmt.Errorf("listed twice: %w", ErrConflict), status: 409,
		reason: "listed twice", calls: []string{"RemoveBackend {0 0 0}"}},
	{name: "GET /backend stays Pound's 404", method: "GET", path: "/backend/1/0/0", status: 404},
	{name: "PUT /backend stays Pound's 405", method: "PUT", path: "/backend/1/0/0", status: 405},
}

func TestPoundBackendEdits(t *testing.T) {
	for _, tc := range poundBackendCases {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newFake()
			ctl.err = tc.ctlErr
			rec := do(NewPoundHandler(ctl), tc.method, tc.path, "")
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			ct := rec.Header().Get("Content-Type")
			switch {
			case tc.status == 200:
				if ct != "application/json" || !strings.HasPrefix(rec.Body.String(), "{") {
					t.Errorf("reply %q %s", ct, rec.Body)
				}
			case tc.reason == "":
				if ct != "text/html" || !strings.HasPrefix(rec.Body.String(), poundPage(tc.status)) {
					t.Errorf("not Pound's %d page: %q %s", tc.status, ct, rec.Body)
				}
			default:
				want := zfail(strings.ReplaceAll(tc.reason, `"`, `\"`)) + "\n"
				if ct != "application/json" || rec.Body.String() != want {
					t.Errorf("reply %q %s, want %s", ct, rec.Body, want)
				}
			}
			if got := ctl.log(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
		})
	}
}
