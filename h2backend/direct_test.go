package h2backend

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// fakeRelay is a client side that takes response data when open.
type fakeRelay struct {
	mu   sync.Mutex
	open bool
	got  []byte
}

func (r *fakeRelay) RelayData(p []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open {
		return false
	}
	r.got = append(r.got, p...)
	return true
}

func (r *fakeRelay) set(open bool) {
	r.mu.Lock()
	r.open = open
	r.mu.Unlock()
}

func (r *fakeRelay) taken() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.got)
}

// waitUntil polls cond for up to 5 s (the reader works on its own).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// respond opens a GET and has the fake backend answer its head.
func respond(t *testing.T) (*Stream, *fakeConn, uint32) {
	fb := newFakeBackend(t)
	p := framePool(t, fb.addr, 1)
	s := openGET(t, p)
	fc := fb.accept()
	id := fc.next(t, http2.FrameHeaders).Header().StreamID
	fc.headers(t, id, false, ":status", "200")
	if _, _, _, _, err := s.ReadHead(); err != nil {
		t.Fatal(err)
	}
	return s, fc, id
}

// TestRelayKeepsOrder: response data goes to the relay while nothing is
// buffered; once the relay refuses, data is buffered, and later data
// waits behind it until the proxy has read it all and comes back
// (draining), so the client gets it in order; the end of the stream and
// the trailers always come through Read.
func TestRelayKeepsOrder(t *testing.T) {
	s, fc, id := respond(t)
	r := &fakeRelay{open: true}
	s.SetRelay(r)
	fc.fr.WriteData(id, false, []byte("a"))
	waitUntil(t, "a relayed", func() bool { return r.taken() == "a" })

	r.set(false)
	fc.fr.WriteData(id, false, []byte("b"))
	buf := make([]byte, 16)
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "b" {
		t.Fatalf("refused data: Read %q %v", buf[:n], err)
	}
	// The proxy holds "b" (it has not come back to Read): "c" may not
	// overtake it, even with the relay open.
	r.set(true)
	fc.fr.WriteData(id, false, []byte("c"))
	waitUntil(t, "c buffered", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.off < len(s.body)
	})
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "c" {
		t.Fatalf("data behind held data: Read %q %v", buf[:n], err)
	}
	read := make(chan string, 1)
	go func() {
		n, err := s.Read(buf) // caught up: waits, and sees the end
		read <- string(buf[:n]) + "|" + errString(err)
	}()
	waitUntil(t, "the proxy waiting", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.draining
	})
	fc.fr.WriteData(id, false, []byte("d"))
	waitUntil(t, "d relayed", func() bool { return r.taken() == "ad" })
	fc.headers(t, id, true, "grpc-status", "0")
	if got := <-read; got != "|EOF" {
		t.Errorf("end of stream: Read %q", got)
	}
	if string(s.Trailer()) != "Grpc-Status: 0\r\n" {
		t.Errorf("trailer %q", s.Trailer())
	}
	s.SetRelay(nil)
}

// TestRelayCredit: relayed data gives the backend its window back at
// once (it left lbd); data a blocked client refuses is credited only as
// the proxy reads it, so the backend can send at most the stream's
// window, and one byte more resets the stream.
func TestRelayCredit(t *testing.T) {
	t.Run("relayed", func(t *testing.T) {
		s, fc, id := respond(t)
		r := &fakeRelay{open: true}
		s.SetRelay(r)
		chunk := make([]byte, 16<<10)
		for sent := 0; sent < 2*streamWindow; sent += len(chunk) {
			if err := fc.fr.WriteData(id, false, chunk); err != nil {
				t.Fatal(err)
			}
		}
		// More than the window went through without a Read: credited.
		waitUntil(t, "all relayed", func() bool { return len(r.taken()) == 2*streamWindow })
		wu := fc.next(t, http2.FrameWindowUpdate).(*http2.WindowUpdateFrame)
		for wu.StreamID != id {
			wu = fc.next(t, http2.FrameWindowUpdate).(*http2.WindowUpdateFrame)
		}
		s.SetRelay(nil)
	})
	t.Run("client blocked", func(t *testing.T) {
		s, fc, id := respond(t)
		s.SetRelay(&fakeRelay{open: false})
		chunk := make([]byte, 16<<10)
		for sent := 0; sent < streamWindow; sent += len(chunk) {
			fc.fr.WriteData(id, false, chunk)
		}
		fc.fr.WriteData(id, false, []byte("x"))
		rst := fc.next(t, http2.FrameRSTStream).(*http2.RSTStreamFrame)
		if rst.StreamID != id || rst.ErrCode != http2.ErrCodeFlowControl {
			t.Errorf("reset %v, want FLOW_CONTROL on %d", rst, id)
		}
		s.SetRelay(nil)
	})
}

// TestRelayResetWhileBuffered: a backend reset reaches the proxy after
// the data it had buffered for a blocked client.
func TestRelayResetWhileBuffered(t *testing.T) {
	s, fc, id := respond(t)
	s.SetRelay(&fakeRelay{open: false})
	fc.fr.WriteData(id, false, []byte("queued"))
	fc.fr.WriteRSTStream(id, http2.ErrCodeInternal)
	got, err := io.ReadAll(s)
	var se http2.StreamError
	if !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
		t.Errorf("after the reset: %q %v", got, err)
	}
	s.SetRelay(nil)
}

// TestTryWriteData: request data is appended only when the backend's
// windows take all of it; Flush writes it; after Cancel nothing more is
// taken, and the RST_STREAM follows the data already queued.
func TestTryWriteData(t *testing.T) {
	fb := newFakeBackend(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 8})
	p := framePool(t, fb.addr, 1)
	s, _, err := p.Open(t.Context(), block("POST", "/"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fc := fb.accept()
	id := fc.next(t, http2.FrameHeaders).Header().StreamID
	waitUntil(t, "the backend's window known", func() bool {
		s.c.mu.Lock()
		defer s.c.mu.Unlock()
		return s.sendWin == 8
	})
	if s.TryWriteData([]byte("123456789")) {
		t.Error("9 bytes taken with a window of 8")
	}
	if !s.TryWriteData([]byte("12345")) {
		t.Fatal("5 bytes refused with a window of 8")
	}
	s.Flush()
	if d := fc.next(t, http2.FrameData).(*http2.DataFrame); !bytes.Equal(d.Data(), []byte("12345")) || d.StreamEnded() {
		t.Errorf("DATA %q end=%v", d.Data(), d.StreamEnded())
	}
	if s.TryWriteData([]byte("6789")) {
		t.Error("4 bytes taken with 3 left")
	}
	fc.fr.WriteWindowUpdate(id, 100)
	waitUntil(t, "the window update", func() bool { return s.TryWriteData([]byte("6789")) })
	s.Cancel() // with "6789" still in the buffer
	if s.TryWriteData([]byte("x")) {
		t.Error("data taken after Cancel")
	}
	if d := fc.next(t, http2.FrameData).(*http2.DataFrame); string(d.Data()) != "6789" {
		t.Errorf("queued DATA %q", d.Data())
	}
	if rst := fc.next(t, http2.FrameRSTStream).(*http2.RSTStreamFrame); rst.StreamID != id || rst.ErrCode != http2.ErrCodeCancel {
		t.Errorf("reset %v", rst)
	}
}

// TestFlushDoesNotWait: the client connection's reader must not be held
// up by a backend that stops reading its socket. Flush sends what the
// socket takes and leaves the rest to another goroutine; TryWriteData
// refuses once the buffer is full (the data then waits in the proxy's
// path, within the client's window); everything arrives whole and in
// order once the backend reads again.
func TestFlushDoesNotWait(t *testing.T) {
	fb := newFakeBackend(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: maxWindow})
	p := framePool(t, fb.addr, 1)
	s, _, err := p.Open(t.Context(), block("POST", "/"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fc := fb.accept()
	id := fc.next(t, http2.FrameHeaders).Header().StreamID
	fc.fr.WriteWindowUpdate(0, maxWindow-65535)
	waitUntil(t, "the backend's windows", func() bool {
		s.c.mu.Lock()
		defer s.c.mu.Unlock()
		return s.sendWin == maxWindow && s.c.sendWin == maxWindow
	})
	chunk := make([]byte, 16<<10)
	sent := 0
	for n := byte(0); sent < 64<<20; n++ { // far beyond what socket buffers hold
		for i := range chunk {
			chunk[i] = n
		}
		if !s.TryWriteData(chunk) {
			break
		}
		sent += len(chunk)
		s.Flush() // would hang here if it waited for the backend
	}
	if sent >= 64<<20 {
		t.Fatal("the backend's socket never filled: nothing was tested")
	}
	got := 0
	for got < sent {
		d := fc.next(t, http2.FrameData).(*http2.DataFrame)
		if d.StreamID != id {
			continue
		}
		for _, b := range d.Data() {
			if want := byte(got / len(chunk)); b != want {
				t.Fatalf("byte %d is %d, want %d: data out of order", got, b, want)
			}
			got++
		}
	}
}
