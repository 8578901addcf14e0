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

// grpcCodeCount: the codes gRPC defines (0 OK to 16 UNAUTHENTICATED);
// any other status a backend sends is counted as 2 (UNKNOWN).
const grpcCodeCount = 17

func (s *Server) countGRPC(code int) {
	if code < 0 || code >= grpcCodeCount {
		code = h2backend.CodeUnknown
	}
	s.grpcCodes[code].Add(1)
}

// GRPCStatuses returns the gRPC responses counted by grpc-status code
// (the index), or nil before the first.
func (s *Server) GRPCStatuses() []int64 {
	var out []int64
	for i := range s.grpcCodes {
		if n := s.grpcCodes[i].Load(); n > 0 {
			if out == nil {
				out = make([]int64, grpcCodeCount)
			}
			out[i] = n
		}
	}
	return out
}

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
