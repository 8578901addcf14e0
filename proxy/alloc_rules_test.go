package proxy

import (
	"strings"
	"testing"

	"lbd/config"
	"lbd/rules"
	"lbd/service"
)

// tenRules is the 10-rule program: conditions, a Rewrite with an
// Else, and header, path and query changes at listener and service level.
const tenRules = `ListenHTTP
	SetHeader "X-Proxy: lbd"
	Service
		Path -beg "/"
		Header "Host" -exact "www.example.com"
		Not Header "X-Block"
		Method "^(GET|HEAD)$"
		Rewrite
			Path "\\.html$"
			SetPath "/static/index.html"
			SetHeader "X-Kind: html"
		Else
			SetHeader "X-Kind: other"
		End
		DeleteHeader "^Cookie:"
		SetQueryParam "v" "2"
		SetHeader "X-Via: %[host]"
		Backend
			Address 127.0.0.1
		End
	End
End
`

// withRules gives the memory proxy's listener and service the rule
// programs of src.
func withRules(t testing.TB, st *Listener, src string) {
	t.Helper()
	cfg, _, err := config.LoadBytes("t.cfg", []byte(src), config.LoadOptions{NoDNS: true})
	if err != nil {
		t.Fatal(err)
	}
	env, err := rules.NewEnv(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Listeners[0]
	if st.ReqRules, err = env.CompileRewrite(l.Rewrites.Request); err != nil {
		t.Fatal(err)
	}
	if st.RespRules, err = env.CompileRewrite(l.Rewrites.Response); err != nil {
		t.Fatal(err)
	}
	// Services with regular backends get the memory proxy's backend;
	// others keep their special backend (Error ...).
	old := st.Router.Services[0]
	st.Router.Services = nil
	st.Dialect = cfg.Dialect
	st.Edits = testEdits(t, cfg, l, nil, env)
	st.SvcEdits = map[*service.Service]*HeaderEdits{}
	for _, sc := range l.Services {
		o := service.Options{Env: env}
		if len(sc.Backends) > 0 && sc.Backends[0].Kind == config.BackendRegular {
			o.Backends, o.Algo = old.Backends, old.Algo
		}
		svc, err := service.New(sc, o)
		if err != nil {
			t.Fatal(err)
		}
		st.Router.Services = append(st.Router.Services, svc)
		st.SvcEdits[svc] = testEdits(t, cfg, l, sc, env)
	}
	testDialect(cfg, st)
}

func TestRequestCycleWithRulesDoesNotAllocate(t *testing.T) {
	be := &memConn{reply: []byte(benchResponse), keep: true}
	c, st, client := newMemProxy(t, be)
	withRules(t, st, tenRules)
	client.in = []byte(benchRequest)
	client.keep = true
	if !cycle(c, st, client) {
		t.Fatalf("first cycle failed; client got %q", client.out)
	}
	sent := string(be.out)
	for _, want := range []string{"GET /static/index.html?q=1&v=2 HTTP/1.1\r\n", "X-Proxy: lbd\r\n", "X-Kind: html\r\n",
		"X-Via: www.example.com\r\n"} {
		if !strings.Contains(sent, want) {
			t.Fatalf("backend got %q, lacking %q", sent, want)
		}
	}
	if strings.Contains(sent, "Cookie:") {
		t.Fatalf("DeleteHeader left the cookie: %q", sent)
	}
	client.keep, be.keep = false, false
	allocs := testing.AllocsPerRun(1000, func() {
		if !cycle(c, st, client) {
			t.Fatal("cycle failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("request cycle with 10 rules allocates %.1f times per request, want 0", allocs)
	}
}

func BenchmarkRequestCycleRules(b *testing.B) {
	be := &memConn{reply: []byte(benchResponse)}
	c, st, client := newMemProxy(b, be)
	withRules(b, st, tenRules)
	client.in = []byte(benchRequest)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchRequest) + len(benchResponse)))
	for b.Loop() {
		if !cycle(c, st, client) {
			b.Fatal("cycle failed")
		}
	}
}
