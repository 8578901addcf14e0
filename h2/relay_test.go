package h2

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRelay(t *testing.T) {
	tests := []struct {
		name, method, raw string
		closeAfter        bool // the proxy closes after writing raw
		status            int
		body              string
		header            http.Header // must be present
		absent            []string
		trailer           string // "Name: value"
		reuse, fails      bool
	}{
		{name: "content-length", method: "GET",
			raw:    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nConnection: X-Private\r\nX-Private: 1\r\nKeep-Alive: 5\r\n\r\nhello",
			status: 200, body: "hello", header: http.Header{"Set-Cookie": {"a=1", "b=2"}, "Content-Length": {"5"}},
			absent: []string{"X-Private", "Keep-Alive", "Connection"}, reuse: true},
		{name: "HEAD has no body", method: "HEAD", raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
			status: 200, reuse: true},
		{name: "204", method: "GET", raw: "HTTP/1.1 204 No Content\r\n\r\n", status: 204, reuse: true},
		{name: "connection close", method: "GET", raw: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno",
			status: 503, body: "no", reuse: false},
		{name: "chunked with a trailer", method: "GET",
			raw:    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-Sum: 9\r\n\r\n",
			status: 200, body: "abcde", trailer: "X-Sum: 9", absent: []string{"Transfer-Encoding"}, reuse: true},
		{name: "close-delimited", method: "GET", raw: "HTTP/1.0 200 OK\r\n\r\nuntil close", closeAfter: true,
			status: 200, body: "until close", reuse: false},
		{name: "interim 100 is dropped", method: "POST", raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
			status: 201, reuse: true},
		{name: "cut-short body fails", method: "GET", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", closeAfter: true,
			status: 200, fails: true},
		{name: "garbage fails", method: "GET", raw: "SMTP ready\r\n\r\n", closeAfter: true, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			near, far := newPipe()
			defer near.Close()
			go func() {
				io.WriteString(far, tt.raw)
				if tt.closeAfter {
					far.Close()
				}
			}()
			b := &bridge{conn: near, br: bufio.NewReaderSize(near, 4096)}
			rec := httptest.NewRecorder()
			reuse, _, err := b.relay(rec, tt.method)
			if (err != nil) != tt.fails {
				t.Fatalf("relay error %v, want failure %v", err, tt.fails)
			}
			if tt.fails {
				return
			}
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || string(body) != tt.body || reuse != tt.reuse {
				t.Errorf("got %d %q reuse %v, want %d %q reuse %v", res.StatusCode, body, reuse, tt.status, tt.body, tt.reuse)
			}
			for k, v := range tt.header {
				if got := strings.Join(res.Header[k], ","); got != strings.Join(v, ",") {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := res.Header[k]; ok {
					t.Errorf("hop-by-hop %s relayed", k)
				}
			}
			if tt.trailer != "" {
				k, v, _ := strings.Cut(tt.trailer, ": ")
				if res.Trailer.Get(k) != v {
					t.Errorf("trailer %s = %q, want %q", k, res.Trailer.Get(k), v)
				}
			}
		})
	}
}
