package functionaltests

import (
	"fmt"
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
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	p := startLBD(t, fmt.Sprintf(routePoundConfig, a.block(), b.block(), c.block()))
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
				"holds header \"X-Debug\" re \"1\" icase"}, backend: "b", golden: "pound_api.json"},
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
					a.addr, "A_ADDR", b.addr, "B_ADDR", c.addr, "C_ADDR",
					strings.Replace(a.addr, ":", "-", 1), "A_ID", strings.Replace(b.addr, ":", "-", 1), "B_ID")
			}
		})
	}
	// The readable form names the same things.
	out, _, code := lbctlRun(t, "lbctl", nil, "-s", sock, "route", "-H", "X-Internal: yes", "GET", "/api/orders?id=7")
	for _, want := range []string{"=> 1 \"api\"", "holds eval \"api_path\"", "do    set_header \"X-Service: api\"",
		"+ X-Service: api", "- X-Internal: yes", "outcome   service 1 \"api\" → backend 0 " + b.addr} {
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
	if got != 200 || !strings.HasPrefix(body, backend+" ") {
		t.Fatalf("lbd answered %d %q, the explanation said backend %s (%s)", got, body, backend, r.Outcome)
	}
}
