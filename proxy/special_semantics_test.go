package proxy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// specialCfg is a Pound listener whose service has only the special
// backend srules declares.
func specialCfg(lrules, srules string) string {
	return "ListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n" + lrules + "\tService\n" + srules + "\tEnd\nEnd\n"
}

const redirectBody = "<html><head><title>Redirect</title></head><body><h1>Redirect</h1>" +
	"<p>You should go to <a href=\"%s\">%s</a></p></body></html>"

// poundRedirectReply is Pound 4's reply to an HTTP/1.1 client.
func poundRedirectReply(code, reason, loc string) string {
	body := strings.ReplaceAll(redirectBody, "%s", loc)
	return "HTTP/1.1 " + code + " " + reason + "\r\nContent-Type: text/html\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\nLocation: " + loc + "\r\n\r\n" + body
}

func TestPoundRedirect(t *testing.T) {
	tests := []struct {
		name   string
		srules string
		req    string
		want   string
	}{
		{name: "URL without path gets the request URL", srules: "\t\tRedirect \"http://example.org\"\n",
			req: "GET /other?x=1 HTTP/1.1\nHost: h\n\n", want: poundRedirectReply("302", "Found", "http://example.org/other?x=1")},
		{name: "URL with a path is used as is", srules: "\t\tRedirect 301 \"http://example.org/new\"\n",
			req: "GET /other HTTP/1.1\nHost: h\n\n", want: poundRedirectReply("301", "Moved Permanently", "http://example.org/new")},
		{name: "a lone slash is dropped and nothing appended", srules: "\t\tRedirect 303 \"http://example.org/\"\n",
			req: "GET /other HTTP/1.1\nHost: h\n\n", want: poundRedirectReply("303", "See Other", "http://example.org")},
		{name: "back-reference from the URL pattern", srules: "\t\tURL \"^/old/(.*)$\"\n\t\tRedirect 308 \"http://example.org/new/$1\"\n",
			req: "GET /old/a/b HTTP/1.1\nHost: h\n\n", want: poundRedirectReply("308", "Permanent Redirect", "http://example.org/new/a/b")},
		{name: "an expansion counts as a path", srules: "\t\tURL \"^(/.*)$\"\n\t\tRedirect 307 \"https://secure.example${1}\"\n",
			req: "GET /p HTTP/1.1\nHost: h\n\n", want: poundRedirectReply("307", "Temporary Redirect", "https://secure.example/p")},
		{name: "accessors", srules: "\t\tRedirect \"https://%[host]/x%[path]\"\n",
			req: "GET /p?q HTTP/1.1\nHost: ex.org:81\n\n", want: poundRedirectReply("302", "Found", "https://ex.org/x/p")},
		{name: "unsafe bytes percent-encoded", srules: "\t\tRedirect \"http://example.org\"\n",
			req: "GET /~u/%41 HTTP/1.1\nHost: h\n\n", want: poundRedirectReply("302", "Found", "http://example.org/%7eu/%2541")},
		{name: "HTTP/1.0 client gets no Content-Length", srules: "\t\tRedirect \"http://example.org/n\"\n",
			req: "GET / HTTP/1.0\n\n", want: "HTTP/1.0 302 Found\r\nContent-Type: text/html\r\nLocation: http://example.org/n\r\n\r\n" +
				strings.ReplaceAll(redirectBody, "%s", "http://example.org/n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, specialCfg("", tt.srules))
			c := f.conn(t, "192.0.2.2:4000", crlfLines(tt.req))
			if c.special(f.st, c.ex.svc) {
				t.Error("connection kept open after a redirect that says close")
			}
			if got := string(c.nc.(*addrConn).out); got != tt.want {
				t.Errorf("reply:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestPoundRedirectBadReferenceIs500(t *testing.T) {
	f := loadFixture(t, specialCfg("", "\t\tURL \"^/(a)\"\n\t\tRedirect \"http://x/$2\"\n"))
	c := f.conn(t, "192.0.2.2:4000", crlfLines("GET /a HTTP/1.1\nHost: h\n\n"))
	c.special(f.st, c.ex.svc)
	if got := string(c.nc.(*addrConn).out); !strings.HasPrefix(got, "HTTP/1.1 500 Internal Server Error\r\n") {
		t.Errorf("reply %q", got)
	}
}

func TestZproxyRedirect(t *testing.T) {
	tests := []struct {
		name           string
		lrules, srules string
		req            string
		code           string
		loc            string
		extra          string // header lines the response rules add
	}{
		{name: "RedirectAppend appends the path", srules: "\t\tRedirectAppend 301 \"http://example.org/base\"\n",
			req: "GET /p?q=1 HTTP/1.1\nHost: h\n\n", code: "301 Moved Permanently", loc: "http://example.org/base/p?q=1"},
		{name: "VHOST macro", srules: "\t\tRedirect \"https://${VHOST}/x\"\n",
			req: "GET /p HTTP/1.1\nHost: ex.org\n\n", code: "302 Found", loc: "https://ex.org/x"},
		{name: "dynamic redirect replaces the matched path", srules: "\t\tURL \"^/old/(.*)\"\n\t\tRedirect 307 \"http://n.org/$1\"\n",
			req: "GET /old/a HTTP/1.1\nHost: h\n\n", code: "307 Temporary Redirect", loc: "http://n.org/a"},
		{name: "codes other than 301 and 307 answer 302", srules: "\t\tRedirect 303 \"http://n.org/x\"\n",
			req: "GET / HTTP/1.1\nHost: h\n\n", code: "302 Found", loc: "http://n.org/x"},
		{name: "the URL is sent as written, its lone slash kept", srules: "\t\tRedirect \"http://n.org/\"\n",
			req: "GET /deep/path HTTP/1.1\nHost: h\n\n", code: "302 Found", loc: "http://n.org/"},
		{name: "a URL without a path is not extended", srules: "\t\tRedirect \"http://n.org\"\n",
			req: "GET /deep/path HTTP/1.1\nHost: h\n\n", code: "302 Found", loc: "http://n.org"},
		{name: "response rules apply to the redirect", lrules: "\tAddResponseHeader \"X-Test: t\"\n\tRemoveResponseHeader \"^Content-Type\"\n",
			srules: "\t\tRedirect \"http://n.org/x\"\n",
			req:    "GET / HTTP/1.1\nHost: h\n\n", code: "302 Found", loc: "http://n.org/x", extra: "X-Test: t\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, zproxyCfg(tt.lrules, tt.srules))
			c := f.conn(t, "192.0.2.2:4000", crlfLines(tt.req))
			c.special(f.st, c.ex.svc)
			body := "<html><head><title>Redirect</title></head><body><h1>Redirect</h1><p>You should go to <a href=" +
				tt.loc + ">" + tt.loc + "</a></p></body></html>\n"
			ctype := "Content-Type: text/html\r\n"
			if tt.extra != "" {
				ctype = ""
			}
			want := "HTTP/1.0 " + tt.code + "\r\n" + ctype + "Content-Length: " +
				strconv.Itoa(len(body)) + "\r\nLocation: " + tt.loc + "\r\n" + tt.extra + "\r\n" + body
			if got := string(c.nc.(*addrConn).out); got != want {
				t.Errorf("reply:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// notFoundPage is Pound 4's default_error_page for 404.
const notFoundPage = "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\"><html><head><title>404 Not Found</title></head>" +
	"<body><h1>Not Found</h1><p>The requested URL was not found on this server.</p></body></html>"

func TestErrorPages(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.html", "<p>custom</p>")
	withHdr := write("hdr.html", "Content-Type: text/plain\nX-Page: 1\n\nsorry")
	tests := []struct {
		name   string
		lrules string
		srules string
		req    string
		want   string
	}{
		{name: "Error backend, built-in text", srules: "\t\tError 404\n", req: "GET / HTTP/1.1\nHost: h\n\n",
			want: "HTTP/1.1 404 Not Found\r\nContent-Length: " + strconv.Itoa(len(notFoundPage)) +
				"\r\nConnection: close\r\nContent-Type: text/html\r\n" +
				"Expires: now\r\nPragma: no-cache\r\nCache-control: no-cache,no-store\r\n\r\n" + notFoundPage},
		{name: "Error backend with its own file", srules: "\t\tError 403 \"" + plain + "\"\n", req: "GET / HTTP/1.0\n\n",
			want: "HTTP/1.0 403 Forbidden\r\nContent-Type: text/html\r\nExpires: now\r\nPragma: no-cache\r\n" +
				"Cache-control: no-cache,no-store\r\n\r\n<p>custom</p>"},
		{name: "listener ErrorFile with headers", lrules: "\tErrorFile 404 \"" + withHdr + "\"\n", srules: "\t\tError 404\n",
			req: "GET / HTTP/1.1\nHost: h\n\n",
			want: "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\nContent-Type: text/plain\r\n" +
				"X-Page: 1\r\nExpires: now\r\nPragma: no-cache\r\nCache-control: no-cache,no-store\r\n\r\nsorry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, specialCfg(tt.lrules, tt.srules))
			c := f.conn(t, "192.0.2.2:4000", crlfLines(tt.req))
			if c.special(f.st, c.ex.svc) {
				t.Error("connection kept open after an error page")
			}
			if got := string(c.nc.(*addrConn).out); got != tt.want {
				t.Errorf("reply:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
