//go:build lua

package lua

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"lbd/config"
	"lbd/parser"
	"lbd/rules"
)

// fixture is a runtime loaded from test sources, with one call per
// function name the test uses.
type fixture struct {
	rt    *Runtime
	env   *rules.Env
	calls map[string]*config.LuaCall
	log   *test.Hook
}

// setup describes a runtime: per-thread and global sources (file name →
// text; "" for none), the functions called, and changes to the section.
type setup struct {
	thread, global map[string]string
	funcs          []string
	threads        int
	wait           time.Duration
	lua            func(*config.Lua)
	consts         map[string]string
	trusted        []string
}

func newFixture(t testing.TB, s setup) *fixture {
	t.Helper()
	f, err := tryFixture(t, s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func tryFixture(t testing.TB, s setup) (*fixture, error) {
	t.Helper()
	dir := t.TempDir()
	l := &config.Lua{MemoryLimit: config.DefaultLuaMemoryLimit, InstructionLimit: config.DefaultLuaInstructionLimit}
	add := func(srcs map[string]string, to *[]*config.LuaSource) {
		for name, text := range srcs {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			*to = append(*to, &config.LuaSource{File: path, Name: config.LuaModuleName(path)})
		}
	}
	add(s.thread, &l.Load)
	add(s.global, &l.LoadGlobal)
	if s.lua != nil {
		s.lua(l)
	}
	cfg := &config.Config{Lua: l, Constants: s.consts}
	f := &fixture{calls: map[string]*config.LuaCall{}}
	for i, fn := range s.funcs {
		c := &config.LuaCall{Pos: config.LocusOf(parser.Span{Start: posAt("t.cfg", i+1), End: posAt("t.cfg", i+1)}), Func: fn}
		f.calls[fn] = c
		cfg.LuaCalls = append(cfg.LuaCalls, c)
	}
	if s.threads == 0 {
		s.threads = 2
	}
	logger, hook := test.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	f.log = hook
	rt, err := New(cfg, Options{Threads: s.threads, Wait: s.wait, Log: logger})
	if err != nil {
		return nil, err
	}
	t.Cleanup(rt.Unref)
	f.rt = rt
	if len(s.trusted) > 0 {
		acl := &config.ACL{}
		for _, p := range s.trusted {
			acl.Nets = append(acl.Nets, netip.MustParsePrefix(p))
		}
		cfg.TrustedIP = acl
	}
	if f.env, err = rules.NewEnvScripts(cfg, rt); err != nil {
		t.Fatal(err)
	}
	return f, nil
}

// request is a request's rules state: "METHOD URL" and header lines.
// Its Lua session ends with the test.
func request(t testing.TB, line string, headers ...string) *rules.State {
	st := &rules.State{}
	t.Cleanup(st.EndScripts)
	st.Begin(netip.MustParseAddr("192.0.2.7"), 0)
	method, url, _ := strings.Cut(line, " ")
	st.Req.Method, st.Req.URL = []byte(method), []byte(url)
	for _, h := range headers {
		st.Req.Lines = append(st.Req.Lines, []byte(h))
	}
	st.X.Minor = 1
	return st
}

// call runs fn with args for st in mode.
func (f *fixture) call(t testing.TB, st *rules.State, mode rules.ScriptMode, fn string, args ...string) (bool, error) {
	t.Helper()
	c, ok := f.calls[fn]
	if !ok {
		t.Fatalf("no call for %s in the fixture", fn)
	}
	s, err := f.rt.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	var a [][]byte
	for _, x := range args {
		a = append(a, []byte(x))
	}
	m := &st.Req
	if mode == rules.ScriptResponse || mode == rules.ScriptBackend {
		m = &st.Resp
	}
	return s.Call(f.env, st, m, a, mode)
}

// mustCall is call that fails the test on an error.
func (f *fixture) mustCall(t testing.TB, st *rules.State, mode rules.ScriptMode, fn string, args ...string) bool {
	t.Helper()
	ok, err := f.call(t, st, mode, fn, args...)
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	return ok
}

// lines renders a message's header lines one per line.
func lines(m *rules.Message) string {
	var b strings.Builder
	for _, l := range m.Lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

func posAt(file string, line int) parser.Pos { return parser.Pos{File: file, Line: line, Col: 1} }
