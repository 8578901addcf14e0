package functionaltests

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a raw backend that records every byte it receives and
// answers each request it can parse with a small 200.
type recorder struct {
	ln  net.Listener
	mu  sync.Mutex
	got bytes.Buffer
}

func startRecorder(t *testing.T) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *recorder) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(io.TeeReader(c, r))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got.Write(p)
}

func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.got.String()
	r.got.Reset()
	return s
}

// TestStrictness sends each malformed or borderline request of
// shared/spec/http-strictness.md §A2.1 through the real proxy and checks
// the status, whether the connection closed, and what the backend saw.
func TestStrictness(t *testing.T) {
	rec := startRecorder(t)
	p := startLBD(t, oneService(&backend{addr: rec.ln.Addr().String()}))
	const h = "Host: x\r\n"
	rows := []struct {
		name    string
		req     string
		status  int
		closed  bool
		backend string // substring the backend must have seen; "" = nothing at all
	}{
		{"1 CL.TE", "POST / HTTP/1.1\r\n" + h + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", 400, true, ""},
		{"2 TE.CL", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\nG", 400, true, ""},
		{"3 two CL differ", "POST / HTTP/1.1\r\n" + h + "Content-Length: 0\r\nContent-Length: 5\r\n\r\nhello", 400, true, ""},
		{"4 two CL same", "POST / HTTP/1.1\r\n" + h + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400, true, ""},
		{"5 CL list", "POST / HTTP/1.1\r\n" + h + "Content-Length: 5, 5\r\n\r\nhello", 400, true, ""},
		{"6 CL plus", "POST / HTTP/1.1\r\n" + h + "Content-Length: +5\r\n\r\nhello", 400, true, ""},
		{"7 CL leading zeros", "POST / HTTP/1.1\r\n" + h + "Content-Length: 005\r\n\r\nhello", 200, false, "hello"},
		{"8 TE identity", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding: identity\r\n\r\n", 501, true, ""},
		{"9 space before colon", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400, true, ""},
		{"10 chunked twice", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400, true, ""},
		{"12 chunked not last", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400, true, ""},
		{"13 two TE lines", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true, ""},
		{"14 TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true, ""},
		{"16 obs-fold TE", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", 400, true, ""},
		{"18 bare LF", "GET / HTTP/1.1\n" + "Host: x\n\n", 400, true, ""},
		{"19 bare CR in value", "GET / HTTP/1.1\r\n" + h + "X-A: a\rb\r\n\r\n", 400, true, ""},
		{"20 NUL in value", "GET / HTTP/1.1\r\n" + h + "X-A: a\x00b\r\n\r\n", 400, true, ""},
		{"21 bad name byte", "GET / HTTP/1.1\r\n" + h + "X@A: b\r\n\r\n", 400, true, ""},
		{"22 whitespace-led line", "GET / HTTP/1.1\r\n X-A: b\r\n" + h + "\r\n", 400, true, ""},
		{"23 missing Host", "GET / HTTP/1.1\r\n\r\n", 400, true, ""},
		{"23 two Host", "GET / HTTP/1.1\r\n" + h + h + "\r\n", 400, true, ""},
		{"25 chunk size 0x5", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400, true, ""},
		{"26 runaway chunk", "POST / HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\n\r\n4\r\nSEE-THIS\r\n0\r\n\r\n", 400, true, ""},
		{"30 double space", "GET  / HTTP/1.1\r\n" + h + "\r\n", 400, true, ""},
		{"30 lower-case version", "GET / http/1.1\r\n" + h + "\r\n", 400, true, ""},
		{"32 bad method", "G=T / HTTP/1.1\r\n" + h + "\r\n", 400, true, ""},
		{"33 h2c upgrade stripped", "GET / HTTP/1.1\r\n" + h + "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n", 200, false, "GET / HTTP/1.1"},
		{"34 PRI preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, true, ""},
		{"35 fragment", "GET /a#b HTTP/1.1\r\n" + h + "\r\n", 400, true, ""},
		{"36 raw non-ASCII", "GET /\xffa HTTP/1.1\r\n" + h + "\r\n", 400, true, ""},
		{"39 garbage then pipelined", "GET / HTTP/9.9\r\n" + h + "\r\nGET /second HTTP/1.1\r\n" + h + "\r\n", 400, true, ""},
		{"40 100KB URI", "GET /" + strings.Repeat("a", 100<<10) + " HTTP/1.1\r\n" + h + "\r\n", 414, true, ""},
		{"41 too many headers", "GET / HTTP/1.1\r\n" + h + strings.Repeat("X-A: b\r\n", 150) + "\r\n", 400, true, ""},
		{"42 header line too long", "GET / HTTP/1.1\r\n" + h + "X-A: " + strings.Repeat("b", 5000) + "\r\n\r\n", 413, true, ""},
		{"43 unknown expect", "GET / HTTP/1.1\r\n" + h + "Expect: foo\r\n\r\n", 417, true, ""},
		{"38 GET with body forwarded", "GET / HTTP/1.1\r\n" + h + "Content-Length: 3\r\n\r\nabc", 200, false, "abc"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			rec.take()
			raw, closed := rawExchange(t, p.addr, []byte(row.req), 700*time.Millisecond)
			if got := statusOf(raw); got != row.status {
				t.Errorf("status %d, want %d (raw %.120q)", got, row.status, raw)
			}
			if closed != row.closed {
				t.Errorf("closed=%v, want %v", closed, row.closed)
			}
			saw := rec.take()
			switch {
			case row.backend == "" && saw != "":
				t.Errorf("backend saw %q, want nothing", saw)
			case row.backend != "" && !strings.Contains(saw, row.backend):
				t.Errorf("backend saw %q, want it to contain %q", saw, row.backend)
			}
			if strings.Contains(row.name, "h2c") && (strings.Contains(strings.ToLower(saw), "upgrade") || strings.Contains(strings.ToLower(saw), "http2-settings")) {
				t.Errorf("h2c upgrade headers reached the backend: %q", saw)
			}
		})
	}
}
