package functionaltests

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Resending requests from Rewrite response scripts (http.resend,
// http.balancer, http.service.name) through the real binary.

const retryLua = `-- Resend decisions for lbd's functional tests.
local retry = {}

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

local function base64(s)
   local out = {}
   for i = 1, #s, 3 do
      local a, b, c = s:byte(i, i + 2)
      local n = (a << 16) | ((b or 0) << 8) | (c or 0)
      local q = {}
      for j = 3, 0, -1 do
         local k = (n >> (6 * j)) & 63
         q[#q + 1] = alphabet:sub(k + 1, k + 1)
      end
      if not b then q[3], q[4] = "=", "=" elseif not c then q[4] = "=" end
      out[#out + 1] = table.concat(q)
   end
   return table.concat(out)
end

-- The scheme of a WWW-Authenticate value and its parameters.
local function challenge(v)
   local scheme, rest = v:match("^(%S+)%s+(.*)$")
   if not scheme then return nil end
   local params = {}
   for k, val in (rest .. ","):gmatch('%s*(%w+)="?([^",]*)"?,') do
      params[k:lower()] = val
   end
   return scheme, params
end

function retry.login(user, pass)
   if http.resp.code ~= 401 or http.resendcount > 0 then return end
   local scheme, params = challenge(http.resp.headers["WWW-Authenticate"] or "")
   if scheme == "Basic" and params.realm == "vault" then
      http.req.headers["Authorization"] = "Basic " .. base64(user .. ":" .. pass)
      http.resend = true
   end
end

function retry.failover()
   if http.resp.code == 421 then http.balancer = 65535 end
end

function retry.elsewhere(name)
   if http.resp.code ~= 404 then return end
   if name == "" then
      http.req.path = "/found" .. http.req.path
      http.service.name = nil
   else
      http.service.name = name
   end
end

function retry.forever() http.resend = true end

-- A body set for a response that is then resent is not the next one's.
function retry.scribble()
   if http.resendcount == 0 then
      http.resp.body = "scribbled"
      http.resend = true
   end
end

function retry.answer()
   http.resp.code = 200
   http.resp.body = "answered by Lua after " .. http.req.path
end

function retry.body()
   http.resp.headers["X-Body-Seen"] = http.req.body or "none"
   if http.resp.code == 503 and http.resendcount == 0 then http.resend = true end
end

function retry.count()
   http.resp.headers["X-Resends"] = tostring(http.resendcount)
end

return retry
`

// tallyBackend answers with handle and counts the requests.
func tallyBackend(t *testing.T, host, name string, handle func(w http.ResponseWriter, r *http.Request, n int64)) (*backend, *atomic.Int64) {
	var n atomic.Int64
	b := startBackend(t, host, name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		handle(w, r, n.Add(1))
	}))
	return b, &n
}

func TestLuaResend(t *testing.T) {
	vault, vaultHits := tallyBackend(t, "127.0.0.2", "vault", func(w http.ResponseWriter, r *http.Request, _ int64) {
		if r.Header.Get("Authorization") != "Basic dXNlcjpzZWNyZXQ=" { // user:secret
			w.Header().Set("WWW-Authenticate", `Basic realm="vault", charset="UTF-8"`)
			w.WriteHeader(401)
			io.WriteString(w, "who are you?")
			return
		}
		io.WriteString(w, "vault opened")
	})
	busy, _ := tallyBackend(t, "127.0.0.2", "busy", func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.WriteHeader(421)
		io.WriteString(w, "not here")
	})
	spare, _ := tallyBackend(t, "127.0.0.3", "spare", func(w http.ResponseWriter, r *http.Request, _ int64) {
		fmt.Fprintf(w, "spare %s %s", r.RequestURI, r.Header.Get("X-Forwarded-For"))
	})
	missing, _ := tallyBackend(t, "127.0.0.2", "missing", func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.WriteHeader(404)
	})
	found, _ := tallyBackend(t, "127.0.0.3", "found", func(w http.ResponseWriter, r *http.Request, _ int64) {
		fmt.Fprintf(w, "found %s", r.RequestURI)
	})
	loop, loopHits := tallyBackend(t, "127.0.0.2", "loop", func(w http.ResponseWriter, _ *http.Request, _ int64) {
		io.WriteString(w, "again")
	})
	cfg := luaHead + `Lua
	Load "retry.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "vault"
		Path "^/vault"
		Rewrite response
			LuaModify "retry.login" "user" "secret"
			LuaModify "retry.count"
		End
` + indent(backendBlock(vault), 2) + `
	End
	Service "busy"
		Path "^/busy"
		Rewrite response
			LuaModify "retry.failover"
		End
` + indent(backendBlock(busy), 2) + `
		Emergency
			Address 127.0.0.3
			Port ` + fmt.Sprint(spare.port) + `
		End
	End
	Service "missing"
		Path "^/(missing|lost|gone)"
		Rewrite response
			LuaModify "retry.elsewhere" "%[header X-Where]"
		End
` + indent(backendBlock(missing), 2) + `
	End
	Service "found"
		Path "^/found"
` + indent(backendBlock(found), 2) + `
	End
	Service "scribble"
		Path "^/scribble"
		Rewrite response
			LuaModify "retry.scribble"
		End
` + indent(backendBlock(found), 2) + `
	End
	Service "answer"
		Path "^/never"
		LuaBackend "retry.answer"
	End
	Service "loop"
		Path "^/loop"
		Rewrite response
			LuaModify "retry.forever"
		End
` + indent(backendBlock(loop), 2) + `
	End
End
Service "spare"
` + indent(backendBlock(spare), 1) + `
End
`
	p := startLua(t, cfg, map[string]string{"retry.lua": retryLua})
	cases := []struct {
		name, path string
		headers    map[string]string
		status     int
		body       string
		resends    string
	}{
		{"same service, with credentials", "/vault/box", nil, 200, "vault opened", "1"},
		{"emergency group", "/busy/x", nil, 200, "spare /busy/x 127.0.0.1", ""},
		{"service by name", "/missing/a", map[string]string{"X-Where": "found"}, 200, "found /missing/a", ""},
		{"global service", "/lost/b", map[string]string{"X-Where": "/spare"}, 200, "spare /lost/b 127.0.0.1", ""},
		{"selection again", "/gone/c", map[string]string{"X-Where": ""}, 200, "found /found/gone/c", ""},
		{"no such service", "/gone/d", map[string]string{"X-Where": "nowhere"}, 500, "", ""},
		{"to a Lua backend", "/missing/e", map[string]string{"X-Where": "answer"}, 200, "answered by Lua after /missing/e", ""},
		{"a resent response gets its own body", "/scribble", nil, 200, "found /scribble", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := luaFetch(t, "GET", "http://"+p.addr+tc.path, tc.headers, "")
			if resp.StatusCode != tc.status || tc.status == 200 && body != tc.body {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if got := resp.Header.Get("X-Resends"); got != tc.resends {
				t.Errorf("X-Resends %q, want %q", got, tc.resends)
			}
		})
	}
	if n := vaultHits.Load(); n != 2 {
		t.Errorf("the vault saw %d requests, want 2", n)
	}
	p.waitLog(t, "no listener service with name nowhere")

	t.Run("loop limit", func(t *testing.T) {
		resp, _ := luaFetch(t, "GET", "http://"+p.addr+"/loop", nil, "")
		if resp.StatusCode != 500 {
			t.Fatalf("status %d, want 500", resp.StatusCode)
		}
		if n := loopHits.Load(); n != 5 {
			t.Errorf("the backend saw %d requests, want 5 (the first and 4 resends)", n)
		}
		p.waitLog(t, `e500: 127.0.0.1 => `+loop.addr+`: "GET /loop HTTP/1.1": refusing to do more than 4 resends`)
	})
}

// TestLuaResendBody checks that a request body is sent again: one that
// fits in the read buffer always, a larger one only within
// ContentCapture, which also shows it to the script.
func TestLuaResendBody(t *testing.T) {
	var mu sync.Mutex
	var got []string
	flaky, hits := tallyBackend(t, "127.0.0.2", "flaky", func(w http.ResponseWriter, r *http.Request, n int64) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, fmt.Sprintf("%d:%d", n, len(b)))
		mu.Unlock()
		if n%2 == 1 {
			w.WriteHeader(503)
			return
		}
		fmt.Fprintf(w, "%d bytes", len(b))
	})
	cfg := luaHead + `Lua
	Load "retry.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Path "^/captured"
		ContentCapture 512k
		Rewrite response
			LuaModify "retry.body"
		End
` + indent(backendBlock(flaky), 2) + `
	End
	Service
		Rewrite response
			LuaModify "retry.body"
		End
` + indent(backendBlock(flaky), 2) + `
	End
End
`
	p := startLua(t, cfg, map[string]string{"retry.lua": retryLua})
	small := "name=value"
	large := strings.Repeat("x", 200<<10)
	cases := []struct {
		name, path, body string
		status           int
		seen             string
	}{
		{"small body, resent", "/plain", small, 200, "none"},
		{"captured body, shown and resent", "/captured", small, 200, small},
		{"large captured body, resent", "/captured", large, 200, ""},
		{"large body without ContentCapture", "/plain", large, 500, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			resp, body := luaFetch(t, "POST", "http://"+p.addr+tc.path, nil, tc.body)
			if resp.StatusCode != tc.status {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("status %d, want %d (backend saw %v)", resp.StatusCode, tc.status, got)
			}
			if tc.status == 200 {
				if want := fmt.Sprintf("%d bytes", len(tc.body)); body != want {
					t.Errorf("body %q, want %q", body, want)
				}
				if hits.Load()-before != 2 {
					t.Errorf("the backend saw %d requests, want 2", hits.Load()-before)
				}
			}
			if tc.seen != "" && resp.Header.Get("X-Body-Seen") != tc.seen {
				t.Errorf("the script saw %q, want %q", resp.Header.Get("X-Body-Seen"), tc.seen)
			}
		})
	}
	p.waitLog(t, "cannot resend: the request body was not kept")
}
