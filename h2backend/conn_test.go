package h2backend

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
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
// and trailers pass through the frame-level client.
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
	if p.FrameStreams() != 1 {
		t.Errorf("FrameStreams %d", p.FrameStreams())
	}
}

var _ = errors.New
