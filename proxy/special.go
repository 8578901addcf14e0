package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"lbd/config"
	"lbd/service"
)

// special serves the Pound 4 special backends: Redirect, Error, Metrics,
// Control, SendFile, Success, ACME and LuaBackend, and lbd's Dashboard. They answer from the proxy itself; none is on the hot
// path, so they may allocate.
func (c *conn) special(st *Listener, svc *service.Service) bool {
	svc.CountSpecial() // the dashboard and the API show it as its requests
	b := svc.Special
	switch b.Kind {
	case config.BackendRedirect:
		return c.redirect(st, b.Rare().Redirect)
	case config.BackendError:
		return c.errorBackend(st, b)
	case config.BackendMetrics:
		if st.Metrics != nil {
			return c.serveHandler(st, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", st.MetricsType)
				if err := st.Metrics(w); err != nil {
					st.diag(fmt.Errorf("metrics: %w", err))
				}
			}))
		}
	case config.BackendControl:
		if st.Control != nil {
			return c.serveHandler(st, st.Control)
		}
	case config.BackendDashboard:
		if st.Dashboard != nil {
			return c.serveHandler(st, st.Dashboard)
		}
	case config.BackendFile, config.BackendACME:
		return c.fileBackend(st, svc)
	case config.BackendSuccess:
		return c.success(st, svc)
	case config.BackendLua:
		if svc.Lua != nil {
			return c.luaBackend(st, svc)
		}
	}
	return c.fail(st, 503)
}

// serveHandler runs an http.Handler on the current request (the control
// API, metrics). The request body must arrive within the head buffer's
// reach; the connection closes afterwards.
func (c *conn) serveHandler(st *Listener, h http.Handler) bool {
	n := c.req.HeadLen
	if c.req.Chunked {
		return c.fail(st, 400) // chunked control bodies are not supported
	}
	want := n + int(max(c.req.ContentLength, 0))
	for c.w-c.r < want {
		if want > len(*c.buf)-c.r || c.fill(st.Client) != nil {
			return c.fail(st, 413)
		}
	}
	raw := (*c.buf)[c.r : c.r+want]
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return c.fail(st, 400)
	}
	req.RemoteAddr = c.nc.RemoteAddr().String()
	rec := &recorder{header: http.Header{}, status: 200}
	h.ServeHTTP(rec, req)
	return c.writeRecorded(st, rec)
}

// writeRecorded sends a handler's buffered answer and closes the
// connection.
func (c *conn) writeRecorded(st *Listener, rec *recorder) bool {
	out := []byte("HTTP/1.1 " + strconv.Itoa(rec.status) + " " + http.StatusText(rec.status) + "\r\n")
	rec.header.Set("Content-Length", strconv.Itoa(rec.body.Len()))
	rec.header.Set("Connection", "close")
	var hb bytes.Buffer
	rec.header.Write(&hb)
	out = append(append(append(out, hb.Bytes()...), "\r\n"...), rec.body.Bytes()...)
	c.dl.forWrite(c.nc, c.now, st.Client)
	c.nc.Write(out)
	c.ex.status, c.ex.gen = rec.status, true
	c.logRequest(st)
	return false
}

// recorder is a minimal http.ResponseWriter that buffers the answer.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}
