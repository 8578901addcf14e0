package proxy

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/net/http2"

	"lbd/h2backend"
	"lbd/http1"
	"lbd/service"
)

// chunkRoom is kept in front of each body read for the chunk-size line.
const chunkRoom = 16

// relay sends an HTTP/2 backend's response to the client as it comes:
// the head through the response rules as any backend's, the body as
// chunks (one per read, written at once: streams flow both ways), the
// trailers as the chunked body's trailer section.
func (x *h2Exchange) relay(svc *service.Service, resp *http.Response) bool {
	c := x.c
	defer resp.Body.Close()
	x.activity()
	isHEAD := c.req.MethodID == http1.MethodHEAD
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	rb := *bp
	// Trailers (announced, or gRPC's, which never are) need the chunked
	// framing, whatever length the backend gave.
	chunked := resp.ContentLength < 0 || len(resp.Trailer) > 0
	raw := appendStatusLine(rb[:0], resp.StatusCode, reasonFor(resp.StatusCode))
	for k, vv := range resp.Header {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue // the framing is written below
		}
		for _, v := range vv {
			raw = appendLine(raw, k, v)
		}
	}
	if chunked {
		raw = append(raw, "Transfer-Encoding: chunked\r\n"...)
	} else {
		raw = appendLine(raw, "Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	raw = append(raw, crlf...)
	c.noteGRPCStatus(resp.Header)
	keep, more, ok := x.relayHead(svc, raw, isHEAD)
	if !ok || !more {
		return keep && ok
	}
	if err := x.copyBody(resp, rb, chunked); err != nil {
		return false
	}
	return keep
}

// relayHead parses the backend's response head (raw, as HTTP/1.1), runs
// it through the response rules and writes it to the client. more says
// a body follows; ok false means the client connection is done for.
func (x *h2Exchange) relayHead(svc *service.Service, raw []byte, isHEAD bool) (keep, more, ok bool) {
	c, st := x.c, x.st
	if err := http1.ParseResponseHead(raw, &c.resp, isHEAD); err != nil {
		x.cancel()
		return false, false, c.fail(st, 502)
	}
	c.ex.status = c.resp.Status
	c.ex.bytes = 0
	c.learnSession(svc, c.ex.be)
	keep = c.req.KeepAlive && !c.srv.closing.Load()
	mode := connKeep
	if !keep {
		mode = connClose
	}
	head := c.appendResponseHead(st, c.out[:0], mode)
	if head == nil { // a response rule failed: Pound answers 500
		x.cancel()
		return false, false, c.fail(st, 500)
	}
	c.out = head
	c.dl.forWrite(c.nc, time.Now(), st.Client)
	if err := c.writeClient(head); err != nil {
		x.cancel()
		return false, false, false
	}
	return keep, c.resp.BodyKind(isHEAD) != http1.BodyNone, true
}

// copyBody streams the response body and, when chunked, the trailers.
func (x *h2Exchange) copyBody(resp *http.Response, rb []byte, chunked bool) error {
	if err := x.copyChunks(resp.Body, rb, chunked); err != nil || !chunked {
		return err
	}
	c := x.c
	c.noteGRPCStatus(resp.Trailer)
	end := append(rb[:0], "0\r\n"...)
	for k, vv := range resp.Trailer {
		for _, v := range vv {
			end = appendLine(end, k, v)
		}
	}
	end = append(end, crlf...)
	return c.writeClient(end)
}

// copyChunks streams a response body from r to the client, as HTTP/1.1
// chunks when chunked (the caller then writes the last chunk and the
// trailers). rb has chunkRoom bytes in front for the size line.
func (x *h2Exchange) copyChunks(r io.Reader, rb []byte, chunked bool) error {
	c := x.c
	for {
		n, err := r.Read(rb[chunkRoom : len(rb)-2])
		if n > 0 {
			x.activity()
			out := rb[chunkRoom : chunkRoom+n]
			if chunked {
				var size [chunkRoom]byte
				line := append(strconv.AppendInt(size[:0], int64(n), 16), crlf...)
				start := chunkRoom - len(line)
				copy(rb[start:], line)
				out = append(rb[start:chunkRoom+n], crlf...)
			}
			c.dl.forWrite(c.nc, time.Now(), x.st.Client)
			if werr := c.writeClient(out); werr != nil {
				x.cancel() // the client is gone: the backend's stream is reset
				return werr
			}
			c.ex.bytes += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return x.cutShort(err, chunked)
		}
	}
}

// cutShort ends a response the backend or the deadline cut off: a gRPC
// deadline becomes the DEADLINE_EXCEEDED status trailers; a backend's
// reset resets the client's stream with the same code; anything else
// leaves the client connection to be closed (HTTP/2: a reset stream).
func (x *h2Exchange) cutShort(err error, chunked bool) error {
	c := x.c
	if x.grpcDeadline.Load() && chunked {
		c.ex.grpcStatus = h2backend.CodeDeadlineExceeded + 1
		end := appendLine([]byte("0\r\n"), "Grpc-Status", strconv.Itoa(h2backend.CodeDeadlineExceeded))
		end = append(appendLine(end, "Grpc-Message", "lbd: grpc-timeout expired"), crlf...)
		if werr := c.writeClient(end); werr != nil {
			return werr
		}
		return err // the backend's stream was reset: nothing more is read from it
	}
	var se http2.StreamError
	if r, ok := c.nc.(StreamResetter); ok && errors.As(err, &se) {
		r.ResetStream(uint32(se.Code))
	}
	return err
}

// noteGRPCStatus records the grpc-status of the response, if h has one,
// for the access log and the metrics.
func (c *conn) noteGRPCStatus(h http.Header) {
	v := h["Grpc-Status"]
	if len(v) == 0 {
		return
	}
	if n, err := strconv.Atoi(v[0]); err == nil && n >= 0 && n < 100 {
		c.ex.grpcStatus = n + 1
	}
}
