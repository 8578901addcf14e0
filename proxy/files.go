package proxy

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"lbd/config"
	"lbd/http1"
	"lbd/service"
)

// acmePrefix is the path below which ACME HTTP-01 challenges are asked
// for; the rest of the path names the file.
const acmePrefix = "/.well-known/acme-challenge/"

// sendChunk bounds one write of a file body, so that the write deadline
// is renewed while a large file goes to a slow client.
const sendChunk = 1 << 20

// fileBackend answers for a SendFile or ACME backend with the file the
// request path names beneath the service's directory. A name that is not
// a plain relative path, or that leads out of the directory (through
// "..", encoded or not, or a symbolic link), is answered 404 as if it did
// not exist. These backends are not the hot path: they may allocate.
func (c *conn) fileBackend(st *Listener, svc *service.Service) bool {
	name, ok := c.ruledPath(st, svc)
	if !ok {
		return c.fail(st, 500)
	}
	ctype := "text/plain" // Pound's default; response rules may change it
	if svc.Special.Kind == config.BackendACME {
		if len(name) < len(acmePrefix) || string(name[:len(acmePrefix)]) != acmePrefix {
			return c.fail(st, 404)
		}
		name, ctype = name[len(acmePrefix):], "text/html"
	}
	rel, found := servedName(name)
	if !found || svc.Root == nil {
		return c.fail(st, 404)
	}
	// O_NONBLOCK: opening a FIFO someone left in the directory must
	// not hang the connection (it is refused below as not regular).
	f, err := svc.Root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return c.fail(st, openStatus(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return c.fail(st, 404)
	}
	status := 200
	if notModified(c, fi.ModTime()) {
		status = 304
	}
	return c.sendFile(st, f, fi, status, ctype)
}

// ruledPath is the request path after the listener's and the service's
// request rules (SetPath, SetURL ...), which Pound applies before taking
// the file name from it. ok is false when a rule failed (Pound's 500).
func (c *conn) ruledPath(st *Listener, svc *service.Service) ([]byte, bool) {
	if !c.hasRequestRules(st, svc, noEdits) {
		return c.req.Path, true
	}
	m := &c.rs.Req
	err := st.ReqRules.Rewrite(c.rs, m)
	if err == nil {
		err = svc.ReqRules.Rewrite(c.rs, m)
	}
	if err != nil {
		st.diag(err)
		return nil, false
	}
	if !m.URLChanged {
		return c.req.Path, true
	}
	path := m.URL
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path, true
}

// openStatus maps a failed open to the answer: 403 when the file exists
// but may not be read, 404 for anything else (missing, or refused by the
// root because it escapes the directory).
func openStatus(err error) int {
	if errors.Is(err, fs.ErrPermission) {
		return 403
	}
	return 404
}

// notModified reports whether the request's If-Modified-Since is not
// older than mtime (HTTP dates have whole seconds).
func notModified(c *conn, mtime time.Time) bool {
	v, ok := c.reqHeader("If-Modified-Since")
	if !ok {
		return false
	}
	t, err := http.ParseTime(string(v))
	return err == nil && !mtime.Truncate(time.Second).After(t)
}

// sendFile writes the head of a generated 200 (or 304) reply through the
// response rules, then the file unless the method is HEAD or the status
// 304. The connection stays open when the request had no body.
func (c *conn) sendFile(st *Listener, f *os.File, fi fs.FileInfo, status int, ctype string) bool {
	size := fi.Size()
	keep := c.keepAfterGenerated()
	if !c.generatedHead(st, status, ctype, size, fi.ModTime(), keep) {
		return false
	}
	if status == 200 && c.req.MethodID != http1.MethodHEAD && !c.ex.newBody {
		n, err := c.sendBody(st, f, size)
		c.ex.bytes = n
		if err != nil {
			c.logRequest(st)
			return false
		}
	}
	c.logRequest(st)
	c.r += c.req.HeadLen
	return keep
}

// success answers for a Success backend: 200 with no body, and the
// headers the response rules add.
func (c *conn) success(st *Listener, svc *service.Service) bool {
	if _, ok := c.ruledPath(st, svc); !ok {
		return c.fail(st, 500)
	}
	keep := c.keepAfterGenerated()
	if !c.generatedHead(st, 200, "", 0, time.Time{}, keep) {
		return false
	}
	c.logRequest(st)
	c.r += c.req.HeadLen
	return keep
}

// keepAfterGenerated reports whether the connection may carry another
// request after a reply lbd generated: only when the request had no body,
// which such backends do not read.
func (c *conn) keepAfterGenerated() bool {
	return c.req.KeepAlive && !c.req.Chunked && c.req.ContentLength <= 0 && !c.srv.closing.Load()
}

// generatedHead builds the head of a reply lbd answers itself as if a
// backend had sent it, so that the listener's and service's response
// rules apply to it as to any other, and writes it.
func (c *conn) generatedHead(st *Listener, status int, ctype string, size int64, mtime time.Time, keep bool) bool {
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	h := append((*bp)[:0], "HTTP/1.1 "...)
	h = strconv.AppendInt(h, int64(status), 10)
	h = append(h, ' ')
	h = append(h, http.StatusText(status)...)
	if ctype != "" {
		h = append(h, "\r\nContent-Type: "...)
		h = append(h, ctype...)
	}
	h = append(h, "\r\nContent-Length: "...)
	h = strconv.AppendInt(h, size, 10)
	if !mtime.IsZero() {
		h = append(h, "\r\nLast-Modified: "...)
		h = mtime.UTC().AppendFormat(h, http.TimeFormat)
	}
	h = append(h, "\r\n\r\n"...)
	if err := http1.ParseResponseHead(h, &c.resp, c.req.MethodID == http1.MethodHEAD); err != nil {
		return c.fail(st, 500)
	}
	mode := connClose
	if keep {
		mode = connKeep
	}
	c.keep = c.keep[:0]
	if c.out = c.appendResponseHead(st, c.out[:0], mode); c.out == nil {
		return c.fail(st, 500) // a response rule failed to expand
	}
	c.ex.status = status
	if x := c.rs.X.Status; x != 0 { // the response rules ran: a script may have changed it
		c.ex.status = x
	}
	if c.ex.newBody { // a response script replaced the body
		if c.req.MethodID != http1.MethodHEAD {
			c.out = append(c.out, c.rs.X.RespBody...)
			c.ex.bytes = int64(len(c.rs.X.RespBody))
		}
	}
	c.dl.forWrite(c.nc, time.Now(), st.Client)
	if _, err := c.nc.Write(c.out); err != nil {
		c.logRequest(st)
		return false
	}
	return true
}

// sendBody copies size bytes of f to the client: with sendfile(2) when
// the client is a plain TCP socket (net.TCPConn's ReadFrom), else
// through a pooled buffer.
func (c *conn) sendBody(st *Listener, f *os.File, size int64) (int64, error) {
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	lr := io.LimitedReader{R: f}
	var sent int64
	for sent < size {
		lr.N = min(size-sent, sendChunk)
		c.dl.forWrite(c.nc, time.Now(), st.Client)
		n, err := io.CopyBuffer(c.nc, &lr, *bp)
		sent += n
		if err != nil {
			return sent, err
		}
		if n == 0 {
			return sent, io.ErrUnexpectedEOF // the file shrank meanwhile
		}
	}
	return sent, nil
}

// servedName turns a request path into the name of a file beneath the
// served directory: percent-decoded, without its leading slashes, and
// refused (ok false) when empty, when a segment is "..", or when it holds
// a NUL or a malformed escape.
func servedName(path []byte) (string, bool) {
	buf := make([]byte, 0, len(path))
	for i := 0; i < len(path); i++ {
		b := path[i]
		if b == '%' {
			if i+2 >= len(path) || unhex(path[i+1]) < 0 || unhex(path[i+2]) < 0 {
				return "", false
			}
			b = byte(unhex(path[i+1])<<4 | unhex(path[i+2]))
			i += 2
		}
		if b == 0 {
			return "", false
		}
		buf = append(buf, b)
	}
	start := 0
	for start < len(buf) && buf[start] == '/' {
		start++
	}
	name := buf[start:]
	if len(name) == 0 {
		return "", false
	}
	for seg := name; len(seg) > 0; {
		end := 0
		for end < len(seg) && seg[end] != '/' {
			end++
		}
		if end == 2 && seg[0] == '.' && seg[1] == '.' {
			return "", false
		}
		if end == len(seg) {
			break
		}
		seg = seg[end+1:]
	}
	return string(name), true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
