package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// staticTree lays out, in a new directory, the tree the tests serve:
// www is the served directory; secret.txt lies beside it, reachable only
// by escaping, through "..", encoded or not, or symbolic links.
func staticTree(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"www/static/arar.txt":     "Flumen est Arar\n",
		"www/static/a b.txt":      "spaced\n",
		"www/static/sub/deep.txt": "deep\n",
		"www/acme/TOKEN-1":        "challenge-answer\n",
		"secret.txt":              "do not serve\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"link-in.txt": "sub/deep.txt", "link-out.txt": "../../secret.txt",
		"link-abs.txt": filepath.Join(dir, "secret.txt"), "up": "../.."}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, "www/static", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "www/static/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rawGet sends one request head and returns the parsed response with its
// body.
func rawGet(t *testing.T, addr, method, target string, headers ...string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n", method, target, strings.Join(headers, ""))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, target, err)
	}
	return resp, string(b)
}

// startStatic runs lbd with the special backends over staticTree: ACME,
// SendFile for /static/ (with the response rules given), Success for
// OPTIONS, and a regular backend for the rest.
func startStatic(t *testing.T, rules ...string) *proc {
	t.Helper()
	dir := staticTree(t)
	be := startBackend(t, "127.0.0.2", "app", echoHandler("app"))
	return startLBD(t, "Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n"+
		"\tACME \""+dir+"/www/acme\"\n"+
		"\tService\n\t\tURL \"^/static/\"\n"+strings.Join(rules, "")+"\t\tSendFile \""+dir+"/www\"\n\tEnd\n"+
		"\tService\n\t\tMethod \"OPTIONS\"\n\t\tSuccess\n\tEnd\n"+
		"\tService\n"+be.block()+"\tEnd\nEnd\n")
}

// TestSendFileServesOnlyTheDirectory serves files beneath the SendFile
// and ACME directories and refuses every way out of them.
func TestSendFileServesOnlyTheDirectory(t *testing.T) {
	p := startStatic(t)
	cases := []struct {
		name, method, target string
		status               int
		body, ctype          string
	}{
		{name: "file", target: "/static/arar.txt", status: 200, body: "Flumen est Arar\n", ctype: "text/plain"},
		{name: "encoded name", target: "/static/a%20b.txt", status: 200, body: "spaced\n"},
		{name: "subdirectory", target: "/static/sub/deep.txt", status: 200, body: "deep\n"},
		{name: "symlink inside", target: "/static/link-in.txt", status: 200, body: "deep\n"},
		{name: "HEAD", method: "HEAD", target: "/static/arar.txt", status: 200, body: ""},
		{name: "dot-dot", target: "/static/../../secret.txt", status: 404},
		{name: "encoded dot-dot", target: "/static/%2e%2e/%2E%2E/secret.txt", status: 404},
		{name: "encoded slash", target: "/static/..%2f..%2fsecret.txt", status: 404},
		{name: "symlink out", target: "/static/link-out.txt", status: 404},
		{name: "absolute symlink out", target: "/static/link-abs.txt", status: 404},
		{name: "directory symlink out", target: "/static/up/secret.txt", status: 404},
		{name: "directory", target: "/static/sub", status: 404},
		{name: "FIFO", target: "/static/fifo", status: 404},
		{name: "missing", target: "/static/nope.txt", status: 404},
		{name: "bad escape", target: "/static/arar%zz", status: 404},
		{name: "NUL", target: "/static/arar.txt%00", status: 404},
		{name: "acme challenge", target: "/.well-known/acme-challenge/TOKEN-1", status: 200, body: "challenge-answer\n", ctype: "text/html"},
		{name: "acme missing", target: "/.well-known/acme-challenge/TOKEN-2", status: 404},
		{name: "acme dot-dot", target: "/.well-known/acme-challenge/../static/arar.txt", status: 404},
		{name: "success", method: "OPTIONS", target: "/anything", status: 200, body: ""},
		{name: "other paths reach the backend", target: "/app", status: 200, body: "app GET /app\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "GET"
			}
			resp, body := rawGet(t, p.addr, method, tc.target)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s: %d, want %d\n%s", method, tc.target, resp.StatusCode, tc.status, body)
			}
			if tc.status != 200 {
				if strings.Contains(body, "do not serve") {
					t.Fatalf("%s %s leaked the secret", method, tc.target)
				}
				return
			}
			if !strings.HasPrefix(body, tc.body) {
				t.Errorf("body %q, want %q", body, tc.body)
			}
			if tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tc.ctype)
			}
		})
	}
}

// TestSendFileHeaders: Content-Length, Last-Modified and If-Modified-Since,
// and keep-alive between files.
func TestSendFileHeaders(t *testing.T) {
	p := startStatic(t)
	resp, _ := rawGet(t, p.addr, "HEAD", "/static/arar.txt")
	lm := resp.Header.Get("Last-Modified")
	if resp.ContentLength != int64(len("Flumen est Arar\n")) || lm == "" {
		t.Fatalf("HEAD: length %d, Last-Modified %q", resp.ContentLength, lm)
	}
	mtime, err := http.ParseTime(lm)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		since  time.Time
		status int
	}{
		{name: "unchanged since", since: mtime, status: 304},
		{name: "changed since", since: mtime.Add(-time.Hour), status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawGet(t, p.addr, "GET", "/static/arar.txt", "If-Modified-Since: "+tc.since.UTC().Format(http.TimeFormat)+"\r\n")
			if resp.StatusCode != tc.status || (tc.status == 304) != (body == "") {
				t.Fatalf("%d with %d body bytes, want %d", resp.StatusCode, len(body), tc.status)
			}
		})
	}
	t.Run("keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for _, target := range []string{"/static/arar.txt", "/static/sub/deep.txt", "/.well-known/acme-challenge/TOKEN-1"} {
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", target)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s on the same connection: %v", target, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Close {
				t.Fatalf("%s: %d, close=%v", target, resp.StatusCode, resp.Close)
			}
		}
	})
}

// TestSendFileResponseRules: the service's response header rules apply to
// the file replies as to a backend's, e.g. to set another Content-Type
// (these rules are zproxy's, so the file is read in its dialect).
func TestSendFileResponseRules(t *testing.T) {
	p := startStatic(t, "\t\tRemoveResponseHeader \"^Content-Type:\"\n",
		"\t\tAddResponseHeader \"Content-Type: text/html\"\n", "\t\tAddResponseHeader \"X-Static: yes\"\n")
	resp, body := rawGet(t, p.addr, "GET", "/static/arar.txt")
	if resp.StatusCode != 200 || body != "Flumen est Arar\n" || resp.Header.Get("Content-Type") != "text/html" ||
		resp.Header.Get("X-Static") != "yes" || len(resp.Header.Values("Content-Type")) != 1 {
		t.Fatalf("%d %q, headers %v", resp.StatusCode, body, resp.Header)
	}
}

// TestSendFilePoundRules is the manual's SendFile example: the request
// rules choose the file (SetPath) and the response rules its type.
func TestSendFilePoundRules(t *testing.T) {
	dir := staticTree(t)
	p := startLBD(t, "Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n"+
		"\tService\n\t\tPath -re \"^/about/(.+)\"\n\t\tSetPath \"$1\"\n"+
		"\t\tRewrite response\n\t\t\tSetHeader \"Content-Type: text/html\"\n\t\tEnd\n"+
		"\t\tSendFile \""+dir+"/www/static\"\n\tEnd\nEnd\n")
	cases := []struct {
		name, target string
		status       int
		body         string
	}{
		{name: "path rewritten", target: "/about/sub/deep.txt", status: 200, body: "deep\n"},
		{name: "rewritten path escaping", target: "/about/../../secret.txt", status: 404},
		{name: "rewritten encoded escape", target: "/about/%2e%2e/%2e%2e/secret.txt", status: 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawGet(t, p.addr, "GET", tc.target)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s: %d, want %d", tc.target, resp.StatusCode, tc.status)
			}
			if tc.status == 200 && (body != tc.body || resp.Header.Get("Content-Type") != "text/html") {
				t.Fatalf("%s: %q, Content-Type %q", tc.target, body, resp.Header.Get("Content-Type"))
			}
		})
	}
}
