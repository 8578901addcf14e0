//go:build lua

package lua

import (
	"bytes"
	"strings"
	"testing"

	"lbd/rules"
)

// FuzzValues sends arbitrary bytes through what lbd itself writes or
// checks: pound.gcall's and pound.dump's serializer must give the same
// string back (as an argument, a table key and value, and a result), and
// a header value must either be refused or be set exactly.
func FuzzValues(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x00b", "\"\\\n\r\t", "\xff\xfe\x80", "12", "1e9999", "]]=}", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	fx := newFixture(f, setup{
		global: map[string]string{"g.lua": `function echo(...) return ... end`},
		thread: map[string]string{"l.lua": `
function roundtrip(s)
   local a, t = pound.gcall("echo", s, {[s] = s, list = {s, #s}})
   assert(a == s, "gcall argument")
   assert(t[s] == s and t.list[1] == s and t.list[2] == #s and math.type(t.list[2]) == "integer", "gcall table")
   assert(load("return " .. pound.dump(s))() == s, "dump")
   assert(load("return " .. pound.dump({[s] = {s}}))()[s][1] == s, "dump table")
end
function header(s) http.req.headers["X-F"] = s end
`},
		funcs: []string{"roundtrip", "header"},
	})
	f.Fuzz(func(t *testing.T, s string) {
		st := request(t, "GET /")
		defer st.EndScripts()
		if _, err := fx.call(t, st, rules.ScriptRequest, "roundtrip", s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		_, err := fx.call(t, st, rules.ScriptRequest, "header", s)
		bad := strings.ContainsAny(s, "\r\n\x00")
		switch {
		case bad && err == nil:
			t.Errorf("header value %q was accepted", s)
		case !bad && err != nil:
			t.Errorf("header value %q: %v", s, err)
		case !bad && (len(st.Req.Lines) != 1 || !bytes.Equal(st.Req.Lines[0], []byte("X-F: "+s))):
			t.Errorf("header value %q set as %q", s, st.Req.Lines)
		}
	})
}
