package proxy

import (
	"strconv"

	"lbd/config"
)

// redirect answers a Redirect service: when the configured URL has no
// path, the request path is appended; otherwise it is used as is (Pound).
func (c *conn) redirect(st *Listener, r *config.Redirect) bool {
	code := r.Code
	if code == 0 {
		code = 302
	}
	loc := c.out[:0]
	loc = append(loc, r.URL...)
	if r.Append || !hasPath(r.URL) {
		loc = append(loc, c.req.Target...)
	}
	body := "<html><head><title>Redirect</title></head><body><h1>Redirect</h1><p>You should go to <a href=\"" + string(loc) + "\">" + string(loc) + "</a></p></body></html>"
	b := make([]byte, 0, 256+len(body))
	b = append(b, "HTTP/1."...)
	b = append(b, byte('0'+c.req.Minor))
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	b = append(b, redirectReason(code)...)
	b = append(b, "\r\nLocation: "...)
	b = append(b, loc...)
	b = append(b, "\r\nContent-Type: text/html\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	c.dl.forWrite(c.nc, c.now, st.Client)
	_, err := c.nc.Write(b)
	c.ex.status, c.ex.gen = code, true
	c.logRequest(st)
	return err == nil && c.req.KeepAlive && c.discardBody()
}

// discardBody skips a request body that is already in the buffer; a
// generated answer to a request with more body pending closes instead.
func (c *conn) discardBody() bool {
	c.r += c.req.HeadLen
	if c.req.Chunked {
		return false
	}
	if c.req.ContentLength > 0 {
		if int64(c.w-c.r) < c.req.ContentLength {
			return false
		}
		c.r += int(c.req.ContentLength)
	}
	return true
}

func hasPath(url string) bool {
	i := 0
	if j := indexOf(url, "://"); j >= 0 {
		i = j + 3
	}
	for ; i < len(url); i++ {
		if url[i] == '/' {
			return true
		}
	}
	return false
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func redirectReason(code int) string {
	switch code {
	case 301:
		return "Moved Permanently"
	case 303:
		return "See Other"
	case 307:
		return "Temporary Redirect"
	case 308:
		return "Permanent Redirect"
	}
	return "Found"
}
