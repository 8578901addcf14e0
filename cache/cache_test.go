package cache

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lbd/http1"
)

// origin is what the backend answers in a scenario step: a raw response
// head and body ("" when the step expects no backend request).
type step struct {
	after time.Duration // clock advance before the request
	req   string        // request line and fields, without the blank line
	resp  string        // response head (without the blank line) and body after "\n\n"
	want  string        // hit, miss, validated, pass, refused, stale-error
	// wantStored: the response was stored (for miss/validated steps).
	wantStored bool
	// wantHeader "Name: value" in what a hit or validated step serves.
	wantHeader string
}

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func httpDate(d time.Duration) string { return epoch.Add(d).Format(http.TimeFormat) }

// run plays a scenario against one cache and checks each step.
func run(t *testing.T, c *Cache, steps []step) {
	t.Helper()
	now := epoch
	c.now = func() time.Time { return now }
	for i, s := range steps {
		now = now.Add(s.after)
		got, stored, obj := exchange(t, c, s)
		if got != s.want {
			t.Fatalf("step %d (%s): got %s, want %s", i, s.req, got, s.want)
		}
		if (s.want == "miss" || s.want == "validated") && stored != s.wantStored {
			t.Fatalf("step %d: stored=%v, want %v", i, stored, s.wantStored)
		}
		if s.wantHeader != "" {
			name, value, _ := strings.Cut(s.wantHeader, ": ")
			if obj == nil || string(obj.Header(name)) != value {
				var v []byte
				if obj != nil {
					v = obj.Header(name)
				}
				t.Fatalf("step %d: %s is %q, want %q", i, name, v, value)
			}
		}
	}
}

func parseReq(t *testing.T, raw string) *http1.Request {
	t.Helper()
	var req http1.Request
	head := strings.ReplaceAll(raw, "\n", "\r\n") + "\r\n\r\n"
	if err := http1.ParseRequestHead([]byte(head), &req, &http1.DefaultLimits); err != nil {
		t.Fatalf("request %q: %v", raw, err)
	}
	return &req
}

func parseResp(t *testing.T, raw string) (*http1.Response, []byte) {
	t.Helper()
	head, body, _ := strings.Cut(raw, "\n\n")
	var resp http1.Response
	h := strings.ReplaceAll(head, "\n", "\r\n") + "\r\n\r\n"
	if err := http1.ParseResponseHead([]byte(h), &resp, false); err != nil {
		t.Fatalf("response %q: %v", raw, err)
	}
	return &resp, []byte(body)
}

func exchange(t *testing.T, c *Cache, s step) (string, bool, *Object) {
	req := parseReq(t, s.req)
	tx := c.Begin(req)
	defer tx.Finish(false)
	switch tx.Action {
	case Hit:
		return "hit", false, tx.Obj
	case Refuse:
		return "refused", false, nil
	}
	if s.resp == "" {
		t.Fatalf("%s: the backend is asked (action %d) but the step has no response", s.req, tx.Action)
	}
	resp, body := parseResp(t, s.resp)
	switch tx.Response(req, resp) {
	case ServeStored:
		if tx.detail == "stale-if-error" {
			return "stale-error", false, tx.Obj
		}
		return "validated", false, tx.Obj
	case Store:
		tx.Write(body)
		tx.Finish(true)
		return "miss", true, nil
	}
	if tx.Action == Pass {
		return "pass", false, nil
	}
	return "miss", false, nil
}

func newCache(t *testing.T, cfg Config) *Cache {
	t.Helper()
	if cfg.Budget == 0 {
		cfg.Budget = 1 << 20
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

const get = "GET /a HTTP/1.1\nHost: example.com"

func resp200(fields ...string) string {
	return "HTTP/1.1 200 OK\nDate: " + httpDate(0) + "\nContent-Length: 5\n" + strings.Join(fields, "\n") + "\n\nhello"
}

func TestScenarios(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"max-age fresh is a hit", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{after: 30 * time.Second, req: get, want: "hit"},
		}},
		{"max-age expired without validators is a miss", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=10"), want: "miss", wantStored: true},
			{after: 11 * time.Second, req: get, resp: resp200("Cache-Control: max-age=10"), want: "miss", wantStored: true},
		}},
		{"s-maxage wins over max-age", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=1, s-maxage=100"), want: "miss", wantStored: true},
			{after: 50 * time.Second, req: get, want: "hit"},
		}},
		{"no-store is not stored", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60, no-store"), want: "miss"},
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
		}},
		{"private is not stored", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: private, max-age=60"), want: "miss"},
		}},
		{"private is stored for an IgnorePrivate path", Config{IgnorePrivate: regexp.MustCompile("^/a$")}, []step{
			{req: get, resp: resp200("Cache-Control: private, max-age=60"), want: "miss", wantStored: true},
			{req: get, want: "hit"},
		}},
		{"Authorization: not stored without public", Config{}, []step{
			{req: get + "\nAuthorization: Basic eDp5", resp: resp200("Cache-Control: max-age=60"), want: "miss"},
		}},
		{"Authorization: stored with s-maxage", Config{}, []step{
			{req: get + "\nAuthorization: Basic eDp5", resp: resp200("Cache-Control: s-maxage=60"), want: "miss", wantStored: true},
		}},
		{"Expires against Date", Config{}, []step{
			{req: get, resp: resp200("Expires: " + httpDate(100*time.Second)), want: "miss", wantStored: true},
			{after: 90 * time.Second, req: get, want: "hit"},
			{after: 20 * time.Second, req: get, resp: resp200(), want: "miss", wantStored: true},
		}},
		{"an invalid Expires is in the past", Config{}, []step{
			{req: get, resp: resp200("Expires: 0"), want: "miss", wantStored: true},
			{req: get, resp: resp200(), want: "miss", wantStored: true},
		}},
		{"heuristic: 10% of the Last-Modified age", Config{}, []step{
			{req: get, resp: resp200("Last-Modified: " + httpDate(-1000*time.Second)), want: "miss", wantStored: true},
			{after: 90 * time.Second, req: get, want: "hit"},
			{after: 20 * time.Second, req: get, resp: "HTTP/1.1 304 Not Modified\nDate: " + httpDate(110*time.Second), want: "validated"},
		}},
		{"no heuristic for a 302", Config{}, []step{
			{req: get, resp: "HTTP/1.1 302 Found\nLocation: /b\nLast-Modified: " + httpDate(-1000*time.Second) + "\nContent-Length: 0", want: "miss"},
		}},
		{"CacheDefaultTTL gives heuristic freshness", Config{DefaultTTL: time.Minute}, []step{
			{req: get, resp: resp200(), want: "miss", wantStored: true},
			{after: 59 * time.Second, req: get, want: "hit"},
		}},
		{"Vary selects the variant", Config{}, []step{
			{req: get + "\nAccept-Language: en", resp: resp200("Cache-Control: max-age=60", "Vary: Accept-Language"), want: "miss", wantStored: true},
			{req: get + "\nAccept-Language: fr", resp: resp200("Cache-Control: max-age=60", "Vary: Accept-Language"), want: "miss", wantStored: true},
			{req: get + "\nAccept-Language: en", want: "hit"},
			{req: get + "\nAccept-Language: fr", want: "hit"},
			{req: get, resp: resp200("Cache-Control: max-age=60", "Vary: Accept-Language"), want: "miss", wantStored: true},
		}},
		{"Vary: * is not stored", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60", "Vary: *"), want: "miss"},
		}},
		{"a 304 freshens and updates the stored fields", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=10", `ETag: "v1"`, "X-Version: 1"), want: "miss", wantStored: true},
			{after: 20 * time.Second, req: get, resp: "HTTP/1.1 304 Not Modified\nCache-Control: max-age=100\nETag: \"v2\"\nX-Version: 2\nContent-Encoding: gzip", want: "validated", wantHeader: "X-Version: 2"},
			{after: 50 * time.Second, req: get, want: "hit", wantHeader: `ETag: "v1"`},
		}},
		{"request no-cache validates", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60", `ETag: "v1"`), want: "miss", wantStored: true},
			{req: get + "\nCache-Control: no-cache", resp: "HTTP/1.1 304 Not Modified\nETag: \"v1\"", want: "validated"},
		}},
		{"Pragma: no-cache without Cache-Control validates", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: get + "\nPragma: no-cache", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
		}},
		{"request max-age=0 is not satisfied by an aged response", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{after: 5 * time.Second, req: get + "\nCache-Control: max-age=0", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
		}},
		{"only-if-cached without a stored response is refused", Config{}, []step{
			{req: get + "\nCache-Control: only-if-cached", want: "refused"},
		}},
		{"a successful POST invalidates the target and its Location", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: "GET /b HTTP/1.1\nHost: example.com", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: "POST /a HTTP/1.1\nHost: example.com\nContent-Length: 0", resp: "HTTP/1.1 201 Created\nLocation: http://example.com/b\nContent-Length: 0", want: "pass"},
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: "GET /b HTTP/1.1\nHost: example.com", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
		}},
		{"a failed POST invalidates nothing", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: "POST /a HTTP/1.1\nHost: example.com\nContent-Length: 0", resp: "HTTP/1.1 500 Oops\nContent-Length: 0", want: "pass"},
			{req: get, want: "hit"},
		}},
		{"a Range request goes to the origin and stores nothing", Config{}, []step{
			{req: get + "\nRange: bytes=0-1", resp: "HTTP/1.1 206 Partial Content\nContent-Range: bytes 0-1/5\nCache-Control: max-age=60\nContent-Length: 2\n\nhe", want: "pass"},
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: get + "\nRange: bytes=1-2", want: "hit"},
			{req: get + "\nRange: bytes=0-1, 3-4", resp: "HTTP/1.1 206 Partial Content\nContent-Type: multipart/byteranges; boundary=x\nContent-Length: 0", want: "pass"},
			{req: get + "\nRange: bytes=1-2\nIf-Range: \"x\"", resp: "HTTP/1.1 200 OK\nContent-Length: 0", want: "pass"},
		}},
		{"must-revalidate forbids max-stale", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=1, must-revalidate"), want: "miss", wantStored: true},
			{after: 5 * time.Second, req: get + "\nCache-Control: max-stale=100", resp: resp200("Cache-Control: max-age=1"), want: "miss", wantStored: true},
		}},
		{"max-stale accepts a stale response", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=1"), want: "miss", wantStored: true},
			{after: 5 * time.Second, req: get + "\nCache-Control: max-stale=100", want: "hit"},
		}},
		{"stale-while-revalidate serves stale", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=1, stale-while-revalidate=30"), want: "miss", wantStored: true},
			{after: 5 * time.Second, req: get, want: "hit"},
			{after: 40 * time.Second, req: get, resp: resp200("Cache-Control: max-age=1"), want: "miss", wantStored: true},
		}},
		{"stale-if-error serves stale on a 503", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=1, stale-if-error=60", `ETag: "e"`), want: "miss", wantStored: true},
			{after: 5 * time.Second, req: get, resp: "HTTP/1.1 503 Busy\nContent-Length: 0", want: "stale-error"},
			{after: 100 * time.Second, req: get, resp: "HTTP/1.1 503 Busy\nContent-Length: 0", want: "miss"},
		}},
		{"an invalid Age makes the response stale", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=3600", "Age: 7200.0"), want: "miss", wantStored: true},
			{req: get, resp: resp200("Cache-Control: max-age=3600"), want: "miss", wantStored: true},
		}},
		{"Age counts against max-age", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=100", "Age: 90"), want: "miss", wantStored: true},
			{after: 5 * time.Second, req: get, want: "hit"},
			{after: 10 * time.Second, req: get, resp: resp200("Cache-Control: max-age=100"), want: "miss", wantStored: true},
		}},
		{"a response larger than MaxObject is passed through", Config{MaxObject: 3}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss"},
		}},
		{"the key carries the configured header", Config{KeyHeaders: []string{"X-Tenant"}}, []step{
			{req: get + "\nX-Tenant: a", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: get + "\nX-Tenant: b", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: get + "\nX-Tenant: a", want: "hit"},
		}},
		{"the key carries the configured cookie", Config{KeyCookies: []string{"lang"}}, []step{
			{req: get + "\nCookie: x=1; lang=en", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: get + "\nCookie: lang=de", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: get + "\nCookie: lang=en; y=2", want: "hit"},
		}},
		{"CDN-Cache-Control takes precedence when enabled", Config{CDNControl: true}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=1", "CDN-Cache-Control: max-age=100"), want: "miss", wantStored: true},
			{after: 50 * time.Second, req: get, want: "hit"},
		}},
		{"HEAD is answered from a stored GET", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: "HEAD /a HTTP/1.1\nHost: example.com", want: "hit"},
		}},
		{"the host is part of the key, case-insensitively", Config{}, []step{
			{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
			{req: "GET /a HTTP/1.1\nHost: EXAMPLE.com", want: "hit"},
			{req: "GET /a HTTP/1.1\nHost: other.example", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run(t, newCache(t, tc.cfg), tc.steps)
		})
	}
}

// TestCoalescing: misses of one key that come while the first is on
// its way wait for it and are then hits.
func TestCoalescing(t *testing.T) {
	c := newCache(t, Config{})
	c.now = func() time.Time { return epoch }
	leader := c.Begin(parseReq(t, get))
	if leader.Action != Miss || leader.flight == nil {
		t.Fatalf("first request: action %d, flight %v", leader.Action, leader.flight)
	}
	const n = 20
	var wg sync.WaitGroup
	actions := make(chan Action, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := parseReq(t, get)
			tx := c.Begin(req)
			actions <- tx.Action
			tx.Finish(false)
		}()
	}
	for c.Stats.Coalesced.Load() < n {
		time.Sleep(time.Millisecond) // until every waiter is waiting
	}
	resp, body := parseResp(t, resp200("Cache-Control: max-age=60"))
	if leader.Response(parseReq(t, get), resp) != Store {
		t.Fatal("not stored")
	}
	leader.Write(body)
	leader.Finish(true)
	wg.Wait()
	close(actions)
	for a := range actions {
		if a != Hit {
			t.Fatalf("a waiter got action %d, want a hit", a)
		}
	}
}

// TestHitForPass: after an uncacheable response, misses of the key go
// to the backend at once, without waiting for each other.
func TestHitForPass(t *testing.T) {
	c := newCache(t, Config{})
	run(t, c, []step{{req: get, resp: resp200("Cache-Control: private"), want: "miss"}})
	a, b := c.Begin(parseReq(t, get)), c.Begin(parseReq(t, get))
	defer a.Finish(false)
	defer b.Finish(false)
	if a.Action != Miss || b.Action != Miss || a.flight != nil || b.flight != nil {
		t.Fatalf("actions %d %d, flights %v %v: want uncoalesced misses", a.Action, b.Action, a.flight, b.flight)
	}
}

// TestBudget: filling to ten times the budget keeps the weight under it.
func TestBudget(t *testing.T) {
	const budget = 256 << 10
	c := newCache(t, Config{Budget: budget})
	body := strings.Repeat("x", 1000)
	for i := 0; i < 10*budget/1000; i++ {
		req := parseReq(t, "GET /o"+itoa(int64(i))+" HTTP/1.1\nHost: h")
		tx := c.Begin(req)
		resp, _ := parseResp(t, "HTTP/1.1 200 OK\nCache-Control: max-age=60\nContent-Length: 1000")
		if tx.Response(req, resp) == Store {
			tx.Write([]byte(body))
		}
		tx.Finish(true)
	}
	c.store.CleanUp()
	if got := c.Bytes(); got > budget {
		t.Fatalf("%d bytes stored, budget %d", got, budget)
	}
	if c.Stats.Evictions.Load() == 0 {
		t.Fatal("nothing was evicted")
	}
}

func TestPurge(t *testing.T) {
	c := newCache(t, Config{})
	for _, p := range []string{"/a", "/a/1", "/b"} {
		run(t, c, []step{{req: "GET " + p + " HTTP/1.1\nHost: h", resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true}})
	}
	if n := c.PurgeURL("h", "/a", true); n != 2 {
		t.Fatalf("prefix purge removed %d, want 2", n)
	}
	if n := c.PurgeURL("H", "/b", false); n != 1 {
		t.Fatalf("URL purge removed %d, want 1", n)
	}
	if c.Objects() != 0 {
		t.Fatalf("%d objects left", c.Objects())
	}
}

func TestPeek(t *testing.T) {
	c := newCache(t, Config{})
	run(t, c, []step{{req: get, resp: resp200("Cache-Control: max-age=60"), want: "miss", wantStored: true}})
	hits := c.Stats.Hits.Load()
	for _, tc := range []struct{ name, req, want string }{
		{"stored", get, "would be a hit: lbd; hit; ttl=60"},
		{"cold", "GET /b HTTP/1.1\nHost: example.com", "would be a miss: lbd; fwd=uri-miss"},
		{"POST", "POST /a HTTP/1.1\nHost: example.com\nContent-Length: 0", "not for the cache: the method or a body (fwd=method)"},
		{"only-if-cached", "GET /b HTTP/1.1\nHost: example.com\nCache-Control: only-if-cached", "would answer 504 (only-if-cached): lbd; fwd=miss; detail=only-if-cached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Peek(parseReq(t, tc.req)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	if c.Stats.Hits.Load() != hits {
		t.Fatal("Peek counted a hit")
	}
}

// TestValidatedReplaceIsAtomic: a full response to a revalidation
// replaces the stored one in one step; a look-up meanwhile never finds
// the key empty (it did, between an invalidation and the store, and the
// request went to the origin as a miss).
func TestValidatedReplaceIsAtomic(t *testing.T) {
	c := newCache(t, Config{})
	c.now = func() time.Time { return epoch }
	stale := resp200("Cache-Control: max-age=0", `ETag: "v"`)
	if got, stored, _ := exchange(t, c, step{req: get, resp: stale}); got != "miss" || !stored {
		t.Fatalf("first store: %s, stored %v", got, stored)
	}
	first := c.Begin(parseReq(t, get))
	key := strings.Clone(first.key)
	first.Finish(false)
	if c.lookup(key) == nil {
		t.Fatal("the stored response is not under the key a request computes")
	}
	stop := make(chan struct{})
	var empty atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c.lookup(key) == nil {
				empty.Add(1)
			}
		}
	}()
	for i := 0; i < 2000; i++ {
		if got, stored, _ := exchange(t, c, step{req: get, resp: stale}); !stored {
			t.Fatalf("round %d: %s, not stored", i, got)
		}
	}
	close(stop)
	wg.Wait()
	if n := empty.Load(); n != 0 {
		t.Fatalf("%d look-ups found no stored response while it was being replaced", n)
	}
	if e := c.lookup(key); e == nil || len(e.objs) != 1 {
		t.Fatalf("after the replacements: %+v, want one stored response", e)
	}
}

// TestUpstreamCacheStatusKept: a hit keeps the Cache-Status members of
// the caches behind lbd and adds lbd's after them (RFC 9211 §2: the
// chain is read from the origin outwards).
func TestUpstreamCacheStatusKept(t *testing.T) {
	c := newCache(t, Config{})
	c.now = func() time.Time { return epoch }
	upstream := resp200("Cache-Control: max-age=60", "Cache-Status: origin-cache; fwd=uri-miss; stored")
	if got, stored, _ := exchange(t, c, step{req: get, resp: upstream}); got != "miss" || !stored {
		t.Fatalf("store: %s, stored %v", got, stored)
	}
	tx := c.Begin(parseReq(t, get))
	defer tx.Finish(false)
	if tx.Action != Hit {
		t.Fatalf("action %d, want a hit", tx.Action)
	}
	head := string(tx.AppendStatus(tx.AppendHead(nil)))
	theirs := strings.Index(head, "\r\nCache-Status: origin-cache; fwd=uri-miss; stored\r\n")
	ours := strings.Index(head, "\r\nCache-Status: lbd; hit; ttl=60\r\n")
	if theirs < 0 || ours < theirs || strings.Count(head, "Cache-Status:") != 2 {
		t.Fatalf("head %q: want the upstream member, then lbd's", head)
	}
}
