package h2

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The process's one set of parked sockets (package idlewait) lives as
// long as the process, as the runtime's poller does.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("lbd/internal/idlewait.(*Set).loop"), goleak.IgnoreAnyFunction("lbd/internal/idlewait.(*Set).handBack"))
}

// recorder is a fake proxy: it answers every HTTP/1.1 request on a
// vconn with 200 and records what reached it.
type recorder struct {
	mu   sync.Mutex
	seen []string
	bad  int // requests that did not parse (not counting cut-off ones)
	wg   sync.WaitGroup
}

func (rec *recorder) handoff(c net.Conn) bool {
	return serveFake(&rec.wg, c, func(req *http.Request, err error) bool {
		if err != nil {
			if !cutOff(err) {
				rec.mu.Lock()
				rec.bad++
				rec.mu.Unlock()
			}
			return false
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return false // a truncated body never counts as a request
		}
		rec.mu.Lock()
		seen := fmt.Sprintf("%s %s %q", req.Method, req.RequestURI, body)
		for _, k := range slices.Sorted(maps.Keys(req.Trailer)) {
			seen += fmt.Sprintf(" %s=%q", k, req.Trailer[k]) // a chunked body's trailer section
		}
		if t := c.(*vconn).RequestTrailer(time.Second); len(t) > 0 {
			seen += fmt.Sprintf(" length-trailer=%q", t) // a body with a length: on the side
		}
		rec.seen = append(rec.seen, seen)
		rec.mu.Unlock()
		_, err = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nX-Extra: 1\r\n\r\nok")
		return err == nil
	})
}

// serveFake plays the engine on a vconn: it reads HTTP/1.1 requests and
// lets answer respond to each (or see the read error) until it says stop.
func serveFake(wg *sync.WaitGroup, c net.Conn, answer func(*http.Request, error) bool) bool {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if !answer(req, err) || err != nil {
				return
			}
		}
	}()
	return true
}

// cutOff tells an exchange ended by the connection or a reset from a
// request that arrived malformed.
func cutOff(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, errStreamGone) || errors.Is(err, errConnClosed)
}

func (rec *recorder) requests() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.seen...)
}

// h2conn is a raw HTTP/2 client over an in-memory connection, so tests
// can send what well-behaved clients never would.
type h2conn struct {
	t      *testing.T
	done   chan struct{} // closed when ServeConn returned
	c      net.Conn
	fr     *http2.Framer
	enc    *hpack.Encoder
	buf    bytes.Buffer
	writes chan func() // run in order by one goroutine: the pipe is synchronous
}

func dialRaw(t *testing.T, s *Server, settings ...http2.Setting) *h2conn {
	cl, sv := net.Pipe()
	done := make(chan struct{})
	go func() { s.ServeConn(sv); close(done) }()
	t.Cleanup(func() { cl.Close(); <-done })
	hc := &h2conn{t: t, c: cl, done: done, fr: http2.NewFramer(cl, cl), writes: make(chan func(), 8)}
	hc.enc = hpack.NewEncoder(&hc.buf)
	cl.SetDeadline(time.Now().Add(5 * time.Second))
	go func() {
		for w := range hc.writes {
			w()
		}
	}()
	t.Cleanup(func() { close(hc.writes) })
	hc.writes <- func() {
		io.WriteString(cl, http2.ClientPreface)
		hc.fr.WriteSettings(settings...)
	}
	return hc
}

// send writes one request: fields in order ("name", "value" pairs) and
// optional DATA; END_STREAM goes on the last frame.
func (hc *h2conn) send(id uint32, fields []string, data string) {
	hc.buf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		hc.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	block := append([]byte(nil), hc.buf.Bytes()...)
	hc.writes <- func() {
		hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true, EndStream: data == ""})
		if data != "" {
			hc.fr.WriteData(id, true, []byte(data))
		}
	}
}

// sendFrames writes HEADERS (unless fields is empty), then each DATA
// payload, then END_STREAM: on the last DATA frame, or on a trailer
// block of the trailer fields (name, value pairs) when there are any.
// With no frames the stream stays open.
func (hc *h2conn) sendFrames(id uint32, fields []string, frames []string, trailer ...string) {
	hc.buf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		hc.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	block := append([]byte(nil), hc.buf.Bytes()...)
	var tblock []byte // nil: no trailer block
	if trailer != nil {
		hc.buf.Reset()
		for i := 0; i+1 < len(trailer); i += 2 {
			hc.enc.WriteField(hpack.HeaderField{Name: trailer[i], Value: trailer[i+1]})
		}
		tblock = append([]byte{}, hc.buf.Bytes()...)
	}
	hc.writes <- func() {
		if len(fields) > 0 {
			hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
		}
		for i, d := range frames {
			hc.fr.WriteData(id, i == len(frames)-1 && tblock == nil, []byte(d))
		}
		if tblock != nil {
			hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: tblock, EndHeaders: true, EndStream: true})
		}
	}
}

// outcome reads frames until stream id gets a response status or a
// reset, answering the server's SETTINGS on the way.
func (hc *h2conn) outcome(id uint32) string {
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			return "error: " + err.Error()
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				hc.writes <- func() { hc.fr.WriteSettingsAck() }
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return "reset " + f.ErrCode.String()
			}
		case *http2.GoAwayFrame:
			return "goaway " + f.ErrCode.String()
		case *http2.HeadersFrame:
			if f.StreamID == id {
				hf, _ := dec.DecodeFull(f.HeaderBlockFragment())
				for _, h := range hf {
					if h.Name == ":status" {
						return h.Value
					}
				}
			}
		}
	}
}

func TestStrictTranslation(t *testing.T) {
	base := []string{":method", "POST", ":scheme", "https", ":path", "/p", ":authority", "site.test"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	tests := []struct {
		name    string
		fields  []string
		data    string
		want    string // status, or "reset CODE"
		reaches string // what the proxy must see; "" = nothing
	}{
		{"valid request", with("content-length", "3"), "abc", "200", `POST /p "abc"`},
		{"body without length is chunked", base, "abcd", "200", `POST /p "abcd"`},
		{"content-length larger than data", with("content-length", "10"), "abc", "reset", ""},
		{"content-length smaller than data", with("content-length", "2"), "abc", "reset", ""},
		{"content-length without data", with("content-length", "5"), "", "400", ""},
		{"data after content-length 0", with("content-length", "0"), "GET /x HTTP/1.1\r\n\r\n", "reset", ""},
		{"connection-specific header", with("connection", "keep-alive"), "", "reset PROTOCOL_ERROR", ""},
		{"transfer-encoding", with("transfer-encoding", "chunked"), "x", "reset PROTOCOL_ERROR", ""},
		{"te other than trailers", with("te", "gzip"), "", "reset PROTOCOL_ERROR", ""},
		{"upper-case field name", with("X-Upper", "1"), "", "reset PROTOCOL_ERROR", ""},
		{"CR LF in a value", with("x-a", "1\r\nx-b: 2"), "", "reset PROTOCOL_ERROR", ""},
		{"pseudo-header after a field", append(with("x-a", "1"), ":status", "200"), "", "reset PROTOCOL_ERROR", ""},
		{"unknown pseudo-header", with(":foo", "bar"), "", "reset PROTOCOL_ERROR", ""},
		{"missing path", []string{":method", "GET", ":scheme", "https", ":authority", "h"}, "", "reset PROTOCOL_ERROR", ""},
		{"space in path", []string{":method", "GET", ":scheme", "https", ":path", "/a b", ":authority", "h"}, "", "400", ""},
		{"host differs from authority", with("host", "other.test"), "", "reset PROTOCOL_ERROR", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			log := logrus.New()
			log.SetOutput(io.Discard)
			s := New(Options{Handoff: rec.handoff, Log: log})
			hc := dialRaw(t, s)
			hc.send(1, tt.fields, tt.data)
			got := hc.outcome(1)
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("outcome %q, want %q", got, tt.want)
			}
			hc.c.Close()
			<-hc.done
			s.Shutdown()
			rec.wg.Wait()
			seen := rec.requests()
			switch {
			case tt.reaches == "" && len(seen) > 0:
				t.Errorf("proxy got %q, want nothing", seen)
			case tt.reaches != "" && (len(seen) != 1 || seen[0] != tt.reaches):
				t.Errorf("proxy got %q, want %q", seen, tt.reaches)
			}
		})
	}
}
