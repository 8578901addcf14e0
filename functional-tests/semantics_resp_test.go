package functionaltests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// locEcho answers with the Location and Content-Location the request
// asks for in X-Loc and X-CLoc ({BE} is the backend's own address).
func locEcho(t *testing.T) *semEcho {
	var be *semEcho
	be = semStartEcho(t, "127.0.0.2", "one", func(head string) string {
		var out string
		for _, line := range strings.Split(head, "\r\n") {
			name, v, _ := strings.Cut(line, ": ")
			v = strings.ReplaceAll(v, "{BE}", be.addr())
			switch name {
			case "X-Loc":
				out += "Location: " + v + "\r\n"
			case "X-CLoc":
				out += "Content-Location: " + v + "\r\n"
			}
		}
		return out
	})
	return be
}

func TestSemanticsRewriteLocation(t *testing.T) {
	be := locEcho(t)
	tests := []struct {
		name     string
		listener string
		loc      string // what the backend sends; {L} is the listener
		want     string // what the client gets
	}{
		{name: "default 1: the backend's address", loc: "http://{BE}/next?a=1", want: "http://{L}/next?a=1"},
		{name: "1: the listener with a wrong port", loc: "http://127.0.0.1:1/x", want: "http://{L}/x"},
		{name: "1: the listener with a wrong scheme", loc: "https://{L}/x", want: "http://{L}/x"},
		{name: "1: the listener as it is", loc: "http://{L}/x", want: "http://{L}/x"},
		{name: "1: another host", loc: "http://192.0.2.1/x", want: "http://192.0.2.1/x"},
		{name: "2: the backend's address", listener: "\tRewriteLocation 2\n", loc: "http://{BE}/n", want: "http://{L}/n"},
		{name: "2: not the listener", listener: "\tRewriteLocation 2\n", loc: "http://127.0.0.1:1/x", want: "http://127.0.0.1:1/x"},
		{name: "0: never", listener: "\tRewriteLocation 0\n", loc: "http://{BE}/n", want: "http://{BE}/n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startLBD(t, semConfig("", tt.listener, be.block("BackEnd")))
			subst := func(s string) string {
				return strings.ReplaceAll(strings.ReplaceAll(s, "{L}", p.addr), "{BE}", be.addr())
			}
			loc := strings.ReplaceAll(tt.loc, "{L}", p.addr)
			resp, _ := semDo(t, p.addr, "GET / HTTP/1.1\nHost: "+p.addr+"\nX-Loc: "+loc+"\nX-CLoc: "+loc+"\n\n")
			if got := resp.Header.Get("Location"); got != subst(tt.want) {
				t.Errorf("Location %q, want %q", got, subst(tt.want))
			}
			if got := resp.Header.Get("Content-Location"); got != subst(tt.want) {
				t.Errorf("Content-Location %q, want %q", got, subst(tt.want))
			}
		})
	}
}

func TestSemanticsRedirect(t *testing.T) {
	tests := []struct {
		name     string
		listener string
		service  string
		target   string
		code     int
		loc      string
	}{
		{name: "default 302, request path appended", service: "\t\tRedirect \"http://example.org\"\n",
			target: "/other?q=1", code: 302, loc: "http://example.org/other?q=1"},
		{name: "URL with a path used as is", service: "\t\tRedirect 301 \"http://example.org/new\"\n",
			target: "/other", code: 301, loc: "http://example.org/new"},
		{name: "303", service: "\t\tRedirect 303 \"http://example.org/see\"\n", target: "/", code: 303, loc: "http://example.org/see"},
		{name: "307", service: "\t\tRedirect 307 \"http://example.org/t\"\n", target: "/", code: 307, loc: "http://example.org/t"},
		{name: "308 with a back-reference", service: "\t\tURL \"^/old/(.*)\"\n\t\tRedirect 308 \"https://example.org/new/$1\"\n",
			target: "/old/a/b", code: 308, loc: "https://example.org/new/a/b"},
		{name: "zproxy RedirectAppend", listener: zproxyMark, service: "\t\tRedirectAppend 301 \"http://example.org/base\"\n",
			target: "/p", code: 301, loc: "http://example.org/base/p"},
		{name: "zproxy VHOST macro", listener: zproxyMark, service: "\t\tRedirect \"https://${VHOST}/login\"\n",
			target: "/p", code: 302, loc: "https://vhost.example/login"},
		{name: "zproxy URL as written", listener: zproxyMark, service: "\t\tRedirect \"http://example.org/\"\n",
			target: "/p", code: 302, loc: "http://example.org/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startLBD(t, semConfig("", tt.listener, tt.service))
			resp, body := semDo(t, p.addr, "GET "+tt.target+" HTTP/1.1\nHost: vhost.example\n\n")
			if resp.StatusCode != tt.code || resp.Header.Get("Location") != tt.loc {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, resp.Header.Get("Location"), tt.code, tt.loc)
			}
			if resp.Header.Get("Content-Type") != "text/html" || !strings.Contains(body, "You should go to <a href=") {
				t.Errorf("reply %v %q", resp.Header, body)
			}
		})
	}
}

// poundPage is Pound 4's default error page for status code/reason/text.
func poundPage(code, reason, text string) string {
	return "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\"><html><head><title>" + code + " " + reason +
		"</title></head><body><h1>" + reason + "</h1><p>" + text + "</p></body></html>"
}

func TestSemanticsBuiltinErrorPages(t *testing.T) {
	texts := []struct{ code, reason, text string }{
		{"400", "Bad Request", "Your browser (or proxy) sent a request that this server could not understand."},
		{"401", "Unauthorized", "This server could not verify that you are authorized to access the document requested.  Either you supplied the wrong credentials (e.g., bad password), or your browser doesn't understand how to supply the credentials required."},
		{"403", "Forbidden", "You don't have permission to access this resource. It is either read-protected or not readable by the server."},
		{"404", "Not Found", "The requested URL was not found on this server."},
		{"405", "Method Not Allowed", "The request method is not supported for the requested resource."},
		{"413", "Payload Too Large", "The request content is larger than the proxy server is able to process."},
		{"414", "URI Too Long", "The length of the requested URL exceeds the capacity limit for this server."},
		{"429", "Too Many Requests", "Originator sent too many requests in a given amount of time."},
		{"500", "Internal Server Error", "The server encountered an internal error and was unable to complete your request."},
		{"501", "Not Implemented", "The server does not support the action requested."},
		{"503", "Service Unavailable", "The server is temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again later."},
	}
	var cfg strings.Builder
	cfg.WriteString("Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n")
	for _, e := range texts {
		cfg.WriteString("\tService\n\t\tURL \"^/" + e.code + "$\"\n\t\tError " + e.code + "\n\tEnd\n")
	}
	cfg.WriteString("End\n")
	p := startLBD(t, cfg.String())
	for _, e := range texts {
		t.Run(e.code, func(t *testing.T) {
			resp, body := semDo(t, p.addr, "GET /"+e.code+" HTTP/1.1\nHost: h\n\n")
			if resp.Status != e.code+" "+e.reason || body != poundPage(e.code, e.reason, e.text) {
				t.Errorf("got %q %q", resp.Status, body)
			}
			if !resp.Close {
				t.Error("no Connection: close")
			}
			for h, v := range map[string]string{"Content-Type": "text/html", "Expires": "now", "Pragma": "no-cache",
				"Cache-Control": "no-cache,no-store"} {
				if resp.Header.Get(h) != v {
					t.Errorf("%s = %q, want %q", h, resp.Header.Get(h), v)
				}
			}
		})
	}
}

func TestSemanticsCustomErrorPages(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name, listener, service, req, want string
		status                             int
	}{
		{name: "Err503 for no service", listener: "\tErr503 \"" + write("503.html", "busy") + "\"\n",
			service: "\t\tURL \"^/only\"\n\t\tError 404\n", req: "GET /x HTTP/1.1\nHost: h\n\n", status: 503, want: "busy"},
		{name: "ErrorFile for the Error backend", listener: "\tErrorFile 404 \"" + write("404.html", "nope") + "\"\n",
			service: "\t\tError 404\n", req: "GET /x HTTP/1.1\nHost: h\n\n", status: 404, want: "nope"},
		{name: "Error backend's own file", service: "\t\tError 403 \"" + write("403.html", "go away") + "\"\n",
			req: "GET /x HTTP/1.1\nHost: h\n\n", status: 403, want: "go away"},
		{name: "ErrorFile for a refused method", listener: "\tErrorFile 405 \"" + write("405.html", "method") + "\"\n",
			service: "\t\tError 404\n", req: "PUT /x HTTP/1.1\nHost: h\nContent-Length: 0\n\n", status: 405, want: "method"},
		{name: "zproxy Err, its text and a newline", listener: zproxyMark + "\tErr 503 \"" + write("z503.html", "zbusy") + "\"\n",
			service: "\t\tURL \"^/only\"\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 1\n\t\tEnd\n",
			req:     "GET /x HTTP/1.1\nHost: h\n\n", status: 503, want: "zbusy\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startLBD(t, semConfig("", tt.listener, tt.service))
			resp, body := semDo(t, p.addr, tt.req)
			if resp.StatusCode != tt.status || body != tt.want {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tt.status, tt.want)
			}
		})
	}
}

func TestSemanticsEmergency(t *testing.T) {
	normal := semStartEcho(t, "127.0.0.2", "normal", nil)
	emergency := semStartEcho(t, "127.0.0.3", "emergency", nil)
	p := startLBD(t, semConfig("", "", normal.block("BackEnd")+emergency.block("Emergency")))
	for i := 0; i < 10; i++ {
		if resp, _ := semDo(t, p.addr, "GET / HTTP/1.1\nHost: h\n\n"); resp.Header.Get("X-Backend") != "normal" {
			t.Fatalf("request %d answered by %q while the regular backend is alive", i, resp.Header.Get("X-Backend"))
		}
	}
	normal.stop()
	for i := 0; i < 5; i++ {
		resp, _ := semDo(t, p.addr, "GET / HTTP/1.1\nHost: h\n\n")
		if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "emergency" {
			t.Fatalf("request %d after the regular backend died: %d from %q", i, resp.StatusCode, resp.Header.Get("X-Backend"))
		}
	}
}

func TestSemanticsNamedBackends(t *testing.T) {
	shared := semStartEcho(t, "127.0.0.2", "shared", nil)
	global := "Backend \"app\"\n\tAddress 127.0.0.2\n\tPort " + portOf(shared.addr()) + "\nEnd\n"
	cfg := "Daemon 0\nLogLevel 0\n" + global + "ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" +
		"\tService\n\t\tURL \"^/use\"\n\t\tUseBackend \"app\"\n\tEnd\n" +
		"\tService\n\t\tURL \"^/named\"\n\t\tBackend \"app\"\n\t\tEnd\n\tEnd\n" +
		"\tService\n\t\tURL \"^/block\"\n\t\tBackend\n\t\t\tUse \"app\"\n\t\tEnd\n\tEnd\nEnd\n"
	p := startLBD(t, cfg)
	for _, path := range []string{"/use", "/named", "/block"} {
		if resp, _ := semDo(t, p.addr, "GET "+path+" HTTP/1.1\nHost: h\n\n"); resp.Header.Get("X-Backend") != "shared" {
			t.Errorf("%s: %d from %q", path, resp.StatusCode, resp.Header.Get("X-Backend"))
		}
	}
}

func TestSemanticsConditions(t *testing.T) {
	match := semStartEcho(t, "127.0.0.2", "match", nil)
	other := semStartEcho(t, "127.0.0.3", "other", nil)
	tests := []struct {
		name, cond, req string
		want            string
	}{
		{name: "Host exact, case-insensitive", cond: "Host \"www.example.com\"", req: "GET / HTTP/1.1\nHost: WWW.example.com\n\n", want: "match"},
		{name: "Host exact mismatch", cond: "Host \"www.example.com\"", req: "GET / HTTP/1.1\nHost: example.com\n\n", want: "other"},
		{name: "Header by name", cond: "Header \"X-Env\" \"^prod$\"", req: "GET / HTTP/1.1\nHost: h\nX-Env: prod\n\n", want: "match"},
		{name: "Header line regex", cond: "Header \"^X-Env: *dev\"", req: "GET / HTTP/1.1\nHost: h\nX-Env: prod\n\n", want: "other"},
		{name: "Path -beg", cond: "Path -beg \"/static/\"", req: "GET /static/a.css?v=1 HTTP/1.1\nHost: h\n\n", want: "match"},
		{name: "Path -end", cond: "Path -end \".css\"", req: "GET /a.css?v=1 HTTP/1.1\nHost: h\n\n", want: "match"},
		{name: "Query -contain", cond: "Query -contain \"debug\"", req: "GET /?x=debug HTTP/1.1\nHost: h\n\n", want: "match"},
		{name: "QueryParam", cond: "QueryParam \"lang\" -exact \"de\"", req: "GET /?a=1&lang=de HTTP/1.1\nHost: h\n\n", want: "match"},
		{name: "Method", cond: "Method \"POST\"", req: "GET / HTTP/1.1\nHost: h\n\n", want: "other"},
		{name: "Not", cond: "Not URL \"^/private\"", req: "GET /private HTTP/1.1\nHost: h\n\n", want: "other"},
		{name: "URL -icase", cond: "URL -icase \"^/admin\"", req: "GET /ADMIN HTTP/1.1\nHost: h\n\n", want: "match"},
		{name: "URL -case", cond: "URL -case \"^/admin\"", req: "GET /ADMIN HTTP/1.1\nHost: h\n\n", want: "other"},
		{name: "Match OR", cond: "Match OR\n\t\t\tHost \"a.example\"\n\t\t\tHost \"b.example\"\n\t\tEnd",
			req: "GET / HTTP/1.1\nHost: b.example\n\n", want: "match"},
		{name: "Match AND", cond: "Match AND\n\t\t\tPath -beg \"/api\"\n\t\t\tNot Method \"DELETE\"\n\t\tEnd",
			req: "DELETE /api/x HTTP/1.1\nHost: h\n\n", want: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := "Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 1\n" +
				"\tService\n\t\t" + tt.cond + "\n" + match.block("BackEnd") + "\tEnd\n" +
				"\tService\n" + other.block("BackEnd") + "\tEnd\nEnd\n"
			p := startLBD(t, cfg)
			resp, _ := semDo(t, p.addr, tt.req)
			if got := resp.Header.Get("X-Backend"); got != tt.want {
				t.Errorf("answered by %q (%d), want %q", got, resp.StatusCode, tt.want)
			}
		})
	}
}
