package h2

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"golang.org/x/net/http2"

	"lbd/internal/h2frame"
)

// fastProxy stands in for the engine with fixed buffers, so that what
// is measured is the HTTP/2 layer's own cost: it answers every
// body-less request with resp.
func fastProxy(resp []byte) func(net.Conn) bool {
	return func(c net.Conn) bool {
		go func() {
			defer c.Close()
			buf := make([]byte, 4096)
			n := 0
			for {
				k, err := c.Read(buf[n:])
				if err != nil {
					return
				}
				n += k
				if end := bytes.Index(buf[:n], []byte("\r\n\r\n")); end >= 0 {
					n = copy(buf, buf[end+4:n])
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}
		}()
		return true
	}
}

// rawClient speaks just enough HTTP/2 to send GETs and read their
// responses without allocating.
type rawClient struct {
	c     net.Conn
	out   chan []byte // to the writer goroutine: net.Pipe writes wait for the reader
	id    uint32
	frame []byte
	hdr   [9]byte
	body  [16 << 10]byte
}

func newRawClient(tb testing.TB, s *Server) *rawClient {
	cl, sv := net.Pipe()
	go s.ServeConn(sv)
	tb.Cleanup(func() { cl.Close() })
	sent := make(chan struct{})
	go func() {
		io.WriteString(cl, http2.ClientPreface)
		fr := http2.NewFramer(cl, nil)
		fr.WriteSettings()
		fr.WriteWindowUpdate(0, 1<<31-1-65535) // enough for any run: 2 bytes per response
		close(sent)
	}()
	rc := &rawClient{c: cl, id: 1, out: make(chan []byte)}
	go func() {
		for b := range rc.out {
			cl.Write(b)
		}
	}()
	tb.Cleanup(func() { close(rc.out) })
	// Read the server's SETTINGS and WINDOW_UPDATE, which unblocks the
	// preface write on the synchronous pipe.
	for i := 0; i < 2; i++ {
		rc.frameIn(tb)
	}
	<-sent
	return rc
}

// get sends one GET and reads frames until its END_STREAM.
func (rc *rawClient) get(tb testing.TB) {
	// :method GET, :scheme https, :path /, then :authority "h": added to
	// the dynamic table by the first request, indexed (62) afterwards.
	block := []byte{0x82, 0x87, 0x84, 0xbe}
	if rc.id == 1 {
		block = []byte{0x82, 0x87, 0x84, 0x41, 0x01, 'h'}
	}
	rc.frame = h2frame.AppendFrameHeader(rc.frame[:0], len(block), http2.FrameHeaders,
		http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, rc.id)
	rc.frame = append(rc.frame, block...)
	rc.out <- rc.frame
	for {
		if id := rc.frameIn(tb); id == rc.id && http2.Flags(rc.hdr[4]).Has(http2.FlagDataEndStream) {
			rc.id += 2
			return
		}
	}
}

// frameIn reads one frame and returns its stream.
func (rc *rawClient) frameIn(tb testing.TB) uint32 {
	if _, err := io.ReadFull(rc.c, rc.hdr[:]); err != nil {
		tb.Fatal(err)
	}
	n := int(rc.hdr[0])<<16 | int(rc.hdr[1])<<8 | int(rc.hdr[2])
	if _, err := io.ReadFull(rc.c, rc.body[:n]); err != nil {
		tb.Fatal(err)
	}
	return binary.BigEndian.Uint32(rc.hdr[5:]) & 0x7fffffff
}

var okResponse = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")

// TestStreamAllocs: in steady state the HTTP/2 layer allocates nothing
// per request: HEADERS are parsed without the Framer's frame objects,
// requests and responses are translated in reused buffers, and the
// vconn and its proxy goroutine are reused for the next stream.
func TestStreamAllocs(t *testing.T) {
	s := New(Options{Handoff: fastProxy(okResponse), Log: quietLog()})
	rc := newRawClient(t, s)
	for i := 0; i < 100; i++ { // warm the buffers and the idle vconn
		rc.get(t)
	}
	allocs := testing.AllocsPerRun(1000, func() { rc.get(t) })
	t.Logf("%.2f allocations per request", allocs)
	if allocs != 0 {
		t.Errorf("%.2f allocations per request, want 0", allocs)
	}
}

func BenchmarkStream(b *testing.B) {
	s := New(Options{Handoff: fastProxy(okResponse), Log: quietLog()})
	rc := newRawClient(b, s)
	rc.get(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rc.get(b)
	}
}
