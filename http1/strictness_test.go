package http1

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// statusOK and statusIncomplete are the pseudo statuses of answer().
const (
	statusOK         = 200
	statusIncomplete = -1
)

// answer runs raw through the request parser and, for a chunked request,
// the chunk scanner, and returns what the proxy would do: an error status,
// statusOK, or statusIncomplete.
func answer(raw []byte, lim *Limits) (int, *Request) {
	req := &Request{}
	err := ParseRequestHead(raw, req, lim)
	if errors.Is(err, ErrNeedMore) {
		return statusIncomplete, req
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status, req
	}
	if err != nil {
		panic(err)
	}
	if req.Chunked {
		var cs ChunkScanner
		_, done, err := cs.Scan(raw[req.HeadLen:])
		if err != nil {
			return 400, req
		}
		if !done {
			return statusIncomplete, req
		}
	}
	return statusOK, req
}

const post = "POST / HTTP/1.1\r\nHost: a\r\n"

// strictnessCase is one row of http-strictness.md A2.1, numbered as there.
type strictnessCase struct {
	name   string
	raw    string
	status int
	check  func(t *testing.T, r *Request)
}

var strictnessCases = []strictnessCase{
	{name: "01_cl_te", raw: post + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", status: 400},
	{name: "02_te_cl", raw: post + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", status: 400},
	{name: "03_two_cl_different", raw: post + "Content-Length: 0\r\nContent-Length: 5\r\n\r\nhello", status: 400},
	{name: "04_two_cl_same", raw: post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", status: 400},
	{name: "05_cl_list", raw: post + "Content-Length: 5, 5\r\n\r\nhello", status: 400},
	{name: "06a_cl_plus", raw: post + "Content-Length: +5\r\n\r\nhello", status: 400},
	{name: "06b_cl_negative", raw: post + "Content-Length: -1\r\n\r\n", status: 400},
	{name: "06c_cl_hex", raw: post + "Content-Length: 0x5\r\n\r\nhello", status: 400},
	{name: "06d_cl_empty", raw: post + "Content-Length: \r\n\r\n", status: 400},
	{name: "06e_cl_junk", raw: post + "Content-Length: 1Z\r\n\r\n", status: 400},
	{name: "06f_cl_overflow", raw: post + "Content-Length: 99999999999999999999\r\n\r\n", status: 400},
	{name: "07_cl_leading_zeros", raw: post + "Content-Length: 005\r\n\r\nhello", status: statusOK,
		check: func(t *testing.T, r *Request) { wantInt(t, "ContentLength", r.ContentLength, 5) }},
	{name: "08a_te_xchunked_with_cl", raw: post + "Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\nhello", status: 501},
	{name: "08b_te_identity", raw: post + "Transfer-Encoding: identity\r\n\r\n", status: 501},
	{name: "09_te_space_before_colon", raw: post + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", status: 400},
	{name: "10_te_chunked_chunked", raw: post + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", status: 400},
	{name: "11_te_gzip_chunked", raw: post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", status: 501},
	{name: "12_te_chunked_not_last", raw: post + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", status: 400},
	{name: "13_two_te_lines", raw: post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400},
	{name: "14a_te_in_http10", raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400},
	{name: "14b_te_in_http10_keepalive", raw: "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", status: 400},
	{name: "15a_te_empty", raw: post + "Transfer-Encoding: \r\n\r\n", status: 400},
	{name: "15b_te_leading_comma", raw: post + "Transfer-Encoding: ,chunked\r\n\r\n0\r\n\r\n", status: 400},
	{name: "15c_te_vtab", raw: post + "Transfer-Encoding: chunked\x0b\r\n\r\n0\r\n\r\n", status: 400},
	{name: "16_obs_fold_te", raw: post + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", status: 400},
	{name: "17_obs_fold_other", raw: post + "X-A: b\r\n c\r\nContent-Length: 0\r\n\r\n", status: 400},
	{name: "18a_bare_lf_headers", raw: "GET / HTTP/1.1\nHost: a\n\n", status: 400},
	{name: "18b_bare_lf_header_line", raw: "GET / HTTP/1.1\r\nHost: a\n\r\n", status: 400},
	{name: "19_bare_cr_in_value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n", status: 400},
	{name: "20_nul_in_value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n", status: 400},
	{name: "21a_bad_name_byte", raw: "GET / HTTP/1.1\r\nHost: a\r\nX@A: b\r\n\r\n", status: 400},
	{name: "21b_empty_name", raw: "GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", status: 400},
	{name: "21c_no_colon", raw: "GET / HTTP/1.1\r\nHost: a\r\nXA b\r\n\r\n", status: 400},
	{name: "22_whitespace_led_first_header", raw: "GET / HTTP/1.1\r\n Host: a\r\n\r\n", status: 400},
	{name: "23a_missing_host", raw: "GET / HTTP/1.1\r\n\r\n", status: 400},
	{name: "23b_two_hosts", raw: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400},
	{name: "23c_invalid_host", raw: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", status: 400},
	{name: "24_absolute_form_host_differs", raw: "GET http://a.example:8080/x?y=1 HTTP/1.1\r\nHost: b.example\r\n\r\n", status: statusOK,
		check: func(t *testing.T, r *Request) {
			wantBytes(t, "Host", r.Host, "a.example:8080")
			wantBytes(t, "Path", r.Path, "/x")
			wantBytes(t, "Query", r.Query, "y=1")
			wantBool(t, "AbsoluteForm", r.AbsoluteForm, true)
		}},
	{name: "25a_chunk_size_0x", raw: post + "Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", status: 400},
	{name: "25b_chunk_size_plus", raw: post + "Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", status: 400},
	{name: "25c_chunk_size_19_digits", raw: post + "Transfer-Encoding: chunked\r\n\r\n0000000000000000005\r\nhello\r\n0\r\n\r\n", status: 400},
	{name: "25d_chunk_size_empty", raw: post + "Transfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n", status: 400},
	{name: "26_runaway_chunk", raw: post + "Transfer-Encoding: chunked\r\n\r\n4\r\nSEE-THIS\r\n0\r\n\r\n", status: 400},
	{name: "27a_bare_lf_chunk_line", raw: post + "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", status: 400},
	{name: "27b_bare_cr_chunk_ext", raw: post + "Transfer-Encoding: chunked\r\n\r\n5;a\rb\r\nhello\r\n0\r\n\r\n", status: 400},
	{name: "28_chunk_ext_64k", raw: post + "Transfer-Encoding: chunked\r\n\r\n5;" + strings.Repeat("a", 64<<10) + "\r\nhello\r\n0\r\n\r\n", status: 400},
	{name: "29_trailer_content_length", raw: post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 50\r\n\r\n", status: 400},
	{name: "30a_double_space", raw: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "30b_tab_separator", raw: "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "30c_http09", raw: "GET /\r\n\r\n", status: 400},
	{name: "30d_http_1_32", raw: "GET / HTTP/1.32\r\nHost: a\r\n\r\n", status: 400},
	{name: "30e_lowercase_proto", raw: "GET / http/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "31_http20_on_h1", raw: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", status: 400},
	{name: "32_method_not_token", raw: "G=T / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "33_h2c_upgrade", raw: "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n", status: statusOK,
		check: func(t *testing.T, r *Request) {
			wantBool(t, "Upgrade", r.Upgrade, false)
			for _, h := range []string{"Upgrade", "HTTP2-Settings", "Connection"} {
				wantBool(t, "IsHopByHop("+h+")", r.IsHopByHop([]byte(h)), true)
			}
		}},
	{name: "34_h2_preface", raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: 400},
	{name: "35_fragment", raw: "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "36_raw_non_ascii_uri", raw: "GET /\xffa HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "37_ctl_in_uri", raw: "GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "38_get_with_cl_body", raw: "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", status: statusOK,
		check: func(t *testing.T, r *Request) {
			wantInt(t, "ContentLength", r.ContentLength, 5)
			wantInt(t, "BodyKind", int64(r.BodyKind()), int64(BodyLength))
		}},
	{name: "39_invalid_then_pipelined", raw: "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\nGET /admin HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	{name: "40_100k_uri", raw: "GET /" + strings.Repeat("a", 100_000) + " HTTP/1.1\r\nHost: a\r\n\r\n", status: 414},
	{name: "41_5000_headers", raw: "GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: b\r\n", 5000) + "\r\n", status: 400},
	{name: "42_2mib_header", raw: "GET / HTTP/1.1\r\nHost: a\r\nX-A: " + strings.Repeat("b", 2<<20) + "\r\n\r\n", status: 413},
	{name: "43_unknown_expect", raw: "GET / HTTP/1.1\r\nHost: a\r\nExpect: foo\r\n\r\n", status: 417},
}

// TestStrictnessTable is http-strictness.md A2.1, one named row (or a few
// lettered rows) per case, answered as its "Strict proxy" column says, with
// Pound 4's status where it names one.
func TestStrictnessTable(t *testing.T) {
	t.Parallel()
	for _, tt := range strictnessCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, req := answer([]byte(tt.raw), nil)
			if got != tt.status {
				t.Fatalf("status = %d, want %d", got, tt.status)
			}
			if tt.check != nil {
				tt.check(t, req)
			}
		})
	}
}

func wantInt(t *testing.T, field string, got, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", field, got, want)
	}
}

func wantBool(t *testing.T, field string, got, want bool) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", field, got, want)
	}
}

func wantBytes(t *testing.T, field string, got []byte, want string) {
	t.Helper()
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("%s = %q, want %q", field, got, want)
	}
}
