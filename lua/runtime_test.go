//go:build lua

package lua

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"lbd/config"
	"lbd/rules"
)

// svcRef and finder stand for the proxy's services.
type svcRef struct{ name, locus string }

func (s *svcRef) ScriptName() string  { return s.name }
func (s *svcRef) ScriptLocus() string { return s.locus }

type finder map[string]*svcRef

func (f finder) FindService(name string, global bool) (rules.ServiceRef, bool) {
	if global {
		name = "/" + name
	}
	s, ok := f[name]
	if !ok {
		return nil, false
	}
	return s, true
}

func TestResendRequests(t *testing.T) {
	f := newFixture(t, setup{thread: map[string]string{"e.lua": editors + readers}, funcs: []string{"run", "check"}})
	cur := &svcRef{"first", "pound.cfg:3.1-9.3"}
	services := finder{"first": cur, "second": {"second", "pound.cfg:10.1-14.3"}, "/fallback": {"/fallback", "pound.cfg:20.1-25.3"}}
	cases := []struct {
		name, code string
		mode       rules.ResendMode
		service    string
		min        int
	}{
		{"nothing", "", rules.ResendNone, "", 0},
		{"resend", "http.resend = true", rules.ResendSame, "", 0},
		{"resend false", "http.resend = true http.resend = false", rules.ResendNone, "", 0},
		{"balancer", "http.balancer = 65535", rules.ResendBackend, "", 65535},
		{"service", "http.service.name = 'second'", rules.ResendService, "second", 0},
		{"global service", "http.service.name = '/fallback'", rules.ResendService, "/fallback", 0},
		{"service selection", "http.service.name = nil", rules.ResendService, "", 0},
		{"service and balancer", "http.service.name = 'second' http.balancer = 3", rules.ResendService, "second", 3},
		{"resend cancels service", "http.service.name = 'second' http.resend = true", rules.ResendSame, "", 0},
		{"service cancels resend", "http.resend = true http.service.name = 'second'", rules.ResendService, "second", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := request(t, "GET /")
			st.X.Service, st.X.Services, st.X.Status = cur, services, 401
			f.mustCall(t, st, rules.ScriptResponse, "run", tc.code)
			r := st.X.Resend
			name := ""
			if r.Service != nil {
				name = r.Service.ScriptName()
			}
			if r.Mode != tc.mode || name != tc.service || r.MinWeight != tc.min {
				t.Errorf("resend %v %q %d, want %v %q %d", r.Mode, name, r.MinWeight, tc.mode, tc.service, tc.min)
			}
		})
	}
	t.Run("service fields", func(t *testing.T) {
		st := request(t, "GET /")
		st.X.Service, st.X.Services, st.X.Resend.Count, st.X.Tier = cur, services, 2, 65535
		for expr, want := range map[string]string{
			"http.service.name": "first", "http.service.locus": "pound.cfg:3.1-9.3",
			"tostring(http.service)": "service first @ pound.cfg:3.1-9.3", "#http.service": "2",
			"http.resendcount": "2", "http.balancer": "65535",
		} {
			f.mustCall(t, st, rules.ScriptResponse, "check", expr, want)
		}
		f.mustCall(t, st, rules.ScriptResponse, "run", "http.service.name = 'second'")
		f.mustCall(t, st, rules.ScriptResponse, "check", "http.service.name", "second")
		f.mustCall(t, st, rules.ScriptResponse, "check", "http.resend", "true")
	})
	t.Run("refused", func(t *testing.T) {
		st := request(t, "GET /")
		st.X.Service, st.X.Services = cur, services
		for code, want := range map[string]string{
			"http.service.name = 'none'":      "no listener service with name none",
			"http.service.name = '/none'":     "no global service with name none",
			"http.service.locus = 'x'":        "read-only",
			"http.resendcount = 1":            "read-only",
			"http.balancer = 'high'":          "a number is expected",
			"http.service.name = {}":          "a string is expected",
			"http.req = {}":                   "read-only",
			"http.resp.code = http.resp.code": "is not a status",
		} {
			_, err := f.call(t, st, rules.ScriptResponse, "run", code)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", code, err, want)
			}
		}
	})
}

const stashing = `
function put(k, v) stash[k] = v end
function get(k, want)
   if tostring(stash[k]) ~= want then error(k .. " is " .. tostring(stash[k]), 0) end
end
function count(want)
   local n = 0
   for _ in pairs(stash) do n = n + 1 end
   if n ~= tonumber(want) then error(n .. " entries", 0) end
end
`

func TestStash(t *testing.T) {
	f := newFixture(t, setup{
		thread: map[string]string{"s.lua": stashing},
		global: map[string]string{"g.lua": strings.ReplaceAll(stashing, "function ", "function g")},
		funcs:  []string{"put", "get", "count", "gput", "gget", "gcount"}, threads: 1,
	})
	a := request(t, "GET /a")
	f.mustCall(t, a, rules.ScriptMatch, "put", "x", "1")
	f.mustCall(t, a, rules.ScriptResponse, "get", "x", "1")
	f.mustCall(t, a, rules.ScriptMatch, "gput", "x", "global")
	f.mustCall(t, a, rules.ScriptMatch, "get", "x", "1") // each state has its own stash
	f.mustCall(t, a, rules.ScriptMatch, "gget", "x", "global")
	f.mustCall(t, a, rules.ScriptMatch, "count", "1")
	a.EndScripts()

	// The next request gets the same (only) state and an empty stash,
	// in both states.
	b := request(t, "GET /b")
	f.mustCall(t, b, rules.ScriptMatch, "get", "x", "nil")
	f.mustCall(t, b, rules.ScriptMatch, "gget", "x", "nil")
	f.mustCall(t, b, rules.ScriptMatch, "count", "0")

	// Requests interleaving in the global state keep their stashes apart.
	c := request(t, "GET /c")
	f.mustCall(t, c, rules.ScriptMatch, "gput", "y", "c")
	f.mustCall(t, b, rules.ScriptMatch, "gput", "y", "b")
	f.mustCall(t, c, rules.ScriptMatch, "gget", "y", "c")
	f.mustCall(t, b, rules.ScriptMatch, "gget", "y", "b")
}

const globals = `
function scalar(a) return a end
function several(a, b, c) return a, b, c end
function table(a, b) return {a = a, b = b, list = {1, 2.5, "three", false}, sub = {x = {y = "z"}}} end
function fails() error("global failure") end
function badret() return print end
function counter() n = (n or 0) + 1 return n end
`

const locals = `
function check(expr, want)
   local got = pound.dump(load("return " .. expr)())
   if got ~= want then error(expr .. " is " .. tostring(got) .. ", not " .. want, 0) end
end
function run(code) load(code)() end
`

func TestGcall(t *testing.T) {
	f := newFixture(t, setup{thread: map[string]string{"l.lua": locals}, global: map[string]string{"g.lua": globals},
		funcs: []string{"check", "run"}, threads: 1})
	st := request(t, "GET /")
	cases := []struct{ name, expr, want string }{
		{"nil", "pound.gcall('scalar')", "nil"},
		{"integer becomes float", "pound.gcall('scalar', 137)", "137.0"},
		{"float", "pound.gcall('scalar', 0.1)", "0.10000000000000001"},
		{"boolean", "pound.gcall('scalar', true)", "true"},
		{"binary string", "pound.gcall('scalar', 'a\\0b\\n\\255\"')", `"a\000b\n\255\""`},
		{"several", "select('#', pound.gcall('several', 1, nil, 3))", "3"},
		{"table keeps integers inside", "pound.gcall('table', 1, 'x').list[1]", "1"},
		{"table", "pound.gcall('table', 1, 'x').sub.x.y", `"z"`},
		{"float inside a table", "pound.gcall('table', 1, 'x').list[2]", "2.5"},
		{"table argument", "pound.gcall('scalar', {k = {1, 2}}).k[2]", "2"},
		{"infinity", "pound.gcall('scalar', math.huge)", "1e9999"},
		{"global variables persist", "pound.gcall('counter') + pound.gcall('counter')", "3.0"},
		{"dump of a table", "{1, a = 'b'}", `{[1]=1,["a"]="b",}`},
		{"dump of a function", "select(2, pound.dump(print))", `"cannot serialize function"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.mustCall(t, st, rules.ScriptMatch, "check", tc.expr, tc.want)
		})
	}
	for code, want := range map[string]string{
		"pound.gcall('nosuch')":                         "nosuch: not a function",
		"pound.gcall('fails')":                          "global failure",
		"pound.gcall('scalar', print)":                  "gcall: cannot pass function",
		"pound.gcall('badret')":                         "gcall: cannot return function",
		"local t = {} t.t = t pound.gcall('scalar', t)": "nested too deep",
	} {
		_, err := f.call(t, st, rules.ScriptMatch, "run", code)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", code, err, want)
		}
	}
}

// TestErrors checks that every way a call can fail says where.
func TestErrors(t *testing.T) {
	src := `
function runtime() local x = nil; return x.y end
function nolevel() error("plain", 0) end
function object() error({}) end
function tostr() error(setmetatable({}, {__tostring = function() return "custom" end})) end
function nested() local function inner() error("deep") end inner() end
function api() http.req.headers = 1 end
`
	f := newFixture(t, setup{thread: map[string]string{"e.lua": src}, funcs: []string{"runtime", "nolevel", "object", "tostr", "nested", "api"}})
	cases := map[string]string{
		"runtime": "e.lua:2: attempt to index a nil value (local 'x')",
		"nolevel": "e.lua:3: plain",
		"object":  "e.lua:4: (error object is a table value)",
		"tostr":   "e.lua:5: custom",
		"nested":  "e.lua:6: deep",
		"api":     "e.lua:7: http.req.headers: a table is expected, not number",
	}
	for fn, want := range cases {
		t.Run(fn, func(t *testing.T) {
			_, err := f.call(t, request(t, "GET /"), rules.ScriptRequest, fn)
			var ce *CallError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a CallError", err)
			}
			if !strings.HasSuffix(ce.Msg, want) || !strings.Contains(err.Error(), "error calling Lua function "+fn+": ") {
				t.Errorf("error %q, want it to end with %q", err, want)
			}
		})
	}
}

func TestInstructionLimit(t *testing.T) {
	src := `
function spin() while true do end end
function catch() while true do pcall(function() while true do end end) end end
function co() local c = coroutine.wrap(function() while true do end end) c() end
function short() local n = 0 for i = 1, 1000 do n = n + i end return n == 500500 end
`
	f := newFixture(t, setup{thread: map[string]string{"b.lua": src}, funcs: []string{"spin", "catch", "co", "short"}, threads: 1,
		lua: func(l *config.Lua) { l.InstructionLimit = 200_000 }})
	st := request(t, "GET /")
	for _, fn := range []string{"spin", "catch", "co"} {
		t.Run(fn, func(t *testing.T) {
			_, err := f.call(t, st, rules.ScriptMatch, fn)
			if err == nil || !strings.Contains(err.Error(), "instruction limit (200000) exceeded") || !strings.Contains(err.Error(), "b.lua:") {
				t.Fatalf("error %v, want the instruction limit with its position", err)
			}
		})
	}
	// The state goes on serving, with a fresh budget for each call.
	for i := 0; i < 3; i++ {
		if !f.mustCall(t, st, rules.ScriptMatch, "short") {
			t.Fatal("a short function after a runaway one failed")
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	src := `
function hog() local t = {} for i = 1, 1e7 do t[i] = string.rep("x", 64) .. i end end
function big() return #string.rep("x", 8 * 1024 * 1024) end
function catch() local ok = pcall(hog) return not ok end
function small() return #string.rep("y", 1000) == 1000 end
`
	f := newFixture(t, setup{thread: map[string]string{"m.lua": src}, funcs: []string{"hog", "big", "catch", "small"}, threads: 1,
		lua: func(l *config.Lua) { l.MemoryLimit = 4 << 20 }})
	st := request(t, "GET /")
	for _, fn := range []string{"hog", "big"} {
		t.Run(fn, func(t *testing.T) {
			_, err := f.call(t, st, rules.ScriptMatch, fn)
			if err == nil || !strings.Contains(err.Error(), "memory limit (4194304 bytes) exceeded") || !strings.Contains(err.Error(), "m.lua:") {
				t.Fatalf("error %v, want the memory limit with its position", err)
			}
		})
	}
	// The memory of a failed call comes back.
	if used := f.rt.threads[0].c.used; used > 1<<20 {
		t.Errorf("%d bytes still in use after the failed calls", used)
	}
	// A script may catch the error; the state is usable afterwards.
	if !f.mustCall(t, st, rules.ScriptMatch, "catch") {
		t.Error("pcall did not see the memory error")
	}
	if !f.mustCall(t, st, rules.ScriptMatch, "small") {
		t.Error("the state does not work after a memory error")
	}
}

// TestPool checks that each request gets a state of its own, keeps it
// until it ends, waits for one when all are taken, and that states are
// reused.
func TestPool(t *testing.T) {
	src := `function tid(want) if pound.tid() ~= tonumber(want) then error("tid " .. pound.tid(), 0) end end
function who() return pound.tid() end`
	f := newFixture(t, setup{thread: map[string]string{"p.lua": src}, funcs: []string{"tid"}, threads: 2, wait: 50 * time.Millisecond})
	a, b := request(t, "GET /a"), request(t, "GET /b")
	f.mustCall(t, a, rules.ScriptMatch, "tid", "1")
	f.mustCall(t, b, rules.ScriptMatch, "tid", "2")
	f.mustCall(t, a, rules.ScriptRequest, "tid", "1") // a keeps its state
	c := request(t, "GET /c")
	start := time.Now()
	_, err := f.call(t, c, rules.ScriptMatch, "tid", "0")
	if err == nil || !strings.Contains(err.Error(), "no Lua state became free in time") {
		t.Fatalf("a third request with two states: %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the wait", d)
	}
	b.EndScripts()
	f.mustCall(t, c, rules.ScriptMatch, "tid", "2") // b's state, reused

	// Many requests at once share the states without ever overlapping:
	// each call checks that the state is still its own.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	a.EndScripts()
	c.EndScripts()
	slow := newFixture(t, setup{thread: map[string]string{"s.lua": `
function mine(id) stash.id = id end
function still(id) for i = 1, 10000 do end if stash.id ~= id then error("stash " .. tostring(stash.id) .. " in " .. id, 0) end end`},
		funcs: []string{"mine", "still"}, threads: 3, wait: 10 * time.Second})
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := request(t, "GET /")
			defer st.EndScripts()
			id := string(rune('a' + i))
			if _, err := slow.call(t, st, rules.ScriptMatch, "mine", id); err != nil {
				errs <- err
				return
			}
			if _, err := slow.call(t, st, rules.ScriptRequest, "still", id); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name   string
		thread map[string]string
		global map[string]string
		funcs  []string
		want   string
	}{
		{"syntax error", map[string]string{"bad.lua": "function x("}, nil, nil, "error loading Lua file"},
		{"error while loading", map[string]string{"boom.lua": "error('at load')"}, nil, nil, "Lua runtime error: "},
		{"function not defined", map[string]string{"ok.lua": "function f() end"}, nil, []string{"g"}, "t.cfg:1.1: Lua function g not defined"},
		{"dotted function not defined", map[string]string{"ok.lua": "function f() end"}, nil, []string{"m.f"}, "Lua function m.f not defined"},
		{"runaway load", map[string]string{"spin.lua": "while true do end"}, nil, nil, "instruction limit"},
		{"http at load", nil, map[string]string{"h.lua": "local x = http.req"}, nil, "attempt to index a nil value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tryFixture(t, setup{thread: tc.thread, global: tc.global, funcs: tc.funcs, threads: 1})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("modules and contexts", func(t *testing.T) {
		f := newFixture(t, setup{
			thread: map[string]string{"my-mod.lua": `local m = {} function m.ok() return true end
pound.log(pound.DEBUG, "loading in " .. tostring(pound.loadctx)) return m`},
			global: map[string]string{"glob.lua": `pound.log(pound.INFO, "global " .. tostring(pound.loadctx))
function plain() return package.path:find("^/lbd/%?%.lua;") ~= nil end`},
			funcs: []string{"my_mod.ok", "plain"}, threads: 3,
			lua: func(l *config.Lua) { l.Path = []string{"/lbd/?.lua"} },
		})
		st := request(t, "GET /")
		if !f.mustCall(t, st, rules.ScriptMatch, "my_mod.ok") || !f.mustCall(t, st, rules.ScriptMatch, "plain") {
			t.Error("a module's function or the Path prefix is missing")
		}
		var got []string
		for _, e := range f.log.AllEntries() {
			got = append(got, e.Level.String()+" "+e.Message)
		}
		want := "info global 0,debug loading in 1,debug loading in 2,debug loading in 3"
		if strings.Join(got, ",") != want {
			t.Errorf("log %q, want %q", strings.Join(got, ","), want)
		}
	})
}

// TestCloseWhileHeld checks that a runtime a reload retired keeps
// serving the request that holds it, refuses new ones, and frees its
// states when the last one ends.
func TestCloseWhileHeld(t *testing.T) {
	f := newFixture(t, setup{thread: map[string]string{"c.lua": "function ok() return true end"}, funcs: []string{"ok"}, threads: 1})
	held := request(t, "GET /")
	f.mustCall(t, held, rules.ScriptMatch, "ok")
	f.rt.Ref() // the test's cleanup drops one
	f.rt.Unref()
	f.rt.Unref() // the graph goes: the runtime closes once held ends
	if !f.rt.closed.Load() || f.rt.threads[0].c == nil {
		t.Fatal("the runtime closed its states while a request held one")
	}
	f.mustCall(t, held, rules.ScriptRequest, "ok")
	_, err := f.call(t, request(t, "GET /"), rules.ScriptMatch, "ok")
	if err == nil || !strings.Contains(err.Error(), "closed by a reload") {
		t.Errorf("a new request on a closed runtime: %v", err)
	}
	held.EndScripts()
	if f.rt.threads[0].c != nil || f.rt.global.c != nil {
		t.Error("the states outlived the last request")
	}
	f.rt.Ref() // balance the cleanup's Unref
}
