package functionaltests

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lbexplain "lbd/explain"
)

// The routing explainer through the real binaries: lbd answers POST
// /route on its control sockets, lbctl route asks and prints. Each
// explanation is checked against what the listener really does with the
// same request.

// routePoundConfig has Pound 4 request-language conditions of every
// shape: a named ACL, a detached condition under Eval, Not, Match OR,
// QueryParam, a Redirect and an Error backend, and request rules.
const routePoundConfig = `Daemon 0
LogLevel 0
Alive 1
Control "{DIR}/ctl.sock"
ACL "office"
	"10.1.0.0/16"
End
Condition "api_path" or
	Path "^/api/"
	Path "^/v2/"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	xHTTP 0
	Service "admin"
		ACL "office"
		Path -beg "/admin"
%[1]s	End
	Service "api"
		Eval "api_path"
		Not Header "X-Debug" "1"
		SetHeader "X-Service: api"
		DeleteHeader "^X-Internal:"
%[2]s	End
	Service "beta"
		Match OR
			Host "beta.example"
			QueryParam "beta" -exact "1"
		End
%[3]s	End
	Service "moved"
		Host "old.example"
		Redirect 301 "https://new.example"
	End
	Service "forbidden"
		Path -beg "/secret"
		Error 403
	End
End
`

func TestRoutePoundConditions(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := semStartEcho(t, "127.0.0.3", "b", nil)
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	p := startLBD(t, fmt.Sprintf(routePoundConfig, a.block(), b.block("BackEnd"), c.block()))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	cases := []struct {
		name     string
		args     []string
		verdicts string
		steps    map[int]string // service index → its conditions
		status   int            // the reply lbd writes itself; 0: a backend
		backend  string         // the echo backend that really answers
		golden   string
	}{
		{name: "admin from the office", args: []string{"-a", "10.1.2.3", "GET", "/admin/users"},
			verdicts: "admin=matched api=not tried beta=not tried moved=not tried forbidden=not tried",
			steps:    map[int]string{0: "holds acl \"office\"\nholds path beg \"/admin\""}, backend: "a"},
		{name: "admin from elsewhere finds no service", args: []string{"GET", "/admin/users"},
			verdicts: "admin=no match api=no match beta=no match moved=no match forbidden=no match",
			steps:    map[int]string{0: "fails acl \"office\""}, status: 503},
		{name: "eval and not header", args: []string{"-H", "X-Debug: 1", "GET", "/v2/x"},
			verdicts: "admin=no match api=no match beta=no match moved=no match forbidden=no match",
			steps: map[int]string{1: "holds eval \"api_path\" {fails path re \"^/api/\"; holds path re \"^/v2/\"}\n" +
				"fails header \"X-Debug\" re \"1\" icase"}, status: 503},
		{name: "api with its rules", args: []string{"-H", "X-Internal: yes", "GET", "/api/orders?id=7"},
			verdicts: "admin=no match api=matched beta=not tried moved=not tried forbidden=not tried",
			steps: map[int]string{1: "holds eval \"api_path\" {holds path re \"^/api/\"}\n" +
				"holds header \"X-Debug\" re \"1\" icase"}, backend: "*", golden: "pound_api.json"},
		{name: "match or", args: []string{"GET", "/x?beta=1"},
			verdicts: "admin=no match api=no match beta=matched moved=not tried forbidden=not tried",
			steps:    map[int]string{2: "fails host exact \"beta.example\" icase\nholds param \"beta\" exact \"1\""}, backend: "c"},
		{name: "redirect", args: []string{"GET", "http://old.example/some/page?q=1"},
			verdicts: "admin=no match api=no match beta=no match moved=matched forbidden=not tried",
			status:   301, golden: "pound_redirect.json"},
		{name: "error backend", args: []string{"GET", "/secret/plans"},
			verdicts: "admin=no match api=no match beta=no match moved=no match forbidden=matched", status: 403},
		{name: "method not allowed", args: []string{"PUT", "/api/x"}, verdicts: "", status: 405},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := routeJSON(t, sock, tc.args...)
			r := explainVia(t, sock, tc.args...)
			if got := verdicts(r); got != tc.verdicts {
				t.Errorf("verdicts %q, want %q", got, tc.verdicts)
			}
			for i, want := range tc.steps {
				if got := stepsText(r, i); got != want {
					t.Errorf("service %d conditions:\n%s\nwant:\n%s", i, got, want)
				}
			}
			checkAgainstTraffic(t, p.addr, tc.args, r, tc.status, tc.backend)
			if tc.golden != "" {
				checkRouteGolden(t, tc.golden, raw, p.dir, "DIR", p.addr, "LBD_ADDR", ":"+portOf(p.addr), ":LBD_PORT", "Port: "+portOf(p.addr), "Port: LBD_PORT",
					a.addr, "A_ADDR", b.addr(), "B_ADDR", c.addr, "C_ADDR",
					strings.Replace(a.addr, ":", "-", 1), "A_ID", strings.Replace(b.addr(), ":", "-", 1), "B_ID")
			}
		})
	}
	// The forwarded head is exactly what the backend gets (it echoes it).
	f := explainVia(t, sock, "-H", "X-Internal: yes", "GET", "/api/orders?id=7").Forwarded
	_, got := semDo(t, p.addr, "GET /api/orders?id=7 HTTP/1.1\nHost: localhost\nX-Internal: yes\n\n")
	if want := f.RequestLine + "\r\n" + strings.Join(f.Headers, "\r\n") + "\r\n\r\n"; got != want {
		t.Errorf("the backend got\n%q\nthe explanation said\n%q", got, want)
	}
	// The readable form names the same things.
	out, _, code := lbctlRun(t, "lbctl", nil, "-s", sock, "route", "-H", "X-Internal: yes", "GET", "/api/orders?id=7")
	for _, want := range []string{"=> 1 \"api\"", "holds eval \"api_path\"", "do    set_header \"X-Service: api\"",
		"+ X-Service: api", "- X-Internal: yes", "outcome   service 1 \"api\" → backend 0 " + b.addr()} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("lbctl route output lacks %q:\n%s", want, out)
		}
	}
}

// checkAgainstTraffic checks the explanation's verdict (the status lbd
// writes itself, or a backend), then sends the same request and checks
// that lbd really does that. A request from another client address (-a)
// cannot be sent from here and is checked on the explanation only.
func checkAgainstTraffic(t *testing.T, addr string, args []string, r *lbexplain.Route, status int, backend string) {
	t.Helper()
	switch {
	case status != 0 && (r.Reply == nil || r.Reply.Status != status):
		t.Fatalf("explained reply %+v, want status %d (%s)", r.Reply, status, r.Outcome)
	case status == 0 && (r.Backend == nil || r.Reply != nil):
		t.Fatalf("explained backend %+v reply %+v, want a backend (%s)", r.Backend, r.Reply, r.Outcome)
	}
	var headers []string
	for i := 0; i < len(args)-2; i += 2 {
		switch args[i] {
		case "-a":
			return
		case "-H":
			headers = append(headers, args[i+1])
		}
	}
	method, target := args[len(args)-2], args[len(args)-1]
	host := "localhost"
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		host, target = u.Host, u.RequestURI()
	}
	req := method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	raw, _ := rawExchange(t, addr, []byte(req+"\r\n"), 3*time.Second)
	got := statusOf(raw)
	if status != 0 {
		if got != status {
			t.Fatalf("lbd answered %d, the explanation said %d", got, status)
		}
		return
	}
	_, body, _ := strings.Cut(string(raw), "\r\n\r\n")
	if backend == "*" { // an echo of the head: compared by the caller
		backend, body = "", " "
	}
	if got != 200 || !strings.HasPrefix(body, backend+" ") {
		t.Fatalf("lbd answered %d %q, the explanation said backend %s (%s)", got, body, backend, r.Outcome)
	}
}

// routeZproxyConfig is a zproxy file: listener header rules, services
// with URL, HeadRequire and HeadDeny, RewriteUrl, a redirect with the
// VHOST macro, and round robin.
const routeZproxyConfig = `Daemon 0
LogLevel 0
Alive 1
ListenHTTP
	Name main
	Address 127.0.0.1
	Port {PORT}
	AddRequestHeader "X-Req-Added: 1"
	RemoveRequestHeader "^Cookie"
	ReplaceHeader Request "^User-Agent" "curl/(.*)" "agent $1"
	Service "api"
		URL "^/api/"
		HeadRequire "^X-Tenant: "
		RewriteUrl "^/api/v1/(.*)" "/v1/$1"
		RoutingPolicy ROUND_ROBIN
%[1]s	End
	Service "static"
		URL "^/static/"
		HeadDeny "^X-Mobile:"
%[2]s	End
	Service "login"
		URL "^/login"
		Redirect "https://${VHOST}/secure/login"
	End
End
`

func TestRouteZproxyConditions(t *testing.T) {
	a := semStartEcho(t, "127.0.0.2", "a", nil)
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	zsock := filepath.Join(t.TempDir(), "z.sock")
	p := startLBD(t, fmt.Sprintf(routeZproxyConfig, a.block("BackEnd"), b.block()), "-C", zsock)
	waitSocket(t, zsock)
	cases := []struct {
		name     string
		args     []string
		verdicts string
		steps    map[int]string
		status   int
		backend  string
		golden   string
	}{
		{name: "api with its header and rewrites", golden: "zproxy_api.json",
			args:     []string{"-H", "X-Tenant: t1", "-H", "User-Agent: curl/8.5", "-H", "Cookie: c=1", "GET", "/api/v1/users?id=3"},
			verdicts: "api=matched static=not tried login=not tried",
			steps:    map[int]string{0: "holds url re \"^/api/\" icase\nholds header re \"^X-Tenant: \" icase"}, backend: "*"},
		{name: "api without the header", args: []string{"GET", "/api/v1/users"},
			verdicts: "api=no match static=no match login=no match",
			steps:    map[int]string{0: "holds url re \"^/api/\" icase\nfails header re \"^X-Tenant: \" icase"}, status: 503},
		{name: "head deny", args: []string{"-H", "X-Mobile: 1", "GET", "/static/app.js"},
			verdicts: "api=no match static=no match login=no match",
			steps:    map[int]string{1: "holds url re \"^/static/\" icase\nfails header re \"^X-Mobile:\" icase"}, status: 503},
		{name: "static", args: []string{"GET", "/static/app.js"}, verdicts: "api=no match static=matched login=not tried", backend: "b"},
		{name: "redirect with the host", args: []string{"GET", "http://shop.example/login"},
			verdicts: "api=no match static=no match login=matched", status: 302, golden: "zproxy_redirect.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := routeJSON(t, zsock, tc.args...)
			r := explainVia(t, zsock, tc.args...)
			if got := verdicts(r); got != tc.verdicts {
				t.Errorf("verdicts %q, want %q", got, tc.verdicts)
			}
			for i, want := range tc.steps {
				if got := stepsText(r, i); got != want {
					t.Errorf("service %d conditions:\n%s\nwant:\n%s", i, got, want)
				}
			}
			if r.Listener.Dialect != "zproxy" || r.Listener.Name != "main" {
				t.Errorf("listener %+v", r.Listener)
			}
			checkAgainstTraffic(t, p.addr, tc.args, r, tc.status, tc.backend)
			if tc.golden != "" {
				checkRouteGolden(t, tc.golden, raw, p.dir, "DIR", p.addr, "LBD_ADDR", ":"+portOf(p.addr), ":LBD_PORT",
					a.addr(), "A_ADDR", b.addr, "B_ADDR", strings.Replace(a.addr(), ":", "-", 1), "A_ID")
			}
		})
	}
	// zproxy's request edits: the forwarded head is exactly the one the
	// backend gets (the echo backend sends back the head it received).
	r := explainVia(t, zsock, cases[0].args...)
	f := r.Forwarded
	if f == nil || f.RequestLine != "GET /v1/users?id=3 HTTP/1.1" {
		t.Fatalf("forwarded %+v", f)
	}
	if strings.Join(f.Removed, "|") != "User-Agent: curl/8.5|Cookie: c=1" {
		t.Errorf("removed %q", f.Removed)
	}
	_, got := semDo(t, p.addr, "GET /api/v1/users?id=3 HTTP/1.1\nHost: localhost\nX-Tenant: t1\nUser-Agent: curl/8.5\nCookie: c=1\n\n")
	if want := f.RequestLine + "\r\n" + strings.Join(f.Headers, "\r\n") + "\r\n\r\n"; got != want {
		t.Errorf("the backend got\n%q\nthe explanation said\n%q", got, want)
	}
}

// TestRouteBadQuestions: a malformed question gets a clear message and a
// 4xx JSON error from the socket, never an explanation.
func TestRouteBadQuestions(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	zsock := filepath.Join(t.TempDir(), "z.sock")
	p := startLBD(t, "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n"+a.block()+"\tEnd\nEnd\n", "-C", zsock)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	waitSocket(t, zsock)
	for _, s := range []string{sock, zsock} {
		for _, tc := range []struct {
			args []string
			err  string
		}{
			{[]string{"-H", "NoColon", "GET", "/"}, `header "NoColon"`},
			{[]string{"GET", "/a b"}, `URL "/a b"`},
			{[]string{"-a", "not-an-ip", "GET", "/"}, `client address "not-an-ip"`},
			{[]string{"-l", "nosuch", "GET", "/"}, `listener "nosuch": not found`},
			{[]string{"-l", "3", "GET", "/"}, `listener 3 not found (listeners are numbered `},
			{[]string{"G T", "/"}, `method "G T"`},
			{[]string{"GET"}, "required argument missing"},
		} {
			_, errOut, code := lbctlRun(t, "lbctl", nil, append([]string{"-s", s, "route"}, tc.args...)...)
			if code != 1 || !strings.Contains(errOut, tc.err) {
				t.Errorf("%s route %q: exit %d, %q; want exit 1 saying %q", filepath.Base(s), tc.args, code, errOut, tc.err)
			}
		}
		for body, want := range map[string]int{`{"method":1}`: 400, `{"method":"GET"}`: 400, `[]`: 400, `{"method":"GET","url":"/","listener":"9"}`: 404} {
			resp, err := ctlClient(s).Post("http://lbd/route", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			reply, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(reply), `"result":"error"`) {
				t.Errorf("%s POST /route %s: %d %s, want a %d JSON error", filepath.Base(s), body, resp.StatusCode, reply, want)
			}
		}
	}
}

// TestRouteTunnelAndSpecial: a Tunnel listener is explained as the relay
// it is (no HTTP read, the balancer's pick), and a Success backend as an
// answer of lbd's own.
func TestRouteTunnelAndSpecial(t *testing.T) {
	one := bannerBackend(t, "127.0.0.2", "one")
	p, _ := startTunnel(t, tunnelBlock(one.addr))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	// Numbered as lbctl list prints it: the control socket is listener 0.
	r := explainVia(t, sock, "-l", "2", "GET", "/")
	if r.Listener.Protocol != "tunnel" || r.Backend == nil || r.Backend.Address != one.addr || r.Balancer == nil ||
		!strings.Contains(r.Outcome, "relayed to backend 0") {
		t.Fatalf("tunnel: listener %+v backend %+v: %s", r.Listener, r.Backend, r.Outcome)
	}
	r = explainVia(t, sock, "GET", "/")
	if r.Listener.Index != 1 || r.Reply == nil || r.Reply.Kind != "success" || r.Reply.Status != 200 || r.Backend.Via != "special" {
		t.Fatalf("success backend: %+v reply %+v: %s", r.Backend, r.Reply, r.Outcome)
	}
}
