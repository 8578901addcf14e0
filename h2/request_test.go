package h2

import (
	"cmp"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// build runs fields (name, value pairs, in order) through a reqBuilder.
func build(fields []string, endStream bool) (string, request) {
	rb := reqBuilder{maxSize: DefaultMaxHeaderBytes}
	rb.reset(false)
	for i := 0; i+1 < len(fields); i += 2 {
		rb.field(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	head, req := rb.head(nil, endStream)
	return string(head), req
}

func TestRequestHead(t *testing.T) {
	get := func(extra ...string) []string {
		return append([]string{":method", "GET", ":scheme", "https", ":path", "/", ":authority", "h"}, extra...)
	}
	post := func(extra ...string) []string {
		return append([]string{":method", "POST", ":scheme", "https", ":path", "/", ":authority", "h:8443"}, extra...)
	}
	tests := []struct {
		name      string
		fields    []string
		endStream bool
		want      string // the whole head when forwarded
		status    int
		malformed bool
		chunked   bool
		hold      bool
	}{
		{name: "GET", fields: []string{":method", "GET", ":scheme", "https", ":path", "/a?b=c", ":authority", "site.test", "accept", "*/*", "x-forwarded-for", "10.0.0.1"},
			endStream: true, want: "GET /a?b=c HTTP/1.1\r\nHost: site.test\r\nAccept: */*\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n"},
		{name: "cookies are joined", fields: get("cookie", "a=1", "accept", "*/*", "cookie", "b=2"), endStream: true,
			want: "GET / HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nCookie: a=1; b=2\r\n\r\n"},
		{name: "host when there is no authority", fields: []string{":method", "GET", ":scheme", "https", ":path", "/", "host", "h2.test"},
			endStream: true, want: "GET / HTTP/1.1\r\nHost: h2.test\r\n\r\n"},
		{name: "POST with length", fields: post("content-length", "5"), want: "POST / HTTP/1.1\r\nHost: h:8443\r\nContent-Length: 5\r\n\r\n"},
		{name: "POST without length is chunked", fields: post(), chunked: true,
			want: "POST / HTTP/1.1\r\nHost: h:8443\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{name: "empty POST says so", fields: post(), endStream: true, want: "POST / HTTP/1.1\r\nHost: h:8443\r\nContent-Length: 0\r\n\r\n"},
		{name: "length 0 on an open stream waits for its end", fields: post("content-length", "0"), hold: true,
			want: "POST / HTTP/1.1\r\nHost: h:8443\r\nContent-Length: 0\r\n\r\n"},
		{name: "TE trailers and Expect are not forwarded", fields: get("te", "trailers", "expect", "100-continue"), endStream: true,
			want: "GET / HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "OPTIONS *", fields: []string{":method", "OPTIONS", ":scheme", "https", ":path", "*", ":authority", "h"}, endStream: true,
			want: "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"},
		{name: "asterisk-form outside OPTIONS", fields: []string{":method", "GET", ":scheme", "https", ":path", "*", ":authority", "h"}, status: status400},
		{name: "CONNECT is refused", fields: []string{":method", "CONNECT", ":authority", "h:443"}, status: status405},
		{name: "connection header", fields: get("connection", "keep-alive"), malformed: true},
		{name: "transfer-encoding", fields: post("transfer-encoding", "chunked"), malformed: true},
		{name: "upgrade (h2c smuggling)", fields: get("upgrade", "h2c"), malformed: true},
		{name: "keep-alive", fields: get("keep-alive", "1"), malformed: true},
		{name: "te other than trailers", fields: get("te", "gzip"), malformed: true},
		{name: "space in path", fields: []string{":method", "GET", ":scheme", "https", ":path", "/a HTTP/1.1\r\nX: y", ":authority", "h"}, status: status400},
		{name: "raw non-ASCII path", fields: []string{":method", "GET", ":scheme", "https", ":path", "/\xffa", ":authority", "h"}, status: status400},
		{name: "fragment", fields: []string{":method", "GET", ":scheme", "https", ":path", "/a#b", ":authority", "h"}, status: status400},
		{name: "relative path", fields: []string{":method", "GET", ":scheme", "https", ":path", "a", ":authority", "h"}, status: status400},
		{name: "method with space", fields: []string{":method", "GET /x", ":scheme", "https", ":path", "/", ":authority", "h"}, status: status400},
		{name: "userinfo in authority", fields: []string{":method", "GET", ":scheme", "https", ":path", "/", ":authority", "u@h"}, status: status400},
		{name: "no authority", fields: []string{":method", "GET", ":scheme", "https", ":path", "/"}, status: status400},
		{name: "two content-lengths", fields: post("content-length", "5", "content-length", "5"), status: status400},
		{name: "content-length with sign", fields: post("content-length", "+5"), status: status400},
		{name: "content-length without data", fields: post("content-length", "5"), endStream: true, status: status400},
		{name: "header list too large", fields: get("x-big", strings.Repeat("a", DefaultMaxHeaderBytes)), status: status431},
		{name: "CRLF in a value", fields: get("x-a", "v\r\nx-injected: 1"), malformed: true},
		{name: "NUL in a value", fields: get("x-a", "v\x00"), malformed: true},
		{name: "space around a value", fields: get("x-a", " v"), malformed: true},
		{name: "upper-case name", fields: get("X-A", "v"), malformed: true},
		{name: "name with a space", fields: get("x a", "v"), malformed: true},
		{name: "pseudo-header after a field", fields: append(get("x-a", "1"), ":status", "200"), malformed: true},
		{name: "repeated pseudo-header", fields: get(":path", "/b"), malformed: true},
		{name: "unknown pseudo-header", fields: get(":protocol", "websocket"), malformed: true},
		{name: "missing path", fields: []string{":method", "GET", ":scheme", "https", ":authority", "h"}, malformed: true},
		{name: "host differs from authority", fields: get("host", "other"), malformed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, req := build(tt.fields, tt.endStream)
			if req.malformed != tt.malformed || req.status != tt.status {
				t.Fatalf("malformed %v status %d, want %v %d (head %q)", req.malformed, req.status, tt.malformed, tt.status, head)
			}
			if tt.malformed || tt.status != 0 {
				return
			}
			if head != tt.want || req.chunked != tt.chunked || req.hold != tt.hold {
				t.Errorf("head = %q (chunked %v hold %v)\nwant  %q (chunked %v hold %v)", head, req.chunked, req.hold, tt.want, tt.chunked, tt.hold)
			}
		})
	}
}

// TestTrailerBlock: the fields of a request's trailer block become
// HTTP/1.1 trailer lines, or make the block malformed.
func TestTrailerBlock(t *testing.T) {
	tests := []struct {
		name   string
		fields []string
		want   string // the lines; "" with ok false = refused
		ok     bool
		max    int // SETTINGS_MAX_HEADER_LIST_SIZE, 16 KiB if 0
	}{
		{"grpc-style fields", []string{"grpc-status", "0", "x-checksum", "abc"}, "Grpc-Status: 0\r\nX-Checksum: abc\r\n", true, 0},
		{"empty block", nil, "", true, 0},
		{"repeated field kept in order", []string{"x-a", "1", "x-a", "2"}, "X-A: 1\r\nX-A: 2\r\n", true, 0},
		{"empty value", []string{"x-a", ""}, "X-A: \r\n", true, 0},
		{"pseudo-header", []string{":status", "200"}, "", false, 0},
		{"connection", []string{"connection", "close"}, "", false, 0},
		{"proxy-connection", []string{"proxy-connection", "close"}, "", false, 0},
		{"keep-alive", []string{"keep-alive", "1"}, "", false, 0},
		{"transfer-encoding", []string{"transfer-encoding", "chunked"}, "", false, 0},
		{"te", []string{"te", "trailers"}, "", false, 0},
		{"upgrade", []string{"upgrade", "h2c"}, "", false, 0},
		{"content-length", []string{"content-length", "1"}, "", false, 0},
		{"host", []string{"host", "h"}, "", false, 0},
		{"authorization", []string{"authorization", "x"}, "", false, 0},
		{"cookie", []string{"cookie", "a=b"}, "", false, 0},
		{"trailer", []string{"trailer", "x-a"}, "", false, 0},
		{"content-type", []string{"content-type", "text/plain"}, "", false, 0},
		{"upper-case name", []string{"X-A", "1"}, "", false, 0},
		{"NUL in a value", []string{"x-a", "1\x00"}, "", false, 0},
		{"space around a value", []string{"x-a", "1 "}, "", false, 0},
		{"trailer section over 8 KiB", []string{"x-a", strings.Repeat("a", 8<<10)}, "", false, 0},
		{"header list over the limit", []string{"x-a", strings.Repeat("a", 3000), "x-b", strings.Repeat("b", 3000)}, "", false, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rb := reqBuilder{maxSize: cmp.Or(tt.max, 16<<10)}
			rb.reset(true)
			for i := 0; i+1 < len(tt.fields); i += 2 {
				rb.field(hpack.HeaderField{Name: tt.fields[i], Value: tt.fields[i+1]})
			}
			lines, ok := rb.trailer()
			if ok != tt.ok || (ok && string(lines) != tt.want) {
				t.Errorf("got %q, %v; want %q, %v", lines, ok, tt.want, tt.ok)
			}
		})
	}
}
