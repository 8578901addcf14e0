package http1

import (
	"errors"
	"strings"
	"testing"
)

const typicalResp = "HTTP/1.1 200 OK\r\n" +
	"Date: Mon, 27 Jul 2026 12:28:53 GMT\r\n" +
	"Server: Apache\r\n" +
	"Last-Modified: Wed, 22 Jul 2026 19:15:56 GMT\r\n" +
	"ETag: \"34aa387-d-1568eb00\"\r\n" +
	"Accept-Ranges: bytes\r\n" +
	"Content-Length: 51\r\n" +
	"Vary: Accept-Encoding\r\n" +
	"Content-Type: text/plain\r\n" +
	"\r\n"

func TestParseResponseHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		raw       string
		head      bool
		status    int
		minor     int
		reason    string
		cl        int64
		chunked   bool
		keepAlive bool
		upgrade   bool
		body      BodyKind
	}{
		{name: "typical", raw: typicalResp, status: 200, minor: 1, reason: "OK", cl: 51, keepAlive: true, body: BodyLength},
		{name: "no_reason", raw: "HTTP/1.1 204\r\n\r\n", status: 204, minor: 1, cl: -1, keepAlive: true, body: BodyNone},
		{name: "empty_reason", raw: "HTTP/1.1 204 \r\n\r\n", status: 204, minor: 1, cl: -1, keepAlive: true, body: BodyNone},
		{name: "chunked", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", status: 200, minor: 1, reason: "OK", cl: -1, chunked: true, keepAlive: true, body: BodyChunked},
		{name: "te_cl_drops_cl_and_closes", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n", status: 200, minor: 1, reason: "OK", cl: -1, chunked: true, body: BodyChunked},
		{name: "until_close", raw: "HTTP/1.1 200 OK\r\n\r\n", status: 200, minor: 1, reason: "OK", cl: -1, body: BodyUntilClose},
		{name: "head_without_cl_keeps_alive", raw: "HTTP/1.1 200 OK\r\n\r\n", head: true, status: 200, minor: 1, reason: "OK", cl: -1, keepAlive: true, body: BodyNone},
		{name: "head_with_cl", raw: "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", head: true, status: 200, minor: 1, reason: "OK", cl: 99, keepAlive: true, body: BodyNone},
		{name: "not_modified_with_cl", raw: "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", status: 304, minor: 1, reason: "Not Modified", cl: 99, keepAlive: true, body: BodyNone},
		{name: "continue", raw: "HTTP/1.1 100 Continue\r\n\r\n", status: 100, minor: 1, reason: "Continue", cl: -1, keepAlive: true, body: BodyNone},
		{name: "cl_zero", raw: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", status: 200, minor: 1, reason: "OK", cl: 0, keepAlive: true, body: BodyNone},
		{name: "cl_repeated_same", raw: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", status: 200, minor: 1, reason: "OK", cl: 3, keepAlive: true, body: BodyLength},
		{name: "http10_close", raw: "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n", status: 200, reason: "OK", cl: 3, body: BodyLength},
		{name: "http10_keepalive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\n", status: 200, reason: "OK", cl: 3, keepAlive: true, body: BodyLength},
		{name: "http11_close", raw: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\n", status: 200, minor: 1, reason: "OK", cl: 3, body: BodyLength},
		{name: "websocket_101", raw: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", status: 101, minor: 1, reason: "Switching Protocols", cl: -1, upgrade: true, body: BodyNone},
		{name: "h2c_101_not_upgrade", raw: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n", status: 101, minor: 1, reason: "Switching Protocols", cl: -1, body: BodyNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Response
			if err := ParseResponseHead([]byte(tt.raw), &r, tt.head); err != nil {
				t.Fatalf("ParseResponseHead: %v", err)
			}
			wantInt(t, "Status", int64(r.Status), int64(tt.status))
			wantInt(t, "Minor", int64(r.Minor), int64(tt.minor))
			wantBytes(t, "Reason", r.Reason, tt.reason)
			wantInt(t, "ContentLength", r.ContentLength, tt.cl)
			wantBool(t, "Chunked", r.Chunked, tt.chunked)
			wantBool(t, "KeepAlive", r.KeepAlive, tt.keepAlive)
			wantBool(t, "Upgrade", r.Upgrade, tt.upgrade)
			wantInt(t, "BodyKind", int64(r.BodyKind(tt.head)), int64(tt.body))
			wantInt(t, "HeadLen", int64(r.HeadLen), int64(len(tt.raw)))
		})
	}
}

func TestParseResponseHeadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		more bool // ErrNeedMore instead of a 502
	}{
		{name: "garbage", raw: "<html>hello</html>\r\n\r\n"},
		{name: "http09_body", raw: "hello world"},
		{name: "http2", raw: "HTTP/2.0 200 OK\r\n\r\n"},
		{name: "lowercase", raw: "http/1.1 200 OK\r\n\r\n"},
		{name: "two_digit_status", raw: "HTTP/1.1 20 OK\r\n\r\n"},
		{name: "status_600", raw: "HTTP/1.1 600 X\r\n\r\n"},
		{name: "status_099", raw: "HTTP/1.1 099 X\r\n\r\n"},
		{name: "status_glued_reason", raw: "HTTP/1.1 200OK\r\n\r\n"},
		{name: "bare_lf_status", raw: "HTTP/1.1 200 OK\n\r\n"},
		{name: "ctl_in_reason", raw: "HTTP/1.1 200 O\x01K\r\n\r\n"},
		{name: "cl_conflict", raw: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"},
		{name: "cl_list", raw: "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n"},
		{name: "cl_bad", raw: "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n"},
		{name: "te_gzip", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"},
		{name: "te_twice", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{name: "te_chunked_not_last", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"},
		{name: "obs_fold", raw: "HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\n\r\n"},
		{name: "nul_in_value", raw: "HTTP/1.1 200 OK\r\nX-A: \x00\r\n\r\n"},
		{name: "bad_connection", raw: "HTTP/1.1 200 OK\r\nConnection: a b\r\n\r\n"},
		{name: "too_many_headers", raw: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: y\r\n", 201) + "\r\n"},
		{name: "header_line_too_long", raw: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("y", 20000)},
		{name: "status_line_too_long", raw: "HTTP/1.1 200 " + strings.Repeat("y", 5000)},
		{name: "incomplete_status", raw: "HTTP/1.1 20", more: true},
		{name: "incomplete_headers", raw: "HTTP/1.1 200 OK\r\nX-A: b", more: true},
		{name: "incomplete_cr", raw: "HTTP/1.1 200 OK\r", more: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Response
			err := ParseResponseHead([]byte(tt.raw), &r, false)
			if tt.more {
				if !errors.Is(err, ErrNeedMore) {
					t.Fatalf("err = %v, want ErrNeedMore", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != 502 {
				t.Fatalf("err = %v, want *Error with Status 502", err)
			}
		})
	}
}

func TestResponseEveryPrefix(t *testing.T) {
	t.Parallel()
	var r Response
	for n := 0; n < len(typicalResp); n++ {
		if err := ParseResponseHead([]byte(typicalResp[:n]), &r, false); !errors.Is(err, ErrNeedMore) {
			t.Fatalf("prefix %d (%q): err = %v, want ErrNeedMore", n, typicalResp[:n], err)
		}
	}
}

func TestResponseHopByHop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		hdr  string
		want bool
	}{
		{name: "upgrade_kept_for_websocket_101", raw: "HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", hdr: "Upgrade", want: false},
		{name: "upgrade_dropped_otherwise", raw: "HTTP/1.1 200 OK\r\nUpgrade: h2c\r\nContent-Length: 0\r\n\r\n", hdr: "Upgrade", want: true},
		{name: "listed_in_connection", raw: "HTTP/1.1 200 OK\r\nConnection: X-Internal\r\nContent-Length: 0\r\n\r\n", hdr: "x-internal", want: true},
		{name: "end_to_end", raw: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", hdr: "Set-Cookie", want: false},
		{name: "keep_alive", raw: "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n", hdr: "Keep-Alive", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Response
			if err := ParseResponseHead([]byte(tt.raw), &r, false); err != nil {
				t.Fatal(err)
			}
			if got := r.IsHopByHop([]byte(tt.hdr)); got != tt.want {
				t.Fatalf("IsHopByHop(%q) = %v, want %v", tt.hdr, got, tt.want)
			}
		})
	}
}

func TestResponseHeaderValue(t *testing.T) {
	t.Parallel()
	var r Response
	if err := ParseResponseHead([]byte(typicalResp), &r, false); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		hdr  string
		want string
	}{
		{name: "etag_mixed_case", hdr: "etag", want: `"34aa387-d-1568eb00"`},
		{name: "content_type", hdr: "CONTENT-TYPE", want: "text/plain"},
		{name: "absent", hdr: "Location", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantBytes(t, tt.hdr, r.HeaderValue([]byte(tt.hdr)), tt.want)
		})
	}
}
