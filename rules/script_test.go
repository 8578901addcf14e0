package rules

import (
	"errors"
	"strings"
	"testing"

	"lbd/config"
)

// fakeScripts resolves every call to a recorder.
type fakeScripts struct {
	results map[string]bool
	fail    map[string]error
	log     []string
}

func (f *fakeScripts) Resolve(c *config.LuaCall) (Script, error) {
	if c.Func == "undefined" {
		return nil, errors.New("not defined")
	}
	return &fakeScript{f: f, name: c.Func}, nil
}

type fakeScript struct {
	f    *fakeScripts
	name string
}

var modeNames = [...]string{"match", "request", "response", "backend"}

func (s *fakeScript) Call(_ *Env, st *State, m *Message, args [][]byte, mode ScriptMode) (bool, error) {
	on := "req"
	if m == &st.Resp {
		on = "resp"
	}
	var a []string
	for _, x := range args {
		a = append(a, string(x))
	}
	s.f.log = append(s.f.log, s.name+"("+strings.Join(a, ",")+") "+modeNames[mode]+" "+on)
	return s.f.results[s.name], s.f.fail[s.name]
}

const scriptsCfg = `
Condition "viaLua"
	LuaMatch "detached"
End
ListenHTTP
	LuaModify "lmod" "%[url]"
	Rewrite response
		LuaMatch "rcond" "$0"
		LuaModify "rmod" "x"
	End
	Service
		Header "X-Test" "([0-9]+)"
		LuaMatch "cond" "$1" "%[path]"
		Not LuaMatch "neg"
		LuaModify "smod"
		Backend
			Address 127.0.0.1
		End
	End
	Service
		Eval "viaLua"
		Backend
			Address 127.0.0.1
		End
	End
End
`

func TestScripts(t *testing.T) {
	cfg := loadCfg(t, scriptsCfg)
	fs := &fakeScripts{results: map[string]bool{"cond": true, "rcond": true, "detached": true}}
	env, err := NewEnvScripts(cfg, fs)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Listeners[0]
	s := l.Services[0]
	must := func(p *Program, err error) *Program {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	sel := must(env.CompileSelect(s.Conditions))
	req := must(env.CompileRewrite(s.Rare().Rewrites.Request))
	lreq := must(env.CompileRewrite(l.Rewrites.Request))
	lresp := must(env.CompileRewrite(l.Rewrites.Response))
	sel2 := must(env.CompileSelect(l.Services[1].Conditions))
	var st State
	request(&st, env, "192.0.2.1", "GET /p?q=1", "X-Test: 22")
	steps := []struct {
		name string
		run  func() error
		want string
	}{
		{"selection", func() error {
			ok, err := sel.Select(&st)
			if !ok {
				return errors.New("did not select")
			}
			return err
		}, "cond(22,/p) match req|neg() match req"},
		{"listener request rules", func() error { return lreq.Rewrite(&st, &st.Req) }, "lmod(/p?q=1) request req"},
		{"service request rules", func() error { return req.Rewrite(&st, &st.Req) }, "smod() request req"},
		{"response rules", func() error {
			st.Resp.Lines = [][]byte{[]byte("Server: x")}
			return lresp.Rewrite(&st, &st.Resp)
		}, "rcond(22) match resp|rmod(x) response resp"},
		{"detached condition", func() error {
			ok, err := sel2.Select(&st)
			if !ok {
				return errors.New("did not select")
			}
			return err
		}, "detached() match req"},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			fs.log = nil
			if err := step.run(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(fs.log, "|"); got != step.want {
				t.Errorf("calls %q, want %q", got, step.want)
			}
		})
	}
	for name, p := range map[string]*Program{"selection": sel, "request": req, "listener request": lreq, "response": lresp, "eval": sel2} {
		if !p.HasScripts() {
			t.Errorf("%s program: HasScripts false", name)
		}
	}
	if plain := must(env.CompileRewrite(nil)); plain.HasScripts() {
		t.Error("an empty program calls Lua")
	}

	t.Run("a failing script fails the program", func(t *testing.T) {
		fs.fail = map[string]error{"cond": errors.New("boom")}
		defer func() { fs.fail = nil }()
		if _, err := sel.Select(&st); err == nil || err.Error() != "boom" {
			t.Errorf("error %v, want boom", err)
		}
	})
	t.Run("an argument that does not expand fails the call", func(t *testing.T) {
		var st2 State
		request(&st2, env, "192.0.2.1", "GET /", "X-Test: 22")
		call := &config.LuaCall{Func: "cond", Args: []string{"$3"}}
		sc, err := env.CompileScript(call)
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Run(&st2); err == nil || !strings.Contains(err.Error(), "refers to non-existing group") {
			t.Errorf("error %v", err)
		}
	})
}

func TestScriptsUnresolved(t *testing.T) {
	cfg := loadCfg(t, wrap("", "", `  LuaMatch "f"`))
	env, err := NewEnv(cfg) // no Lua section: no Scripts
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.CompileSelect(cfg.Listeners[0].Services[0].Conditions)
	if err == nil || !strings.Contains(err.Error(), "t.cfg:5.3-14: Lua function f not defined") {
		t.Errorf("error %v", err)
	}
	env, _ = NewEnvScripts(cfg, &fakeScripts{})
	cfg.Listeners[0].Services[0].Conditions[0].Rare().Lua.Func = "undefined"
	if _, err = env.CompileSelect(cfg.Listeners[0].Services[0].Conditions); err == nil {
		t.Error("a function that does not resolve compiled")
	}
}
