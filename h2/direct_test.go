package h2

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
)

// sinkRecorder is a backend stream that takes request data when open.
type sinkRecorder struct {
	mu      sync.Mutex
	open    bool
	got     []byte
	flushes int
}

func (s *sinkRecorder) SendData(p []byte) Flusher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return nil
	}
	s.got = append(s.got, p...)
	return s
}

func (s *sinkRecorder) Flush() {
	s.mu.Lock()
	s.flushes++
	s.mu.Unlock()
}

func (s *sinkRecorder) set(open bool) {
	s.mu.Lock()
	s.open = open
	s.mu.Unlock()
}

func (s *sinkRecorder) state() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.got), s.flushes
}

// directProxy is a fake proxy that reads a request's head, attaches its
// sink to the stream, and then reads the body one Read per request on
// reads, answering on results; closing reads ends the exchange with an
// empty 200 response.
type directProxy struct {
	sink    *sinkRecorder
	attach  chan bool // what SinkRequest returned
	vc      chan *vconn
	reads   chan struct{}
	results chan string
	wg      sync.WaitGroup
}

func newDirectProxy(open bool) *directProxy {
	return &directProxy{sink: &sinkRecorder{open: open}, attach: make(chan bool, 1), vc: make(chan *vconn, 1),
		reads: make(chan struct{}), results: make(chan string, 1)}
}

func (p *directProxy) handoff(c net.Conn) bool {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer c.Close()
		v := c.(*vconn)
		var head []byte
		buf := make([]byte, 64<<10)
		for !bytes.Contains(head, []byte("\r\n\r\n")) {
			n, err := v.Read(buf)
			if err != nil {
				return
			}
			head = append(head, buf[:n]...)
		}
		p.attach <- v.SinkRequest(p.sink)
		p.vc <- v
		for range p.reads {
			n, err := v.Read(buf)
			if err != nil {
				p.results <- "error: " + err.Error()
				return
			}
			p.results <- string(buf[:n])
		}
		v.SinkRequest(nil)
		v.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	}()
	return true
}

// read has the proxy read once, and waits until its Read is under way
// (then it no longer holds data: the direct path may resume).
func (p *directProxy) read(t *testing.T, v *vconn) <-chan string {
	p.reads <- struct{}{}
	waitFor(t, func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return !v.draining || len(v.in) > v.off || len(p.results) > 0
	})
	return p.results
}

var postFields = []string{":method", "POST", ":scheme", "https", ":path", "/u", ":authority", "h"}

func (hc *h2conn) data(id uint32, end bool, p string) {
	hc.writes <- func() { hc.fr.WriteData(id, end, []byte(p)) }
}

// TestRequestDataToSink: request data goes to the sink once the proxy
// has read what was queued before; data the sink refuses is queued, and
// later data waits behind it until the proxy comes back to read; the
// body's end is always queued for the proxy, after the data.
func TestRequestDataToSink(t *testing.T) {
	p := newDirectProxy(true)
	s := New(Options{Handoff: p.handoff, Log: quietLog()})
	hc := dialRaw(t, s)
	hc.sendFrames(1, postFields, nil)
	if !<-p.attach {
		t.Fatal("SinkRequest refused a chunked body")
	}
	v := <-p.vc
	hc.data(1, false, "a")
	queued := func() bool { v.mu.Lock(); defer v.mu.Unlock(); return len(v.in) > v.off }
	waitFor(t, queued) // the proxy has not read since attaching
	if got := <-p.read(t, v); got != "1\r\na\r\n" {
		t.Fatalf("first read %q", got)
	}
	pending := p.read(t, v)
	hc.data(1, false, "b")
	waitFor(t, func() bool { got, flushes := p.sink.state(); return got == "b" && flushes > 0 })

	p.sink.set(false)
	hc.data(1, false, "c")
	if got := <-pending; got != "1\r\nc\r\n" {
		t.Fatalf("refused data: read %q", got)
	}
	p.sink.set(true)
	hc.data(1, false, "d") // the proxy holds "c": "d" queues behind it
	waitFor(t, queued)
	if got := <-p.read(t, v); got != "1\r\nd\r\n" {
		t.Fatalf("data behind held data: read %q", got)
	}
	pending = p.read(t, v)
	hc.data(1, true, "e")
	if got := <-pending; got != "1\r\ne\r\n0\r\n\r\n" {
		t.Errorf("the body's end: read %q", got)
	}
	if got, _ := p.sink.state(); got != "b" {
		t.Errorf("sink got %q, want only b", got)
	}
	close(p.reads)
	if r := hc.response(1); r.status != "200" {
		t.Errorf("response %+v", r)
	}
	p.wg.Wait()
}

// TestSinkFlowControl: data the sink takes is credited to the client at
// once (it may send more than a window's worth while the proxy reads
// nothing); with the sink blocked and the proxy holding data (as the
// request body's goroutine does while it waits for the backend), the
// client may send one window and no more.
func TestSinkFlowControl(t *testing.T) {
	frame := strings.Repeat("x", 16<<10)
	t.Run("sink takes", func(t *testing.T) {
		p := newDirectProxy(true)
		s := New(Options{Handoff: p.handoff, Log: quietLog()})
		hc := dialRaw(t, s)
		hc.sendFrames(1, postFields, nil)
		<-p.attach
		v := <-p.vc
		pending := p.read(t, v)
		sent := 0
		for ; sent < 2*streamRecvWindow; sent += len(frame) {
			hc.data(1, false, frame)
		}
		waitFor(t, func() bool { got, _ := p.sink.state(); return len(got) == sent })
		hc.data(1, true, "")
		if got := <-pending; got != "0\r\n\r\n" {
			t.Errorf("the body's end: read %q", got)
		}
		close(p.reads)
		if r := hc.response(1); r.status != "200" {
			t.Errorf("response %+v", r)
		}
		p.wg.Wait()
	})
	t.Run("sink blocked", func(t *testing.T) {
		p := newDirectProxy(false)
		s := New(Options{Handoff: p.handoff, Log: quietLog()})
		hc := dialRaw(t, s)
		hc.sendFrames(1, postFields, nil)
		<-p.attach
		v := <-p.vc
		hc.data(1, false, "y")
		if got := <-p.read(t, v); got != "1\r\ny\r\n" {
			t.Fatalf("read %q", got)
		}
		// The proxy holds "y" and reads no more: the rest of the window
		// is queued, and a byte beyond it resets the stream.
		for sent := 1; sent < streamRecvWindow; sent += len(frame) {
			hc.data(1, false, frame[:min(len(frame), streamRecvWindow-sent)])
		}
		hc.data(1, false, "!")
		if r := hc.response(1); r.reset != "FLOW_CONTROL_ERROR" {
			t.Errorf("got %+v, want FLOW_CONTROL_ERROR", r)
		}
		if got, _ := p.sink.state(); got != "" {
			t.Errorf("a blocked sink got %d bytes", len(got))
		}
		close(p.reads)
		hc.c.Close()
		p.wg.Wait()
	})
}

// TestTryWriteData: response data is sent directly only between two
// chunks of the proxy's response (or short of a Content-Length body's
// end) and within the client's windows; never after the client reset
// the stream.
func TestTryWriteData(t *testing.T) {
	t.Run("chunked", func(t *testing.T) {
		steps := make(chan string, 8)
		proxy := func(c net.Conn) bool {
			go func() {
				defer close(steps)
				defer c.Close()
				v := c.(*vconn)
				v.Read(make([]byte, 4096))
				try := func(p string) {
					steps <- p + "=" + map[bool]string{true: "sent", false: "refused"}[v.TryWriteData([]byte(p))]
				}
				try("early") // before the head: refused
				v.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"))
				try("abc")
				v.Write([]byte("5\r\nde"))
				try("x") // inside the proxy's chunk
				v.Write([]byte("fgh\r\n"))
				try("ij")
				try("k") // the client's window (10) is spent
				steps <- "wait"
				waitFor(t, func() bool { return v.TryWriteData([]byte("k")) })
				v.Write([]byte("0\r\n\r\n"))
			}()
			return true
		}
		s := New(Options{Handoff: proxy, Log: quietLog()})
		hc := dialRaw(t, s, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
		hc.send(1, getFields, "")
		var got []string
		for step := range steps {
			if step == "wait" {
				hc.writes <- func() { hc.fr.WriteWindowUpdate(1, 100) }
				break
			}
			got = append(got, step)
		}
		if want := "early=refused abc=sent x=refused ij=sent k=refused"; strings.Join(got, " ") != want {
			t.Errorf("steps %q, want %q", strings.Join(got, " "), want)
		}
		if r := hc.response(1); r.body != "abcdefghijk" || !r.ended {
			t.Errorf("response %+v", r)
		}
	})
	t.Run("length and reset", func(t *testing.T) {
		steps := make(chan string, 8)
		proxy := func(c net.Conn) bool {
			go func() {
				defer close(steps)
				defer c.Close()
				v := c.(*vconn)
				v.Read(make([]byte, 4096))
				v.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n"))
				steps <- map[bool]string{true: "sent", false: "refused"}[v.TryWriteData([]byte("ab"))]
				steps <- map[bool]string{true: "sent", false: "refused"}[v.TryWriteData([]byte("cdef"))] // would end it
				waitFor(t, func() bool { return v.cur.Load() == 0 })                                     // the client reset
				steps <- map[bool]string{true: "sent", false: "refused"}[v.TryWriteData([]byte("c"))]
			}()
			return true
		}
		s := New(Options{Handoff: proxy, Log: quietLog()})
		hc := dialRaw(t, s)
		hc.send(1, getFields, "")
		if a, b := <-steps, <-steps; a != "sent" || b != "refused" {
			t.Errorf("Content-Length body: %s %s, want sent refused", a, b)
		}
		hc.writes <- func() { hc.fr.WriteRSTStream(1, http2.ErrCodeCancel) }
		if c := <-steps; c != "refused" {
			t.Errorf("after the client's reset: %s", c)
		}
		for body := ""; body != "ab"; {
			f, err := hc.fr.ReadFrame()
			if err != nil {
				t.Fatalf("response body %q: %v", body, err)
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
				body += string(d.Data())
			}
		}
	})
}
