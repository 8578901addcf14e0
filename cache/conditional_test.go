package cache

import (
	"strings"
	"testing"
	"time"
)

func TestConditionalHit(t *testing.T) {
	c := newCache(t, Config{})
	run(t, c, []step{{req: get, resp: resp200("Cache-Control: max-age=60", `ETag: "v1"`, "Last-Modified: "+httpDate(-time.Hour)), want: "miss", wantStored: true}})
	for _, tc := range []struct {
		name, field string
		want        bool
	}{
		{"If-None-Match matching", `If-None-Match: "x", W/"v1"`, true},
		{"If-None-Match other", `If-None-Match: "x"`, false},
		{"If-None-Match star", `If-None-Match: *`, true},
		{"If-Modified-Since after", "If-Modified-Since: " + httpDate(0), true},
		{"If-Modified-Since before", "If-Modified-Since: " + httpDate(-2*time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := parseReq(t, get+"\n"+tc.field)
			tx := c.Begin(req)
			defer tx.Finish(false)
			if tx.Action != Hit {
				t.Fatalf("action %d, want a hit", tx.Action)
			}
			tx.CheckConditional(req)
			if tx.NotModified != tc.want {
				t.Fatalf("NotModified=%v, want %v", tx.NotModified, tc.want)
			}
		})
	}
}

func TestRangeHit(t *testing.T) {
	c := newCache(t, Config{})
	run(t, c, []step{{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true}})
	for _, tc := range []struct{ name, rng, body, contentRange string }{
		{"first-last", "bytes=1-2", "el", "bytes 1-2/5"},
		{"open end", "bytes=3-", "lo", "bytes 3-4/5"},
		{"suffix", "bytes=-2", "lo", "bytes 3-4/5"},
		{"last past the end", "bytes=2-99", "llo", "bytes 2-4/5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := c.Begin(parseReq(t, get+"\nRange: "+tc.rng))
			defer tx.Finish(false)
			if tx.Action != Hit || tx.Status() != 206 || string(tx.Body()) != tc.body {
				t.Fatalf("action %d status %d body %q", tx.Action, tx.Status(), tx.Body())
			}
			if h := string(tx.AppendHead(nil)); !strings.Contains(h, "Content-Range: "+tc.contentRange+"\r\nContent-Length: "+itoa(int64(len(tc.body)))+"\r\n") {
				t.Fatalf("head:\n%s", h)
			}
		})
	}
	for _, rng := range []string{"bytes=5-", "bytes=-0", "bytes=3-1", "items=0-1", "bytes=0-1,2-3", "bytes=x-"} {
		t.Run("passed "+rng, func(t *testing.T) {
			tx := c.Begin(parseReq(t, get+"\nRange: "+rng))
			defer tx.Finish(false)
			if tx.Action != Pass {
				t.Fatalf("%s: action %d, want a pass", rng, tx.Action)
			}
		})
	}
}
