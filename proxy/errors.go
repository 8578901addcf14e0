package proxy

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"lbd/config"
	"lbd/rules"
)

// statusText holds Pound 4's reason phrases and error texts (src/http.c,
// http_status[]), plus the few statuses lbd adds (417, 431, 502, 504, 505).
var statusText = map[int][2]string{
	200: {"OK", "Success"},
	400: {"Bad Request", "Your browser (or proxy) sent a request that this server could not understand."},
	401: {"Unauthorized", "This server could not verify that you are authorized to access the document requested.  Either you supplied the wrong credentials (e.g., bad password), or your browser doesn't understand how to supply the credentials required."},
	403: {"Forbidden", "You don't have permission to access this resource. It is either read-protected or not readable by the server."},
	404: {"Not Found", "The requested URL was not found on this server."},
	405: {"Method Not Allowed", "The request method is not supported for the requested resource."},
	408: {"Request Timeout", "The server timed out waiting for the request."},
	413: {"Payload Too Large", "The request content is larger than the proxy server is able to process."},
	414: {"URI Too Long", "The length of the requested URL exceeds the capacity limit for this server."},
	417: {"Expectation Failed", "The expectation given in the Expect request header could not be met."},
	429: {"Too Many Requests", "Originator sent too many requests in a given amount of time."},
	500: {"Internal Server Error", "The server encountered an internal error and was unable to complete your request."},
	501: {"Not Implemented", "The server does not support the action requested."},
	502: {"Bad Gateway", "The proxy server received an invalid response from an upstream server."},
	503: {"Service Unavailable", "The server is temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again later."},
	504: {"Gateway Timeout", "The upstream server did not answer in time."},
	505: {"HTTP Version Not Supported", "The HTTP version used in the request is not supported."},
}

// Reason returns the reason phrase for status ("Unknown" if lbd has none).
func Reason(status int) string {
	if t, ok := statusText[status]; ok {
		return t[0]
	}
	return "Unknown"
}

// Cause says why lbd answers with an error. Pound's pages depend on the
// status alone; zproxy names the cause in its reason phrase (503 "no
// backend" or "no service") and takes some pages from another status's
// Err file (http_events.cpp).
type Cause uint8

const (
	CauseNone      Cause = iota
	CauseNoBackend       // 503: every backend is down or disabled
	CauseNoService       // 503: no service matched the request
	CauseBadURL          // 503 (zproxy): CheckURL refused the URL
	numCauses
)

// zproxyReply is zproxy's reason phrase for an error, and the status
// whose Err file provides the body.
func zproxyReply(status int, cause Cause) (reason string, file int) {
	switch {
	case cause == CauseNoBackend:
		return "no backend", 503
	case cause == CauseNoService:
		return "no service", 503
	case cause == CauseBadURL:
		return "Bad URL", 503
	case status == 405:
		return "Method not allowed", 501
	case status == 501:
		return "Request too large", 501
	case status == 504:
		return "Gateway timeout", 504
	}
	return Reason(status), status
}

// ErrorPages holds the complete generated responses of a listener, built
// once at load so that answering an error costs one write and no
// formatting. Index [minor][pageKey].
type ErrorPages struct {
	pages  [2]map[int][]byte
	lens   map[int]int  // body length per page key, for the access log (%b)
	custom map[int]bool // statuses with an ErrorFile page
}

// Custom reports whether status has a page from an ErrorFile.
func (e *ErrorPages) Custom(status int) bool { return e.custom[status] }

// pageKey indexes a page by status and cause (always CauseNone in the
// Pound dialect).
func pageKey(status int, cause Cause) int { return status*int(numCauses) + int(cause) }

// NewErrorPages renders every page for the dialect. custom maps a status
// to a replacement body (Err*/ErrorFile), already read from disk.
func NewErrorPages(d config.Dialect, custom map[int][]byte) *ErrorPages {
	e := &ErrorPages{lens: make(map[int]int, len(statusText)), custom: make(map[int]bool, len(custom))}
	for status := range custom {
		e.custom[status] = true
	}
	statuses := make(map[int]bool, len(statusText)+len(custom))
	for status := range statusText {
		statuses[status] = true
	}
	for status := range custom {
		statuses[status] = true // zproxy's Err accepts any 3xx..5xx
	}
	for minor := 0; minor < 2; minor++ {
		e.pages[minor] = make(map[int][]byte, len(statuses))
		for status := range statuses {
			if d == config.DialectZproxy {
				for cause := CauseNone; cause < numCauses; cause++ {
					e.addZproxy(minor, status, cause, custom)
				}
				continue
			}
			body, ok := custom[status]
			if !ok {
				body = defaultBody(d, status)
			}
			key := pageKey(status, CauseNone)
			e.pages[minor][key] = renderError(d, minor, status, body)
			_, b := splitErrorFile(body)
			e.lens[key] = len(b)
		}
	}
	return e
}

// addZproxy renders zproxy's page for status and cause: its own reason
// phrase, and an Err file's text followed by a newline.
func (e *ErrorPages) addZproxy(minor, status int, cause Cause, custom map[int][]byte) {
	if cause != CauseNone && status != 503 {
		return
	}
	reason, file := zproxyReply(status, cause)
	body, ok := custom[file]
	if ok {
		body = append(append([]byte{}, body...), '\n')
	} else {
		body = zproxyDefaultBody(status, reason)
	}
	key := pageKey(status, cause)
	e.pages[minor][key] = renderZproxyError(status, reason, body)
	e.lens[key] = len(body)
}

// bodyLen is the length of the page body for status and cause (what
// Page sends).
func (e *ErrorPages) bodyLen(status int, cause Cause) int {
	if n, ok := e.lens[pageKey(status, cause)]; ok {
		return n
	}
	if n, ok := e.lens[pageKey(status, CauseNone)]; ok {
		return n
	}
	return e.lens[pageKey(500, CauseNone)]
}

// errorBackend answers for a Pound 4 `Error STATUS ["file"]` backend:
// its own page when it names a file, else the listener's page for the
// status (src/http.c error_response), its headers passed through the
// response rules as Pound does (that is how BasicAuth's 401 gets its
// WWW-Authenticate). The connection closes after it, as the page says
// Connection: close.
func (c *conn) errorBackend(st *Listener, b *config.Backend) bool {
	r := b.Rare()
	c.ex.limited = true
	ruled := hasResponseRules(st, c.ex.svc, c.editsFor(st, c.ex.svc))
	if r.Page == nil && !ruled {
		return c.fail(st, r.Status)
	}
	var page []byte
	if r.Page != nil {
		page = renderError(st.Dialect, c.req.Minor, r.Status, r.Page.Body)
	} else {
		c.srv.countGenerated(r.Status)
		page = st.Errors.Page(c.req.Minor, r.Status, CauseNone)
	}
	status := r.Status
	if ruled {
		var err error
		if page, status, err = c.ruledErrorPage(st, page, status); err != nil {
			st.diag(err)
			return c.fail(st, 500)
		}
	}
	c.dl.forWrite(c.nc, c.now, st.Client)
	c.nc.Write(c.withRetryAfter(page))
	c.ex.status, c.ex.gen = status, true
	c.logRequest(st)
	return false
}

// withRetryAfter adds "Retry-After: SECONDS" to a reply that answers the
// service selection of a request some TBF condition refused: the time
// until the emptiest such bucket has a token again, rounded up (an lbd
// addition; Pound sends none). The reply is rebuilt in rwbuf, which the
// request no longer needs.
func (c *conn) withRetryAfter(page []byte) []byte {
	wait := c.rs.RetryAfter
	if !c.ex.limited || wait <= 0 {
		return page
	}
	end := bytes.Index(page, []byte("\r\n\r\n"))
	if end < 0 {
		return page
	}
	secs := (wait + time.Second - 1) / time.Second
	out := append(c.rwbuf[:0], page[:end+2]...)
	out = append(out, "Retry-After: "...)
	out = strconv.AppendInt(out, int64(secs), 10)
	out = append(out, "\r\n\r\n"...)
	c.rwbuf = append(out, page[end+4:]...)
	return c.rwbuf
}

// ruledErrorPage runs the response rules over the header lines of a
// rendered error page. The framing lines (Content-Length, Connection)
// are lbd's to keep right and are not shown to the rules, as Pound adds
// them after its rules ran. A Lua script may change the status and the
// body (http.resp); the status sent is returned.
func (c *conn) ruledErrorPage(st *Listener, page []byte, status int) ([]byte, int, error) {
	end := bytes.Index(page, []byte("\r\n\r\n"))
	if end < 0 {
		return page, status, nil
	}
	x := &c.rs.X
	x.Status, x.Reason, x.DefaultReason, x.RespBody, x.BodySet = status, nil, true, nil, false
	if c.ex.svc != nil {
		x.Service = c.ex.svc
	}
	// A page whose head is only the status line has no lines for the
	// rules (rest is empty then).
	statusLine, rest, _ := bytes.Cut(page[:end], []byte(crlf))
	var framing, lines [][]byte
	for _, l := range bytes.Split(rest, []byte(crlf)) {
		if name := rules.LineName(l); bytes.EqualFold(name, []byte(hdrContentLen)) || bytes.EqualFold(name, []byte("Connection")) {
			framing = append(framing, l)
		} else {
			lines = append(lines, l)
		}
	}
	if err := c.ruledResponseLines(st, c.editsFor(st, c.ex.svc), lines); err != nil {
		return nil, status, err
	}
	body := page[end+4:]
	if x.Status != status || !x.DefaultReason || x.BodySet {
		statusLine = scriptedStatusLine(statusLine, x)
		if x.BodySet {
			body = x.RespBody
		}
		for i, l := range framing {
			if bytes.EqualFold(rules.LineName(l), []byte(hdrContentLen)) {
				framing[i] = strconv.AppendInt([]byte("Content-Length: "), int64(len(body)), 10)
			}
		}
	}
	out := append(append([]byte{}, statusLine...), crlf...)
	for _, l := range append(framing, c.rs.Resp.Lines...) {
		out = append(append(out, l...), crlf...)
	}
	return append(append(out, crlf...), body...), x.Status, nil
}

// scriptedStatusLine is an error page's status line with the status and
// reason a script set, the protocol kept.
func scriptedStatusLine(line []byte, x *rules.Exchange) []byte {
	proto, _, _ := bytes.Cut(line, []byte{' '})
	out := append(append([]byte{}, proto...), ' ')
	out = strconv.AppendInt(out, int64(x.Status), 10)
	out = append(out, ' ')
	if x.DefaultReason {
		return append(out, http.StatusText(x.Status)...)
	}
	return append(out, x.Reason...)
}

// editGenerated passes a reply lbd wrote itself (an error page, a
// redirect) through the pair's edits, as zproxy's replyError and
// replyRedirect do with validateResponse. The result is built in c.out,
// which holds nothing else at this point.
func (c *conn) editGenerated(st *Listener, page []byte) []byte {
	e := c.editsFor(st, c.ex.svc)
	if e.Resp.Empty() {
		return page
	}
	end := bytes.Index(page, []byte("\r\n\r\n"))
	if end < 0 {
		return page
	}
	status, rest, _ := bytes.Cut(page[:end], []byte(crlf))
	m := &c.rs.Resp
	m.Reset()
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte(crlf))
		m.Lines = append(m.Lines, line)
	}
	c.locSt = st
	if err := e.Resp.Rewrite(c.rs, m); err != nil {
		st.diag(err)
		return page
	}
	out := append(append(c.out[:0], status...), crlf...)
	out = append(appendLines(out, m.Lines), crlf...)
	c.out = append(out, page[end+4:]...)
	return c.out
}

// Page returns the full response (head and body) for status and cause.
func (e *ErrorPages) Page(minor, status int, cause Cause) []byte {
	if minor != 0 {
		minor = 1
	}
	if p, ok := e.pages[minor][pageKey(status, cause)]; ok {
		return p
	}
	if p, ok := e.pages[minor][pageKey(status, CauseNone)]; ok {
		return p
	}
	return e.pages[minor][pageKey(500, CauseNone)]
}

func defaultBody(d config.Dialect, status int) []byte {
	t, ok := statusText[status]
	if !ok {
		t = [2]string{"Unknown", ""}
	}
	if d == config.DialectZproxy {
		return zproxyDefaultBody(status, t[0])
	}
	code := strconv.Itoa(status)
	// Pound 4's default_error_page (the C string has no newlines).
	return []byte("<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\"><html><head><title>" +
		code + " " + t[0] + "</title></head><body><h1>" + t[0] + "</h1><p>" + t[1] + "</p></body></html>")
}

// zproxyDefaultBody is zproxy's built-in page (http_protocol.h
// getHttpResponse), with the newline it sends after every body.
func zproxyDefaultBody(status int, reason string) []byte {
	code := strconv.Itoa(status)
	return []byte("<html>\n<head><title>" + code + " " + reason + "</title></head>\n" +
		"<body bgcolor=\"white\">\n<center><h1>" + code + " " + reason + "</h1></center>\n" +
		"<hr><center>zproxy</center>\n</body>\n</html>\n")
}

// renderZproxyError is zproxy's HTTP/1.0 error reply.
func renderZproxyError(status int, reason string, body []byte) []byte {
	b := []byte("HTTP/1.0 " + strconv.Itoa(status) + " " + reason + "\r\n" +
		"Content-Type: text/html\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Expires: now\r\nPragma: no-cache\r\nServer: zproxy\r\n" +
		"Cache-control: no-cache,no-store\r\n\r\n")
	return append(b, body...)
}

// renderError builds the head as Pound 4's bio_err_reply does: status
// line, Content-Length and Connection: close for HTTP/1.1 clients, the
// headers an error file starts with, then Content-Type and the no-cache
// headers unless the file set them.
func renderError(d config.Dialect, minor, status int, page []byte) []byte {
	if d == config.DialectZproxy {
		return renderZproxyError(status, Reason(status), page)
	}
	code := strconv.Itoa(status)
	reason := Reason(status)
	var b []byte
	hdrs, body := splitErrorFile(page)
	b = append(b, "HTTP/1."+strconv.Itoa(minor)+" "+code+" "+reason+"\r\n"...)
	if minor == 1 {
		b = append(b, "Content-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n"...)
	}
	for _, h := range append(hdrs, "Content-Type: text/html", "Expires: now", "Pragma: no-cache",
		"Cache-control: no-cache,no-store") {
		if !hasHeaderNamed(b, h) {
			b = append(b, h+"\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	return append(b, body...)
}

// ErrorPageBody is the body of an error page file, without the header
// lines it may begin with (what Pound's control API shows as "text").
func ErrorPageBody(page []byte) []byte {
	_, body := splitErrorFile(page)
	return body
}

// splitErrorFile separates the header lines an error file may start
// with from its body, as Pound's parse_http_errmsg: only when every line
// up to the first empty one is a header.
func splitErrorFile(page []byte) (hdrs []string, body []byte) {
	rest := page
	for len(rest) > 0 {
		n := bytes.IndexAny(rest, "\r\n")
		if n < 0 {
			return nil, page
		}
		line := rest[:n]
		rest = rest[n:]
		if len(line) == 0 {
			if len(hdrs) == 0 {
				return nil, page
			}
			return hdrs, rest[1:]
		}
		name, _, ok := bytes.Cut(line, []byte{':'})
		if !ok || !isToken(name) {
			return nil, page
		}
		hdrs = append(hdrs, string(line))
		if rest[0] == '\r' {
			rest = rest[1:]
		}
		if len(rest) > 0 && rest[0] == '\n' {
			rest = rest[1:]
		}
	}
	return nil, page
}

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte("\"(),/:;<=>?@[\\]{}"), c) >= 0 {
			return false
		}
	}
	return true
}

// hasHeaderNamed reports whether the head built so far has a header of
// line's name (Pound adds its defaults with H_KEEP). Content-Length and
// Connection from a file are not sent (http_headers_send "safe").
func hasHeaderNamed(head []byte, line string) bool {
	name, _, _ := strings.Cut(line, ":")
	if strings.EqualFold(name, "Content-Length") || strings.EqualFold(name, "Connection") {
		return true
	}
	for _, l := range bytes.Split(head, []byte("\r\n"))[1:] {
		if n, _, ok := bytes.Cut(l, []byte{':'}); ok && strings.EqualFold(string(n), name) {
			return true
		}
	}
	return false
}
