package functionaltests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// echoBackend answers with what it received: the request line in
// X-Got-URI and every header as X-Got-<Name>, and the backend's name.
func echoBackend(t *testing.T, name string) *backend {
	return startBackend(t, "127.0.0.2", name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Got-URI", r.RequestURI)
		w.Header().Set("X-Backend", name)
		for k, v := range r.Header {
			w.Header().Set("X-Got-"+k, strings.Join(v, " | "))
		}
		w.Header().Set("Content-Type", "text/plain")
		if s := r.URL.Query().Get("status"); s != "" {
			var code int
			fmt.Sscan(s, &code)
			w.WriteHeader(code)
		}
		io.WriteString(w, "ok")
	}))
}

// backendBlock is a Backend block for b, unindented (b.block is the
// form indented for a service).
func backendBlock(b *backend) string {
	host, _, _ := net.SplitHostPort(b.addr) // an address a listener gave
	return fmt.Sprintf("Backend\n Address %s\n Port %d\nEnd", host, b.port)
}

type ruleCase struct {
	name    string
	method  string
	path    string
	headers map[string]string
	status  int
	want    map[string]string // response headers; "" means absent
}

func runRuleCases(t *testing.T, p *proc, cases []ruleCase) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "GET"
			}
			req, err := http.NewRequest(method, "http://"+p.addr+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.headers {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if want := max(tc.status, 200); resp.StatusCode != want {
				t.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
			for k, v := range tc.want {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestRequestLanguage drives Pound 4's conditions and modifications
// through a configuration file and the real binary.
func TestRequestLanguage(t *testing.T) {
	a, b := echoBackend(t, "a"), echoBackend(t, "b")
	cfg := `Constant "site" "example.org"
ACL "lan"
	"127.0.0.0/8"
End
Condition "api" or
	Path -beg "/api/"
	Header "X-Api" "yes"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	SetHeader "X-Front: %[const site]"
	Rewrite response
		Header "Content-Type:[[:space:]]*text/(.*)"
		SetHeader "X-Text: $1"
	End
	Service "tagger"
		Host -tag "h" -re "^(www\\.)?(.+)$"
		FallThrough
		SetHeader "X-Site: $2(h)"
	End
	Service "api"
		ACL "lan"
		Eval "api"
		Rewrite
			Path "^/api/v1/(.*)$"
			SetPath "/v2/$1"
		Else
			SetQueryParam "legacy" "1"
		End
		DeleteHeader "^Cookie:"
		` + backendBlock(a) + `
	End
	Service "search"
		QueryParam "q" -decode -contain "a b"
		StringMatch "%[header User-Agent]" -icase -beg "curl"
		SetURL "/found?%[query]"
		` + backendBlock(b) + `
	End
	Service "rest"
		Not Path -beg "/private"
		SetPath -encode "/r/%[path] x"
		` + backendBlock(b) + `
	End
End
`
	p := startLBD(t, cfg)
	runRuleCases(t, p, []ruleCase{
		{name: "detached condition and a rewrite with groups", path: "/api/v1/users?x=1",
			headers: map[string]string{"Host": "www.site.test", "Cookie": "s=1"},
			want: map[string]string{"X-Backend": "a", "X-Got-URI": "/v2/users?x=1", "X-Got-Cookie": "",
				"X-Got-X-Site": "site.test", "X-Got-X-Front": "example.org", "X-Text": "plain"}},
		{name: "the Else branch", path: "/other", headers: map[string]string{"X-Api": "yes"},
			want: map[string]string{"X-Backend": "a", "X-Got-URI": "/other?legacy=1"}},
		{name: "decoded query parameter and StringMatch", path: "/s?q=x%20a%20b",
			headers: map[string]string{"User-Agent": "Curl/8"},
			want:    map[string]string{"X-Backend": "b", "X-Got-URI": "/found?q=x%20a%20b"}},
		{name: "StringMatch fails: next service", path: "/s?q=a%20b", headers: map[string]string{"User-Agent": "wget"},
			want: map[string]string{"X-Backend": "b", "X-Got-URI": "/r//s%20x?q=a%20b"}},
		{name: "no service", path: "/private/x", status: 503},
	})
}

// TestRequestLanguageErrors: an expansion that refers to a group that
// did not match is answered 500 and logged in Pound's words.
func TestRequestLanguageErrors(t *testing.T) {
	a := echoBackend(t, "a")
	p := startLBD(t, `ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		SetPath "/x/$1"
		`+backendBlock(a)+`
	End
End
`)
	runRuleCases(t, p, []ruleCase{{name: "500", path: "/y", status: 500}})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.out.String(), `path "/x/$1" refers to non-existing group $1`) {
		if time.Now().After(deadline) {
			t.Fatalf("no diagnostic in the log:\n%s", p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFileWatchACL: an ACL -filewatch file is followed while lbd runs:
// created, changed and removed, without a reload.
func TestFileWatchACL(t *testing.T) {
	a := echoBackend(t, "a")
	dir := t.TempDir()
	acl := filepath.Join(dir, "acl.txt")
	p := startLBD(t, `ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		ACL -filewatch "`+acl+`"
		`+backendBlock(a)+`
	End
	Service
		Error 403
	End
End
`)
	expect := func(t *testing.T, want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := http.Get("http://" + p.addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("status %d, want %d\n%s", resp.StatusCode, want, p.out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	expect(t, 403) // the file does not exist yet: the ACL is empty
	if err := os.WriteFile(acl, []byte("# lan\n127.0.0.0/8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, 200)
	if err := os.WriteFile(acl, []byte("192.0.2.0/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, 403)
	if err := os.WriteFile(acl, []byte("127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, 200)
	if err := os.Remove(acl); err != nil {
		t.Fatal(err)
	}
	expect(t, 403)
	waitLog(t, p, "content cleared", 5*time.Second)
}

// TestRewriteErrorsAndLogSuppress: RewriteErrors replaces a backend's
// error with the ErrorFile page; LogSuppress keeps 2xx out of the log.
func TestRewriteErrorsAndLogSuppress(t *testing.T) {
	a := echoBackend(t, "a")
	dir := t.TempDir()
	page := filepath.Join(dir, "500.html")
	if err := os.WriteFile(page, []byte("Content-Type: text/html\n\n<p>ours</p>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startLBD(t, `LogLevel 1
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	ErrorFile 500 "`+page+`"
	RewriteErrors on
	Service
		LogSuppress success
		`+backendBlock(a)+`
	End
End
`)
	resp, err := http.Get("http://" + p.addr + "/x?status=500")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 500 || resp.Header.Get("Content-Type") != "text/html" || !strings.Contains(string(body), "ours") {
		t.Fatalf("got %d %q %q, want the ErrorFile page", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	runRuleCases(t, p, []ruleCase{{name: "suppressed", path: "/quiet"}})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.out.String(), "GET /x?status=500") {
		if time.Now().After(deadline) {
			t.Fatalf("the 500 was not logged:\n%s", p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(p.out.String(), "/quiet") {
		t.Fatalf("LogSuppress success logged a 200:\n%s", p.out.String())
	}
}
