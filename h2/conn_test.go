package h2

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

var getFields = []string{":method", "GET", ":scheme", "https", ":path", "/", ":authority", "h"}

// goAway reads frames until GOAWAY and returns its code and last stream.
func (hc *h2conn) goAway() (http2.ErrCode, uint32) {
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			hc.t.Fatalf("no GOAWAY: %v", err)
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return g.ErrCode, g.LastStreamID
		}
	}
}

func TestIdleTimeoutSendsGoAway(t *testing.T) {
	rec := &recorder{}
	s := New(Options{Handoff: rec.handoff, Log: quietLog(), IdleTimeout: 50 * time.Millisecond})
	hc := dialRaw(t, s)
	hc.send(1, getFields, "")
	if r := hc.response(1); r.status != "200" {
		t.Fatalf("first request: %+v", r)
	}
	if code, last := hc.goAway(); code != http2.ErrCodeNo || last != 1 {
		t.Errorf("GOAWAY %v last %d, want NO_ERROR 1", code, last)
	}
	<-hc.done // the server closed the connection itself
	rec.wg.Wait()
}

func TestShutdownFinishesStreams(t *testing.T) {
	proxy := &scripted{raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}
	release := make(chan struct{})
	s := New(Options{Handoff: func(c net.Conn) bool {
		go func() { <-release; proxy.handoff(c) }()
		return true
	}, Log: quietLog()})
	hc := dialRaw(t, s)
	hc.send(1, getFields, "")
	waitFor(t, func() bool { return streamCount(s) == 1 })
	s.Shutdown()
	if code, last := hc.goAway(); code != http2.ErrCodeNo || last != 1 {
		t.Errorf("GOAWAY %v last %d, want NO_ERROR 1", code, last)
	}
	hc.send(3, getFields, "") // after GOAWAY: refused
	close(release)
	if r := hc.response(1); r.status != "200" || r.body != "ok" {
		t.Errorf("stream 1 after shutdown: %+v", r)
	}
	<-hc.done
	proxy.wg.Wait()
}

func TestAbuseIsCut(t *testing.T) {
	t.Run("rapid reset", func(t *testing.T) {
		rec := &silent{}
		s := New(Options{Handoff: rec.handoff, Log: quietLog()})
		hc := dialRaw(t, s)
		for id := uint32(1); id < 2*maxResets+10; id += 2 {
			hc.send(id, getFields, "x") // open (DATA follows), then cancelled
			hc.writes <- func() { hc.fr.WriteRSTStream(id, http2.ErrCodeCancel) }
		}
		for {
			code, _ := hc.goAway()
			if code == http2.ErrCodeEnhanceYourCalm {
				break
			}
		}
		hc.c.Close()
		<-hc.done
		rec.wg.Wait()
	})
	t.Run("CONTINUATION flood", func(t *testing.T) {
		rec := &recorder{}
		s := New(Options{Handoff: rec.handoff, Log: quietLog()})
		hc := dialRaw(t, s)
		hc.writes <- func() {
			hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}, EndStream: true})
			for i := 0; i < maxBlockFrames+5; i++ {
				if hc.fr.WriteContinuation(1, false, nil) != nil {
					return
				}
			}
		}
		if code, _ := hc.goAway(); code != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
		}
		hc.c.Close()
		<-hc.done
		rec.wg.Wait()
	})
}

func TestRequestBodies(t *testing.T) {
	post := []string{":method", "POST", ":scheme", "https", ":path", "/u", ":authority", "h"}
	withLength := func(n string) []string { return append(append([]string{}, post...), "content-length", n) }
	tests := []struct {
		name    string
		fields  []string
		frames  []string // DATA payloads; END_STREAM on the last
		trailer []string // end with a trailer block of these fields instead
		reaches string
	}{
		{"chunked from frames", post, []string{"ab", "", "cde"}, nil, `POST /u "abcde"`},
		{"trailers follow a chunked body", post, []string{"ab", "cd"}, []string{"x-sum", "1", "grpc-extra", "a b"},
			`POST /u "abcd" Grpc-Extra=["a b"] X-Sum=["1"]`},
		{"trailers without data", post, nil, []string{"x-sum", "0"}, `POST /u "" X-Sum=["0"]`},
		{"empty trailer block", post, []string{"ab"}, []string{}, `POST /u "ab"`},
		{"trailers after a length come on the side", withLength("4"), []string{"ab", "cd"}, []string{"x-sum", "1"},
			`POST /u "abcd" length-trailer="X-Sum: 1\r\n"`},
		{"length 0 and trailers", withLength("0"), nil, []string{"x-sum", "0"}, `POST /u "" length-trailer="X-Sum: 0\r\n"`},
		{"length across frames", withLength("6"), []string{"abc", "def"}, nil, `POST /u "abcdef"`},
		{"length 0 waits for the end", withLength("0"), []string{""}, nil, `POST /u ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			s := New(Options{Handoff: rec.handoff, Log: quietLog()})
			hc := dialRaw(t, s)
			hc.sendFrames(1, tt.fields, tt.frames, tt.trailer...)
			if r := hc.response(1); r.status != "200" {
				t.Fatalf("response %+v", r)
			}
			hc.c.Close()
			<-hc.done
			rec.wg.Wait()
			if seen := rec.requests(); len(seen) != 1 || seen[0] != tt.reaches {
				t.Errorf("proxy got %q, want %q", seen, tt.reaches)
			}
		})
	}
}

func TestExpectContinue(t *testing.T) {
	rec := &recorder{}
	s := New(Options{Handoff: rec.handoff, Log: quietLog()})
	hc := dialRaw(t, s)
	fields := []string{":method", "POST", ":scheme", "https", ":path", "/", ":authority", "h", "expect", "100-continue", "content-length", "2"}
	hc.sendFrames(1, fields, nil)
	if st := hc.outcome(1); st != "100" {
		t.Fatalf("first answer %q, want 100", st)
	}
	hc.writes <- func() { hc.fr.WriteData(1, true, []byte("ok")) }
	if r := hc.response(1); r.status != "200" {
		t.Errorf("final answer %+v", r)
	}
	hc.c.Close()
	<-hc.done
	rec.wg.Wait()
	if seen := rec.requests(); len(seen) != 1 || !strings.HasPrefix(seen[0], `POST / "ok"`) {
		t.Errorf("proxy got %q", seen)
	}
}

// silent is a fake proxy that reads requests and never answers.
type silent struct{ wg sync.WaitGroup }

func (p *silent) handoff(c net.Conn) bool {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer c.Close()
		io.Copy(io.Discard, c)
	}()
	return true
}

func streamCount(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for sc := range s.conns {
		sc.mu.Lock()
		n += len(sc.streams)
		sc.mu.Unlock()
	}
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
	}
}

// stuck is a fake proxy whose backend never answers: it reads the
// request and waits until released.
type stuck struct {
	wg      sync.WaitGroup
	release chan struct{}
	mu      sync.Mutex
	held    int // vconns handed over
}

func (p *stuck) handoff(c net.Conn) bool {
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer c.Close()
		c.Read(make([]byte, 4096))
		<-p.release
	}()
	return true
}

// TestResetsDoNotFreeBusyStreams: streams lbd resets (here for a flow
// control error the client provokes) still count against
// MAX_CONCURRENT_STREAMS while the proxy works on them (CVE-2025-8671).
func TestResetsDoNotFreeBusyStreams(t *testing.T) {
	proxy := &stuck{release: make(chan struct{})}
	const maxStreams = 10
	s := New(Options{Handoff: proxy.handoff, Log: quietLog(), MaxStreams: maxStreams})
	hc := dialRaw(t, s)
	refused := 0
	for id := uint32(1); id <= 2*3*maxStreams; id += 2 {
		hc.send(id, getFields, "")
		hc.writes <- func() { hc.fr.WriteWindowUpdate(id, 1<<31-1) } // overflows: lbd resets
		for {
			f, err := hc.fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == id {
				if r.ErrCode == http2.ErrCodeRefusedStream {
					refused++
				}
				break
			}
		}
	}
	proxy.mu.Lock()
	held := proxy.held
	proxy.mu.Unlock()
	if held > maxStreams || refused == 0 {
		t.Errorf("the proxy got %d streams at once (limit %d), %d refused", held, maxStreams, refused)
	}
	close(proxy.release)
	hc.c.Close()
	<-hc.done
	proxy.wg.Wait()
}

// TestLateFramesAfterAnAnswer: a stream lbd answered itself (400) while
// the client was still sending gets late trailers, which are
// ignored; the connection carries on.
func TestLateFramesAfterAnAnswer(t *testing.T) {
	rec := &recorder{}
	s := New(Options{Handoff: rec.handoff, Log: quietLog()})
	hc := dialRaw(t, s)
	bad := []string{":method", "POST", ":scheme", "https", ":path", "/", ":authority", "h", "content-length", "x"}
	hc.sendFrames(1, bad, nil) // stream stays open
	if st := hc.outcome(1); st != "400" {
		t.Fatalf("bad request answered %q", st)
	}
	hc.sendFrames(1, nil, nil, "x-sum", "1") // late trailers with END_STREAM
	hc.send(3, getFields, "")
	if r := hc.response(3); r.status != "200" {
		t.Errorf("next stream: %+v", r)
	}
	hc.c.Close()
	<-hc.done
	rec.wg.Wait()
}

// TestIdleVconnsAreRetired: a connection idle for a quarter of its idle
// timeout lets the proxy drop its idle vconns, and a later stream gets a
// fresh one.
func TestIdleVconnsAreRetired(t *testing.T) {
	rec := &recorder{}
	s := New(Options{Handoff: rec.handoff, Log: quietLog(), IdleTimeout: 2 * time.Second})
	hc := dialRaw(t, s)
	hc.send(1, getFields, "")
	if r := hc.response(1); r.status != "200" {
		t.Fatalf("first request: %+v", r)
	}
	gone := make(chan struct{})
	go func() { rec.wg.Wait(); close(gone) }()
	select {
	case <-gone: // the proxy let its vconn go while the connection stays
	case <-time.After(5 * time.Second):
		t.Fatal("the idle vconn was not retired")
	}
	hc.send(3, getFields, "")
	if r := hc.response(3); r.status != "200" {
		t.Fatalf("request after the retirement: %+v", r)
	}
	if seen := rec.requests(); len(seen) != 2 {
		t.Errorf("proxy got %q", seen)
	}
	hc.c.Close()
	<-hc.done
	rec.wg.Wait()
}

// TestTinyDataFramesAreCut: DATA frames of one byte on a body without a
// length cost five bytes of chunk framing each, which the window does
// not count; a stream made of them is reset before it holds more than
// maxPending.
func TestTinyDataFramesAreCut(t *testing.T) {
	proxy := &stuck{release: make(chan struct{})}
	s := New(Options{Handoff: proxy.handoff, Log: quietLog()})
	hc := dialRaw(t, s)
	post := []string{":method", "POST", ":scheme", "https", ":path", "/", ":authority", "h"}
	hc.sendFrames(1, post, nil)
	hc.writes <- func() {
		for i := 0; i < streamRecvWindow; i++ {
			if hc.fr.WriteData(1, false, []byte{'x'}) != nil {
				return
			}
		}
	}
	if got := hc.outcome(1); got != "reset ENHANCE_YOUR_CALM" {
		t.Errorf("outcome %q, want reset ENHANCE_YOUR_CALM", got)
	}
	close(proxy.release)
	hc.c.Close()
	<-hc.done
	proxy.wg.Wait()
}

// TestMalformedTrailers: a trailer block HTTP/2 or lbd's HTTP/1.1 rules
// forbid resets the stream; the proxy never gets the request complete.
func TestMalformedTrailers(t *testing.T) {
	post := []string{":method", "POST", ":scheme", "https", ":path", "/u", ":authority", "h"}
	tests := []struct {
		name    string
		trailer []string
	}{
		{"pseudo-header", []string{":path", "/x"}},
		{"connection-specific", []string{"connection", "close"}},
		{"te", []string{"te", "trailers"}},
		{"framing", []string{"content-length", "2"}},
		{"routing", []string{"host", "other.test"}},
		{"credentials", []string{"authorization", "Basic eDp5"}},
		{"upper-case name", []string{"X-Sum", "1"}},
		{"CR LF in a value", []string{"x-sum", "1\r\nx-b: 2"}},
		{"over the trailer section bound", []string{"x-big", strings.Repeat("a", 8<<10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			s := New(Options{Handoff: rec.handoff, Log: quietLog()})
			hc := dialRaw(t, s)
			hc.sendFrames(1, post, []string{"ab"}, tt.trailer...)
			if got := hc.outcome(1); got != "reset PROTOCOL_ERROR" {
				t.Errorf("outcome %q, want reset PROTOCOL_ERROR", got)
			}
			hc.c.Close()
			<-hc.done
			rec.wg.Wait()
			if seen := rec.requests(); len(seen) > 0 {
				t.Errorf("proxy got %q, want nothing", seen)
			}
		})
	}
}

// TestRequestTrailerWait: the proxy's wait for the trailers of a body
// with a length ends when a read deadline is set in the past (how it
// interrupts body reads), when its patience runs out, and at once when
// the stream has ended.
func TestRequestTrailerWait(t *testing.T) {
	post := []string{":method", "POST", ":scheme", "https", ":path", "/u", ":authority", "h", "content-length", "2"}
	tests := []struct {
		name     string
		patience time.Duration
		deadline bool // set a past read deadline while it waits
		end      bool // the client ends the stream (no trailers)
	}{
		{"woken by a past read deadline", time.Minute, true, false},
		{"patience runs out", 200 * time.Millisecond, false, false},
		{"the stream ended", time.Minute, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan time.Duration, 1)
			var wg sync.WaitGroup
			handoff := func(c net.Conn) bool {
				return serveFake(&wg, c, func(req *http.Request, err error) bool {
					if err != nil {
						return false
					}
					io.ReadAll(req.Body) // the 2 bytes of the length
					if tt.deadline {
						time.AfterFunc(100*time.Millisecond, func() { c.SetReadDeadline(time.Unix(1, 0)) })
					}
					start := time.Now()
					if tr := c.(*vconn).RequestTrailer(tt.patience); tr != nil {
						t.Errorf("trailers %q", tr)
					}
					got <- time.Since(start)
					return false
				})
			}
			s := New(Options{Handoff: handoff, Log: quietLog()})
			hc := dialRaw(t, s)
			if tt.end {
				hc.sendFrames(1, post, []string{"ok"})
			} else {
				hc.sendFrames(1, post, nil) // HEADERS, then all the body on a stream left open
				hc.writes <- func() { hc.fr.WriteData(1, false, []byte("ok")) }
			}
			select {
			case d := <-got:
				if d > 5*time.Second || (tt.end && d > time.Second) {
					t.Errorf("waited %v", d)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("RequestTrailer did not return")
			}
			hc.c.Close()
			<-hc.done
			wg.Wait()
		})
	}
}
