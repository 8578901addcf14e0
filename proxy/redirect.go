package proxy

import (
	"bytes"
	"strconv"
	"strings"

	"lbd/config"
	"lbd/rules"
)

// redirect answers a Redirect backend, in the dialect's form. Redirects
// are not the hot path: they may allocate. The connection closes
// afterwards, as the reply says.
func (c *conn) redirect(st *Listener, r *config.Redirect) bool {
	var loc []byte
	var code int
	if st.Dialect == config.DialectZproxy {
		loc, code = c.zproxyLocation(r), zproxyRedirectCode(r.Code)
	} else {
		var ok bool
		if loc, ok = c.poundLocation(st, r); !ok {
			return c.fail(st, 500)
		}
		code = r.Code
		if code == 0 {
			code = 302
		}
	}
	reply := c.editGenerated(st, c.redirectReply(st.Dialect, code, loc))
	c.srv.countGenerated(code)
	c.dl.forWrite(c.nc, c.now, st.Client)
	c.nc.Write(reply)
	c.ex.status, c.ex.gen = code, true
	c.logRequest(st)
	return false
}

// poundLocation expands the URL (src/http.c expand_url): back-references
// and accessors; when none was expanded and the URL had no path, the
// request URL is appended. ok is false when a reference is invalid.
func (c *conn) poundLocation(st *Listener, r *config.Redirect) ([]byte, bool) {
	env := c.ex.svc.Env
	if env == nil {
		return nil, false
	}
	raw, n, err := c.rs.Expand(env, r.URL, nil, "Redirect expression")
	if err != nil {
		st.diag(err)
		return nil, false
	}
	if n == 0 && !r.HasURI {
		raw = append(raw, c.req.Target...)
	}
	return safeURL(nil, raw, "_.:/?&;-=+"), true
}

// zproxyLocation builds zproxy's redirect target: ${VHOST} is the Host
// header; a URL with $N is a dynamic redirect (the part of the path the
// service's URL pattern matched is replaced); RedirectAppend appends the
// request path; any other URL is sent as written.
func (c *conn) zproxyLocation(r *config.Redirect) []byte {
	url := r.URL
	if host, ok := c.reqHeader(hdrHost); ok {
		url = strings.Replace(url, "${VHOST}", string(host), 1)
	}
	var out []byte
	switch {
	case hasDollarDigit(url):
		if res, _, ok := rules.Substitute(nil, c.req.Target, c.serviceURLPattern(), url); ok {
			out = res
		} else {
			out = []byte(url)
		}
	case r.Append:
		out = append([]byte(url), c.req.Target...)
	default:
		out = []byte(url)
	}
	return safeURL(nil, out, "_.:/?&;-=%")
}

func hasDollarDigit(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' && isDigit(s[i+1]) {
			return true
		}
	}
	return false
}

// serviceURLPattern is the first URL pattern of the request's service.
func (c *conn) serviceURLPattern() *config.Pattern {
	if c.ex.svc == nil || c.ex.svc.Cfg == nil {
		return nil
	}
	for _, cond := range c.ex.svc.Cfg.Conditions {
		if cond.Kind == config.CondURL && !cond.Not {
			return cond.Pattern
		}
	}
	return nil
}

// zproxyRedirectCode: zproxy answers 301 and 307 as configured and
// everything else as 302.
func zproxyRedirectCode(code int) int {
	if code == 301 || code == 307 {
		return code
	}
	return 302
}

// safeURL percent-encodes every byte but alphanumerics and allowed, as
// "%%%02x" of a C char does: bytes >= 0x80 print sign-extended.
func safeURL(dst, url []byte, allowed string) []byte {
	const hex = "0123456789abcdef"
	for _, ch := range url {
		isAlnum := (ch|0x20 >= 'a' && ch|0x20 <= 'z') || isDigit(ch)
		if isAlnum || strings.IndexByte(allowed, ch) >= 0 {
			dst = append(dst, ch)
			continue
		}
		dst = append(dst, '%')
		if ch >= 0x80 {
			dst = append(dst, "ffffff"...)
		}
		dst = append(dst, hex[ch>>4], hex[ch&15])
	}
	return dst
}

// redirectReply renders the reply: Pound's (src/http.c redirect_response
// and bio_http_reply) or zproxy's HTTP/1.0 form.
func (c *conn) redirectReply(d config.Dialect, code int, loc []byte) []byte {
	var body bytes.Buffer
	body.WriteString("<html><head><title>Redirect</title></head><body><h1>Redirect</h1><p>You should go to <a href=")
	if d == config.DialectZproxy {
		body.Write(loc)
		body.WriteByte('>')
	} else {
		body.WriteByte('"')
		body.Write(loc)
		body.WriteString("\">")
	}
	body.Write(loc)
	body.WriteString("</a></p></body></html>")
	if d == config.DialectZproxy {
		body.WriteByte('\n') // zproxy ends every body it writes with one
	}
	n := strconv.Itoa(body.Len())
	var b []byte
	if d == config.DialectZproxy {
		b = append(b, "HTTP/1.0 "+strconv.Itoa(code)+" "+redirectReason(code)+"\r\n"+
			"Content-Type: text/html\r\nContent-Length: "+n+"\r\nLocation: "...)
	} else {
		b = append(b, "HTTP/1."+strconv.Itoa(c.req.Minor)+" "+strconv.Itoa(code)+" "+
			redirectReason(code)+"\r\nContent-Type: text/html\r\n"...)
		if c.req.Minor == 1 {
			b = append(b, "Content-Length: "+n+"\r\nConnection: close\r\n"...)
		}
		b = append(b, "Location: "...)
	}
	b = append(b, loc...)
	b = append(b, "\r\n\r\n"...)
	return append(b, body.Bytes()...)
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
