package h2

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"lbd/http1"
)

// bodyGrace is how long a finished exchange waits for its request-body
// copier to report; it only runs past a few microseconds when the proxy
// answered without reading the body, and then the bridge is dropped.
const bodyGrace = 50 * time.Millisecond

// A bridge is one in-memory connection to the proxy's HTTP/1.1 engine:
// this end writes request heads and bodies and reads responses, the
// other end (bridgeConn) is served by the proxy like any client
// connection. Bridges are kept per HTTP/2 connection and reused for the
// next stream, so backend keep-alive and per-client backend affinity
// work as for an HTTP/1.1 client.
type bridge struct {
	conn net.Conn
	br   *bufio.Reader
	resp http1.Response // fastRelay's parse, reused
}

// bridgeConn is the proxy's end: it reports the HTTP/2 client's
// addresses and TLS facts, so logging, X-Forwarded-For, sessions by IP
// and the X-SSL-* headers are those of the real client.
type bridgeConn struct {
	net.Conn
	remote, local net.Addr
	ssl           []byte
}

func (c *bridgeConn) RemoteAddr() net.Addr { return c.remote }
func (c *bridgeConn) LocalAddr() net.Addr  { return c.local }

// SSLHeaders implements proxy.TLSInfo: the client's X-SSL-* lines.
func (c *bridgeConn) SSLHeaders() []byte { return c.ssl }

// NoHTTPS11 implements proxy.TLSInfo. It is 0: the Pound setting forces
// HTTP/1.0 on TLS connections, and HTTP/2 is not offered when it is 1.
func (c *bridgeConn) NoHTTPS11() int { return 0 }

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}
	bufPool    = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

	// errStale: the proxy closed an idle bridge before this request
	// reached it (its idle timeout); nothing was sent, so it is retried
	// on a fresh bridge.
	errStale = errors.New("h2: idle bridge was closed")
	errProxy = errors.New("h2: bad response from the proxy")
	// errClientBody: the client's request body broke off or did not
	// match its Content-Length; the stream is reset.
	errClientBody = errors.New("h2: bad request body")
	errStopped    = errors.New("h2: body copy stopped")
)

func (b *bridge) close() {
	b.conn.Close()
	if b.br != nil {
		b.br.Reset(nil)
		readerPool.Put(b.br)
		b.br = nil
	}
}

// exchange sends one request and relays its response to w. It reports
// whether the bridge may carry another request, and whether anything
// was written to w: an error before that leaves w untouched; after it
// (or when the client's own body was broken, errClientBody) the stream
// must be reset, which the caller does by panicking with
// http.ErrAbortHandler.
func (b *bridge) exchange(w http.ResponseWriter, r *http.Request, head []byte, chunked bool) (reuse, wrote bool, err error) {
	if n, err := b.conn.Write(head); err != nil {
		if n == 0 {
			return false, false, errStale
		}
		return false, false, err
	}
	var body *bodyCopier
	if r.ContentLength != 0 {
		body = startBody(b.conn, r.Body, chunked)
	}
	reuse, wrote, err = b.relay(w, r.Method)
	if body != nil {
		switch berr := body.finish(b.conn, r.Body, err == nil && reuse); {
		case errors.Is(berr, errStopped) || errors.Is(berr, io.ErrClosedPipe):
			reuse = false // the proxy answered without taking it all
		case berr != nil:
			return false, wrote, errClientBody
		}
	}
	return reuse, wrote, err
}

// relay reads the proxy's response and writes it to w.
func (b *bridge) relay(w http.ResponseWriter, method string) (reuse, wrote bool, err error) {
	if reuse, wrote, err = b.fastRelay(w, method); !errors.Is(err, errFallback) {
		return reuse, wrote, err
	}
	resp, err := b.readResponse(method)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	declareTrailers(w.Header(), resp.Trailer)
	w.WriteHeader(resp.StatusCode)
	if err := copyBody(w, resp.Body, resp.ContentLength, b.br.Buffered); err != nil {
		return false, true, err
	}
	for k, vv := range resp.Trailer {
		w.Header()[http.TrailerPrefix+k] = vv
	}
	return !resp.Close, true, nil
}

// bodyCopier feeds the request body to the proxy in the background, so
// that the response can be read while a large body still streams.
type bodyCopier struct{ done chan error }

func startBody(conn net.Conn, body io.Reader, chunked bool) *bodyCopier {
	bc := &bodyCopier{done: make(chan error, 1)}
	go func() {
		err := sendBody(conn, body, chunked)
		bc.done <- err // before the close below, so finish sees why
		if err != nil {
			conn.Close() // a truncated body must never look complete to the proxy
		}
	}()
	return bc
}

// finish collects the copier. When the exchange went well the proxy has
// read the whole body and the copier is just finishing its last write,
// so it is given bodyGrace; otherwise, or if it is still blocked after
// that, it is stopped by closing both its ends (errStopped).
func (bc *bodyCopier) finish(conn net.Conn, body io.Closer, wait bool) error {
	if wait {
		t := time.NewTimer(bodyGrace)
		defer t.Stop()
		select {
		case err := <-bc.done:
			return err
		case <-t.C:
		}
	}
	select {
	case err := <-bc.done:
		if err != nil {
			return err // it failed on its own: the client's body, or the pipe
		}
	default:
	}
	conn.Close()
	body.Close()
	<-bc.done
	return errStopped
}

// readResponse reads the final response; interim 1xx answers are
// dropped (the h2 server answers Expect itself, and a 101 cannot be
// relayed over HTTP/2).
func (b *bridge) readResponse(method string) (*http.Response, error) {
	req := &http.Request{Method: method}
	for {
		resp, err := http.ReadResponse(b.br, req)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errProxy, err)
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errProxy
		case resp.StatusCode >= 200:
			return resp, nil
		}
	}
}

// sendBody copies the request body to the proxy, chunk-encoding it when
// the client declared no length.
func sendBody(dst io.Writer, body io.Reader, chunked bool) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	if !chunked {
		_, err := io.CopyBuffer(dst, body, buf)
		return err
	}
	const room = 16 // "%x\r\n" prefix
	for {
		n, rerr := body.Read(buf[room : len(buf)-2])
		if n > 0 {
			size := strconv.AppendInt(buf[:0:room], int64(n), 16)
			start := room - len(size) - 2
			copy(buf[start:], size)
			copy(buf[room-2:], "\r\n")
			end := room + n
			copy(buf[end:], "\r\n")
			if _, err := dst.Write(buf[start : end+2]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			_, err := io.WriteString(dst, "0\r\n\r\n")
			return err
		}
		if rerr != nil {
			return rerr
		}
	}
}

// copyBody streams the response body (size bytes, -1 = unknown). It
// flushes only when the proxy has nothing more buffered for it (pending
// says how much) and the body is not complete, so a slow or streaming
// backend reaches the client as it arrives, while a response already
// complete goes out with END_STREAM in as few frames as possible (the
// h2 server flushes when the handler returns).
func copyBody(w http.ResponseWriter, body io.Reader, size int64, pending func() int) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	fl, _ := w.(http.Flusher)
	for {
		n, err := body.Read(*bp)
		if n > 0 {
			if _, werr := w.Write((*bp)[:n]); werr != nil {
				return werr
			}
			size -= int64(n)
		}
		if err == io.EOF && size > 0 {
			return io.ErrUnexpectedEOF // the proxy cut a Content-Length body short
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if fl != nil && size != 0 && pending() == 0 {
			fl.Flush()
		}
	}
}

// copyHeader copies the response fields an HTTP/2 response may carry.
// Date and Content-Type are pinned (possibly to nothing) so the h2
// server adds neither a date nor a sniffed type the backend did not send.
func copyHeader(dst, src http.Header) {
	dst["Date"], dst["Content-Type"] = nil, nil
	for k, vv := range src {
		if isHop(k) || k == "Trailer" {
			continue
		}
		dst[k] = vv
	}
	for _, v := range src["Connection"] {
		for _, name := range splitList(v) {
			delete(dst, http.CanonicalHeaderKey(name))
		}
	}
}

func declareTrailers(dst http.Header, tr http.Header) {
	for k := range tr {
		dst.Add("Trailer", k)
	}
}

func isHop(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Http2-Settings":
		return true
	}
	return false
}

func splitList(v string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(v); i++ {
		if i == len(v) || v[i] == ',' {
			name := v[start:i]
			for len(name) > 0 && (name[0] == ' ' || name[0] == '\t') {
				name = name[1:]
			}
			for len(name) > 0 && (name[len(name)-1] == ' ' || name[len(name)-1] == '\t') {
				name = name[:len(name)-1]
			}
			if name != "" {
				out = append(out, name)
			}
			start = i + 1
		}
	}
	return out
}
