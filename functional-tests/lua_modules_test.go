package functionaltests

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lbd's own Lua modules doing what Pound's example modules do (cookie
// injection, bearer tokens with JSON and an HMAC from a C module), script
// errors and the bounds, and Lua in lbd -c, -V and reloads.

const sessionLua = `-- Cookie injection: give a client a session cookie unless it has one.
local session = {}
local issued = 0

local function cookie(name)
   local header = http.req.headers["Cookie"]
   if type(header) == "table" then header = table.concat(header, "; ", 0) end
   for pair in (header or ""):gmatch("[^;]+") do
      local k, v = pair:match("^%s*([^=]+)=(.*)$")
      if k == name then return v end
   end
end

function session.ensure(name, maxage)
   if cookie(name) then return end
   issued = issued + 1
   local line = string.format("%s=s%d-%d; Max-Age=%s", name, pound.tid(), issued, maxage)
   local set = http.resp.headers["Set-Cookie"]
   if set == nil then
      set = {line}
   elseif type(set) == "table" then
      table.insert(set, line)
   else
      set = {set, line}
   end
   http.resp.headers["Set-Cookie"] = set
end

return session
`

// TestLuaCookieInjection gives new clients a cookie beside the backend's
// own, and pins sessions to it.
func TestLuaCookieInjection(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "theme=dark")
		w.Header().Set("X-Backend", "a")
	}))
	b := startBackend(t, "127.0.0.3", "b", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", "b")
	}))
	cfg := luaHead + `Lua
	Load "session.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Session
			Type Cookie
			ID "sid"
			TTL 300
		End
		Rewrite response
			LuaModify "session.ensure" "sid" "300"
		End
` + indent(backendBlock(a), 2) + `
` + indent(backendBlock(b), 2) + `
	End
End
`
	p := startLua(t, cfg, map[string]string{"session.lua": sessionLua})
	resp, _ := luaFetch(t, "GET", "http://"+p.addr+"/", nil, "")
	cookies := resp.Header.Values("Set-Cookie")
	var sid string
	for _, c := range cookies {
		if strings.HasPrefix(c, "sid=") {
			sid = strings.TrimPrefix(strings.Split(c, ";")[0], "sid=")
			if !strings.HasSuffix(c, "; Max-Age=300") {
				t.Errorf("cookie %q has no Max-Age", c)
			}
		}
	}
	if sid == "" || resp.Header.Get("X-Backend") == "a" && len(cookies) != 2 {
		t.Fatalf("Set-Cookie %q: want the backend's and a sid", cookies)
	}
	first := resp.Header.Get("X-Backend")
	for i := 0; i < 10; i++ {
		resp, _ := luaFetch(t, "GET", "http://"+p.addr+"/", map[string]string{"Cookie": "x=1; sid=" + sid}, "")
		if got := resp.Header.Get("X-Backend"); got != first {
			t.Fatalf("request %d with the cookie went to %s, not %s", i, got, first)
		}
		for _, c := range resp.Header.Values("Set-Cookie") {
			if strings.HasPrefix(c, "sid=") {
				t.Fatalf("a client with a session got another cookie: %q", c)
			}
		}
	}
}

const tokenLua = `-- Signed tokens: "Authorization: Token <json>.<hex hmac-sha256>".
local token = {}
local json = require "dkjson"
local hmac = require "openssl.hmac"
local where = require "where"

local function hex(s)
   return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

function token.valid(constant)
   local h = http.req.headers["Authorization"]
   if h == nil then stash.why = "missing" return false end
   local body, sig = h:match("^Token%s+(.+)%.(%x+)$")
   if body == nil then stash.why = "malformed" return false end
   if hex(hmac.new(http:const(constant), "sha256"):final(body)) ~= sig then
      stash.why = "bad signature"
      return false
   end
   local claims, _, err = json.decode(body)
   if err or type(claims) ~= "table" then stash.why = "bad payload" return false end
   stash.claims = claims
   return true
end

function token.admin() return stash.claims.admin == true end

function token.deny()
   http.resp.code = 401
   http.resp.headers["WWW-Authenticate"] = 'Token error="' .. stash.why .. '"'
   http.resp.body = "denied: " .. stash.why .. "\n"
end

function token.whoami()
   http.resp.code = 200
   http.resp.headers["Content-Type"] = "application/json"
   http.resp.body = json.encode({sub = stash.claims.sub, admin = token.admin(), from = where.cmodule()})
end

return token
`

// TestLuaTokens checks signed tokens with dkjson (a Lua module from
// package.path), luaossl (a C module found through CPath) and Path
// (lbd's own module), a secret from a Constant file, and the stash
// carrying the claims from the condition to the Lua backend.
func TestLuaTokens(t *testing.T) {
	so, _ := filepath.Glob("/usr/lib/*/lua/5.4/_openssl.so")
	if len(so) == 0 {
		t.Fatal("luaossl is not installed (Debian: apt-get install lua-luaossl lua-dkjson)")
	}
	cfg := luaHead + `Constant "secret" -file "{DIR}/secret.txt" -trim
Lua
	Path "{DIR}/lib/?.lua"
	CPath "{DIR}/cmod/?.so"
	Load "token.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "auth"
		Not LuaMatch "token.valid" "secret"
		LuaBackend "token.deny"
	End
	Service "admin"
		Path "^/admin"
		LuaMatch "token.admin"
		LuaBackend "token.whoami"
	End
	Service "forbidden"
		Error 403
	End
End
`
	files := map[string]string{
		"token.lua":  tokenLua,
		"secret.txt": "s3cret\n",
		"lib/where.lua": `local where = {}
function where.cmodule() return package.searchpath("_openssl", package.cpath) end
return where`,
	}
	p := startLua(t, cfg, files)
	if err := os.MkdirAll(filepath.Join(p.dir, "cmod"), 0o755); err != nil {
		t.Fatal(err)
	}
	sign := func(body, key string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(body))
		return "Token " + body + "." + hex.EncodeToString(m.Sum(nil))
	}
	admin := `{"sub":"ann","admin":true}`
	cases := []struct {
		name, path, auth string
		status           int
		body             string
	}{
		{"no token", "/admin", "", 401, "denied: missing\n"},
		{"malformed", "/admin", "Token nothing", 401, "denied: malformed\n"},
		{"wrong key", "/admin", sign(admin, "other"), 401, "denied: bad signature\n"},
		{"bad payload", "/admin", sign(`[1,`, "s3cret"), 401, "denied: bad payload\n"},
		{"admin", "/admin/me", sign(admin, "s3cret"), 200, ""},
		{"not an admin", "/admin/me", sign(`{"sub":"bob"}`, "s3cret"), 403, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.auth != "" {
				h["Authorization"] = tc.auth
			}
			resp, body := luaFetch(t, "GET", "http://"+p.addr+tc.path, h, "")
			if resp.StatusCode != tc.status || tc.body != "" && body != tc.body {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if tc.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Token error="`) {
				t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
			if tc.status == 200 && !regexp.MustCompile(`^\{("[a-z]+":("ann"|true|"[^"]*"),?){3}\}$`).MatchString(body) {
				t.Errorf("body %q", body)
			}
		})
	}
}

// TestLuaCPath loads a C module through a CPath directory of the test's
// own: the module the scripts get is the one there.
func TestLuaCPath(t *testing.T) {
	so, _ := filepath.Glob("/usr/lib/*/lua/5.4/_openssl.so")
	if len(so) == 0 {
		t.Fatal("luaossl is not installed (Debian: apt-get install lua-luaossl)")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "cmod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(so[0], filepath.Join(dir, "cmod", "_openssl.so")); err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(luaHead+`Lua
	CPath "{CMOD}/?.so"
	Load "c.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		LuaBackend "where"
	End
End
`, "{CMOD}", filepath.Join(dir, "cmod"))
	p := startLua(t, cfg, map[string]string{"c.lua": `local rand = require "_openssl.rand"
function where()
   http.resp.code = 200
   http.resp.body = package.searchpath("_openssl", package.cpath) .. " " .. #rand.bytes(16)
end`})
	_, body := luaFetch(t, "GET", "http://"+p.addr+"/", nil, "")
	if want := filepath.Join(dir, "cmod", "_openssl.so") + " 16"; body != want {
		t.Errorf("got %q, want %q", body, want)
	}
}

// TestLuaFailures checks that a script error, a runaway loop and a
// memory hog each answer 500, say where in the log, and leave lbd
// serving.
func TestLuaFailures(t *testing.T) {
	be := echoBackend(t, "be")
	cfg := luaHead + `Lua
	Load "bad.lua"
	MemoryLimit 8M
	InstructionLimit 1000000
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Path "^/error"
		LuaMatch "broken"
` + indent(backendBlock(be), 2) + `
	End
	Service
		Path "^/loop"
		LuaModify "spin"
` + indent(backendBlock(be), 2) + `
	End
	Service
		Path "^/hog"
		Rewrite response
			LuaModify "hog"
		End
` + indent(backendBlock(be), 2) + `
	End
	Service
` + indent(backendBlock(be), 2) + `
	End
End
`
	p := startLua(t, cfg, map[string]string{"bad.lua": `function broken()
   local t = nil
   return t.field
end
function spin() local n = 0 while true do n = n + 1 end end
function hog()
   local t = {}
   for i = 1, 1e8 do t[i] = ("x"):rep(64) .. i end
end
`})
	bad := regexp.QuoteMeta(filepath.Join(p.dir, "bad.lua"))
	cases := []struct{ path, log string }{
		{"/error", `error calling Lua function broken: ` + bad + `:3: attempt to index a nil value \(local 't'\)`},
		{"/loop", `error calling Lua function spin: ` + bad + `:5: instruction limit \(1000000\) exceeded`},
		{"/hog", `error calling Lua function hog: ` + bad + `:8: memory limit \(8388608 bytes\) exceeded`},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			resp, _ := luaFetch(t, "GET", "http://"+p.addr+tc.path, nil, "")
			if resp.StatusCode != 500 {
				t.Fatalf("status %d, want 500", resp.StatusCode)
			}
			// The statement's place in lbd.cfg, then the script's.
			re := regexp.MustCompile(`lbd: .*/lbd\.cfg:\d+\.\d+-\d+: ` + tc.log)
			waitFor(t, tc.log, func() bool { return re.MatchString(p.out.String()) })
			if resp, _ := luaFetch(t, "GET", "http://"+p.addr+"/fine", nil, ""); resp.StatusCode != 200 {
				t.Errorf("after the failure lbd answered %d", resp.StatusCode)
			}
		})
	}
}

// TestLuaCheckAndVersion runs lbd -c on files whose Lua is wrong, and
// -V.
func TestLuaCheckAndVersion(t *testing.T) {
	lbd := binary(t, "lbd")
	dir := t.TempDir()
	writeFile(t, dir, "ok.lua", "function ok() return true end\n")
	writeFile(t, dir, "syntax.lua", "function ok(\n")
	head := "Daemon 0\nWorkerMaxCount 2\nLua\n\tLoad \"%s\"\nEnd\nListenHTTP\n\tAddress 127.0.0.1\n\tPort 18998\n\tService\n\t\tLuaMatch \"%s\"\n\t\tError 404\n\tEnd\nEnd\n"
	cases := []struct{ name, file, fn, want string }{
		{"good", "ok.lua", "ok", ""},
		{"undefined function", "ok.lua", "nope", "lbd: c.cfg:10.17-31: Lua function nope not defined\n"},
		{"syntax error", "syntax.lua", "ok", "lbd: c.cfg:4.9-25: error loading Lua file syntax.lua: syntax.lua:2: <name> or '...' expected near <eof>\n"},
		{"missing file", "none.lua", "ok", "lbd: c.cfg:4.14-23: can't open none.lua: No such file or directory\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, dir, "c.cfg", fmt.Sprintf(head, tc.file, tc.fn))
			out, code := runCLI(t, lbd, dir, "-c", "-f", "c.cfg")
			if tc.want == "" {
				if code != 0 || out != "" {
					t.Fatalf("exit %d: %s", code, out)
				}
				return
			}
			if code != 1 || out != tc.want {
				t.Fatalf("exit %d, output %q, want %q", code, out, tc.want)
			}
		})
	}
	out, _ := runCLI(t, lbd, dir, "-V")
	if !regexp.MustCompile(`(?m)^Lua support: +enabled \(Lua 5\.4\.\d+\)$`).MatchString(out) {
		t.Errorf("-V says:\n%s", out)
	}
}

// TestLuaReload reloads a configuration whose script changed: the new
// one answers; a script that no longer loads is refused and the running
// one goes on.
func TestLuaReload(t *testing.T) {
	cfg := luaHead + `Control "{DIR}/ctl.sock"
Lua
	Load "v.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		LuaBackend "version"
	End
End
`
	script := `function version() http.resp.code = 200 http.resp.body = "%s" end`
	p := startLua(t, cfg, map[string]string{"v.lua": fmt.Sprintf(script, "one")})
	ctl := unixClient(filepath.Join(p.dir, "ctl.sock"))
	check := func(want string) {
		t.Helper()
		if _, body := luaFetch(t, "GET", "http://"+p.addr+"/", nil, ""); body != want {
			t.Fatalf("body %q, want %q", body, want)
		}
	}
	check("one")
	// The control API shows the Lua backend as Pound does.
	if code, body := control(t, ctl, "GET", "/"); code != 200 || !strings.Contains(body, `"type":"lua"`) ||
		!strings.Contains(body, `"function":"version"`) {
		t.Errorf("control API: %d %s", code, body)
	}
	writeFile(t, p.dir, "v.lua", fmt.Sprintf(script, "two"))
	if code, _ := control(t, ctl, "PATCH", "/config"); code != 200 {
		t.Fatalf("reload answered %d", code)
	}
	check("two")
	writeFile(t, p.dir, "v.lua", "function version(")
	if code, _ := control(t, ctl, "PATCH", "/config"); code != 400 {
		t.Fatalf("a reload with a broken script answered %d, want 400", code)
	}
	check("two")
}
