package h2

import (
	"bufio"
	"errors"
	"io"
	"net/http"

	"lbd/http1"
)

// Most responses the proxy hands back are a head and a Content-Length
// body (or none). fastRelay takes those with lbd's own allocation-free
// head parser, straight from the read buffer; anything else (interim
// 1xx answers, chunked or close-delimited bodies) is left unread for
// net/http's reader, which also decodes chunks and trailers.

// errFallback: the response is not one fastRelay handles; nothing was
// consumed.
var errFallback = errors.New("h2: response needs the full reader")

// peekHead waits until the buffer holds a complete response head and
// parses it into resp without consuming it.
func peekHead(br *bufio.Reader, resp *http1.Response, isHEAD bool) error {
	if _, err := br.Peek(1); err != nil {
		return errProxy
	}
	for {
		buf, _ := br.Peek(br.Buffered())
		err := http1.ParseResponseHead(buf, resp, isHEAD)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, http1.ErrNeedMore):
			return errFallback // let net/http's reader judge it
		case br.Buffered() == br.Size():
			return errFallback // a head larger than the buffer
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			return errProxy
		}
	}
}

// fastRelay relays a response with no body or a Content-Length body.
func (b *bridge) fastRelay(w http.ResponseWriter, method string) (reuse, wrote bool, err error) {
	isHEAD := method == http.MethodHead
	resp := &b.resp
	if err := peekHead(b.br, resp, isHEAD); err != nil {
		return false, false, err
	}
	kind := resp.BodyKind(isHEAD)
	if resp.Status < 200 || kind == http1.BodyChunked || kind == http1.BodyUntilClose {
		return false, false, errFallback
	}
	h := w.Header()
	h["Date"], h["Content-Type"] = nil, nil // as copyHeader: add nothing of the h2 server's own
	for i := range resp.Headers {
		f := &resp.Headers[i]
		if resp.IsHopByHop(f.Name) || eqFoldString(f.Name, "Trailer") {
			continue
		}
		k := http.CanonicalHeaderKey(string(f.Name))
		h[k] = append(h[k], string(f.Value))
	}
	keepAlive := resp.KeepAlive
	size := resp.ContentLength
	b.br.Discard(resp.HeadLen)
	w.WriteHeader(resp.Status)
	if kind == http1.BodyLength {
		if err := copyBody(w, io.LimitReader(b.br, size), size, b.br.Buffered); err != nil {
			return false, true, err
		}
	}
	return keepAlive, true, nil
}

// eqFoldString compares an ASCII field name case-insensitively.
func eqFoldString(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i]|0x20 != s[i]|0x20 {
			return false
		}
	}
	return true
}
