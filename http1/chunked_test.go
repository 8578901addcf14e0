package http1

import (
	"errors"
	"strings"
	"testing"
)

// scanAll feeds body to a fresh scanner in pieces of at most step bytes
// (step <= 0: all at once) and returns the bytes consumed, done and error.
func scanAll(body []byte, step int) (int, bool, error) {
	var c ChunkScanner
	total := 0
	for off := 0; off < len(body); {
		end := len(body)
		if step > 0 {
			end = min(off+step, len(body))
		}
		n, done, err := c.Scan(body[off:end])
		total += n
		if err != nil || done {
			return total, done, err
		}
		if n != end-off {
			return total, done, errors.New("scanner stopped early without done or error")
		}
		off = end
	}
	return total, false, nil
}

// chunkCase is a chunked body with its expected Scan result.
type chunkCase struct {
	name string
	body string
	n    int  // bytes of the body; -1: len(body)
	done bool // false with err == nil: incomplete
	err  error
}

var chunkCases = []chunkCase{
	{name: "empty_body", body: "0\r\n\r\n", n: -1, done: true},
	{name: "one_chunk", body: "5\r\nhello\r\n0\r\n\r\n", n: -1, done: true},
	{name: "hex_upper_lower", body: "a\r\n0123456789\r\nA\r\n0123456789\r\n0\r\n\r\n", n: -1, done: true},
	{name: "sixteen_digits", body: "0000000000000005\r\nhello\r\n0\r\n\r\n", n: -1, done: true},
	{name: "extension", body: "5;name=value;flag\r\nhello\r\n0;last\r\n\r\n", n: -1, done: true},
	{name: "extension_quoted", body: "5;n=\"a b;c\"\r\nhello\r\n0\r\n\r\n", n: -1, done: true},
	{name: "bws_before_semicolon", body: "5 \t;x\r\nhello\r\n0\r\n\r\n", n: -1, done: true},
	{name: "trailers", body: "5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-B:\r\n\r\n", n: -1, done: true},
	{name: "next_message_after_body", body: "5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n", n: 15, done: true},
	{name: "incomplete_data", body: "5\r\nhel", n: -1},
	{name: "incomplete_trailer", body: "0\r\nX-A: b\r\n", n: -1},
	{name: "size_0x", body: "0x5\r\nhello\r\n0\r\n\r\n", n: 1, err: errChunkSize},
	{name: "size_plus", body: "+5\r\nhello\r\n0\r\n\r\n", n: 0, err: errChunkSize},
	{name: "size_17_digits", body: "00000000000000005\r\nhello\r\n0\r\n\r\n", n: 16, err: errChunkSize},
	{name: "size_overflow_int64", body: "8000000000000000\r\n", n: 15, err: errChunkSize},
	{name: "size_max_int64", body: "7fffffffffffffff\r\nab", n: -1},
	{name: "size_empty", body: "\r\nhello\r\n0\r\n\r\n", n: 0, err: errChunkSize},
	{name: "size_leading_space", body: " 5\r\nhello\r\n0\r\n\r\n", n: 0, err: errChunkSize},
	{name: "size_trailing_space", body: "5 \r\nhello\r\n0\r\n\r\n", n: 2, err: errChunkSize},
	{name: "size_junk", body: "1Z\r\nh\r\n0\r\n\r\n", n: 1, err: errChunkSize},
	{name: "bare_lf_size_line", body: "5\nhello\r\n0\r\n\r\n", n: 1, err: errChunkSize},
	{name: "bare_cr_size_line", body: "5\rhello\r\n0\r\n\r\n", n: 2, err: errChunkCRLF},
	{name: "bare_lf_in_ext", body: "5;a\nhello\r\n0\r\n\r\n", n: 3, err: errChunkExt},
	{name: "bare_cr_in_ext", body: "5;a\rb\r\nhello\r\n0\r\n\r\n", n: 4, err: errChunkCRLF},
	{name: "nul_in_ext", body: "5;a\x00\r\nhello\r\n0\r\n\r\n", n: 3, err: errChunkExt},
	{name: "ext_too_long", body: "5;" + strings.Repeat("a", MaxChunkLine) + "\r\nhello\r\n0\r\n\r\n", n: MaxChunkLine, err: errChunkLineLong},
	{name: "ext_at_limit", body: "5;" + strings.Repeat("a", MaxChunkLine-2) + "\r\nhello\r\n0\r\n\r\n", n: -1, done: true},
	{name: "runaway_chunk", body: "4\r\nSEE-THIS\r\n0\r\n\r\n", n: 7, err: errChunkRunaway},
	{name: "data_bare_lf", body: "5\r\nhello\n0\r\n\r\n", n: 8, err: errChunkRunaway},
	{name: "data_cr_no_lf", body: "5\r\nhello\rX0\r\n\r\n", n: 9, err: errChunkCRLF},
	{name: "trailer_content_length", body: "0\r\nContent-Length: 50\r\n\r\n", n: 17, err: errTrailerBanned},
	{name: "trailer_host_mixed_case", body: "0\r\nhOsT: evil\r\n\r\n", n: 7, err: errTrailerBanned},
	{name: "trailer_long_name_allowed", body: "0\r\nX-" + strings.Repeat("a", 40) + ": 1\r\n\r\n", n: -1, done: true},
	{name: "trailer_obs_fold", body: "0\r\nX-A: b\r\n c\r\n\r\n", n: 11, err: errTrailer},
	{name: "trailer_space_before_colon", body: "0\r\nX-A : b\r\n\r\n", n: 6, err: errTrailer},
	{name: "trailer_empty_name", body: "0\r\n: b\r\n\r\n", n: 3, err: errTrailer},
	{name: "trailer_nul_value", body: "0\r\nX-A: \x00\r\n\r\n", n: 8, err: errTrailer},
	{name: "trailer_bare_lf", body: "0\r\nX-A: b\n\r\n", n: 9, err: errTrailer},
	{name: "final_bare_lf", body: "0\r\n\n", n: 3, err: errTrailer},
	{name: "final_cr_no_lf", body: "0\r\n\rX", n: 4, err: errChunkCRLF},
	{name: "trailers_too_large", body: "0\r\n" + strings.Repeat("X-A: "+strings.Repeat("b", 95)+"\r\n", 90) + "\r\n", n: 3 + MaxTrailerBytes, err: errTrailerLarge},
}

func TestChunkScanner(t *testing.T) {
	t.Parallel()
	for _, tt := range chunkCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantN := tt.n
			if wantN < 0 {
				wantN = len(tt.body)
			}
			for _, step := range []int{0, 1, 7} {
				n, done, err := scanAll([]byte(tt.body), step)
				if n != wantN || done != tt.done || !errors.Is(err, tt.err) {
					t.Fatalf("step %d: Scan = %d, %v, %v; want %d, %v, %v", step, n, done, err, wantN, tt.done, tt.err)
				}
			}
		})
	}
}

func TestChunkScannerSticky(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		first    string
		second   string
		wantDone bool
		wantErr  error
	}{
		{name: "error_is_sticky", first: "zz", second: "0\r\n\r\n", wantErr: errChunkSize},
		{name: "done_consumes_nothing", first: "0\r\n\r\n", second: "5\r\nhello", wantDone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c ChunkScanner
			c.Scan([]byte(tt.first))
			n, done, err := c.Scan([]byte(tt.second))
			if n != 0 || done != tt.wantDone || !errors.Is(err, tt.wantErr) {
				t.Fatalf("second Scan = %d, %v, %v; want 0, %v, %v", n, done, err, tt.wantDone, tt.wantErr)
			}
			c.Reset()
			if n, done, err := c.Scan([]byte("0\r\n\r\n")); n != 5 || !done || err != nil {
				t.Fatalf("after Reset: Scan = %d, %v, %v; want 5, true, nil", n, done, err)
			}
		})
	}
}

func TestChunkScannerRemainingSkip(t *testing.T) {
	t.Parallel()
	var c ChunkScanner
	tests := []struct {
		name      string
		feed      string
		skip      int64
		skipOK    bool
		remaining int64
	}{
		{name: "before_any_chunk", remaining: 0, skip: 1, skipOK: false},
		{name: "size_line_read", feed: "1000\r\n", remaining: 0x1000, skip: 0x800, skipOK: true},
		{name: "after_skip", remaining: 0x800, skip: 0x801, skipOK: false},
		{name: "negative_skip", remaining: 0x800, skip: -1, skipOK: false},
		{name: "partial_scan", feed: strings.Repeat("x", 0x7ff), remaining: 1, skip: 1, skipOK: true},
		{name: "chunk_end", feed: "\r\n0\r\n\r\n", remaining: 0, skip: 0, skipOK: false},
	}
	for _, tt := range tests {
		// sequential: each row continues the previous one's state
		if tt.feed != "" {
			if _, _, err := c.Scan([]byte(tt.feed)); err != nil {
				t.Fatalf("%s: Scan: %v", tt.name, err)
			}
		}
		if got := c.Remaining(); got != tt.remaining {
			t.Fatalf("%s: Remaining = %d, want %d", tt.name, got, tt.remaining)
		}
		if got := c.Skip(tt.skip); got != tt.skipOK {
			t.Fatalf("%s: Skip(%d) = %v, want %v", tt.name, tt.skip, got, tt.skipOK)
		}
	}
	if _, done, err := c.Scan(nil); !done || err != nil {
		t.Fatalf("final state: done %v, err %v; want true, nil", done, err)
	}
}
