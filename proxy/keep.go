package proxy

// The request head is parsed in the client read buffer and the response
// head in the I/O buffer; streaming a body reuses both, after which the
// slices of c.req and c.resp point at body bytes. The access log line
// and RewriteLocation (which reads the request's Host) come later, so
// what they read is copied to c.keep first, and the slices re-pointed.

// keepRequest copies the request head to c.keep when its body is not
// all in the read buffer yet (the only case in which the head is
// overwritten). It runs before anything of the request is sent.
func (c *conn) keepRequest() {
	req := &c.req
	c.keep = c.keep[:0]
	if !req.Chunked && int64(c.w-c.r-req.HeadLen) >= max(req.ContentLength, 0) {
		return
	}
	head := c.head()
	c.keep = append(c.keep, head...)
	rb := func(s []byte) []byte { return rebase(s, head, c.keep) }
	req.Method, req.Target = rb(req.Method), rb(req.Target)
	req.Path, req.Query, req.Host = rb(req.Path), rb(req.Query), rb(req.Host)
	for i := range req.Headers {
		h := &req.Headers[i]
		h.Name, h.Value = rb(h.Name), rb(h.Value)
	}
}

// keepReason copies the response's reason phrase, which the body
// streaming would overwrite before the log line prints it.
func (c *conn) keepReason() {
	start := len(c.keep)
	c.keep = append(c.keep, c.resp.Reason...)
	c.resp.Reason = c.keep[start:len(c.keep):len(c.keep)]
}

// rebase re-points s, a slice of from, at the same bytes of to (a copy
// of from). Slices outside from are kept.
func rebase(s, from, to []byte) []byte {
	if cap(s) == 0 {
		return s
	}
	off := cap(from) - cap(s)
	if off < 0 || off >= cap(from) || off+len(s) > len(from) {
		return s
	}
	// Capacity arithmetic alone also matches a slice of another array
	// whose end lines up (the parser's static "/" Path when the head ends
	// at the end of the buffer): only a slice starting at from[off] is
	// one of ours.
	if &s[:1][0] != &from[:cap(from)][off] {
		return s
	}
	return to[off : off+len(s) : len(to)]
}
