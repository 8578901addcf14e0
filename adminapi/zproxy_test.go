package adminapi

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const (
	okBody = `{"result":"ok"}`
	webSvc = "/listener/0/service/web"
	b1     = webSvc + "/backend/127.0.0.1-8081"
)

// zfail is zproxy's error body.
func zfail(reason string) string {
	return `{"result":"error","reason":"` + reason + `"}`
}

// zproxyCase is one row of TestZproxyRequests.
type zproxyCase struct {
	name, method, path, body string
	ctlErr                   error
	status                   int
	want                     string // exact reply body; a trailing "*" matches a prefix
	calls                    []string
}

// zproxyCases are the requests of TestZproxyRequests.
var zproxyCases = []zproxyCase{
	{name: "disable backend", method: "PATCH", path: b1 + "/status", body: `{"status":"disabled"}`,
		status: 200, want: okBody, calls: []string{"SetEnabled {0 0 0} false"}},
	{name: "enable backend by index", method: "PATCH", path: "/listener/0/service/0/backend/1/status", body: `{"status":"active"}`,
		status: 200, want: okBody, calls: []string{"SetEnabled {0 0 1} true"}},
	{name: "invalid status value", method: "PATCH", path: b1 + "/status", body: `{"status":"up"}`,
		status: 400, want: zfail("Invalid JSON format.")},
	{name: "status body not JSON", method: "PATCH", path: b1 + "/status", body: `status=active`,
		status: 400, want: zfail("Invalid JSON format.")},
	{name: "status empty body", method: "PATCH", path: b1 + "/status",
		status: 400, want: zfail("Invalid JSON format.")},
	{name: "status unknown field", method: "PATCH", path: b1 + "/status", body: `{"status":"active","foo":1}`,
		status: 400, want: zfail(`Invalid JSON format: unknown field \"foo\"`)},
	{name: "status key in wrong case", method: "PATCH", path: b1 + "/status", body: `{"STATUS":"active"}`,
		status: 400, want: zfail(`Invalid JSON format: unknown field \"STATUS\"`)},
	{name: "status duplicate key", method: "PATCH", path: b1 + "/status", body: `{"status":"disabled","status":"active"}`,
		status: 400, want: zfail(`Invalid JSON format: duplicate field \"status\"`)},
	{name: "status trailing data", method: "PATCH", path: b1 + "/status", body: `{"status":"active"} {}`,
		status: 400, want: zfail("Invalid JSON format.")},
	{name: "status wrong type", method: "PATCH", path: b1 + "/status", body: `{"status":1}`,
		status: 400, want: `{"result":"error","reason":"Invalid JSON format: cannot unmarshal*`},
	{name: "status of unknown backend", method: "PATCH", path: webSvc + "/backend/1.2.3.4-80/status", body: `{"status":"active"}`,
		status: 404, want: zfail("Backend 1.2.3.4-80 in service web in listener 0 not found.")},
	{name: "status change fails", method: "PATCH", path: b1 + "/status", body: `{"status":"active"}`, ctlErr: errors.New("boom"),
		status: 500, want: zfail("Failed to set backend status"), calls: []string{"SetEnabled {0 0 0} true"}},
	{name: "add backend", method: "PUT", path: webSvc + "/backends", body: `{"address":"10.0.0.9","port":80}`,
		status: 201, want: okBody, calls: []string{"AddBackend {0 0 -1} {ID: Address:10.0.0.9 Port:80 HTTPS:false Weight:1 Priority:1 ConnLimit:0}"}},
	{name: "add backend with options", method: "PUT", path: webSvc + "/backends",
		body:   `{"id":"b9","address":"backend.local","port":443,"https":true,"weight":3,"priority":2,"connlimit":5}`,
		status: 201, want: okBody, calls: []string{"AddBackend {0 0 -1} {ID:b9 Address:backend.local Port:443 HTTPS:true Weight:3 Priority:2 ConnLimit:5}"}},
	{name: "add backend without address", method: "PUT", path: webSvc + "/backends", body: `{"port":80}`,
		status: 400, want: zfail("Invalid JSON format. Expected 'address' variable.")},
	{name: "add backend without port", method: "PUT", path: webSvc + "/backends", body: `{"address":"10.0.0.9"}`,
		status: 400, want: zfail("Invalid JSON format. Expected 'port' variable.")},
	{name: "add backend with port out of range", method: "PUT", path: webSvc + "/backends", body: `{"address":"10.0.0.9","port":70000}`,
		status: 400, want: zfail("Invalid JSON format: port must be 1..65535.")},
	{name: "add backend with bad address", method: "PUT", path: webSvc + "/backends", body: `{"address":"a b","port":80}`,
		status: 400, want: zfail(`Invalid JSON format: invalid address \"a b\".`)},
	{name: "add backend with zero weight", method: "PUT", path: webSvc + "/backends", body: `{"address":"10.0.0.9","port":80,"weight":0}`,
		status: 400, want: zfail("Invalid JSON format: weight and priority must be >= 1, connlimit >= 0.")},
	{name: "add existing backend", method: "PUT", path: webSvc + "/backends", body: `{"address":"127.0.0.1","port":8081}`,
		status: 409, want: zfail("Backend 127.0.0.1-8081 already exists.")},
	{name: "add backend to unknown service", method: "PUT", path: "/listener/0/service/nope/backends", body: `{"address":"10.0.0.9","port":80}`,
		status: 404, want: zfail("Service nope in listener 0 not found.")},
	{name: "add backend fails", method: "PUT", path: webSvc + "/backends", body: `{"address":"10.0.0.9","port":80}`, ctlErr: errors.New("boom"),
		status: 500, want: zfail("Failed to load new configuration."), calls: []string{"AddBackend {0 0 -1} {ID: Address:10.0.0.9 Port:80 HTTPS:false Weight:1 Priority:1 ConnLimit:0}"}},
	{name: "add session", method: "PUT", path: webSvc + "/sessions", body: `{"id":"k1","backend-id":"127.0.0.1-8082"}`,
		status: 201, want: okBody, calls: []string{"AddSession {0 0 -1} {k1 1 0001-01-01T00:00:00Z false}"}},
	{name: "add static session", method: "PUT", path: webSvc + "/sessions", body: `{"id":"k1","backend-id":"127.0.0.1-8082","last-seen":0}`,
		status: 201, want: okBody, calls: []string{"AddSession {0 0 -1} {k1 1 0001-01-01T00:00:00Z true}"}},
	{name: "add session with last-seen", method: "PUT", path: webSvc + "/sessions", body: `{"id":"k1","backend-id":"127.0.0.1-8082","last-seen":1796017140}`,
		status: 201, want: okBody, calls: []string{"AddSession {0 0 -1} {k1 1 2026-11-30T05:39:00Z false}"}},
	{name: "add existing session keeps its backend", method: "PUT", path: webSvc + "/sessions", body: `{"id":"abc","backend-id":"127.0.0.1-8082"}`,
		status: 201, want: okBody, calls: []string{"MoveSession {0 0 -1} {abc 0 0001-01-01T00:00:00Z false}"}},
	{name: "add session without backend", method: "PUT", path: webSvc + "/sessions", body: `{"id":"k1"}`,
		status: 400, want: zfail("Invalid JSON format. Expected 'backend-id' variable.")},
	{name: "add session without id", method: "PUT", path: webSvc + "/sessions", body: `{"backend-id":"127.0.0.1-8082"}`,
		status: 400, want: zfail("Invalid JSON format. Expected 'id' variable.")},
	{name: "add session to unknown backend", method: "PUT", path: webSvc + "/sessions", body: `{"id":"k1","backend-id":"9.9.9.9-1"}`,
		status: 404, want: zfail("Backend 9.9.9.9-1 in service web in listener 0 not found.")},
	{name: "add session negative last-seen", method: "PUT", path: webSvc + "/sessions", body: `{"id":"k1","backend-id":"127.0.0.1-8082","last-seen":-5}`,
		status: 400, want: zfail("Invalid JSON format: last-seen must not be negative")},
	{name: "add session allocation failure", method: "PUT", path: webSvc + "/sessions", body: `{"id":"k1","backend-id":"127.0.0.1-8082"}`, ctlErr: ErrConflict,
		status: 409, want: zfail("Unable to create session. Perhaps it already exists."), calls: []string{"AddSession {0 0 -1} {k1 1 0001-01-01T00:00:00Z false}"}},
	{name: "move session", method: "PATCH", path: webSvc + "/session/abc", body: `{"backend-id":"127.0.0.1-8083","last-seen":1796017140}`,
		status: 200, want: okBody, calls: []string{"MoveSession {0 0 -1} {abc 2 2026-11-30T05:39:00Z false}"}},
	{name: "move session with slash in key", method: "PATCH", path: webSvc + "/session/a/b", body: `{"backend-id":"127.0.0.1-8083"}`,
		status: 404, want: zfail("Could not find session with ID a/b.")},
	{name: "move unknown session", method: "PATCH", path: webSvc + "/session/nope", body: `{"backend-id":"127.0.0.1-8083"}`,
		status: 404, want: zfail("Could not find session with ID nope.")},
	{name: "move session to unknown backend", method: "PATCH", path: webSvc + "/session/abc", body: `{"backend-id":"1.1.1.1-1"}`,
		status: 404, want: zfail("Backend 1.1.1.1-1 in service web in listener 0 not found.")},
	{name: "sync sessions", method: "PATCH", path: webSvc + "/sessions", body: `[{"id":"s1","backend-id":"127.0.0.1-8081","last-seen":0},{"id":"s2","backend-id":"127.0.0.1-8082"}]`,
		status: 200, want: okBody, calls: []string{"SyncSessions {0 0 -1} [{s1 0 0001-01-01T00:00:00Z true} {s2 1 0001-01-01T00:00:00Z false}]"}},
	{name: "sync needs an array", method: "PATCH", path: webSvc + "/sessions", body: `{"id":"s1"}`,
		status: 400, want: zfail("Failed to decode JSON.")},
	{name: "sync with unknown backend changes nothing", method: "PATCH", path: webSvc + "/sessions", body: `[{"id":"s1","backend-id":"127.0.0.1-8081"},{"id":"s2","backend-id":"x"}]`,
		status: 500, want: zfail("Backend x doesn't exist.")},
	{name: "sync unknown service", method: "PATCH", path: "/listener/0/service/nope/sessions", body: `[]`,
		status: 404, want: zfail("Service nope not found.")},
	{name: "sync unknown listener", method: "PATCH", path: "/listener/5/service/web/sessions", body: `[]`,
		status: 404, want: zfail("Listener 5 not found.")},
	{name: "global sync", method: "PATCH", path: "/sessions", body: `[{"id":1,"services":[{"name":"api","sessions":[{"id":"g","backend-id":"bck-a","last-seen":1796017140}]}]}]`,
		status: 200, want: okBody, calls: []string{"SyncSessions {1 0 -1} [{g 0 2026-11-30T05:39:00Z false}]"}},
	{name: "global sync unknown listener", method: "PATCH", path: "/sessions", body: `[{"id":9,"services":[{"name":"api","sessions":[]}]}]`,
		status: 500, want: zfail("Listener 9 doesn't exist.")},
	{name: "global sync unknown service", method: "PATCH", path: "/sessions", body: `[{"id":0,"services":[{"name":"nope","sessions":[]}]}]`,
		status: 500, want: zfail("Service nope doesn't exist.")},
	{name: "global sync unknown backend", method: "PATCH", path: "/sessions", body: `[{"id":0,"services":[{"name":"web","sessions":[{"id":"g","backend-id":"x"}]}]}]`,
		status: 500, want: zfail("Backend x doesn't exist.")},
	{name: "global sync bad JSON", method: "PATCH", path: "/sessions", body: `[{`,
		status: 500, want: zfail("Failed to decode JSON.")},
	{name: "global sync unknown field", method: "PATCH", path: "/sessions", body: `[{"id":0,"listeners":[]}]`,
		status: 400, want: zfail(`Failed to decode JSON: unknown field \"listeners\"`)},
	{name: "flush sessions", method: "DELETE", path: webSvc + "/sessions",
		status: 204, want: "", calls: []string{"FlushSessions {0 0 -1}"}},
	{name: "delete session by id", method: "DELETE", path: webSvc + "/sessions", body: `{"id":"abc"}`,
		status: 204, want: "", calls: []string{"DeleteSession {0 0 -1} abc"}},
	{name: "delete unknown session", method: "DELETE", path: webSvc + "/sessions", body: `{"id":"nope"}`,
		status: 404, want: zfail("Could not find session with ID nope")},
	{name: "delete sessions of backend", method: "DELETE", path: webSvc + "/sessions", body: `{"backend-id":"127.0.0.1-8082"}`,
		status: 204, want: "", calls: []string{"FlushSessions {0 0 1}"}},
	{name: "delete sessions of unknown backend", method: "DELETE", path: webSvc + "/sessions", body: `{"backend-id":"x"}`,
		status: 404, want: zfail("Backend x in service web in listener 0 not found.")},
	{name: "delete with neither key", method: "DELETE", path: webSvc + "/sessions", body: `{}`,
		status: 400, want: ""},
	{name: "delete with bad JSON", method: "DELETE", path: webSvc + "/sessions", body: `{`,
		status: 400, want: zfail("Invalid JSON format.")},
	{name: "delete in unknown service", method: "DELETE", path: "/listener/0/service/nope/sessions",
		status: 404, want: zfail("Service nope not found.")},
	{name: "reload", method: "PATCH", path: "/config", status: 200, want: okBody, calls: []string{"Reload"}},
	{name: "reload fails", method: "PATCH", path: "/config", ctlErr: errors.New("parse error"),
		status: 500, want: `{"result":"error","reason":"Failed to reload configuration.","errors":["parse error"]}`, calls: []string{"Reload"}},
	{name: "body too large", method: "PATCH", path: "/sessions", body: strings.Repeat(" ", MaxBodyBytes+1),
		status: 413, want: zfail("CTL request too long.")},
	{name: "POST is not allowed", method: "POST", path: "/listeners", status: 405, want: ""},
	{name: "unknown method", method: "PEST", path: "/listeners", status: 405, want: ""},
	{name: "HEAD is not allowed", method: "HEAD", path: "/listeners", status: 405, want: ""},
	{name: "no status delete", method: "DELETE", path: b1 + "/status", status: 400, want: ""},
	{name: "PUT on a GET path", method: "PUT", path: "/listeners", status: 400, want: ""},
	{name: "unknown path", method: "GET", path: "/nope", status: 400, want: ""},
	{name: "listener id not a number", method: "GET", path: "/listener/abc", status: 400, want: ""},
	{name: "unknown listener", method: "GET", path: "/listener/9", status: 404, want: zfail("Listener 9 not found.")},
	{name: "unknown service", method: "GET", path: "/listener/0/service/nope", status: 404, want: zfail("Service nope in listener 0 not found.")},
	{name: "sessions of unknown listener name the service", method: "GET", path: "/listener/9/service/web/sessions",
		status: 404, want: zfail("Service web in listener 9 not found.")},
	{name: "unknown backend", method: "GET", path: webSvc + "/backend/1.1.1.1-1", status: 404,
		want: zfail("Backend 1.1.1.1-1 in service web in listener 0 not found.")},
}

func TestZproxyRequests(t *testing.T) {
	runZproxyCases(t, zproxyCases)
}

func runZproxyCases(t *testing.T, cases []zproxyCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newFake()
			ctl.err = tc.ctlErr
			rec := do(NewZproxyHandler(ctl), tc.method, tc.path, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			got := rec.Body.String()
			if prefix, ok := strings.CutSuffix(tc.want, "*"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("body %s, want prefix %s", got, prefix)
				}
			} else if got != tc.want {
				t.Errorf("body\n got: %s\nwant: %s", got, tc.want)
			}
			if calls := ctl.log(); !slices.Equal(calls, tc.calls) {
				t.Errorf("calls %q, want %q", calls, tc.calls)
			}
			if h := rec.Header(); h.Get("Server") != "zproxy/" || h.Get("Expires") != "now" {
				t.Errorf("zproxy headers missing: %v", h)
			}
		})
	}
}

// TestZproxyChangesShow checks that a mutation is visible in the next GET.
func TestZproxyChangesShow(t *testing.T) {
	ctl := newFake()
	h := NewZproxyHandler(ctl)
	steps := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{name: "add backend", method: "PUT", path: webSvc + "/backends", body: `{"address":"10.9.9.9","port":81}`, status: 201},
		{name: "new backend listed", method: "GET", path: webSvc + "/backend/10.9.9.9-81", status: 200, contains: `"id": "10.9.9.9-81"`},
		{name: "disable it", method: "PATCH", path: webSvc + "/backend/10.9.9.9-81/status", body: `{"status":"disabled"}`, status: 200},
		{name: "shown disabled", method: "GET", path: webSvc + "/backend/10.9.9.9-81", status: 200, contains: `"status": "disabled"`},
		{name: "pin a session to it", method: "PUT", path: webSvc + "/sessions", body: `{"id":"n1","backend-id":"10.9.9.9-81","last-seen":0}`, status: 201},
		{name: "session listed", method: "GET", path: webSvc + "/sessions", status: 200, contains: `"backend-id": "10.9.9.9-81",`},
	}
	for _, s := range steps {
		rec := do(h, s.method, s.path, s.body)
		if rec.Code != s.status {
			t.Fatalf("%s: status %d, body %s", s.name, rec.Code, rec.Body)
		}
		if !strings.Contains(rec.Body.String(), s.contains) {
			t.Fatalf("%s: body does not contain %s:\n%s", s.name, s.contains, rec.Body)
		}
	}
}
