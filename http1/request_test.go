package http1

import (
	"errors"
	"strings"
	"testing"
)

// browserReq is a typical ~400-byte browser request, used by tests and
// benchmarks.
const browserReq = "GET /static/app.js?v=42 HTTP/1.1\r\n" +
	"Host: www.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
	"Accept: */*\r\n" +
	"Accept-Language: en-US,en;q=0.5\r\n" +
	"Accept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Referer: https://www.example.com/index.html\r\n" +
	"Connection: keep-alive\r\n" +
	"Cookie: session=4f2a9c1e7b3d5a6c8e0f; theme=dark\r\n" +
	"Sec-Fetch-Dest: script\r\n" +
	"Sec-Fetch-Mode: no-cors\r\n" +
	"Sec-Fetch-Site: same-origin\r\n" +
	"\r\n"

// requestFieldCase is an accepted head and the fields it must yield.
type requestFieldCase struct {
	name  string
	raw   string
	check func(t *testing.T, r *Request)
}

var requestFieldCases = []requestFieldCase{
	{name: "browser", raw: browserReq, check: func(t *testing.T, r *Request) {
		wantBytes(t, "Method", r.Method, "GET")
		wantInt(t, "MethodID", int64(r.MethodID), int64(MethodGET))
		wantBytes(t, "Target", r.Target, "/static/app.js?v=42")
		wantBytes(t, "Path", r.Path, "/static/app.js")
		wantBytes(t, "Query", r.Query, "v=42")
		wantBytes(t, "Host", r.Host, "www.example.com")
		wantInt(t, "Minor", int64(r.Minor), 1)
		wantInt(t, "len(Headers)", int64(len(r.Headers)), 11)
		wantBytes(t, "Headers[2].Name", r.Headers[2].Name, "Accept")
		wantBytes(t, "Headers[2].Value", r.Headers[2].Value, "*/*")
		wantInt(t, "ContentLength", r.ContentLength, -1)
		wantBool(t, "KeepAlive", r.KeepAlive, true)
		wantInt(t, "HeadLen", int64(r.HeadLen), int64(len(browserReq)))
		wantInt(t, "BodyKind", int64(r.BodyKind()), int64(BodyNone))
	}},
	{name: "no_query", raw: "GET /a/b HTTP/1.1\r\nHost: h\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "Path", r.Path, "/a/b")
		wantBool(t, "Query==nil", r.Query == nil, true)
	}},
	{name: "empty_query", raw: "GET /a? HTTP/1.1\r\nHost: h\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "Query!=nil", r.Query != nil, true)
		wantInt(t, "len(Query)", int64(len(r.Query)), 0)
	}},
	{name: "value_ows_trimmed", raw: "GET / HTTP/1.1\r\nHost:\t h \t\r\nX-A:b\r\nX-E: \r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "Host", r.Host, "h")
		wantBytes(t, "X-A", r.HeaderValue([]byte("x-a")), "b")
		wantBytes(t, "X-E", r.Headers[2].Value, "")
	}},
	{name: "obs_text_value_allowed", raw: "GET / HTTP/1.1\r\nHost: h\r\nX-A: caf\xc3\xa9\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "X-A", r.HeaderValue([]byte("X-A")), "caf\xc3\xa9")
	}},
	{name: "leading_crlf_skipped", raw: "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "Method", r.Method, "GET")
		wantInt(t, "HeadLen", int64(r.HeadLen), 31)
	}},
	{name: "absolute_form_no_path", raw: "GET HTTPS://h.example?q HTTP/1.1\r\nHost: h.example\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "Host", r.Host, "h.example")
		wantBytes(t, "Path", r.Path, "/")
		wantBytes(t, "Query", r.Query, "q")
	}},
	{name: "absolute_form_ipv6", raw: "GET http://[::1]:80/p HTTP/1.1\r\nHost: x\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "Host", r.Host, "[::1]:80")
	}},
	{name: "connect_authority", raw: "CONNECT h.example:443 HTTP/1.1\r\nHost: h.example:443\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "Host", r.Host, "h.example:443")
		wantBool(t, "Path==nil", r.Path == nil, true)
	}},
	{name: "options_asterisk", raw: "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBytes(t, "Path", r.Path, "*")
	}},
	{name: "http10_no_host_close", raw: "GET / HTTP/1.0\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "KeepAlive", r.KeepAlive, false)
		wantBool(t, "Host==nil", r.Host == nil, true)
		wantInt(t, "Minor", int64(r.Minor), 0)
	}},
	{name: "http10_keepalive", raw: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "KeepAlive", r.KeepAlive, true)
	}},
	{name: "http11_close_second_line", raw: "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nConnection: foo, Close\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "KeepAlive", r.KeepAlive, false)
	}},
	{name: "http11_connection_empty_elems", raw: "GET / HTTP/1.1\r\nHost: h\r\nConnection: , ,close,\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "KeepAlive", r.KeepAlive, false)
	}},
	{name: "expect_100", raw: "PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "Expect100", r.Expect100, true)
		wantInt(t, "BodyKind", int64(r.BodyKind()), int64(BodyLength))
	}},
	{name: "expect_100_http10_ignored", raw: "PUT /f HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "Expect100", r.Expect100, false)
	}},
	{name: "websocket", raw: "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: x\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "Upgrade", r.Upgrade, true)
		wantBool(t, "IsHopByHop(Upgrade)", r.IsHopByHop([]byte("upgrade")), false)
	}},
	{name: "websocket_needs_connection_upgrade", raw: "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "Upgrade", r.Upgrade, false)
	}},
	{name: "websocket_post_refused", raw: "POST /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: upgrade\r\nContent-Length: 0\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "Upgrade", r.Upgrade, false)
	}},
	{name: "chunked", raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n", check: func(t *testing.T, r *Request) {
		wantBool(t, "Chunked", r.Chunked, true)
		wantInt(t, "BodyKind", int64(r.BodyKind()), int64(BodyChunked))
	}},
}

func TestParseRequestFields(t *testing.T) {
	t.Parallel()
	for _, tt := range requestFieldCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Request
			if err := ParseRequestHead([]byte(tt.raw), &r, nil); err != nil {
				t.Fatalf("ParseRequestHead: %v", err)
			}
			tt.check(t, &r)
		})
	}
}

func TestParseRequestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		raw    string
		status int
	}{
		{name: "unknown_method", raw: "BREW / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "lowercase_method", raw: "get / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "empty_method", raw: " / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "http_1_2", raw: "GET / HTTP/1.2\r\nHost: h\r\n\r\n", status: 400},
		{name: "trailing_space_after_version", raw: "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", status: 400},
		{name: "bare_cr_after_version", raw: "GET / HTTP/1.1\rHost: h\r\n\r\n", status: 400},
		{name: "bare_lf_first_byte", raw: "\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "asterisk_not_options", raw: "GET * HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "relative_target", raw: "GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "ftp_scheme", raw: "GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "absolute_userinfo", raw: "GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "absolute_empty_authority", raw: "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "absolute_still_needs_host_header", raw: "GET http://h/ HTTP/1.1\r\n\r\n", status: 400},
		{name: "connect_origin_form", raw: "CONNECT / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "connect_no_port", raw: "CONNECT h.example HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "host_userinfo", raw: "GET / HTTP/1.1\r\nHost: u@h\r\n\r\n", status: 400},
		{name: "host_bad_port", raw: "GET / HTTP/1.1\r\nHost: h:8x\r\n\r\n", status: 400},
		{name: "host_unclosed_ipv6", raw: "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", status: 400},
		{name: "connection_not_token", raw: "GET / HTTP/1.1\r\nHost: h\r\nConnection: a b\r\n\r\n", status: 400},
		{name: "te_with_params", raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", status: 400},
		{name: "te_trailing_comma", raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked,\r\n\r\n", status: 400},
		{name: "te_gzip_alone", raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501},
		{name: "del_in_value", raw: "GET / HTTP/1.1\r\nHost: h\r\nX-A: \x7f\r\n\r\n", status: 400},
		{name: "bare_cr_end_of_head", raw: "GET / HTTP/1.1\r\nHost: h\r\n\rX", status: 400},
		{name: "expect_empty", raw: "GET / HTTP/1.1\r\nHost: h\r\nExpect: \r\n\r\n", status: 417},
		{name: "malformed_beats_expect", raw: "GET / HTTP/1.1\r\nExpect: foo\r\n\r\n", status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, _ := answer([]byte(tt.raw), nil); got != tt.status {
				t.Fatalf("status = %d, want %d", got, tt.status)
			}
		})
	}
}

func TestParseRequestLimits(t *testing.T) {
	t.Parallel()
	small := &Limits{MaxRequestLine: 64, MaxURI: 20, MaxHeaderLine: 32, MaxHeaders: 3, MaxHead: 200}
	tests := []struct {
		name   string
		raw    string
		lim    *Limits
		status int
	}{
		{name: "long_line_incomplete_414", raw: "GET /" + strings.Repeat("a", 5000), status: 414},
		{name: "long_method_incomplete_414", raw: strings.Repeat("A", 5000), status: 414},
		{name: "long_line_before_version_414", raw: "GET /" + strings.Repeat("a", 4090) + " HTTP/1.1\r\n", status: 414},
		{name: "line_at_limit_ok", raw: "GET /" + strings.Repeat("a", 4096-len("GET / HTTP/1.1")) + " HTTP/1.1\r\nHost: h\r\n\r\n", status: statusOK},
		{name: "line_one_over_limit_414", raw: "GET /" + strings.Repeat("a", 4097-len("GET / HTTP/1.1")) + " HTTP/1.1\r\nHost: h\r\n\r\n", status: 414},
		{name: "uri_limit_incomplete", raw: "GET /" + strings.Repeat("a", 20), lim: small, status: 414},
		{name: "uri_at_limit_ok", raw: "GET /" + strings.Repeat("a", 19) + " HTTP/1.1\r\nHost: h\r\n\r\n", lim: small, status: statusOK},
		{name: "header_line_incomplete_413", raw: "GET / HTTP/1.1\r\nX-A: " + strings.Repeat("b", 5000), status: 413},
		{name: "header_name_incomplete_413", raw: "GET / HTTP/1.1\r\n" + strings.Repeat("b", 5000), status: 413},
		{name: "header_line_at_limit_ok", raw: "GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("b", 29) + "\r\n\r\n", lim: small, status: statusOK},
		{name: "header_line_over_limit_413", raw: "GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("b", 30) + "\r\n\r\n", lim: small, status: 413},
		{name: "headers_at_limit_ok", raw: "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n", lim: small, status: statusOK},
		{name: "headers_over_limit_400", raw: "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", lim: small, status: 400},
		{name: "head_incomplete_over_max_400", raw: "GET / HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("A: 1\r\n", 40), lim: &Limits{MaxHead: 100}, status: 400},
		{name: "head_complete_over_max_400", raw: "GET / HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("A: 1\r\n", 14) + "\r\n", lim: &Limits{MaxHead: 100}, status: 400},
		{name: "head_at_max_ok", raw: "GET / HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("A: 1\r\n", 13) + "\r\n", lim: &Limits{MaxHead: 105}, status: statusOK},
		{name: "zero_limits_take_defaults", raw: browserReq, lim: &Limits{}, status: statusOK},
		{name: "xhttp0_connect_path_405_before_target_form", raw: "CONNECT /echo/foo HTTP/1.1\r\nHost: h\r\n\r\n", lim: &Limits{CheckMethods: true}, status: 405},
		{name: "xhttp0_put_405", raw: "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", lim: &Limits{CheckMethods: true}, status: 405},
		{name: "xhttp0_get_ok", raw: "GET / HTTP/1.1\r\nHost: h\r\n\r\n", lim: &Limits{CheckMethods: true}, status: statusOK},
		{name: "xhttp2_put_ok", raw: "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", lim: &Limits{CheckMethods: true, XHTTP: 2}, status: statusOK},
		{name: "unchecked_connect_path_400", raw: "CONNECT /echo/foo HTTP/1.1\r\nHost: h\r\n\r\n", status: 400},
		{name: "incomplete_needs_more", raw: "GET / HTTP/1.1\r\nHost: h\r\n", status: statusIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, _ := answer([]byte(tt.raw), tt.lim); got != tt.status {
				t.Fatalf("status = %d, want %d", got, tt.status)
			}
		})
	}
}

// TestParseRequestEveryPrefix checks that a valid head is never refused
// early: every proper prefix asks for more bytes.
func TestParseRequestEveryPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
	}{
		{name: "browser", raw: browserReq},
		{name: "leading_crlf", raw: "\r\nPOST /p HTTP/1.0\r\nContent-Length: 2\r\n\r\n"},
		{name: "absolute", raw: "GET http://h/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Request
			for n := 0; n < len(tt.raw); n++ {
				if err := ParseRequestHead([]byte(tt.raw[:n]), &r, nil); !errors.Is(err, ErrNeedMore) {
					t.Fatalf("prefix %d (%q): err = %v, want ErrNeedMore", n, tt.raw[:n], err)
				}
			}
			if err := ParseRequestHead([]byte(tt.raw), &r, nil); err != nil || r.HeadLen != len(tt.raw) {
				t.Fatalf("full: err = %v, HeadLen = %d, want nil, %d", err, r.HeadLen, len(tt.raw))
			}
		})
	}
}

func TestParseRequestPipelined(t *testing.T) {
	t.Parallel()
	first := "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"
	second := "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"
	third := "GET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
	buf := []byte(first + "hello" + second + third)
	tests := []struct {
		name     string
		path     string
		headLen  int
		bodyLen  int
		keepOpen bool
	}{
		{name: "first_post_with_body", path: "/a", headLen: len(first), bodyLen: 5, keepOpen: true},
		{name: "second_get", path: "/b", headLen: len(second), keepOpen: true},
		{name: "third_close", path: "/c", headLen: len(third), keepOpen: false},
	}
	var r Request
	off := 0
	for _, tt := range tests {
		if err := ParseRequestHead(buf[off:], &r, nil); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		wantBytes(t, tt.name+" Path", r.Path, tt.path)
		wantInt(t, tt.name+" HeadLen", int64(r.HeadLen), int64(tt.headLen))
		wantBool(t, tt.name+" KeepAlive", r.KeepAlive, tt.keepOpen)
		off += r.HeadLen + tt.bodyLen
	}
	wantInt(t, "consumed", int64(off), int64(len(buf)))
}

func TestIsHopByHop(t *testing.T) {
	t.Parallel()
	raw := "GET / HTTP/1.1\r\nHost: h\r\nConnection: X-Secret, Content-Length, host\r\n" +
		"Connection: x-b\r\nConnection: x-c\r\nConnection: x-d\r\nConnection: x-e\r\n\r\n"
	var r Request
	if err := ParseRequestHead([]byte(raw), &r, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		hdr  string
		want bool
	}{
		{name: "connection", hdr: "Connection", want: true},
		{name: "keep_alive", hdr: "keep-alive", want: true},
		{name: "te", hdr: "TE", want: true},
		{name: "trailer", hdr: "Trailer", want: true},
		{name: "transfer_encoding", hdr: "Transfer-Encoding", want: true},
		{name: "proxy_authorization", hdr: "Proxy-Authorization", want: true},
		{name: "proxy_connection", hdr: "proxy-connection", want: true},
		{name: "upgrade_not_websocket", hdr: "Upgrade", want: true},
		{name: "http2_settings", hdr: "HTTP2-Settings", want: true},
		{name: "listed_in_connection", hdr: "x-secret", want: true},
		{name: "listed_in_fifth_connection_line", hdr: "X-E", want: true},
		{name: "listed_content_length_kept", hdr: "Content-Length", want: false},
		{name: "listed_host_kept", hdr: "Host", want: false},
		{name: "ordinary", hdr: "Accept", want: false},
		{name: "prefix_of_listed", hdr: "X-Secre", want: false},
		{name: "proxy_alone", hdr: "Proxy", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := r.IsHopByHop([]byte(tt.hdr)); got != tt.want {
				t.Fatalf("IsHopByHop(%q) = %v, want %v", tt.hdr, got, tt.want)
			}
		})
	}
}

func TestHeaderValue(t *testing.T) {
	t.Parallel()
	var r Request
	if err := ParseRequestHead([]byte("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\n\r\n"), &r, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		hdr  string
		want string
		nil  bool
	}{
		{name: "first_of_two", hdr: "X-A", want: "1"},
		{name: "case_insensitive", hdr: "HOST", want: "h"},
		{name: "absent", hdr: "X-B", nil: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := r.HeaderValue([]byte(tt.hdr))
			if (got == nil) != tt.nil || string(got) != tt.want {
				t.Fatalf("HeaderValue(%q) = %q (nil %v), want %q (nil %v)", tt.hdr, got, got == nil, tt.want, tt.nil)
			}
		})
	}
}

// TestValueBytesEveryPosition puts each interesting byte at every offset of
// a value, so both the 8-byte fast path of scanValue and its tail see it.
func TestValueBytesEveryPosition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    byte
		ok   bool
	}{
		{name: "nul", b: 0x00},
		{name: "soh", b: 0x01},
		{name: "backspace", b: 0x08},
		{name: "vtab", b: 0x0b},
		{name: "unit_sep", b: 0x1f},
		{name: "del", b: 0x7f},
		{name: "htab", b: '\t', ok: true},
		{name: "space", b: ' ', ok: true},
		{name: "tilde", b: '~', ok: true},
		{name: "obs_text_80", b: 0x80, ok: true},
		{name: "obs_text_ff", b: 0xff, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for pos := 1; pos < 23; pos++ { // pos 0 and 23 would be OWS-trimmed
				v := []byte(strings.Repeat("v", 24))
				v[pos] = tt.b
				raw := "GET / HTTP/1.1\r\nHost: h\r\nX-V: " + string(v) + "\r\n\r\n"
				var r Request
				err := ParseRequestHead([]byte(raw), &r, nil)
				if tt.ok {
					if err != nil || string(r.HeaderValue([]byte("X-V"))) != string(v) {
						t.Fatalf("pos %d: err %v, value %q", pos, err, r.HeaderValue([]byte("X-V")))
					}
					continue
				}
				var e *Error
				if !errors.As(err, &e) || e.Status != 400 {
					t.Fatalf("pos %d: err %v, want 400", pos, err)
				}
			}
		})
	}
}
