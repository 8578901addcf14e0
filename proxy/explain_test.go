package proxy

import (
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"lbd/backend"
	"lbd/balancer"
	"lbd/config"
	"lbd/explain"
	"lbd/rules"
	"lbd/service"
)

// explainCfg has a service of each kind the explainer tells apart.
const explainCfg = `ListenHTTP
	Address 127.0.0.1
	Port 8080
	Service "api"
		Path "^/api/"
		SetHeader "X-Api: 1"
		BackEnd
			Address 127.0.0.2
			Port 8081
		End
		BackEnd
			Address 127.0.0.3
			Port 8081
		End
	End
	Service "moved"
		Host "old.example"
		Redirect 301 "http://new.example"
	End
	Service "gone"
		Path "^/gone"
		Error 403
	End
	Service "tbf"
		Path "^/tbf"
		TBF "k" 1/60s 1
		BackEnd
			Address 127.0.0.4
			Port 8081
		End
	End
End
`

// explainServer builds the listener of text with its regular services
// balanced over never-dialled backends, as the engine builds them.
func explainServer(t testing.TB, text string) (*Server, []*backend.Backend) {
	return explainServerWith(t, text, nil)
}

// explainServerWith is explainServer with Lua calls resolved by scripts.
func explainServerWith(t testing.TB, text string, scripts rules.Scripts) (*Server, []*backend.Backend) {
	t.Helper()
	f := loadFixtureWith(t, text, scripts)
	var all []*backend.Backend
	for i, svc := range f.st.Router.Services {
		var bes []*backend.Backend
		for _, cb := range svc.Cfg.Backends {
			if cb.Kind == config.BackendRegular {
				bes = append(bes, testBackend(net.JoinHostPort(cb.Address, strconv.Itoa(cb.Port))))
			}
		}
		if len(bes) == 0 {
			continue
		}
		algo := balancer.New(balancer.IWRR, bes)
		t.Cleanup(algo.Close)
		ns, err := service.New(svc.Cfg, service.Options{Backends: bes, Algo: algo, Env: svc.Env})
		if err != nil {
			t.Fatal(err)
		}
		f.st.SvcEdits[ns] = f.st.SvcEdits[svc]
		f.st.Router.Services[i] = ns
		all = append(all, bes...)
	}
	return NewServer(f.st), all
}

// TestExplainCountsNothing: explanations of every outcome leave the
// listener's generated-reply counters, the backends' counters and the
// TBF bucket as they were.
func TestExplainCountsNothing(t *testing.T) {
	s, bes := explainServer(t, explainCfg)
	queries := []struct {
		q       explain.Query
		outcome string
	}{
		{explain.Query{Method: "GET", URL: "/api/x"}, "→ backend 0 127.0.0.2:8081"},
		{explain.Query{Method: "GET", URL: "http://old.example/p"}, "redirects with 301 to http://new.example/p"},
		{explain.Query{Method: "GET", URL: "/gone"}, "403"},
		{explain.Query{Method: "GET", URL: "/none"}, "503"},
		{explain.Query{Method: "BREW", URL: "/api/x"}, "400"},
		{explain.Query{Method: "GET", URL: "/tbf"}, "→ backend 0 127.0.0.4:8081"},
	}
	for range 3 {
		for _, tc := range queries {
			r, err := s.Explain(tc.q, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Outcome, tc.outcome) {
				t.Errorf("%s %s: %q, want it to say %q", tc.q.Method, tc.q.URL, r.Outcome, tc.outcome)
			}
		}
	}
	if a, b, c := s.Generated(); a+b+c != 0 {
		t.Errorf("explaining counted generated replies: %d %d %d", a, b, c)
	}
	for _, be := range bes {
		if be.Requests() != 0 || be.Active() != 0 || be.Pending() != 0 {
			t.Errorf("explaining touched backend %s: %d requests", be, be.Requests())
		}
	}
	// The iwrr cycle still starts at its first backend, and the TBF
	// bucket still has its one token.
	if got := s.State().Router.Services[0].Algo.Pick(); got != bes[0] {
		t.Errorf("iwrr moved: next is %s", got)
	}
	r, _ := s.Explain(explain.Query{Method: "GET", URL: "/tbf"}, 0)
	if d := r.Services[3].Conditions[1].Detail; !strings.HasPrefix(d, "1 token(s)") {
		t.Errorf("TBF bucket after explanations: %q", d)
	}
}

// FuzzExplain asks anything: the explainer refuses a malformed question
// with ErrBadQuery or answers with an explanation that encodes, never
// panics.
func FuzzExplain(f *testing.F) {
	for _, s := range [][4]string{
		{"GET", "/api/x", "Host: h", ""}, {"GET", "http://old.example/p?q", "", "10.0.0.1"},
		{"PUT", "/gone", "X: y", "::1"}, {"GET", "/tbf", "Content-Length: 5", ""}, {"GET", "*", "", ""},
		{"CONNECT", "h:443", "", ""}, {"GET", "/a b", "", ""}, {"G\x00T", "/", "", ""}, {"GET", "/", "NoColon", ""},
		{"GET", "//x", "Transfer-Encoding: chunked", "bad"}, {"GET", "https://[::1]:99/x", "Host:", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	s, _ := explainServer(f, explainCfg)
	f.Fuzz(func(t *testing.T, method, url, header, client string) {
		q := explain.Query{Method: method, URL: url, Client: client}
		if header != "" {
			q.Headers = []string{header}
		}
		r, err := s.Explain(q, 0)
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("error %v is not ErrBadQuery", err)
			}
			return
		}
		if r.Outcome == "" {
			t.Fatalf("no outcome for %q", q)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
