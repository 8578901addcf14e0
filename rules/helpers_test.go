package rules

import (
	"net/netip"
	"strings"
	"testing"

	"lbd/config"
)

// loadCfg loads a configuration text, failing the test on any error.
func loadCfg(t testing.TB, src string) *config.Config {
	t.Helper()
	cfg, _, err := config.LoadBytes("t.cfg", []byte(src), config.LoadOptions{NoDNS: true})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return cfg
}

// svcPrograms compiles the first service of the first listener.
type svcPrograms struct {
	env                *Env
	sel, lreq, req, rs *Program
}

func compileFirst(t testing.TB, src string) svcPrograms {
	t.Helper()
	cfg := loadCfg(t, src)
	env, err := NewEnv(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Listeners[0]
	le := env.Scope(l.Constants, l.TrustedIP, l.ForwardedHeader)
	s := l.Services[0]
	se := le.Scope(s.Rare().Constants, s.Rare().TrustedIP, s.Rare().ForwardedHeader)
	var p svcPrograms
	p.env = env
	must := func(x *Program, err error) *Program {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	p.sel = must(se.CompileSelect(s.Conditions))
	p.lreq = must(le.CompileRewrite(l.Rewrites.Request))
	p.req = must(se.CompileRewrite(s.Rare().Rewrites.Request))
	p.rs = must(se.CompileRewrite(s.Rare().Rewrites.Response))
	return p
}

// request fills st from "METHOD URL" and header lines, as the proxy does.
func request(st *State, env *Env, client, line string, headers ...string) {
	st.Begin(netip.MustParseAddr(client), len(env.Detached))
	method, url, _ := strings.Cut(line, " ")
	st.Req.Method, st.Req.URL = []byte(method), []byte(url)
	for _, h := range headers {
		st.Req.Lines = append(st.Req.Lines, []byte(h))
	}
}

// wrap puts service statements into a minimal configuration.
func wrap(global, listener, service string) string {
	return global + "\nListenHTTP\n" + listener + "\n Service\n" + service +
		"\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n"
}

func lines(m *Message) string {
	var b strings.Builder
	for _, l := range m.Lines {
		b.Write(l)
		b.WriteByte('|')
	}
	return b.String()
}
