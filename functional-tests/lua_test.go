package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Pound 4's Lua extensions through the real binary: each test writes its
// own Lua modules beside the configuration and drives lbd over HTTP.

// startLua writes files (name → text, {DIR} replaced) into a new
// directory, then the configuration, and starts lbd on it.
func startLua(t *testing.T, cfg string, files map[string]string) *proc {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, strings.ReplaceAll(text, "{DIR}", dir))
	}
	cfg = strings.ReplaceAll(cfg, "{PORT}", fmt.Sprint(port))
	cfg = strings.ReplaceAll(cfg, "{DIR}", dir)
	path := writeFile(t, dir, "lbd.cfg", cfg)
	return runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", port), "-v")
}

// luaHead is the start of every configuration here: two per-thread
// states keep the start fast.
const luaHead = "Daemon 0\nLogLevel 0\nWorkerMaxCount 2\n"

// luaFetch sends one request and returns the response with its body read.
func luaFetch(t *testing.T, method, url string, headers map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

const edgeLua = `-- Selection and request edits for lbd's functional tests.
local edge = {}

-- A tier may see the paths under its prefix.
function edge.allowed(tier, path)
   local prefix = ({gold = "/", silver = "/public/"})[tier]
   return prefix ~= nil and path:sub(1, #prefix) == prefix
end

-- Append where to X-Seen, so the order of the calls shows.
function edge.mark(where)
   local seen = http.req.headers["X-Seen"]
   http.req.headers["X-Seen"] = seen and (seen .. "," .. where) or where
end

function edge.move()
   http.req.path = "/moved" .. http.req.path
   http.req.query.via = "lua"
   http.req.query.drop = nil
   http.req.headers["X-Remove"] = nil
end

return edge
`

// TestLuaMatchAndModify selects services with LuaMatch and edits the
// request with LuaModify in the listener, the service and a Rewrite.
func TestLuaMatchAndModify(t *testing.T) {
	gold := echoBackend(t, "gold")
	other := echoBackend(t, "other")
	cfg := luaHead + `Lua
	Load "edge.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	LuaModify "edge.mark" "listener"
	Service "tiered"
		Header "X-Tier" "^(.+)$"
		LuaMatch "edge.allowed" "$1" "%[path]"
		LuaModify "edge.mark" "service"
		Rewrite
			Path "^/public/"
			LuaModify "edge.move"
		End
` + indent(backendBlock(gold), 2) + `
	End
	Service "rest"
` + indent(backendBlock(other), 2) + `
	End
End
`
	p := startLua(t, cfg, map[string]string{"edge.lua": edgeLua})
	cases := []struct {
		name, path, tier, backend, uri string
	}{
		{"gold sees everything", "/private/x", "gold", "gold", "/private/x"},
		{"silver sees public, moved", "/public/a?drop=1&keep=2", "silver", "gold", "/moved/public/a?keep=2&via=lua"},
		{"silver does not see private", "/private/x", "silver", "other", "/private/x"},
		{"no tier", "/public/a", "", "other", "/public/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"X-Remove": "me"}
			if tc.tier != "" {
				h["X-Tier"] = tc.tier
			}
			resp, _ := luaFetch(t, "GET", "http://"+p.addr+tc.path, h, "")
			if got := resp.Header.Get("X-Backend"); got != tc.backend {
				t.Fatalf("backend %q, want %q", got, tc.backend)
			}
			if got := resp.Header.Get("X-Got-Uri"); got != tc.uri {
				t.Errorf("backend saw %q, want %q", got, tc.uri)
			}
			wantSeen := "listener"
			if tc.backend == "gold" {
				wantSeen = "listener,service"
			}
			if got := resp.Header.Get("X-Got-X-Seen"); got != wantSeen {
				t.Errorf("X-Seen %q, want %q (the listener's rules run first)", got, wantSeen)
			}
			removed := resp.Header.Get("X-Got-X-Remove") == ""
			if moved := strings.HasPrefix(tc.uri, "/moved"); removed != moved {
				t.Errorf("X-Remove removed: %v, want %v", removed, moved)
			}
		})
	}
}

const respLua = `-- Response edits for lbd's functional tests.
local out = {}

function out.teapot()
   if http.resp.code == 200 and http.req.headers["X-Want-Tea"] then
      http.resp.code = 418
      http.resp.headers["Content-Type"] = "text/plain"
      http.resp.body = "short and stout\n"
   end
end

function out.bare() http.resp.headers = {["X-Only"] = "me"} end

function out.describe()
   http.resp.headers["X-Service"] = http.service.name
   http.resp.headers["X-Locus"] = http.service.locus
   http.resp.headers["X-Was"] = http.resp.code .. " " .. http.resp.reason
   http.resp.headers["X-Const"] = http:const("flavour")
   http.resp.headers["X-Peer"] = http.rmt_ip
end

return out
`

// TestLuaModifyResponse changes the status, headers and body of
// responses, and reads the service and constants from Lua.
func TestLuaModifyResponse(t *testing.T) {
	be := echoBackend(t, "be")
	cfg := luaHead + `Constant "flavour" "global"
Lua
	Load "out.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Constant "flavour" -file "{DIR}/flavour.txt" -trim
	Rewrite response
		LuaModify "out.describe"
	End
	Service "bare"
		Path "^/bare"
		Rewrite response
			LuaModify "out.bare"
		End
` + indent(backendBlock(be), 2) + `
	End
	Service "tea"
		Rewrite response
			LuaModify "out.teapot"
		End
` + indent(backendBlock(be), 2) + `
	End
End
Service "global"
` + indent(backendBlock(be), 1) + `
End
`
	p := startLua(t, cfg, map[string]string{"out.lua": respLua, "flavour.txt": "listener\n"})
	resp, body := luaFetch(t, "GET", "http://"+p.addr+"/x", map[string]string{"X-Want-Tea": "1"}, "")
	if resp.StatusCode != 418 || body != "short and stout\n" || resp.ContentLength != int64(len(body)) {
		t.Fatalf("got %d %q (length %d), want 418 and the script's body", resp.StatusCode, body, resp.ContentLength)
	}
	if resp.Status != "418 I'm a teapot" {
		t.Errorf("status line %q: a new code takes its standard reason", resp.Status)
	}
	want := map[string]string{"X-Service": "tea", "X-Was": "418 I'm a teapot", "X-Const": "listener", "X-Peer": "127.0.0.1",
		"Content-Type": "text/plain", "X-Backend": "be"}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if loc := resp.Header.Get("X-Locus"); !regexp.MustCompile(`/lbd\.cfg:25\.9-33\.11$`).MatchString(loc) {
		t.Errorf("X-Locus %q, want the service's lines 25-33", loc)
	}
	// A script that drops Content-Length leaves the body to end with
	// the connection, which lbd then closes.
	raw, closed := rawExchange(t, p.addr, []byte("GET /bare HTTP/1.1\r\nHost: x\r\n\r\n"), 2*time.Second)
	if !closed || !strings.HasSuffix(string(raw), "\r\n\r\nok") || !strings.Contains(string(raw), "Connection: close\r\n") ||
		strings.Contains(string(raw), "Content-Length") || !strings.Contains(string(raw), "X-Only: me\r\n") {
		t.Errorf("closed %v, answer %q", closed, raw)
	}
	// The backend's own answer when the script leaves it alone; a
	// global service is named with a slash.
	resp, body = luaFetch(t, "GET", "http://"+p.addr+"/x", nil, "")
	if resp.StatusCode != 200 || body != "ok" || resp.Header.Get("X-Was") != "200 OK" {
		t.Errorf("untouched response: %d %q %q", resp.StatusCode, body, resp.Header.Get("X-Was"))
	}

	// A replaced body keeps the client connection usable: two requests
	// on one connection both get complete answers.
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\nX-Want-Tea: 1\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	for i, want := range []int{418, 200} {
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil || r.StatusCode != want {
			t.Fatalf("response %d: %d %q %v, want %d", i, r.StatusCode, b, err, want)
		}
	}
}

const backendLua = `-- LuaBackend functions for lbd's functional tests.
function answer(code, text)
   http.resp.code = code
   http.resp.headers["Content-Type"] = "text/plain"
   http.resp.headers["X-Method"] = http.req.method
   http.resp.headers["X-Tier"] = stash.tier or "none"
   http.resp.body = text .. " " .. http.req.path .. "\n"
end

function remember(tier)
   stash.tier = tier
   return true
end

function forgetful() end
`

// TestLuaBackend answers from Lua, with the stash carrying a value from
// a condition of the same request to the backend, and only that request.
func TestLuaBackend(t *testing.T) {
	cfg := luaHead + `Lua
	Load "be.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Path "^/silent"
		LuaBackend "forgetful"
	End
	Service
		Header "X-Tier" "^(.*)$"
		LuaMatch "remember" "$1"
		LuaBackend "answer" "203" "tiered"
	End
	Service
		LuaBackend "answer" "%[header X-Code]" "plain"
	End
End
`
	p := startLua(t, cfg, map[string]string{"be.lua": backendLua})
	cases := []struct {
		name, method, path string
		headers            map[string]string
		status             int
		body, tier         string
	}{
		{"built by Lua", "GET", "/a", map[string]string{"X-Code": "200"}, 200, "plain /a\n", "none"},
		{"status from an argument", "GET", "/b", map[string]string{"X-Code": "404"}, 404, "plain /b\n", "none"},
		{"stash from the condition", "GET", "/c", map[string]string{"X-Tier": "gold"}, 203, "tiered /c\n", "gold"},
		{"stash is empty for the next request", "GET", "/d", map[string]string{"X-Code": "200"}, 200, "plain /d\n", "none"},
		{"HEAD has no body", "HEAD", "/e", map[string]string{"X-Code": "200"}, 200, "", "none"},
		{"a bad code fails", "GET", "/f", map[string]string{"X-Code": "2000"}, 500, "", ""},
		{"no code fails", "GET", "/silent", nil, 500, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := luaFetch(t, tc.method, "http://"+p.addr+tc.path, tc.headers, "")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == 500 {
				return
			}
			if body != tc.body || resp.Header.Get("X-Tier") != tc.tier || resp.Header.Get("X-Method") != tc.method {
				t.Errorf("got %q tier %q method %q", body, resp.Header.Get("X-Tier"), resp.Header.Get("X-Method"))
			}
			if tc.method == "GET" && resp.ContentLength != int64(len(tc.body)) {
				t.Errorf("Content-Length %d, want %d", resp.ContentLength, len(tc.body))
			}
		})
	}
	p.waitLog(t, "Lua backend forgetful set no response code")
}

// TestLuaGlobalState calls into the one global state: LoadGlobal
// functions used directly and through pound.gcall share its variables,
// whichever per-thread state the request has.
func TestLuaGlobalState(t *testing.T) {
	be := echoBackend(t, "be")
	cfg := luaHead + `Lua
	LoadGlobal "global.lua"
	Load "local.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		LuaMatch "counted"
		Rewrite response
			LuaModify "stamp"
		End
` + indent(backendBlock(be), 2) + `
	End
End
`
	files := map[string]string{
		"global.lua": `hits = 0
function counted() hits = hits + 1 return true end
function tally(path) return hits, {path = path, n = hits} end
pound.log(pound.INFO, "global state " .. pound.loadctx)`,
		"local.lua": `function stamp()
   local n, t = pound.gcall("tally", http.req.path)
   http.resp.headers["X-Hits"] = string.format("%d", n)
   http.resp.headers["X-Echo"] = t.path .. " " .. math.type(t.n)
   http.resp.headers["X-State"] = tostring(pound.tid())
end
pound.log(pound.DEBUG, "per-thread state " .. pound.loadctx)`,
	}
	p := startLua(t, cfg, files)
	for i := 1; i <= 3; i++ {
		resp, _ := luaFetch(t, "GET", fmt.Sprintf("http://%s/n%d", p.addr, i), nil, "")
		if got := resp.Header.Get("X-Hits"); got != fmt.Sprint(i) {
			t.Errorf("request %d: X-Hits %q", i, got)
		}
		if got := resp.Header.Get("X-Echo"); got != fmt.Sprintf("/n%d integer", i) {
			t.Errorf("request %d: X-Echo %q", i, got)
		}
		if s := resp.Header.Get("X-State"); s != "1" && s != "2" {
			t.Errorf("request %d: per-thread state %q", i, s)
		}
	}
	log := p.out.String()
	for _, want := range []string{"lbd: global state 0\n", "lbd: per-thread state 1\n", "lbd: per-thread state 2\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// waitLog waits for lbd to log a line containing s (the log arrives
// through a pipe, after the response).
func (p *proc) waitLog(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("lbd did not log %q:\n%s", s, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// indent puts n tabs before every line of s.
func indent(s string, n int) string {
	pad := strings.Repeat("\t", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// TestLuaErrorPage runs response scripts on the answers of special
// backends, an Error page as in Pound's bearer example: they see the
// status and may change it and the body.
func TestLuaErrorPage(t *testing.T) {
	cfg := luaHead + `Lua
	Load "e.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Path "^/made"
		Rewrite response
			LuaModify "made"
		End
		Success
	End
	Service
		Rewrite response
			LuaModify "explain"
		End
		Error 401
	End
End
`
	p := startLua(t, cfg, map[string]string{"e.lua": `function made()
   http.resp.code = 201
   http.resp.body = "made\n"
end
function explain()
   http.resp.headers["X-Was"] = tostring(http.resp.code)
   http.resp.headers["WWW-Authenticate"] = 'Bearer realm="here"'
   if http.req.path == "/teapot" then
      http.resp.code = 418
      http.resp.body = "nope\n"
   end
end`})
	resp, body := luaFetch(t, "GET", "http://"+p.addr+"/x", nil, "")
	if resp.StatusCode != 401 || resp.Header.Get("X-Was") != "401" || resp.Header.Get("WWW-Authenticate") != `Bearer realm="here"` ||
		!strings.Contains(body, "Unauthorized") {
		t.Errorf("got %d %q %q", resp.StatusCode, resp.Header, body)
	}
	resp, body = luaFetch(t, "GET", "http://"+p.addr+"/teapot", nil, "")
	if resp.StatusCode != 418 || body != "nope\n" || resp.ContentLength != 5 || resp.Header.Get("X-Was") != "401" {
		t.Errorf("got %d %q (length %d) %q", resp.StatusCode, body, resp.ContentLength, resp.Header)
	}
	// A Success backend's empty 200 too.
	resp, body = luaFetch(t, "GET", "http://"+p.addr+"/made", nil, "")
	if resp.StatusCode != 201 || body != "made\n" || resp.ContentLength != 5 {
		t.Errorf("got %d %q (length %d)", resp.StatusCode, body, resp.ContentLength)
	}
}
