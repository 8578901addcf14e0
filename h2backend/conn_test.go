package h2backend

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// framePool is a pool on h2c server addr for Open's tests.
func framePool(t *testing.T, addr string, maxConns int) *Pool {
	t.Helper()
	var d net.Dialer
	p := New(Options{Dial: func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }, MaxConns: maxConns})
	t.Cleanup(p.Close)
	return p
}

func block(method, path string, fields ...string) []byte {
	var b RequestBlock
	b.Start([]byte(method), []byte(path), []byte("test"), false)
	for i := 0; i+1 < len(fields); i += 2 {
		b.Field([]byte(fields[i]), []byte(fields[i+1]))
	}
	return b.Bytes()
}

// TestOpenRoundTrip: a request with a body and a response with a body
// and trailers pass through the frame-level client, against Go's own
// HTTP/2 server.
func TestOpenRoundTrip(t *testing.T) {
	addr := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short body fails below
		w.Header().Set("Trailer", "X-Sum")
		w.Header().Set("X-Method", r.Method+" "+r.URL.Path+" "+r.Header.Get("X-In"))
		w.WriteHeader(201)
		io.WriteString(w, "got "+string(body))
		w.Header().Set("X-Sum", "42")
	}))
	p := framePool(t, addr, 2)
	s, sent, err := p.Open(context.Background(), block("POST", "/echo", "X-In", "v"), []byte("hel"), false)
	if err != nil || sent != 3 {
		t.Fatal(sent, err)
	}
	defer s.Close()
	if err := s.WriteData([]byte("lo"), true); err != nil {
		t.Fatal(err)
	}
	status, fields, _, ended, err := s.ReadHead()
	if err != nil || status != 201 || ended {
		t.Fatalf("head: %d %v ended=%v", status, err, ended)
	}
	if !strings.Contains(string(fields), "X-Method: POST /echo v\r\n") {
		t.Errorf("fields %q", fields)
	}
	body, err := io.ReadAll(s)
	if err != nil || string(body) != "got hello" {
		t.Errorf("body %q %v", body, err)
	}
	if got := string(s.Trailer()); got != "X-Sum: 42\r\n" {
		t.Errorf("trailer %q", got)
	}
	if frames, transport := p.Streams(); frames != 1 || transport != 0 {
		t.Errorf("Streams %d %d, want 1 0", frames, transport)
	}
}

// fakeBackend is a scripted HTTP/2 server: each accepted connection has
// its preface and SETTINGS exchanged, then is handed to serve.
type fakeBackend struct {
	t     *testing.T
	addr  string
	conns chan *fakeConn
}

type fakeConn struct {
	nc  net.Conn
	fr  *http2.Framer
	buf bytes.Buffer
	enc *hpack.Encoder
}

func newFakeBackend(t *testing.T, settings ...http2.Setting) *fakeBackend {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	fb := &fakeBackend{t: t, addr: ln.Addr().String(), conns: make(chan *fakeConn, 8)}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
			fc := &fakeConn{nc: nc, fr: http2.NewFramer(nc, nc)}
			fc.enc = hpack.NewEncoder(&fc.buf)
			preface := make([]byte, len(http2.ClientPreface))
			if _, err := io.ReadFull(nc, preface); err != nil {
				return
			}
			fc.fr.WriteSettings(settings...)
			fb.conns <- fc
		}
	}()
	return fb
}

func (fb *fakeBackend) accept() *fakeConn {
	select {
	case fc := <-fb.conns:
		return fc
	case <-time.After(5 * time.Second):
		fb.t.Fatal("no connection")
		return nil
	}
}

// next reads frames until one of type typ (others, settings and window
// updates, are skipped and SETTINGS acknowledged).
func (fc *fakeConn) next(t *testing.T, typ http2.FrameType) http2.Frame {
	t.Helper()
	fc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := fc.fr.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for %v: %v", typ, err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			fc.fr.WriteSettingsAck()
		}
		if f.Header().Type == typ {
			return f
		}
	}
}

// headersAndAck reads until lbd's HEADERS and its SETTINGS ACK have both
// come, in either order: lbd acknowledges the backend's SETTINGS when its
// reader has read them, which may be before or after it sends a request.
func (fc *fakeConn) headersAndAck(t *testing.T) {
	t.Helper()
	fc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for headers, ack := false, false; !headers || !ack; {
		f, err := fc.fr.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for HEADERS (%v) and SETTINGS ACK (%v): %v", headers, ack, err)
		}
		switch f := f.(type) {
		case *http2.HeadersFrame:
			headers = true
		case *http2.SettingsFrame:
			if f.IsAck() {
				ack = true
			} else {
				fc.fr.WriteSettingsAck()
			}
		}
	}
}

func (fc *fakeConn) headers(t *testing.T, id uint32, end bool, fields ...string) {
	fc.buf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		fc.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	if err := fc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: fc.buf.Bytes(), EndStream: end, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
}

func openGET(t *testing.T, p *Pool) *Stream {
	t.Helper()
	s, _, err := p.Open(context.Background(), block("GET", "/"), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestOpenTrailersOnly: a response that is one HEADERS frame with
// END_STREAM (gRPC's trailers-only error) ends at its head, its status
// fields among the head's.
func TestOpenTrailersOnly(t *testing.T) {
	fb := newFakeBackend(t)
	p := framePool(t, fb.addr, 1)
	s := openGET(t, p)
	fc := fb.accept()
	id := fc.next(t, http2.FrameHeaders).Header().StreamID
	fc.headers(t, id, true, ":status", "200", "content-type", "application/grpc", "grpc-status", "14", "grpc-message", "down")
	status, fields, length, ended, err := s.ReadHead()
	if err != nil || status != 200 || !ended || length != -1 {
		t.Fatalf("head: %d ended=%v length=%d %v", status, ended, length, err)
	}
	if want := "Content-Type: application/grpc\r\nGrpc-Status: 14\r\nGrpc-Message: down\r\n"; string(fields) != want {
		t.Errorf("fields %q, want %q", fields, want)
	}
	if n, err := s.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("Read after a trailers-only response: %d %v", n, err)
	}
}

// TestOpenFlowControl: lbd gives the backend window back only as the
// response is read, so a stream nobody reads holds at most its window;
// a backend that sends beyond it has the stream reset.
func TestOpenFlowControl(t *testing.T) {
	fb := newFakeBackend(t)
	p := framePool(t, fb.addr, 1)
	s := openGET(t, p)
	fc := fb.accept()
	id := fc.next(t, http2.FrameHeaders).Header().StreamID
	fc.headers(t, id, false, ":status", "200")
	chunk := make([]byte, 16<<10)
	for sent := 0; sent < streamWindow; sent += len(chunk) {
		fc.fr.WriteData(id, false, chunk)
	}
	if _, _, _, _, err := s.ReadHead(); err != nil {
		t.Fatal(err)
	}
	// The window is spent: one byte more is a flow-control error, but
	// only after reading some does lbd give window back.
	got := 0
	buf := make([]byte, 32<<10)
	for got < 32<<10 {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	wu := fc.next(t, http2.FrameWindowUpdate).(*http2.WindowUpdateFrame)
	for wu.StreamID != id {
		wu = fc.next(t, http2.FrameWindowUpdate).(*http2.WindowUpdateFrame)
	}
	if wu.Increment == 0 || int(wu.Increment) > got {
		t.Errorf("stream credit %d after reading %d", wu.Increment, got)
	}
	// Now overrun what was granted (at most what was read).
	if err := fc.fr.WriteData(id, false, make([]byte, got+1)); err != nil {
		t.Fatal(err)
	}
	rst := fc.next(t, http2.FrameRSTStream).(*http2.RSTStreamFrame)
	if rst.StreamID != id || rst.ErrCode != http2.ErrCodeFlowControl {
		t.Errorf("reset %v, want FLOW_CONTROL on %d", rst, id)
	}
}

// TestOpenResets: a backend's RST_STREAM reaches the reader with its
// code; Cancel resets the stream at the backend.
func TestOpenResets(t *testing.T) {
	fb := newFakeBackend(t)
	p := framePool(t, fb.addr, 1)
	s1 := openGET(t, p)
	fc := fb.accept()
	id1 := fc.next(t, http2.FrameHeaders).Header().StreamID
	fc.fr.WriteRSTStream(id1, http2.ErrCodeInternal)
	var se http2.StreamError
	if _, _, _, _, err := s1.ReadHead(); !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
		t.Errorf("backend reset: %v", err)
	}
	s2 := openGET(t, p)
	id2 := fc.next(t, http2.FrameHeaders).Header().StreamID
	s2.Cancel()
	rst := fc.next(t, http2.FrameRSTStream).(*http2.RSTStreamFrame)
	if rst.StreamID != id2 || rst.ErrCode != http2.ErrCodeCancel {
		t.Errorf("cancel sent %v", rst)
	}
	if _, _, _, _, err := s2.ReadHead(); !errors.Is(err, ErrCanceled) {
		t.Errorf("after Cancel: %v", err)
	}
}

// TestOpenGoAway: after GOAWAY, streams above its last id fail as
// unprocessed (the proxy may send them elsewhere), those below finish,
// and new streams go to a new connection.
func TestOpenGoAway(t *testing.T) {
	fb := newFakeBackend(t)
	p := framePool(t, fb.addr, 2)
	s1, s2 := openGET(t, p), openGET(t, p)
	fc := fb.accept()
	id1 := fc.next(t, http2.FrameHeaders).Header().StreamID
	fc.next(t, http2.FrameHeaders)
	fc.fr.WriteGoAway(id1, http2.ErrCodeNo, nil)
	if _, _, _, _, err := s2.ReadHead(); !errors.Is(err, ErrUnprocessed) {
		t.Errorf("stream above GOAWAY's last: %v", err)
	}
	s3 := openGET(t, p)
	fc2 := fb.accept()
	fc2.next(t, http2.FrameHeaders)
	fc.headers(t, id1, true, ":status", "204")
	if status, _, _, ended, err := s1.ReadHead(); status != 204 || !ended || err != nil {
		t.Errorf("stream below GOAWAY's last: %d %v %v", status, ended, err)
	}
	s3.Cancel()
}

// TestOpenMaxStreams: the backend's SETTINGS_MAX_CONCURRENT_STREAMS is
// honoured: a stream beyond it goes to a new connection, and beyond
// MaxConns connections Open fails with ErrPoolFull.
func TestOpenMaxStreams(t *testing.T) {
	fb := newFakeBackend(t, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
	p := framePool(t, fb.addr, 2)
	openGET(t, p)
	fc := fb.accept()
	fc.headersAndAck(t) // the ACK: the limit is known to lbd
	openGET(t, p)
	fc2 := fb.accept()
	fc2.headersAndAck(t)
	if _, _, err := p.Open(context.Background(), block("GET", "/"), nil, true); !errors.Is(err, ErrPoolFull) {
		t.Errorf("third stream: %v, want ErrPoolFull", err)
	}
}

// TestOpenLiveness: a backend that goes silent (no FIN, no answer to
// PING) has its connection closed and its streams failed, rather than
// held until their own timeouts.
func TestOpenLiveness(t *testing.T) {
	defer func(a, b time.Duration) { livenessAfter, livenessTimeout = a, b }(livenessAfter, livenessTimeout)
	livenessAfter, livenessTimeout = 50*time.Millisecond, 50*time.Millisecond
	fb := newFakeBackend(t)
	p := framePool(t, fb.addr, 1)
	s := openGET(t, p)
	fc := fb.accept()
	fc.next(t, http2.FrameHeaders)
	if ping := fc.next(t, http2.FramePing).(*http2.PingFrame); ping.IsAck() {
		t.Fatal("want lbd's PING")
	}
	if _, _, _, _, err := s.ReadHead(); !errors.Is(err, errPingTimeout) {
		t.Errorf("stream on a silent backend: %v", err)
	}
}

// TestOpenRequestTrailers: WriteTrailers ends a request with a trailing
// HEADERS frame after its data, which Go's server reads as the
// request's trailers; so does a request whose data went with Open.
func TestOpenRequestTrailers(t *testing.T) {
	got := make(chan string, 2)
	addr := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		got <- string(body) + " " + r.Trailer.Get("X-Sum") + " " + r.Trailer.Get("Grpc-Extra") + " " + errString(err)
	}))
	p := framePool(t, addr, 2)
	var tb RequestBlock
	tb.Field([]byte("X-Sum"), []byte("42"))
	tb.Field([]byte("grpc-extra"), []byte("a b"))
	for _, streamed := range []bool{true, false} {
		data := []byte("hello")
		if streamed {
			data = data[:3]
		}
		// Go's server keeps only the trailers the head announced.
		s, _, err := p.Open(context.Background(), block("POST", "/t", "trailer", "X-Sum, Grpc-Extra"), data, false)
		if err != nil {
			t.Fatal(err)
		}
		if streamed {
			if err := s.WriteData([]byte("lo"), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.WriteTrailers(tb.Bytes()); err != nil {
			t.Fatal(err)
		}
		if _, _, _, _, err := s.ReadHead(); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g != "hello 42 a b <nil>" {
			t.Errorf("streamed=%v: backend got %q", streamed, g)
		}
		s.Close()
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
