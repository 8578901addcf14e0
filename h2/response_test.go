package h2

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// scripted is a fake proxy that answers each request with raw, written
// in pieces of at most step bytes, and closes afterwards if closeAfter.
type scripted struct {
	raw        string
	step       int
	closeAfter bool
	wg         sync.WaitGroup
	mu         sync.Mutex
	errs       []error // write errors the proxy saw
}

func (s *scripted) handoff(c net.Conn) bool {
	return serveFake(&s.wg, c, func(req *http.Request, err error) bool {
		if err != nil {
			return false
		}
		io.Copy(io.Discard, req.Body)
		for rest := s.raw; rest != ""; {
			n := len(rest)
			if s.step > 0 {
				n = min(n, s.step)
			}
			if _, err := io.WriteString(c, rest[:n]); err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, err)
				s.mu.Unlock()
				return false
			}
			rest = rest[n:]
		}
		return !s.closeAfter
	})
}

// h2resp is what a client saw for one stream.
type h2resp struct {
	status    string
	header    map[string][]string
	body      string
	trailer   map[string]string
	ended     bool   // END_STREAM seen
	reset     string // RST_STREAM code, if any
	dataSizes []int
}

// response reads frames until stream id ends or is reset.
func (hc *h2conn) response(id uint32) h2resp {
	r := h2resp{header: map[string][]string{}, trailer: map[string]string{}}
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			r.reset = "error: " + err.Error()
			return r
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				hc.writes <- func() { hc.fr.WriteSettingsAck() }
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				r.reset = f.ErrCode.String()
				return r
			}
		case *http2.GoAwayFrame:
			r.reset = "goaway " + f.ErrCode.String()
			return r
		case *http2.HeadersFrame:
			if f.StreamID != id {
				continue
			}
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				hc.t.Fatalf("bad header block: %v", err)
			}
			trailers := r.status != "" // a block after the final head
			for _, h := range fields {
				switch {
				case trailers:
					r.trailer[h.Name] = h.Value
				case h.Name == ":status":
					if h.Value != "100" {
						r.status = h.Value
					}
				default:
					r.header[h.Name] = append(r.header[h.Name], h.Value)
				}
			}
			if f.StreamEnded() {
				r.ended = true
				return r
			}
		case *http2.DataFrame:
			if f.StreamID == id {
				r.body += string(f.Data())
				r.dataSizes = append(r.dataSizes, len(f.Data()))
				if f.StreamEnded() {
					r.ended = true
					return r
				}
			}
		}
	}
}

func TestResponseEncoding(t *testing.T) {
	get := []string{":method", "GET", ":scheme", "https", ":path", "/", ":authority", "h"}
	head := []string{":method", "HEAD", ":scheme", "https", ":path", "/", ":authority", "h"}
	tests := []struct {
		name       string
		fields     []string
		raw        string
		closeAfter bool
		want       h2resp
		absent     []string // fields that must not be relayed
	}{
		{name: "content-length", fields: get,
			raw:    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nConnection: X-Private\r\nX-Private: 1\r\nKeep-Alive: 5\r\n\r\nhello",
			want:   h2resp{status: "200", body: "hello", ended: true, header: map[string][]string{"set-cookie": {"a=1", "b=2"}, "content-length": {"5"}}},
			absent: []string{"x-private", "keep-alive", "connection"}},
		{name: "HEAD has no body", fields: head, raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
			want: h2resp{status: "200", ended: true, header: map[string][]string{"content-length": {"100"}}}},
		{name: "204", fields: get, raw: "HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n",
			want: h2resp{status: "204", ended: true, header: map[string][]string{"x-a": {"1"}}}},
		{name: "status outside the static table", fields: get, raw: "HTTP/1.1 418 Teapot\r\nContent-Length: 0\r\n\r\n",
			want: h2resp{status: "418", ended: true}},
		{name: "connection close", fields: get, raw: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno", closeAfter: true,
			want: h2resp{status: "503", body: "no", ended: true}, absent: []string{"connection"}},
		{name: "chunked with a trailer", fields: get,
			raw:    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-Sum: 9\r\n\r\n",
			want:   h2resp{status: "200", body: "abcde", ended: true, trailer: map[string]string{"x-sum": "9"}},
			absent: []string{"transfer-encoding", "trailer"}},
		{name: "chunked without trailer", fields: get,
			raw:  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nwxyz\r\n0\r\n\r\n",
			want: h2resp{status: "200", body: "wxyz", ended: true}},
		{name: "close-delimited", fields: get, raw: "HTTP/1.0 200 OK\r\n\r\nuntil close", closeAfter: true,
			want: h2resp{status: "200", body: "until close", ended: true}},
		{name: "interim 100 is dropped", fields: get, raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
			want: h2resp{status: "201", ended: true}},
		{name: "cut-short body is reset", fields: get, raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", closeAfter: true,
			want: h2resp{status: "200", body: "abc", reset: "INTERNAL_ERROR"}},
		{name: "garbage is reset", fields: get, raw: "SMTP ready\r\n\r\n", closeAfter: true,
			want: h2resp{reset: "INTERNAL_ERROR"}},
		{name: "nothing at all is 502", fields: get, raw: "", closeAfter: true,
			want: h2resp{status: "502", ended: true}},
	}
	for _, tt := range tests {
		for _, step := range []int{0, 1, 7} {
			t.Run(tt.name+"/step "+string(rune('0'+step)), func(t *testing.T) {
				proxy := &scripted{raw: tt.raw, step: step, closeAfter: tt.closeAfter}
				s := New(Options{Handoff: proxy.handoff, Log: quietLog()})
				hc := dialRaw(t, s)
				hc.send(1, tt.fields, "")
				got := hc.response(1)
				checkResponse(t, got, tt.want, tt.absent)
				hc.c.Close()
				<-hc.done
				proxy.wg.Wait()
			})
		}
	}
}

func checkResponse(t *testing.T, got, want h2resp, absent []string) {
	t.Helper()
	if got.status != want.status || got.body != want.body || got.ended != want.ended || got.reset != want.reset {
		t.Errorf("got status %q body %q ended %v reset %q, want %q %q %v %q",
			got.status, got.body, got.ended, got.reset, want.status, want.body, want.ended, want.reset)
	}
	for k, v := range want.header {
		if g := strings.Join(got.header[k], ","); g != strings.Join(v, ",") {
			t.Errorf("%s = %q, want %q", k, g, v)
		}
	}
	for k, v := range want.trailer {
		if got.trailer[k] != v {
			t.Errorf("trailer %s = %q, want %q (trailers %v)", k, got.trailer[k], v, got.trailer)
		}
	}
	for _, k := range absent {
		if _, ok := got.header[k]; ok {
			t.Errorf("connection-specific %s relayed", k)
		}
	}
}

func quietLog() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// TestSendFlowControl: DATA never exceeds the windows the client
// granted, and the response completes as the client opens them.
func TestSendFlowControl(t *testing.T) {
	body := strings.Repeat("0123456789", 10)
	proxy := &scripted{raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + body}
	s := New(Options{Handoff: proxy.handoff, Log: quietLog()})
	hc := dialRaw(t, s, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 16})
	hc.send(1, []string{":method", "GET", ":scheme", "https", ":path", "/", ":authority", "h"}, "")
	got, window := "", 16
	for got != body {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				hc.writes <- func() { hc.fr.WriteSettingsAck() }
			}
		case *http2.DataFrame:
			n := len(f.Data())
			if n > window {
				t.Fatalf("DATA of %d bytes with a window of %d", n, window)
			}
			window -= n
			got += string(f.Data())
			if window == 0 && got != body {
				window = 30
				hc.writes <- func() { hc.fr.WriteWindowUpdate(1, 30) }
			}
		}
	}
	hc.c.Close()
	<-hc.done
	proxy.wg.Wait()
}

// TestClientResetStopsTheProxy: after RST_STREAM the proxy's write
// fails and no frame for the stream follows the reset.
func TestClientResetStopsTheProxy(t *testing.T) {
	proxy := &scripted{raw: "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("x", 100000), step: 1000}
	s := New(Options{Handoff: proxy.handoff, Log: quietLog()})
	hc := dialRaw(t, s, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
	hc.send(1, []string{":method", "GET", ":scheme", "https", ":path", "/", ":authority", "h"}, "")
	// Take the head and the first window's worth, then cancel.
	for seen := 0; seen < 1000; {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := f.(*http2.DataFrame); ok {
			seen += len(d.Data())
		}
	}
	hc.writes <- func() { hc.fr.WriteRSTStream(1, http2.ErrCodeCancel); hc.fr.WriteWindowUpdate(0, 1<<20) }
	proxy.wg.Wait() // the proxy's write failed and it let go
	hc.writes <- func() { hc.fr.WritePing(false, [8]byte{1}) }
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			break
		}
		if f.Header().StreamID == 1 && f.Header().Type == http2.FrameData {
			// DATA already queued before the reset is allowed; it must
			// not go on for the whole body.
			continue
		}
	}
	if len(proxy.errs) != 1 {
		t.Errorf("proxy write errors %v, want one", proxy.errs)
	}
	hc.c.Close()
	<-hc.done
}
