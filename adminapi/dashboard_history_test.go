package adminapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// observedFake is the fake Controller with a timeline and a history, as
// the engine has them.
type observedFake struct {
	*fakeCtl
	obs *Observer
}

func (o observedFake) Observer() *Observer { return o.obs }

// api/history serves the points newer than since and the events after
// the given sequence number; an enable through the dashboard is on the
// timeline with who asked.
func TestDashboardHistory(t *testing.T) {
	c := observedFake{fakeCtl: newFake(), obs: NewObserver()}
	h := NewDashboard(c)
	t0 := time.Now().Add(-time.Minute)
	for i := 0; i < 3; i++ {
		c.obs.Sample(c.State(), t0.Add(time.Duration(i)*time.Second))
	}
	req := httptest.NewRequest(http.MethodPost, "/api/enable", strings.NewReader(`{"listener":0,"service":0,"backend":1,"enabled":false}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(TokenHeader, DashboardToken())
	req.RemoteAddr = "127.0.0.1:4242"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("enable: %d %s", rec.Code, rec.Body)
	}
	tests := []struct {
		query          string
		points, events int
	}{
		{"", 2, 1},
		{"?since=" + itoa(t0.Add(time.Second).UnixMilli()), 1, 1},
		{"?since=" + itoa(t0.Add(2*time.Second).UnixMilli()) + "&events=1", 0, 0},
		{"?since=junk&events=junk", 2, 1}, // malformed: from the start
	}
	for _, tc := range tests {
		rec := do(h, http.MethodGet, "/dashboard/api/history"+tc.query, "")
		var got dashHistory
		if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("%q: %d %v %s", tc.query, rec.Code, err, rec.Body)
		}
		s, ok := got.Series["0/0"]
		if !got.Observed || !ok || len(s.T) != tc.points || len(s.RPS) != tc.points {
			t.Errorf("%q: service 0/0 has %d points, want %d", tc.query, len(s.T), tc.points)
		}
		if len(got.Events) != tc.events {
			t.Fatalf("%q: %d events, want %d", tc.query, len(got.Events), tc.events)
		}
		if tc.events > 0 {
			ev := got.Events[0]
			if ev.Kind != EventDisable || ev.Who != "client 127.0.0.1:4242" || !strings.HasPrefix(ev.Object, "backend ") {
				t.Errorf("%q: event %+v", tc.query, ev)
			}
		}
	}
	// Without a timeline, the page is told so and shows the table only.
	rec = do(NewDashboard(newFake()), http.MethodGet, "/api/history", "")
	if !strings.Contains(rec.Body.String(), `"observed":false`) {
		t.Errorf("an unobserved controller: %s", rec.Body)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
