package adminapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SessionPage pages the fixture's sessions in key order (the engine's
// Table.Page does it for real; session/page_test.go tests that).
func (f *fakeCtl) SessionPage(ref Ref, after string, limit int) ([]Session, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "SessionPage "+after)
	svc, err := service(f.st, ref)
	if err != nil {
		return nil, false, err
	}
	var out []Session
	for _, s := range svc.Sessions {
		if s.Key > after {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.Key, b.Key) })
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

func TestSessionPages(t *testing.T) {
	abc := `{"backend":0, "expire":"` + fakeNow.Add(4*time.Minute).Format(poundTimeFormat) + `", "key":"abc"}`
	static := `{"backend":1, "expire":"` + fakeNow.Add(5*time.Minute).Format(poundTimeFormat) + `", "key":"static"}`
	tests := []struct {
		name, path string
		zproxy     bool
		status     int
		want       string // the body, or its start when it ends in "*"
	}{
		{"first page", "/listener/1/0/sessions?limit=1", false, 200,
			`{"kind":"sessions", "next":"abc", "sessions":[` + abc + `]}`},
		{"next page", "/listener/1/0/sessions?limit=1&after=abc", false, 200,
			`{"kind":"sessions", "next":null, "sessions":[` + static + `]}`},
		{"default limit takes both", "/listener/1/0/sessions", false, 200,
			`{"kind":"sessions", "next":null, "sessions":[` + abc + `, ` + static + `]}`},
		{"after is URL-decoded", "/listener/1/0/sessions?after=ab%63", false, 200,
			`{"kind":"sessions", "next":null, "sessions":[` + static + `]}`},
		{"limit out of range", "/listener/1/0/sessions?limit=0", false, 400, "*"},
		{"limit not a number", "/listener/1/0/sessions?limit=x", false, 400, "*"},
		{"a backend has no sessions", "/listener/1/0/0/sessions", false, 404, "*"},
		{"unknown service", "/listener/1/9/sessions", false, 404, "*"},
		{"zproxy first page", "/listener/0/service/web/sessions?limit=1", true, 200,
			`{"next":"abc","sessions":[{"id":"abc","backend-id":"127.0.0.1-8081","last-seen":` + strconv.FormatInt(fakeNow.Add(-time.Minute).Unix(), 10) + `}]}`},
		{"zproxy next page", "/listener/0/service/web/sessions?after=abc", true, 200,
			`{"next":null,"sessions":[{"id":"static","backend-id":"127.0.0.1-8082","last-seen":0}]}`},
		{"zproxy bad limit", "/listener/0/service/web/sessions?limit=-1", true, 400, "*"},
		{"zproxy unknown service", "/listener/0/service/nope/sessions?limit=5", true, 404, "*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewPoundHandler(newFake())
			if tc.zproxy {
				h = NewZproxyHandler(newFake())
			}
			rec := do(h, "GET", tc.path, "")
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			got := rec.Body.String()
			if tc.zproxy && rec.Code == 200 {
				var b bytes.Buffer
				if err := json.Compact(&b, rec.Body.Bytes()); err != nil {
					t.Fatalf("not JSON: %v: %s", err, got)
				}
				got = b.String()
			}
			if prefix, ok := strings.CutSuffix(tc.want, "*"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("body %s, want prefix %s", got, prefix)
				}
			} else if got != tc.want {
				t.Errorf("body\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// ?sessions=count lists services with their session counts, not their
// sessions, from a Summary; any other value is refused.
func TestPoundSessionCount(t *testing.T) {
	rec := do(NewPoundHandler(newFake()), "GET", "/listener/1/0?sessions=count", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"session_count":2`) || strings.Contains(rec.Body.String(), `"sessions"`) {
		t.Errorf("count: %d %s", rec.Code, rec.Body)
	}
	rec = do(NewPoundHandler(newFake()), "GET", "/listener/1/1?sessions=count", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"session_count":0`) {
		t.Errorf("count without sessions: %d %s", rec.Code, rec.Body)
	}
	if rec := do(NewPoundHandler(newFake()), "GET", "/listener/1/0?sessions=all", ""); rec.Code != 400 {
		t.Errorf("sessions=all: %d %s", rec.Code, rec.Body)
	}
}
