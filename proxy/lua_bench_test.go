//go:build lua

package proxy

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"lbd/config"
	"lbd/lua"
	"lbd/rules"
	"lbd/service"
)

// What a Lua call adds to the in-memory request cycle (bench/RESULTS.md
// §14): a trivial LuaMatch, a LuaModify that sets a request header, and
// one in Rewrite response that sets a response header (the request then
// keeps its Lua state until the response is sent).

const benchLua = `
function yes() return true end
function tag() http.req.headers["X-Lua"] = "1" end
function stamp() http.resp.headers["X-Lua"] = http.req.method end
`

// withLua gives the memory proxy's service the statements stmts, with
// the functions of benchLua loaded into one per-thread state.
func withLua(t testing.TB, st *Listener, stmts string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "bench.lua")
	if err := os.WriteFile(file, []byte(benchLua), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "WorkerMaxCount 1\nLua\n\tLoad \"" + file + "\"\nEnd\nListenHTTP\n\tService\n" + stmts +
		"\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n"
	cfg, _, err := config.LoadBytes("t.cfg", []byte(src), config.LoadOptions{NoDNS: true})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := lua.New(cfg, lua.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Unref)
	env, err := rules.NewEnvScripts(cfg, rt)
	if err != nil {
		t.Fatal(err)
	}
	old := st.Router.Services[0]
	svc, err := service.New(cfg.Listeners[0].Services[0], service.Options{Backends: old.Backends, Algo: old.Algo, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	st.Router.Services[0] = svc
	st.SvcEdits = map[*service.Service]*HeaderEdits{svc: NewEdits(EditsConfig{LocationInPlace: true})}
}

var luaBenchCases = []struct {
	name, stmts string
	backend     string // what the backend must receive
	client      string // what the client must receive
}{
	{"LuaMatch", `		LuaMatch "yes"`, "GET /index.html?q=1 HTTP/1.1\r\n", "HTTP/1.1 200 OK\r\n"},
	{"LuaModify", `		LuaModify "tag"`, "X-Lua: 1\r\n", "HTTP/1.1 200 OK\r\n"},
	{"LuaModifyResponse", "\t\tRewrite response\n\t\t\tLuaModify \"stamp\"\n\t\tEnd", "GET /index.html", "X-Lua: GET\r\n"},
}

// TestRequestCycleWithLua checks each benchmark's program does what it
// says, and that a request calling Lua allocates nothing on the Go heap
// either (the state comes from a channel, the interpreter allocates with
// malloc under its MemoryLimit).
func TestRequestCycleWithLua(t *testing.T) {
	for _, tc := range luaBenchCases {
		t.Run(tc.name, func(t *testing.T) {
			be := &memConn{reply: []byte(benchResponse), keep: true}
			c, st, client := newMemProxy(t, be)
			withLua(t, st, tc.stmts)
			client.in = []byte(benchRequest)
			client.keep = true
			if !cycle(c, st, client) {
				t.Fatalf("first cycle failed; client got %q", client.out)
			}
			if !strings.Contains(string(be.out), tc.backend) || !strings.Contains(string(client.out), tc.client) {
				t.Fatalf("backend got %q, client %q", be.out, client.out)
			}
			client.keep, be.keep = false, false
			allocs := testing.AllocsPerRun(1000, func() {
				if !cycle(c, st, client) {
					t.Fatal("cycle failed")
				}
			})
			if allocs != 0 {
				t.Errorf("%s allocates %.1f times per request, want 0", tc.name, allocs)
			}
		})
	}
}

func BenchmarkRequestCycleLua(b *testing.B) {
	for _, tc := range luaBenchCases {
		b.Run(tc.name, func(b *testing.B) {
			be := &memConn{reply: []byte(benchResponse)}
			c, st, client := newMemProxy(b, be)
			withLua(b, st, tc.stmts)
			client.in = []byte(benchRequest)
			b.ReportAllocs()
			calls := runtime.NumCgoCall()
			for b.Loop() {
				if !cycle(c, st, client) {
					b.Fatal("cycle failed")
				}
			}
			b.ReportMetric(float64(runtime.NumCgoCall()-calls)/float64(b.N), "cgocalls/op")
		})
	}
}
