package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"lbd/http1"
)

// TestDechunkerKeepsTrailers: the data and the trailer lines of a
// chunked body come out the same whatever pieces it arrives in.
func TestDechunkerKeepsTrailers(t *testing.T) {
	tests := []struct {
		name, body, data, trailer string
	}{
		{"no trailers", "3\r\nabc\r\n0\r\n\r\n", "abc", ""},
		{"two fields", "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-A: 1\r\nGrpc-Extra:  b \r\n\r\n", "abcde", "X-A: 1\r\nGrpc-Extra:  b \r\n"},
		{"empty body with a trailer", "0\r\nX-Sum: 0\r\n\r\n", "", "X-Sum: 0\r\n"},
	}
	for _, tt := range tests {
		for piece := 1; piece <= len(tt.body); piece++ {
			d := dechunker{keepTrailer: true}
			var data []byte
			for i := 0; i < len(tt.body); i += piece {
				data = d.decode(data, []byte(tt.body[i:min(i+piece, len(tt.body))]))
			}
			if string(data) != tt.data || string(d.trailer) != tt.trailer || d.state != dcDone {
				t.Errorf("%s, pieces of %d: data %q trailer %q state %d", tt.name, piece, data, d.trailer, d.state)
			}
		}
		d := dechunker{} // the WAF's and the cache's keep none
		d.decode(nil, []byte(tt.body))
		if d.trailer != nil {
			t.Errorf("%s: trailer kept without keepTrailer", tt.name)
		}
	}
}

// TestTrailerFields: a trailer section's lines as HTTP/2 request fields.
func TestTrailerFields(t *testing.T) {
	tests := []struct {
		name  string
		lines string
		want  http.Header
	}{
		{"fields", "X-Sum: 42\r\nGrpc-Extra:\t a b \r\n", http.Header{"X-Sum": {"42"}, "Grpc-Extra": {"a b"}}},
		{"repeated", "X-A: 1\r\nX-A: 2\r\n", http.Header{"X-A": {"1", "2"}}},
		{"fields HTTP/2 forbids are left out", "Proxy-Connection: close\r\nX-A: 1\r\nExpect: 100-continue\r\n", http.Header{"X-A": {"1"}}},
		{"none", "", http.Header{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			fillTrailer(h, []byte(tt.lines))
			if !reflect.DeepEqual(h, tt.want) {
				t.Errorf("got %v, want %v", h, tt.want)
			}
			n := 0
			forEachTrailer([]byte(tt.lines), func(name, value []byte) { n++ })
			if n != countValues(tt.want) {
				t.Errorf("forEachTrailer gave %d fields, want %d", n, countValues(tt.want))
			}
		})
	}
}

func countValues(h http.Header) int {
	n := 0
	for _, vv := range h {
		n += len(vv)
	}
	return n
}

// FuzzDechunkerTrailer: for any chunked body http1.ChunkScanner accepts
// whole, the dechunker gives the data and trailer fields Go's own
// HTTP/1.1 reader finds, in one piece or two.
func FuzzDechunkerTrailer(f *testing.F) {
	for _, s := range []string{
		"3\r\nabc\r\n0\r\n\r\n",
		"3\r\nabc\r\n0\r\nX-Sum: 42\r\nGrpc-Extra:  a b \r\n\r\n",
		"1;a=b\r\nx\r\n0\r\nX-A: 1\r\nX-A: 2\r\n\r\n",
		"0\r\nX-Sum: 0\r\n\r\n",
	} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, body []byte, cut int) {
		var sc http1.ChunkScanner
		n, done, err := sc.Scan(body)
		if err != nil || !done {
			return
		}
		body = body[:n]
		cut = max(0, min(cut, n))
		d := dechunker{keepTrailer: true}
		data := d.decode(d.decode(nil, body[:cut]), body[cut:])
		req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(
			strings.NewReader("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"), bytes.NewReader(body))))
		if err != nil {
			t.Fatal(err)
		}
		want, err := io.ReadAll(req.Body)
		if err != nil {
			return // Go refuses what lbd takes (its own limits): nothing to compare
		}
		got := http.Header{}
		fillTrailer(got, d.trailer)
		for k := range req.Trailer {
			if hopByHopH2(k) {
				delete(req.Trailer, k) // left out for HTTP/2
			}
		}
		if !bytes.Equal(data, want) || d.state != dcDone || !reflect.DeepEqual(got, req.Trailer) && len(got)+len(req.Trailer) > 0 {
			t.Errorf("data %q trailer %v, Go's reader: %q %v", data, got, want, req.Trailer)
		}
	})
}
