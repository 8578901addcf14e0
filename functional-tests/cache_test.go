package functionaltests

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cacheOrigin is a backend whose paths say how to answer; it counts the
// requests per path and the most it served at once.
type cacheOrigin struct {
	mu       sync.Mutex
	count    map[string]int
	inFlight atomic.Int64
	peak     atomic.Int64
	failing  atomic.Bool // answer 503 to everything
	delay    time.Duration
}

func (o *cacheOrigin) requests(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.count[path]
}

func (o *cacheOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.count[r.URL.Path]++
	n := o.count[r.URL.Path]
	o.mu.Unlock()
	cur := o.inFlight.Add(1)
	defer o.inFlight.Add(-1)
	for p := o.peak.Load(); cur > p && !o.peak.CompareAndSwap(p, cur); p = o.peak.Load() {
	}
	if strings.HasPrefix(r.URL.Path, "/slow") {
		time.Sleep(o.delay)
	}
	if o.failing.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	h := w.Header()
	h.Set("X-Origin-Count", fmt.Sprint(n))
	switch {
	case strings.HasPrefix(r.URL.Path, "/slow/private"):
		h.Set("Cache-Control", "private")
	case strings.HasPrefix(r.URL.Path, "/slow"), r.URL.Path == "/fresh", r.URL.Path == "/chunked", r.URL.Path == "/big":
		h.Set("Cache-Control", "max-age=60")
	case r.URL.Path == "/private":
		h.Set("Cache-Control", "private, max-age=60")
	case r.URL.Path == "/etag":
		h.Set("Cache-Control", "max-age=0")
		h.Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	case r.URL.Path == "/swr":
		h.Set("Cache-Control", "max-age=1, stale-while-revalidate=30")
	case r.URL.Path == "/sie":
		h.Set("Cache-Control", "max-age=1, stale-if-error=60")
	case strings.HasPrefix(r.URL.Path, "/vary"):
		h.Set("Cache-Control", "max-age=60")
		h.Set("Vary", "Accept-Language")
	}
	switch r.URL.Path {
	case "/chunked":
		io.WriteString(w, "first part\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "second part\n")
	case "/big":
		io.WriteString(w, strings.Repeat("b", 300<<10))
	default:
		fmt.Fprintf(w, "body of %s #%d\n", r.URL.Path, n)
	}
}

func startCacheOrigin(t *testing.T, delay time.Duration) (*cacheOrigin, *backend) {
	o := &cacheOrigin{count: map[string]int{}, delay: delay}
	return o, startBackend(t, "127.0.0.2", "c", o)
}

// cacheConfig is a listener with one cached service in front of be.
func cacheConfig(be *backend, extra string) string {
	return "Daemon 0\nLogLevel 0\nTimeOut 5\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n\tService\n\t\tCache 4m\n\t\tCacheMaxObject 256k\n" +
		extra + be.block() + "\tEnd\nEnd\n"
}

type cacheAnswer struct {
	status int
	body   string
	cs     string // Cache-Status
	age    string
}

func cacheGet(t *testing.T, client *http.Client, method, url string, hdr ...string) cacheAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return cacheAnswer{resp.StatusCode, string(b), resp.Header.Get("Cache-Status"), resp.Header.Get("Age")}
}

func TestCacheThroughTheBinary(t *testing.T) {
	for _, dialect := range []string{"pound", "zproxy"} {
		t.Run(dialect, func(t *testing.T) {
			o, be := startCacheOrigin(t, 0)
			cfg := cacheConfig(be, "")
			if dialect == "zproxy" {
				cfg = strings.Replace(cfg, "\tAddress 127.0.0.1\n\tPort {PORT}", "\tName \"web\"\n\tAddress 127.0.0.1\n\tPort {PORT}", 1)
			}
			p := startLBD(t, cfg)
			base := "http://" + p.addr
			c := &http.Client{Timeout: 10 * time.Second}

			first := cacheGet(t, c, "GET", base+"/fresh")
			if first.status != 200 || first.cs != "lbd; fwd=uri-miss; stored" {
				t.Fatalf("first GET: %+v", first)
			}
			hit := cacheGet(t, c, "GET", base+"/fresh")
			if hit.body != first.body || !strings.HasPrefix(hit.cs, "lbd; hit; ttl=") || hit.age == "" {
				t.Fatalf("second GET is not a hit: %+v (first %+v)", hit, first)
			}
			if head := cacheGet(t, c, "HEAD", base+"/fresh"); head.status != 200 || !strings.HasPrefix(head.cs, "lbd; hit") || head.body != "" {
				t.Fatalf("HEAD: %+v", head)
			}
			if n := o.requests("/fresh"); n != 1 {
				t.Fatalf("the origin saw /fresh %d times, want 1", n)
			}

			// A chunked body is stored decoded, while it streams.
			ch := cacheGet(t, c, "GET", base+"/chunked")
			if again := cacheGet(t, c, "GET", base+"/chunked"); again.body != ch.body || ch.body != "first part\nsecond part\n" || !strings.HasPrefix(again.cs, "lbd; hit") {
				t.Fatalf("chunked: %+v then %+v", ch, again)
			}
			// Larger than CacheMaxObject, private: relayed, never stored.
			for _, path := range []string{"/big", "/private"} {
				a, b := cacheGet(t, c, "GET", base+path), cacheGet(t, c, "GET", base+path)
				if a.status != 200 || b.status != 200 || strings.HasPrefix(b.cs, "lbd; hit") || o.requests(path) != 2 {
					t.Fatalf("%s was served from the cache: %q %q, origin saw %d", path, a.cs, b.cs, o.requests(path))
				}
				if path == "/big" && len(b.body) != 300<<10 {
					t.Fatalf("/big: %d bytes", len(b.body))
				}
			}
			// max-age=0 with an ETag: every request revalidates; the 304
			// is answered with the stored body.
			cacheGet(t, c, "GET", base+"/etag")
			v := cacheGet(t, c, "GET", base+"/etag")
			if v.status != 200 || v.body != "body of /etag #1\n" || !strings.Contains(v.cs, "fwd=stale; fwd-status=304") {
				t.Fatalf("revalidated GET: %+v", v)
			}
			// The client's own conditional on a fresh hit gets 304.
			if nm := cacheGet(t, c, "GET", base+"/fresh", "If-None-Match", "*"); nm.status != 304 {
				t.Fatalf("conditional hit: %+v", nm)
			}
			// A byte range of a stored response is answered from it.
			if r := cacheGet(t, c, "GET", base+"/fresh", "Range", "bytes=0-3"); r.status != 206 || r.body != "body" || !strings.HasPrefix(r.cs, "lbd; hit") {
				t.Fatalf("range hit: %+v", r)
			}
			// only-if-cached on a cold URL: 504.
			if oc := cacheGet(t, c, "GET", base+"/cold", "Cache-Control", "only-if-cached"); oc.status != 504 || o.requests("/cold") != 0 {
				t.Fatalf("only-if-cached: %+v", oc)
			}
			// A successful POST invalidates the target.
			if post := cacheGet(t, c, "POST", base+"/fresh"); post.status != 200 {
				t.Fatalf("POST: %+v", post)
			}
			if after := cacheGet(t, c, "GET", base+"/fresh"); strings.HasPrefix(after.cs, "lbd; hit") {
				t.Fatalf("GET after POST is still a hit: %+v", after)
			}
		})
	}
}

// TestCacheCoalescing: 200 concurrent GETs of a cold cacheable URL make
// one origin request; 50 of an uncacheable one reach the origin side by
// side, not one after the other.
func TestCacheCoalescing(t *testing.T) {
	const delay = 300 * time.Millisecond
	o, be := startCacheOrigin(t, delay)
	p := startLBD(t, cacheConfig(be, ""))
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	fire := func(path string, n int) (time.Duration, []cacheAnswer) {
		answers := make([]cacheAnswer, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = cacheGet(t, c, "GET", "http://"+p.addr+path)
			}()
		}
		wg.Wait()
		return time.Since(start), answers
	}
	took, answers := fire("/slow/cacheable", 200)
	for _, a := range answers {
		if a.status != 200 || a.body != "body of /slow/cacheable #1\n" {
			t.Fatalf("answer %+v", a)
		}
	}
	if n := o.requests("/slow/cacheable"); n != 1 {
		t.Fatalf("the origin saw %d requests for the cacheable URL, want 1", n)
	}
	t.Logf("200 concurrent cold GETs: %v (origin latency %v)", took, delay)

	// The first response says private: later misses pass in parallel.
	cacheGet(t, c, "GET", "http://"+p.addr+"/slow/private")
	o.peak.Store(0)
	took, answers = fire("/slow/private", 50)
	for _, a := range answers {
		if a.status != 200 {
			t.Fatalf("answer %+v", a)
		}
	}
	if n := o.requests("/slow/private"); n != 51 {
		t.Fatalf("the origin saw %d requests for the uncacheable URL, want 51", n)
	}
	if peak := o.peak.Load(); peak < 25 {
		t.Fatalf("at most %d uncacheable requests reached the origin at once: they were serialised", peak)
	}
	t.Logf("50 concurrent uncacheable GETs: %v, %d at once at the origin", took, o.peak.Load())
}

// TestCacheStale: stale-while-revalidate serves every request from the
// cache and revalidates once in the background; stale-if-error serves the
// stored response when the origin fails.
func TestCacheStale(t *testing.T) {
	o, be := startCacheOrigin(t, 0)
	p := startLBD(t, cacheConfig(be, ""))
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	base := "http://" + p.addr
	cacheGet(t, c, "GET", base+"/swr")
	cacheGet(t, c, "GET", base+"/sie")
	time.Sleep(1500 * time.Millisecond) // both are stale now
	var wg sync.WaitGroup
	var notHit atomic.Int64
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := cacheGet(t, c, "GET", base+"/swr")
			if a.status != 200 || !strings.HasPrefix(a.cs, "lbd; hit") {
				notHit.Add(1)
				t.Logf("not a hit: %q %q %d", a.cs, a.body, a.status)
			}
		}()
	}
	wg.Wait()
	if n := notHit.Load(); n != 0 {
		t.Fatalf("%d of 100 stale-while-revalidate requests were not served from the cache", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for o.requests("/swr") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a second revalidation would have come by now
	if n := o.requests("/swr"); n != 2 {
		t.Fatalf("the origin saw /swr %d times, want 2 (one background revalidation)", n)
	}
	// The background revalidation stored the new response.
	if a := cacheGet(t, c, "GET", base+"/swr"); a.body != "body of /swr #2\n" || !strings.HasPrefix(a.cs, "lbd; hit") {
		t.Fatalf("after the revalidation: %+v", a)
	}

	o.failing.Store(true)
	a := cacheGet(t, c, "GET", base+"/sie")
	if a.status != 200 || a.body != "body of /sie #1\n" || !strings.Contains(a.cs, "stale-if-error") {
		t.Fatalf("stale-if-error: %+v", a)
	}
}

// TestCachePurgeWithLbctl: lbctl cache shows the counters, lbctl cache
// purge removes a URL (and with -p a prefix) from the running cache.
func TestCachePurgeWithLbctl(t *testing.T) {
	o, be := startCacheOrigin(t, 0)
	p := startLBD(t, strings.Replace(cacheConfig(be, ""), "LogLevel 0\n", "LogLevel 0\nControl \"{DIR}/ctl.sock\"\n", 1))
	sock := filepath.Join(p.dir, "ctl.sock")
	c := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + p.addr
	for _, path := range []string{"/fresh", "/chunked"} {
		cacheGet(t, c, "GET", base+path)
		if a := cacheGet(t, c, "GET", base+path); !strings.HasPrefix(a.cs, "lbd; hit") {
			t.Fatalf("%s is not cached: %+v", path, a)
		}
	}
	stats := lbctlOK(t, sock, "cache")
	if !strings.Contains(stats, "HITS") || !strings.Contains(stats, "4194304") {
		t.Fatalf("lbctl cache:\n%s", stats)
	}
	if out := lbctlOK(t, sock, "route", "GET", base+"/fresh"); !strings.Contains(out, "would be a hit: lbd; hit; ttl=") {
		t.Fatalf("lbctl route does not say the request would be a hit:\n%s", out)
	}
	if out := lbctlOK(t, sock, "route", "GET", base+"/cold"); !strings.Contains(out, "would be a miss: lbd; fwd=uri-miss") {
		t.Fatalf("lbctl route does not say the request would be a miss:\n%s", out)
	}
	metrics := lbctlOK(t, sock, "metrics")
	for _, want := range []string{`result="hit"} 2`, `result="miss"} 2`, "lbd_service_cache_budget_bytes{", "lbd_service_cache_stores_total{"} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("the metrics have no %s:\n%s", want, metrics)
		}
	}
	if out := lbctlOK(t, sock, "cache", "purge", base+"/fresh"); out != "purged 1\n" {
		t.Fatalf("lbctl cache purge: %q", out)
	}
	if a := cacheGet(t, c, "GET", base+"/fresh"); strings.HasPrefix(a.cs, "lbd; hit") || o.requests("/fresh") != 2 {
		t.Fatalf("/fresh after the purge: %+v", a)
	}
	if out := lbctlOK(t, sock, "cache", "purge", "-p", base+"/"); out != "purged 2\n" {
		t.Fatalf("lbctl cache purge -p: %q", out)
	}
	if a := cacheGet(t, c, "GET", base+"/chunked"); strings.HasPrefix(a.cs, "lbd; hit") {
		t.Fatalf("/chunked after the prefix purge: %+v", a)
	}
	out, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "cache", "purge", "/relative")
	if code == 0 || !strings.Contains(out+errOut, "absolute") {
		t.Fatalf("a relative URL: exit %d, %s%s", code, out, errOut)
	}
}

// TestCacheClusterPurge: two instances share a Redis; a purge through
// one's control socket empties the other's cache within 100 ms.
func TestCacheClusterPurge(t *testing.T) {
	r := startRedisServer(t)
	o, be := startCacheOrigin(t, 0)
	var procs []*proc
	var socks []string
	for _, name := range []string{"a", "b"} {
		dir := t.TempDir()
		port := freePort(t)
		sock := filepath.Join(dir, "ctl.sock")
		cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nTimeOut 3\nControl %q\nCluster\n\tNode %q\n\tRedis %q\n\tKeyPrefix \"cp\"\nEnd\n"+
			"ListenHTTP \"front\"\n\tAddress 127.0.0.1\n\tPort %d\n\tService \"web\"\n\t\tCache 1m\n\t\tCachePurge\n\t\t\t\"127.0.0.0/8\"\n\t\tEnd\n%s\tEnd\nEnd\n", sock, name, r.sock, port, be.block())
		path := filepath.Join(dir, "lbd.cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", port)))
		socks = append(socks, sock)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	// The same Host on both, so both store the same key.
	send := func(method string, p *proc) cacheAnswer {
		req, err := http.NewRequest(method, "http://"+p.addr+"/fresh", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "site.test"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // the status line is what matters here
		return cacheAnswer{resp.StatusCode, string(b), resp.Header.Get("Cache-Status"), resp.Header.Get("Age")}
	}
	get := func(p *proc) cacheAnswer { return send("GET", p) }
	for _, p := range procs {
		get(p)
		if a := get(p); !strings.HasPrefix(a.cs, "lbd; hit") {
			t.Fatalf("not cached on %s: %+v", p.addr, a)
		}
	}
	time.Sleep(200 * time.Millisecond) // both instances are subscribed by now (they started before)
	start := time.Now()
	if out := lbctlOK(t, socks[0], "cache", "purge", "http://site.test/fresh"); out != "purged 1\n" {
		t.Fatalf("purge on a: %q", out)
	}
	var took time.Duration
	for {
		out := lbctlOK(t, socks[1], "cache", "-j")
		if strings.Contains(out, `"purged": 1`) {
			took = time.Since(start)
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("b did not purge:\n%s", out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if a := get(procs[1]); strings.HasPrefix(a.cs, "lbd; hit") {
		t.Fatalf("b still hits after the purge: %+v", a)
	}
	if took > 100*time.Millisecond {
		t.Logf("b purged %v after a's purge (the bound is 100 ms; a loaded machine may exceed it)", took)
	} else {
		t.Logf("b purged %v after a's purge", took)
	}
	if n := o.requests("/fresh"); n != 3 {
		t.Fatalf("the origin saw /fresh %d times, want 3", n)
	}

	// The PURGE method (CachePurge) takes the same way to the peer.
	get(procs[0]) // b stored it again above
	for _, p := range procs {
		if a := get(p); !strings.HasPrefix(a.cs, "lbd; hit") {
			t.Fatalf("not cached on %s: %+v", p.addr, a)
		}
	}
	if a := send("PURGE", procs[0]); a.status != 200 || a.body != "Purged 1\n" {
		t.Fatalf("PURGE on a: %+v", a)
	}
	for start = time.Now(); ; time.Sleep(5 * time.Millisecond) {
		out := lbctlOK(t, socks[1], "cache", "-j")
		if strings.Contains(out, `"purged": 2`) {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("b did not purge after PURGE on a:\n%s", out)
		}
	}
	if a := get(procs[1]); strings.HasPrefix(a.cs, "lbd; hit") {
		t.Fatalf("b still hits after PURGE on a: %+v", a)
	}
}

// TestCacheOverHTTP2: hits are served on HTTP/2 streams (TLS), small and
// large (a large hit is written as one writev on HTTP/1.1).
func TestCacheOverHTTP2(t *testing.T) {
	p := newTLSPKI(t)
	o, be := startCacheOrigin(t, 0)
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nTimeOut 3\nListenHTTPS\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n\tCert %q\n"+
		"\tService\n\t\tCache 4m\n\t\tCacheMaxObject 1m\n%s\tEnd\nEnd\n", p.path("a.pem"), be.block())
	lbd := startLBD(t, cfg)
	c := httpsClient(p.tlsConfig("a.test"), true)
	for _, path := range []string{"/fresh", "/big"} {
		var bodies []string
		for i := 0; i < 3; i++ {
			resp, err := c.Get("https://" + lbd.addr + path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.ProtoMajor != 2 {
				t.Fatalf("%s: %v, %s", path, err, resp.Proto)
			}
			if i > 0 && !strings.HasPrefix(resp.Header.Get("Cache-Status"), "lbd; hit") {
				t.Fatalf("%s request %d over HTTP/2 is not a hit: %q", path, i, resp.Header.Get("Cache-Status"))
			}
			bodies = append(bodies, string(b))
		}
		if bodies[1] != bodies[0] || bodies[2] != bodies[0] || o.requests(path) != 1 {
			t.Fatalf("%s: bodies differ or the origin was asked %d times", path, o.requests(path))
		}
	}
}
