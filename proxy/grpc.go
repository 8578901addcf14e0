package proxy

import (
	"net/url"
	"strconv"
	"time"

	"lbd/h2backend"
)

// gRPC clients read a call's outcome from the grpc-status trailer, not
// from an HTTP status or an HTML page: an error lbd answers a gRPC
// request with (no backend, timeout, a refusal by an access rule or the
// WAF) goes out as a trailers-only response carrying the status, as
// gRPC servers and HAProxy send it.

var hdrContentTypeB = []byte("Content-Type")

// grpcRequest reports whether the request is a gRPC call.
func (c *conn) grpcRequest() bool {
	return h2backend.IsGRPC(c.req.HeaderValue(hdrContentTypeB))
}

// writeGRPCError answers the gRPC request with the status that stands
// for the HTTP status lbd would have sent.
func (c *conn) writeGRPCError(st *Listener, status int) {
	c.dl.forWrite(c.nc, time.Now(), st.Client)
	c.srv.countGenerated(status)
	code := h2backend.StatusForHTTP(status)
	c.ex.grpcStatus = code + 1
	b := append(c.out[:0], "HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\nGrpc-Status: "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, "\r\nGrpc-Message: "...)
	// grpc-message is percent-encoded (gRPC's PROTOCOL-HTTP2.md).
	b = append(b, url.PathEscape("lbd: "+strconv.Itoa(status)+" "+Reason(status))...)
	b = append(b, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"...)
	c.out = b
	c.nc.Write(b)
}
