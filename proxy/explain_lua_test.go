package proxy

import (
	"strings"
	"testing"

	"lbd/config"
	"lbd/explain"
	"lbd/rules"
)

// countingScripts resolves every Lua call to a function that counts its
// calls and returns true.
type countingScripts struct{ calls int }

func (c *countingScripts) Resolve(*config.LuaCall) (rules.Script, error) { return c, nil }

func (c *countingScripts) Call(*rules.Env, *rules.State, *rules.Message, [][]byte, rules.ScriptMode) (bool, error) {
	c.calls++
	return true, nil
}

// TestExplainCallsNoLua: the routing explainer is a dry run, and a Lua
// function may do anything, so it calls none; where one decides, the
// explanation says so instead of guessing.
func TestExplainCallsNoLua(t *testing.T) {
	const cfg = `ListenHTTP
	Address 127.0.0.1
	Port 8080
	Service "plain"
		Path "^/plain"
		BackEnd
			Address 127.0.0.2
			Port 8081
		End
	End
	Service "matched"
		Path "^/match"
		LuaMatch "allowed" "%[path]"
		BackEnd
			Address 127.0.0.2
			Port 8081
		End
	End
	Service "edited"
		Path "^/edit"
		LuaModify "edit"
		BackEnd
			Address 127.0.0.2
			Port 8081
		End
	End
	Service "answered"
		Path "^/answer"
		LuaBackend "answer"
	End
	Service "explained"
		Rewrite response
			LuaModify "explain"
		End
		Error 401
	End
End
`
	scripts := &countingScripts{}
	s, _ := explainServerWith(t, cfg, scripts)
	cases := []struct{ url, outcome string }{
		{"/plain", "→ backend 0 127.0.0.2:8081"},
		{"/match", "undetermined: test.cfg:13.17-44: Lua function allowed decides here, and a dry run does not call Lua"},
		{"/edit", "undetermined: test.cfg:21.17-32: Lua function edit decides here"},
		{"/answer", "undetermined: test.cfg:29.17-35: Lua function answer decides here"},
		{"/other", "undetermined: test.cfg:33.25-43: Lua function explain decides here"},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			r, err := s.Explain(explain.Query{Method: "GET", URL: tc.url}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Outcome, tc.outcome) {
				t.Errorf("outcome %q, want it to say %q", r.Outcome, tc.outcome)
			}
		})
	}
	if scripts.calls != 0 {
		t.Errorf("explaining called Lua %d times", scripts.calls)
	}
}
