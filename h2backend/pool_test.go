package h2backend

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// h2cServer serves h with Go's HTTP/2 server, cleartext, one stream per
// connection at most.
func h2cServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &p, HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func get(t *testing.T, p *Pool, addr string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "GET", "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL = &url.URL{Scheme: p.Scheme(), Host: addr, Path: "/"}
	return p.RoundTrip(req)
}

// TestPoolBounded: streams beyond what MaxConns connections carry (the
// backend allows one each) are refused with ErrPoolFull, not queued
// without bound or sent on new connections; a stream that ends frees
// its connection for the next request.
func TestPoolBounded(t *testing.T) {
	release := make(chan struct{})
	addr := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-release
	}))
	var d net.Dialer
	p := New(Options{Dial: func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }, MaxConns: 2})
	defer p.Close()
	var open []*http.Response
	for i := 0; i < 2; i++ {
		resp, err := get(t, p, addr)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		open = append(open, resp)
	}
	if conns, streams := p.Conns(); conns != 2 || streams != 2 {
		t.Errorf("%d connections, %d streams; want 2 and 2", conns, streams)
	}
	if _, err := get(t, p, addr); !errors.Is(err, ErrPoolFull) {
		t.Fatalf("third stream: %v, want ErrPoolFull", err)
	}
	close(release)
	for _, r := range open {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := get(t, p, addr)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the streams ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if conns, _ := p.Conns(); conns > 2 {
		t.Errorf("%d connections, want at most 2", conns)
	}
}

// TestPoolDialError: a connect that fails is the request's error, and
// nothing is kept.
func TestPoolDialError(t *testing.T) {
	refused := errors.New("refused")
	p := New(Options{Dial: func(context.Context) (net.Conn, error) { return nil, refused }})
	if _, err := get(t, p, "127.0.0.1:1"); !errors.Is(err, refused) {
		t.Errorf("got %v, want the dial error", err)
	}
	if conns, _ := p.Conns(); conns != 0 {
		t.Errorf("%d connections kept", conns)
	}
}

// TestBatchConnWritesInOrder: what is written arrives whole and in
// order however the writes are batched, and what was queued before
// Close is written before the connection closes.
func TestBatchConnWritesInOrder(t *testing.T) {
	a, b := net.Pipe()
	bc := newBatchConn(a)
	got := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(b) // ends with the pipe's close
		got <- all
	}()
	var want []byte
	for i := 0; i < 1000; i++ {
		p := []byte{byte(i), byte(i >> 8), 'x'}
		want = append(want, p...)
		if n, err := bc.Write(p); n != len(p) || err != nil {
			t.Fatalf("write %d: %d %v", i, n, err)
		}
	}
	bc.Close()
	if all := <-got; string(all) != string(want) {
		t.Errorf("read %d bytes, want %d in order", len(all), len(want))
	}
	if _, err := bc.Write([]byte("late")); err == nil {
		t.Error("a write after Close succeeded")
	}
}
