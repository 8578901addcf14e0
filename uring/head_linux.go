package uring

import (
	"lbd/http1"
)

// The prototype's heads follow lbd's fast path (proxy/header.go,
// proxy/response_head.go) for a request without rules: the request line
// in origin form, the received headers less hop-by-hop ones, Pound's
// X-Forwarded-* lines; the status line and the backend's headers less
// hop-by-hop ones.

func appendHeader(dst, name, value []byte) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

func (w *worker) appendRequest(c *cconn, forwarded bool, dst []byte) []byte {
	req := &c.req
	dst = append(dst, req.Method...)
	dst = append(dst, ' ')
	if req.AbsoluteForm {
		dst = append(dst, req.Path...)
		if req.Query != nil {
			dst = append(dst, '?')
			dst = append(dst, req.Query...)
		}
	} else {
		dst = append(dst, req.Target...)
	}
	dst = append(dst, " HTTP/1.1\r\n"...)
	xff := false
	for i := range req.Headers {
		h := &req.Headers[i]
		if req.IsHopByHop(h.Name) || (req.AbsoluteForm && http1.EqualFold(h.Name, "host")) {
			continue
		}
		if forwarded && !xff && http1.EqualFold(h.Name, "x-forwarded-for") {
			xff = true
			dst = append(dst, h.Name...)
			dst = append(dst, ": "...)
			dst = append(dst, h.Value...)
			dst = append(dst, ", "...)
			dst = c.client.AppendTo(dst)
			dst = append(dst, "\r\n"...)
			continue
		}
		dst = appendHeader(dst, h.Name, h.Value)
	}
	if req.AbsoluteForm {
		dst = appendHeader(dst, []byte("Host"), req.Host)
	}
	if forwarded {
		if !xff && c.client.IsValid() {
			dst = append(dst, "X-Forwarded-For: "...)
			dst = c.client.AppendTo(dst)
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "X-Forwarded-Proto: http\r\nX-Forwarded-Port: "...)
		dst = append(dst, w.port...)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...)
}

func (w *worker) appendResponse(c *cconn, dst []byte) []byte {
	r := &c.hres
	dst = append(dst, "HTTP/1.1 "...)
	dst = append(dst, byte('0'+r.Status/100), byte('0'+r.Status/10%10), byte('0'+r.Status%10), ' ')
	dst = append(dst, r.Reason...)
	dst = append(dst, "\r\n"...)
	for i := range r.Headers {
		h := &r.Headers[i]
		if r.IsHopByHop(h.Name) {
			continue
		}
		dst = appendHeader(dst, h.Name, h.Value)
	}
	if c.closeA {
		dst = append(dst, "Connection: close\r\n"...)
	}
	return append(dst, "\r\n"...)
}
