// Package client is a small client for lbd's control API, used by lbctl.
// It talks to the UNIX control socket (Pound's Control, zproxy's -C) or,
// given an http(s):// URL, to a Pound Control backend over HTTP.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxReply bounds the reply read into memory; a full listing of a large
// configuration is well below it.
const maxReply = 64 << 20

// Client sends requests to one control endpoint. It is safe for concurrent
// use.
type Client struct {
	target string // socket path or base URL, for error messages
	base   string // URL prefix the request path is appended to
	hc     *http.Client
}

// StatusError is a reply with a non-2xx status. Its message is the status
// text ("Not Found"), which is what poundctl prints.
type StatusError struct {
	Status int
	Body   []byte
}

// Error returns the status text, e.g. "Not Found".
func (e *StatusError) Error() string {
	if t := http.StatusText(e.Status); t != "" {
		return t
	}
	return fmt.Sprintf("HTTP status %d", e.Status)
}

// New returns a client for socketOrURL: a path names a UNIX socket, an
// http:// or https:// URL a remote Control backend (its path is kept as a
// prefix). timeout bounds each request (0 means none). An https:// server
// is verified against the system's CA certificates.
func New(socketOrURL string, timeout time.Duration) (*Client, error) {
	return NewTLS(socketOrURL, timeout, nil)
}

// NewTLS is New with the TLS settings of an https:// URL (trusted CAs,
// client certificate, verification) taken from tc; nil means Go's
// defaults, as New. tc is not used for a socket or an http:// URL.
func NewTLS(socketOrURL string, timeout time.Duration, tc *tls.Config) (*Client, error) {
	if socketOrURL == "" {
		return nil, fmt.Errorf("control socket: no socket path or URL given")
	}
	c := &Client{target: socketOrURL}
	tr := &http.Transport{
		// Both servers answer once and close; zproxy also sends a body
		// with 204, which would poison a reused connection.
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: timeout,
	}
	if strings.HasPrefix(socketOrURL, "http://") || strings.HasPrefix(socketOrURL, "https://") {
		c.base = strings.TrimSuffix(socketOrURL, "/")
		if tc != nil && strings.HasPrefix(socketOrURL, "https://") {
			tr.TLSClientConfig = tc.Clone()
			// A custom TLS config turns off the transport's automatic
			// HTTP/2; keep it, so that only the TLS settings change.
			tr.ForceAttemptHTTP2 = true
		}
	} else {
		path := socketOrURL
		c.base = "http://localhost"
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
	}
	c.hc = &http.Client{Transport: tr, Timeout: timeout}
	return c, nil
}

// Get fetches path and returns the body of a 2xx reply.
func (c *Client) Get(path string) ([]byte, error) {
	_, body, err := c.Do(http.MethodGet, path, nil)
	return body, err
}

// Do sends a request. body may be nil (no body), a []byte or string (sent
// as is), or any other value (sent as JSON). A non-2xx reply returns its
// status and body together with a *StatusError.
func (c *Client) Do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s: encoding body: %w", method, path, err)
		}
		rd = bytes.NewReader(js)
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("control socket %s: %w", c.target, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// lbd then answers every refusal with its reason in JSON, where Pound
	// and zproxy send an HTML page or a bare status.
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("control socket %s: %w", c.target, unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err := readReply(resp)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("control socket %s: reading reply: %w", c.target, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, data, &StatusError{Status: resp.StatusCode, Body: data}
	}
	return resp.StatusCode, data, nil
}

// unwrapURL drops net/http's `Get "http://localhost/x":` prefix, which
// names a host that does not exist for a socket.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readReply reads a reply of at most maxReply bytes, into a buffer of
// its announced length when it has one: io.ReadAll's regrowth copied a
// 5 MB listing a dozen times.
func readReply(resp *http.Response) ([]byte, error) {
	body := io.LimitReader(resp.Body, maxReply)
	n := resp.ContentLength
	if n <= 0 || n > maxReply {
		return io.ReadAll(body)
	}
	buf := make([]byte, 0, n+1) // +1: room to read the EOF without growing
	for {
		if len(buf) == cap(buf) { // a body longer than announced
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
