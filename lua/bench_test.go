//go:build lua

package lua

import (
	"net/netip"
	"runtime"
	"testing"

	"lbd/rules"
)

// BenchmarkCall is one request's use of Lua: take a state, make the call,
// give the state back (bench/RESULTS.md §14). read reads a header, tag
// sets one, yes only returns.
func BenchmarkCall(b *testing.B) {
	f := newFixture(b, setup{thread: map[string]string{"b.lua": `
function yes() return true end
function read() return http.req.headers.host == "example.org" end
function tag() http.req.headers["X-Lua"] = "1" end
`}, funcs: []string{"yes", "read", "tag"}, threads: 1})
	client := netip.MustParseAddr("192.0.2.1")
	host := [][]byte{[]byte("Host: example.org")}
	get, root := []byte("GET"), []byte("/")
	for _, tc := range []struct {
		name, fn string
		mode     rules.ScriptMode
	}{{"LuaMatch", "yes", rules.ScriptMatch}, {"LuaMatchHeader", "read", rules.ScriptMatch}, {"LuaModifyHeader", "tag", rules.ScriptRequest}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := f.rt.Resolve(f.calls[tc.fn])
			if err != nil {
				b.Fatal(err)
			}
			var st rules.State
			b.ReportAllocs()
			v := f.rt.threads[0]
			ops, calls := v.ops, runtime.NumCgoCall()
			for b.Loop() {
				st.Begin(client, 0) // ends the previous request's session
				st.Req.Method, st.Req.URL = get, root
				st.Req.Lines = append(st.Req.Lines[:0], host...)
				if _, err := s.Call(f.env, &st, &st.Req, nil, tc.mode); err != nil {
					b.Fatal(err)
				}
			}
			st.EndScripts()
			b.ReportMetric(float64(runtime.NumCgoCall()-calls)/float64(b.N), "cgocalls/op")
			b.ReportMetric(float64(v.ops-ops)/float64(b.N), "callbacks/op")
		})
	}
}
