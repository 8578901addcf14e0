package functionaltests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Request trailers through lbd: an HTTP/2 client's trailing HEADERS and
// an HTTP/1.1 client's chunked trailer section reach HTTP/2 backends (the
// frame path and x/net's Transport path) as a trailing HEADERS frame, and
// HTTP/1.1 backends as the trailer section of a chunked body (a request
// that declares Content-Length has its trailers dropped there); a malformed
// trailer block resets the stream and reaches no backend.

// gotRequest is what a recording backend saw of one complete request.
type gotRequest struct {
	frames   string // h2: "HEADERS DATA TRAILERS+END"; h1: the framing
	body     string
	trailers string // "name=value" sorted, comma-separated
}

// frameBackend is a cleartext HTTP/2 backend that records the frames of
// each request it gets complete (END_STREAM), and answers it 200.
func frameBackend(t *testing.T) (port int, got chan gotRequest) {
	got = make(chan gotRequest, 16)
	b := connBackend(t, "127.0.0.1", func(c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		fr.WriteSettings()
		dec := hpack.NewDecoder(4096, nil)
		streams := map[uint32]*gotRequest{}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			var r *gotRequest
			end := false
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
				continue
			case *http2.HeadersFrame:
				fields, err := dec.DecodeFull(f.HeaderBlockFragment())
				if err != nil {
					return
				}
				if r = streams[f.StreamID]; r == nil {
					r = &gotRequest{}
					streams[f.StreamID] = r
					r.frames = "HEADERS"
				} else {
					var tr []string
					for _, h := range fields {
						tr = append(tr, h.Name+"="+h.Value)
					}
					slices.Sort(tr)
					r.trailers = strings.Join(tr, ",")
					r.frames += " TRAILERS"
				}
				end = f.StreamEnded()
			case *http2.DataFrame:
				if r = streams[f.StreamID]; r == nil {
					continue
				}
				r.body += string(f.Data())
				if !strings.HasSuffix(r.frames, " DATA") {
					r.frames += " DATA" // however lbd split the data
				}
				end = f.StreamEnded()
			case *http2.RSTStreamFrame:
				delete(streams, f.StreamID) // never complete
				continue
			default:
				continue
			}
			if !end {
				continue
			}
			r.frames += "+END"
			delete(streams, f.Header().StreamID)
			got <- *r
			var blk bytes.Buffer
			hpack.NewEncoder(&blk).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.Header().StreamID, BlockFragment: blk.Bytes(), EndHeaders: true, EndStream: true})
		}
	})
	_, p, _ := net.SplitHostPort(b.addr)
	fmt.Sscan(p, &port)
	return port, got
}

// goH2Backend is Go's own HTTP/2 server (h2c), recording each request's
// body and trailers (Go keeps the trailers the head announced).
func goH2Backend(t *testing.T) (port int, got chan gotRequest) {
	got = make(chan gotRequest, 16)
	port = h2cBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // incomplete: not recorded
		}
		got <- gotRequest{frames: r.Proto, body: string(body), trailers: headerString(r.Trailer)}
	}))
	return port, got
}

// h1Backend is an HTTP/1.1 backend recording each request's framing
// (Content-Length or chunked), body and trailer section.
func h1Backend(t *testing.T) (*backend, chan gotRequest) {
	got := make(chan gotRequest, 16)
	b := connBackend(t, "127.0.0.1", func(c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return
			}
			framing := fmt.Sprintf("Content-Length %d", req.ContentLength)
			if len(req.TransferEncoding) > 0 {
				framing = strings.Join(req.TransferEncoding, ",")
			}
			got <- gotRequest{frames: framing, body: string(body), trailers: headerString(req.Trailer)}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		}
	})
	return b, got
}

// headerString renders fields as "name=value" sorted, comma-separated,
// lower-case names as on the HTTP/2 wire.
func headerString(h http.Header) string {
	var s []string
	for k, vv := range h {
		for _, v := range vv {
			s = append(s, strings.ToLower(k)+"="+v)
		}
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// trailerLBD starts lbd (h2c beside HTTP/1.1, Client timeout client
// seconds) with a service per backend kind: /frames (raw HTTP/2), /go
// (Go's HTTP/2 server), /h1 (HTTP/1.1).
func trailerLBD(t *testing.T, client int) (lbd *proc, frames, goSrv, h1 chan gotRequest) {
	framePort, frames := frameBackend(t)
	goPort, goSrv := goH2Backend(t)
	h1b, h1 := h1Backend(t)
	service := func(url, backend string) string {
		return fmt.Sprintf("\tService\n\t\tURL %q\n%s\tEnd\n", url, backend)
	}
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nAlive 30\nTimeOut 5\nClient %d\nGrace 1\n", client) +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tHTTP2 1\n" +
		service("^/frames", h2Backend(framePort)) + service("^/go", h2Backend(goPort)) +
		service("^/h1", h1b.block()) + "End\n"
	return startLBD(t, cfg), frames, goSrv, h1
}

func receive(t *testing.T, got chan gotRequest) gotRequest {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the backend got no complete request")
	}
	return gotRequest{}
}

// TestTrailersFromHTTP2Clients: an h2c client's request trailers (Go's
// client: HEADERS, DATA, HEADERS with END_STREAM) reach each kind of
// backend; with a declared Content-Length, HTTP/2 backends only.
func TestTrailersFromHTTP2Clients(t *testing.T) {
	lbd, frames, goSrv, h1 := trailerLBD(t, 10)
	const both = "grpc-extra=a b,x-sum=42"
	tests := []struct {
		name    string
		path    string
		length  bool // the request declares Content-Length
		backend chan gotRequest
		want    gotRequest
	}{
		{"frame path", "/frames", false, frames, gotRequest{"HEADERS DATA TRAILERS+END", "hello", both}},
		{"frame path, Go's server", "/go", false, goSrv, gotRequest{"HTTP/2.0", "hello", both}},
		{"HTTP/1.1 backend: chunked trailer section", "/h1", false, h1, gotRequest{"chunked", "hello", both}},
		{"frame path, declared length", "/frames", true, frames, gotRequest{"HEADERS DATA TRAILERS+END", "hello", both}},
		{"frame path, declared length, Go's server", "/go", true, goSrv, gotRequest{"HTTP/2.0", "hello", both}},
		{"HTTP/1.1 backend, declared length: dropped", "/h1", true, h1, gotRequest{"Content-Length 5", "hello", ""}},
	}
	client := h2cClient()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = io.MultiReader(strings.NewReader("hel"), strings.NewReader("lo")) // length unknown
			if tt.length {
				body = strings.NewReader("hello")
			}
			req, err := http.NewRequest("POST", "http://"+lbd.addr+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Trailer = http.Header{"X-Sum": {"42"}, "Grpc-Extra": {"a b"}}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" {
				t.Errorf("response %s %s", resp.Proto, resp.Status)
			}
			if got := receive(t, tt.backend); got != tt.want {
				t.Errorf("backend got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestTrailersFromHTTP1Clients: an HTTP/1.1 client's chunked trailer
// section reaches HTTP/2 backends as trailing HEADERS (x/net's path),
// whether the body was complete in one read or streamed.
func TestTrailersFromHTTP1Clients(t *testing.T) {
	lbd, frames, goSrv, _ := trailerLBD(t, 10)
	head := "POST %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n"
	tests := []struct {
		name    string
		path    string
		parts   []string // written apart, the body streams
		backend chan gotRequest
		want    gotRequest
	}{
		{"whole", "/frames", []string{head + "3\r\nhel\r\n2\r\nlo\r\n0\r\nX-Sum: 42\r\nGrpc-Extra:  a b \r\n\r\n"},
			frames, gotRequest{"HEADERS DATA TRAILERS+END", "hello", "grpc-extra=a b,x-sum=42"}},
		{"streamed", "/frames", []string{head + "3\r\nhel\r\n", "2\r\nlo\r\n", "0\r\nX-Sum: 42\r\n\r\n"},
			frames, gotRequest{"HEADERS DATA TRAILERS+END", "hello", "x-sum=42"}},
		{"trailers only", "/frames", []string{head + "0\r\nX-Sum: 0\r\n\r\n"},
			frames, gotRequest{"HEADERS TRAILERS+END", "", "x-sum=0"}},
		{"no trailers", "/frames", []string{head + "5\r\nhello\r\n0\r\n\r\n"},
			frames, gotRequest{"HEADERS DATA+END", "hello", ""}},
		{"Go's server, streamed", "/go", []string{head + "3\r\nhel\r\n", "2\r\nlo\r\n0\r\nX-Sum: 42\r\n\r\n"},
			goSrv, gotRequest{"HTTP/2.0", "hello", "x-sum=42"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", lbd.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			for i, p := range tt.parts {
				if i == 0 {
					p = fmt.Sprintf(p, tt.path)
				} else {
					time.Sleep(20 * time.Millisecond) // so that lbd reads it apart
				}
				if _, err := io.WriteString(c, p); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("status %s", resp.Status)
			}
			if got := receive(t, tt.backend); got != tt.want {
				t.Errorf("backend got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestTrailersMalformed: a trailer block HTTP/2 or lbd's HTTP/1.1 rules
// forbid resets the client's stream (PROTOCOL_ERROR); no backend gets
// the request complete: the next request a backend completes is the
// good one sent after it.
func TestTrailersMalformed(t *testing.T) {
	lbd, frames, _, h1 := trailerLBD(t, 10)
	post := func(path string) []string {
		return []string{":method", "POST", ":scheme", "http", ":path", path, ":authority", "t"}
	}
	tests := []struct {
		name    string
		trailer []string
	}{
		{"pseudo-header", []string{":path", "/x"}},
		{"connection-specific", []string{"connection", "close"}},
		{"framing", []string{"content-length", "2"}},
		{"credentials", []string{"authorization", "Basic eDp5"}},
		{"upper-case name", []string{"X-Sum", "1"}},
		{"over 8 KiB", []string{"x-big", strings.Repeat("b", 9<<10)}},
	}
	for _, tt := range tests {
		for _, be := range []struct {
			path string
			got  chan gotRequest
		}{{"/frames", frames}, {"/h1", h1}} {
			t.Run(tt.name+" "+be.path, func(t *testing.T) {
				if got := rawH2cTrailers(t, lbd.addr, post(be.path), "ab", tt.trailer); got != "reset PROTOCOL_ERROR" {
					t.Errorf("client got %q, want reset PROTOCOL_ERROR", got)
				}
				if got := rawH2cTrailers(t, lbd.addr, post(be.path+"/good"), "ok", []string{"x-sum", "1"}); got != "200" {
					t.Errorf("good request: %q", got)
				}
				if got := receive(t, be.got); got.body != "ok" || got.trailers != "x-sum=1" {
					t.Errorf("backend got %+v first, want the good request", got)
				}
			})
		}
	}
}

// TestTrailersWaitIsBounded: a request whose body reached its declared
// length on a stream the client keeps open is ended for the backend
// without trailers once the listener's Client timeout has passed.
func TestTrailersWaitIsBounded(t *testing.T) {
	lbd, frames, _, _ := trailerLBD(t, 1)
	c, err := net.Dial("tcp", lbd.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/frames"}, {":authority", "t"}, {"content-length", "2"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr := http2.NewFramer(c, c)
	io.WriteString(c, http2.ClientPreface)
	fr.WriteSettings()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndHeaders: true})
	fr.WriteData(1, false, []byte("ok")) // all of the body; the stream stays open
	start := time.Now()
	got := receive(t, frames)
	if got != (gotRequest{"HEADERS DATA+END", "ok", ""}) {
		t.Errorf("backend got %+v", got)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("ended after %v, before the Client timeout of 1 s", waited)
	}
}

// rawH2cTrailers sends HEADERS, DATA and a trailer block (END_STREAM)
// on a fresh h2c connection and returns the response status or "reset
// CODE".
func rawH2cTrailers(t *testing.T, addr string, fields []string, data string, trailer []string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	encode := func(enc *hpack.Encoder, buf *bytes.Buffer, kv []string) []byte {
		buf.Reset()
		for i := 0; i+1 < len(kv); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return append([]byte(nil), buf.Bytes()...)
	}
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	fr := http2.NewFramer(c, c)
	io.WriteString(c, http2.ClientPreface)
	fr.WriteSettings()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: encode(enc, &buf, fields), EndHeaders: true})
	fr.WriteData(1, false, []byte(data))
	writeBlock(fr, 1, encode(enc, &buf, trailer))
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return "error " + err.Error()
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame:
			return "reset " + f.ErrCode.String()
		case *http2.GoAwayFrame:
			return "goaway " + f.ErrCode.String()
		case *http2.HeadersFrame:
			hf, _ := dec.DecodeFull(f.HeaderBlockFragment())
			for _, h := range hf {
				if h.Name == ":status" {
					return h.Value
				}
			}
		}
	}
}

// writeBlock writes a header block ending stream id: HEADERS, then
// CONTINUATION frames for what exceeds the default frame size.
func writeBlock(fr *http2.Framer, id uint32, blk []byte) {
	n := min(len(blk), 16384)
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk[:n], EndHeaders: n == len(blk), EndStream: true})
	for blk = blk[n:]; len(blk) > 0; blk = blk[n:] {
		n = min(len(blk), 16384)
		fr.WriteContinuation(id, n == len(blk), blk[:n])
	}
}
