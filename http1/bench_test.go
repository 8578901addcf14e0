package http1

import (
	"strconv"
	"strings"
	"testing"
)

// twentyHeaderReq is a POST with 20 header fields, as an API client or a
// proxy chain (X-Forwarded-*, tracing) sends.
var twentyHeaderReq = func() string {
	var b strings.Builder
	b.WriteString("POST /api/v2/orders/12345/items?expand=all HTTP/1.1\r\nHost: api.example.com\r\n")
	for i := 0; i < 18; i++ {
		b.WriteString("X-Custom-Header-" + strconv.Itoa(i) + ": value-" + strconv.Itoa(i*7919) + "-abcdefghij\r\n")
	}
	b.WriteString("Content-Length: 42\r\n\r\n")
	return b.String()
}()

// chunkedBody64K is a 64 KiB payload in 8 KiB chunks plus one odd chunk
// with an extension, then a trailer.
var chunkedBody64K = func() []byte {
	var b strings.Builder
	payload := strings.Repeat("x", 8<<10)
	for i := 0; i < 8; i++ {
		b.WriteString("2000\r\n" + payload + "\r\n")
	}
	b.WriteString("3;ext=1\r\nabc\r\n0\r\nX-Checksum: 1\r\n\r\n")
	return []byte(b.String())
}()

func TestZeroAllocs(t *testing.T) {
	tests := []struct {
		name string
		run  func()
	}{
		{name: "request_browser", run: func() {
			var r Request
			buf := []byte(browserReq)
			_ = ParseRequestHead(buf, &r, nil) // warm: grow Headers once
			allocs := testing.AllocsPerRun(100, func() { _ = ParseRequestHead(buf, &r, nil) })
			assertZero(t, allocs)
		}},
		{name: "request_20_headers", run: func() {
			var r Request
			buf := []byte(twentyHeaderReq)
			_ = ParseRequestHead(buf, &r, nil)
			allocs := testing.AllocsPerRun(100, func() { _ = ParseRequestHead(buf, &r, nil) })
			assertZero(t, allocs)
		}},
		{name: "request_refused", run: func() {
			var r Request
			buf := []byte(post + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n")
			_ = ParseRequestHead(buf, &r, nil)
			allocs := testing.AllocsPerRun(100, func() { _ = ParseRequestHead(buf, &r, nil) })
			assertZero(t, allocs)
		}},
		{name: "request_hop_by_hop_and_lookup", run: func() {
			var r Request
			buf := []byte(browserReq)
			_ = ParseRequestHead(buf, &r, nil)
			name := []byte("Cookie")
			allocs := testing.AllocsPerRun(100, func() {
				for k := range r.Headers {
					_ = r.IsHopByHop(r.Headers[k].Name)
				}
				_ = r.HeaderValue(name)
				_, _ = LookupMethod(r.Method)
			})
			assertZero(t, allocs)
		}},
		{name: "response", run: func() {
			var r Response
			buf := []byte(typicalResp)
			_ = ParseResponseHead(buf, &r, false)
			allocs := testing.AllocsPerRun(100, func() { _ = ParseResponseHead(buf, &r, false) })
			assertZero(t, allocs)
		}},
		{name: "chunk_scan", run: func() {
			var c ChunkScanner
			allocs := testing.AllocsPerRun(100, func() {
				c.Reset()
				_, _, _ = c.Scan(chunkedBody64K)
			})
			assertZero(t, allocs)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run() })
	}
}

func assertZero(t *testing.T, allocs float64) {
	t.Helper()
	if allocs != 0 {
		t.Fatalf("allocs per run = %v, want 0", allocs)
	}
}

func benchRequest(b *testing.B, raw string) {
	buf := []byte(raw)
	var r Request
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if err := ParseRequestHead(buf, &r, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRequestBrowser(b *testing.B) { benchRequest(b, browserReq) }

func BenchmarkParseRequest20Headers(b *testing.B) { benchRequest(b, twentyHeaderReq) }

func BenchmarkParseResponseHead(b *testing.B) {
	buf := []byte(typicalResp)
	var r Response
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if err := ParseResponseHead(buf, &r, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChunkScan64K(b *testing.B) {
	var c ChunkScanner
	b.ReportAllocs()
	b.SetBytes(int64(len(chunkedBody64K)))
	for b.Loop() {
		c.Reset()
		// 16 KiB reads, as a proxy's read buffer would deliver them
		for off := 0; off < len(chunkedBody64K); off += 16 << 10 {
			if _, _, err := c.Scan(chunkedBody64K[off:min(off+16<<10, len(chunkedBody64K))]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
