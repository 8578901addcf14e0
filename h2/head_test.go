package h2

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func req(method, path, host string, h http.Header, cl int64) *http.Request {
	if h == nil {
		h = http.Header{}
	}
	return &http.Request{Method: method, RequestURI: path, Host: host, Header: h, ContentLength: cl}
}

func TestBuildHead(t *testing.T) {
	tests := []struct {
		name    string
		r       *http.Request
		want    string // the whole head, or "" when refused
		status  int
		chunked bool
	}{
		{"GET", req("GET", "/a?b=c", "site.test", http.Header{"Accept": {"*/*"}, "Cookie": {"a=1; b=2"}}, 0),
			"GET /a?b=c HTTP/1.1\r\nHost: site.test\r\nAccept: */*\r\nCookie: a=1; b=2\r\n\r\n", 0, false},
		{"POST with length", req("POST", "/", "h:8443", http.Header{"Content-Length": {"5"}}, 5),
			"POST / HTTP/1.1\r\nHost: h:8443\r\nContent-Length: 5\r\n\r\n", 0, false},
		{"POST without length is chunked", req("POST", "/", "h", nil, -1),
			"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", 0, true},
		{"empty POST says so", req("POST", "/", "h", nil, 0),
			"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", 0, false},
		{"TE trailers and Expect are not forwarded", req("GET", "/", "h", http.Header{"Te": {"trailers"}, "Expect": {"100-continue"}}, 0),
			"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0, false},
		{"OPTIONS *", req("OPTIONS", "*", "h", nil, 0), "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 0, false},
		{"CONNECT is refused", req("CONNECT", "", "h:443", nil, 0), "", status405, false},
		{"connection header", req("GET", "/", "h", http.Header{"Connection": {"keep-alive"}}, 0), "", status400, false},
		{"transfer-encoding", req("POST", "/", "h", http.Header{"Transfer-Encoding": {"chunked"}}, -1), "", status400, false},
		{"upgrade (h2c smuggling)", req("GET", "/", "h", http.Header{"Upgrade": {"h2c"}}, 0), "", status400, false},
		{"keep-alive", req("GET", "/", "h", http.Header{"Keep-Alive": {"1"}}, 0), "", status400, false},
		{"CRLF in a value", req("GET", "/", "h", http.Header{"X-A": {"v\r\nX-Injected: 1"}}, 0), "", status400, false},
		{"NUL in a value", req("GET", "/", "h", http.Header{"X-A": {"v\x00"}}, 0), "", status400, false},
		{"bad field name", req("GET", "/", "h", http.Header{"X A": {"v"}}, 0), "", status400, false},
		{"space in path", req("GET", "/a HTTP/1.1\r\nX: y", "h", nil, 0), "", status400, false},
		{"raw non-ASCII path", req("GET", "/\xffa", "h", nil, 0), "", status400, false},
		{"fragment", req("GET", "/a#b", "h", nil, 0), "", status400, false},
		{"relative path", req("GET", "a", "h", nil, 0), "", status400, false},
		{"method with space", req("GET /x", "/", "h", nil, 0), "", status400, false},
		{"userinfo in authority", req("GET", "/", "u@h", nil, 0), "", status400, false},
		{"no authority", req("GET", "/", "", nil, 0), "", status400, false},
		{"two content-lengths", req("POST", "/", "h", http.Header{"Content-Length": {"5", "5"}}, 5), "", status400, false},
		{"content-length with sign", req("POST", "/", "h", http.Header{"Content-Length": {"+5"}}, 5), "", status400, false},
		{"content-length without data", req("POST", "/", "h", http.Header{"Content-Length": {"5"}}, 0), "", status400, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, status, chunked := buildHead(nil, tt.r)
			if status != tt.status {
				t.Fatalf("status = %d, want %d (head %q)", status, tt.status, head)
			}
			if status == 0 && (string(head) != tt.want || chunked != tt.chunked) {
				t.Errorf("head = %q (chunked %v)\nwant  %q (chunked %v)", head, chunked, tt.want, tt.chunked)
			}
		})
	}
}

func TestSendBodyChunked(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"empty", "", "0\r\n\r\n"},
		{"short", "hello", "5\r\nhello\r\n0\r\n\r\n"},
		{"one read per chunk", strings.Repeat("x", 40000), "7fee\r\n" + strings.Repeat("x", 32750) + "\r\n1c52\r\n" + strings.Repeat("x", 7250) + "\r\n0\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := sendBody(&out, strings.NewReader(tt.body), true); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got %q…, want %q…", trim(out.String()), trim(tt.want))
			}
		})
	}
	var out bytes.Buffer
	if err := sendBody(&out, io.LimitReader(strings.NewReader("abcdef"), 3), false); err != nil || out.String() != "abc" {
		t.Errorf("identity body = %q, %v", out.String(), err)
	}
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

func TestCopyHeaderDropsHopByHop(t *testing.T) {
	src := http.Header{
		"Connection": {"close, X-Private"}, "X-Private": {"1"}, "Keep-Alive": {"timeout=5"},
		"Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "Trailer": {"X-T"},
		"Content-Length": {"10"}, "Set-Cookie": {"a=1", "b=2"}, "Content-Type": {"text/plain"},
	}
	dst := http.Header{}
	copyHeader(dst, src)
	want := http.Header{"Content-Length": {"10"}, "Set-Cookie": {"a=1", "b=2"}, "Content-Type": {"text/plain"}, "Date": nil}
	if len(dst) != len(want) {
		t.Fatalf("copied %v, want %v", dst, want)
	}
	for k, v := range want {
		if got, ok := dst[k]; !ok || strings.Join(got, ",") != strings.Join(v, ",") {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
}
