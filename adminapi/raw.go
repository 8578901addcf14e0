package adminapi

import (
	"net/http"
	"strconv"
)

// rawResponse is a reply whose status line and header order must be exact:
// zproxy's functional tests diff the header lines (zproxy.md §1.1) and Go's
// ResponseWriter sorts headers, canonicalises "Cache-control", adds Date
// and refuses Content-Length on a 204.
type rawResponse struct {
	status  int
	reason  string // "" means http.StatusText(status)
	minor   int    // HTTP/1.<minor> in the status line
	headers [][2]string
	body    []byte
}

// statusNoter is implemented by the Server's response wrapper so the audit
// log sees the status of replies written on a hijacked connection.
type statusNoter interface {
	noteStatus(code int)
}

// writeRaw sends resp byte for byte on the hijacked connection and closes
// it (both products close the control connection after one reply). When
// the writer cannot be hijacked (httptest recorders, HTTP/2) it falls back
// to the ordinary ResponseWriter with the same header set.
func writeRaw(w http.ResponseWriter, resp rawResponse) {
	if n, ok := w.(statusNoter); ok {
		n.noteStatus(resp.status)
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeFallback(w, resp)
		return
	}
	defer conn.Close()
	reason := resp.reason
	if reason == "" {
		reason = http.StatusText(resp.status)
	}
	// The head alone: the body (5 MB for a Pound listing of 20,000
	// backends) is written after it rather than copied behind it.
	b := make([]byte, 0, 256)
	b = append(b, "HTTP/1."...)
	b = strconv.AppendInt(b, int64(resp.minor), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(resp.status), 10)
	b = append(b, ' ')
	b = append(b, reason...)
	b = append(b, "\r\n"...)
	for _, h := range resp.headers {
		b = append(b, h[0]...)
		b = append(b, ": "...)
		b = append(b, h[1]...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	// A failed write means the client went away; there is nobody to tell.
	_, _ = rw.Write(b)
	_, _ = rw.Write(resp.body) // the client went away: nobody to tell (above)
	_ = rw.Flush()
}

// writeFallback writes resp through net/http, keeping header names as given.
func writeFallback(w http.ResponseWriter, resp rawResponse) {
	h := w.Header()
	for _, kv := range resp.headers {
		h[kv[0]] = append(h[kv[0]], kv[1])
	}
	w.WriteHeader(resp.status)
	if resp.status != http.StatusNoContent && resp.status != http.StatusNotModified {
		_, _ = w.Write(resp.body)
	}
}
