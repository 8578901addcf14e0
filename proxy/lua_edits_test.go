//go:build lua

package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lbd/config"
	"lbd/lua"
	"lbd/rules"
	"lbd/service"
)

// A pair's edits (HeaderEdits.Req and Resp: zproxy's directives in a
// real configuration, where Lua is refused) run on the Lua paths as on
// the others: after the response rules' scripts, and on a request a
// script resends to another service. Here the pair programs are those
// of a service "P" that is never routed to.

const pairLua = `
function stamp() http.resp.headers["X-Lua"] = "1" end
function move() if http.resendcount == 0 then http.service.name = "B" end end
`

// luaPairProxy builds the memory proxy with services A (statements
// stmtsA, routed to) and B, and returns them with P's programs.
func luaPairProxy(t *testing.T, be *memConn, stmtsA string) (c *conn, st *Listener, client *memConn, a, b, p *service.Service) {
	t.Helper()
	c, st, client = newMemProxy(t, be)
	file := filepath.Join(t.TempDir(), "pair.lua")
	if err := os.WriteFile(file, []byte(pairLua), 0o644); err != nil {
		t.Fatal(err)
	}
	never := "\t\tHost \"never.test\"\n"
	src := "WorkerMaxCount 1\nLua\n\tLoad \"" + file + "\"\nEnd\nListenHTTP\n" +
		"\tService \"A\"\n" + stmtsA + "\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\n" +
		"\tService \"B\"\n" + never + "\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\n" +
		"\tService \"P\"\n" + never + "\t\tSetHeader \"X-Pair: req\"\n" +
		"\t\tRewrite response\n\t\t\tSetHeader \"X-Pair: resp\"\n\t\tEnd\n" +
		"\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n"
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
	var svcs []*service.Service
	for _, s := range cfg.Listeners[0].Services {
		svc, err := service.New(s, service.Options{Backends: old.Backends, Algo: old.Algo, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	a, b, p = svcs[0], svcs[1], svcs[2]
	st.Router.Services = []*service.Service{a, b}
	st.SvcEdits = map[*service.Service]*HeaderEdits{
		a: NewEdits(EditsConfig{LocationInPlace: true}),
		b: NewEdits(EditsConfig{LocationInPlace: true}),
	}
	return c, st, client, a, b, p
}

func TestPairEditsOnLuaPaths(t *testing.T) {
	tests := []struct {
		name   string
		stmtsA string
		pair   func(a, b, p *service.Service) map[*service.Service]*HeaderEdits
		// backend: what each request the backend got must and must not
		// hold; client: what the client's response must hold.
		backend       []string
		backendNot    []string
		client        []string
		wantBackendRq int
	}{
		{
			name:   "response script, then the pair's response edits",
			stmtsA: "\t\tRewrite response\n\t\t\tLuaModify \"stamp\"\n\t\tEnd",
			pair: func(a, b, p *service.Service) map[*service.Service]*HeaderEdits {
				return map[*service.Service]*HeaderEdits{a: NewEdits(EditsConfig{LocationInPlace: true, Resp: p.RespRules})}
			},
			backend:       []string{"GET /index.html?q=1 HTTP/1.1\r\n"},
			backendNot:    []string{"X-Pair"},
			client:        []string{"HTTP/1.1 200 OK\r\n", "X-Lua: 1\r\n", "X-Pair: resp\r\n"},
			wantBackendRq: 1,
		},
		{
			name:   "sent unruled, resent to another service: that pair's request edits",
			stmtsA: "\t\tRewrite response\n\t\t\tLuaModify \"move\"\n\t\tEnd",
			pair: func(a, b, p *service.Service) map[*service.Service]*HeaderEdits {
				return map[*service.Service]*HeaderEdits{b: NewEdits(EditsConfig{LocationInPlace: true, Req: p.ReqRules})}
			},
			backend:       []string{"GET /index.html?q=1 HTTP/1.1\r\n"},
			client:        []string{"HTTP/1.1 200 OK\r\n"},
			wantBackendRq: 2,
		},
		{
			name:   "sent ruled, resent to another service: that pair's request edits",
			stmtsA: "\t\tSetHeader \"X-A: 1\"\n\t\tRewrite response\n\t\t\tLuaModify \"move\"\n\t\tEnd",
			pair: func(a, b, p *service.Service) map[*service.Service]*HeaderEdits {
				return map[*service.Service]*HeaderEdits{b: NewEdits(EditsConfig{LocationInPlace: true, Req: p.ReqRules})}
			},
			backend:       []string{"GET /index.html?q=1 HTTP/1.1\r\n", "X-A: 1\r\n"},
			client:        []string{"HTTP/1.1 200 OK\r\n"},
			wantBackendRq: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			be := &memConn{reply: []byte(benchResponse), keep: true}
			c, st, client, a, b, p := luaPairProxy(t, be, tc.stmtsA)
			for svc, e := range tc.pair(a, b, p) {
				st.SvcEdits[svc] = e
			}
			client.in, client.keep = []byte(benchRequest), true
			if !cycle(c, st, client) {
				t.Fatalf("cycle failed; client got %q", client.out)
			}
			reqs := strings.SplitAfter(string(be.out), "\r\n\r\n")
			reqs = reqs[:len(reqs)-1] // what follows the last head (nothing)
			if len(reqs) != tc.wantBackendRq {
				t.Fatalf("the backend got %d requests, want %d: %q", len(reqs), tc.wantBackendRq, be.out)
			}
			for i, r := range reqs {
				for _, s := range tc.backend {
					if !strings.Contains(r, s) {
						t.Errorf("request %d lacks %q: %q", i, s, r)
					}
				}
				if n := strings.Count(r, "X-Forwarded-Proto: http\r\n"); n != 1 {
					t.Errorf("request %d has %d X-Forwarded-Proto lines, want 1: %q", i, n, r)
				}
				for _, s := range tc.backendNot {
					if strings.Contains(r, s) {
						t.Errorf("request %d has %q: %q", i, s, r)
					}
				}
			}
			if tc.wantBackendRq == 2 {
				if strings.Contains(reqs[0], "X-Pair") || !strings.Contains(reqs[1], "X-Pair: req\r\n") {
					t.Errorf("only the resent request is B's, with its pair's edit: %q", reqs)
				}
			}
			for _, s := range tc.client {
				if !strings.Contains(string(client.out), s) {
					t.Errorf("the client's response lacks %q: %q", s, client.out)
				}
			}
		})
	}
}
