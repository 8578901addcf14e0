package edgeauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ForwardConfig is one ForwardAuth block: Traefik's ForwardAuth and
// nginx's auth_request semantics.
type ForwardConfig struct {
	Name string
	URL  string
	// Roots verify an https URL's certificate (nil: the system's).
	Roots *x509.CertPool
	// Timeout bounds one subrequest (DefaultForwardTimeout when 0).
	Timeout time.Duration
	// RequestHeaders are the client's headers passed to the service
	// (besides X-Forwarded-Method, -Proto, -Host, -Uri and -For).
	RequestHeaders []string
	// ResponseHeaders are the service's headers copied into the request
	// on success (the client's copies are removed first).
	ResponseHeaders []string
	// OnError is the status when the service cannot be asked (down,
	// timed out, an answer that is not HTTP): 503 or 401.
	OnError int
	// CacheTTL keeps a positive answer this long per set of forwarded
	// header values (cookies, Authorization); 0 turns the cache off.
	CacheTTL time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// DefaultForwardTimeout bounds a subrequest when the block says nothing.
const DefaultForwardTimeout = 5 * time.Second

// maxForwardBody bounds the body of the service's refusal relayed to
// the client.
const maxForwardBody = 64 << 10

// Forward asks an authentication service about each request.
type Forward struct {
	cfg    ForwardConfig
	client *http.Client
	strip  []string
	stats  Stats
	mu     sync.Mutex
	cache  map[string]forwardEntry
}

type forwardEntry struct {
	id      *Identity
	expires time.Time
}

// NewForward makes the checker with its own connection pool.
func NewForward(cfg ForwardConfig) *Forward {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultForwardTimeout
	}
	if cfg.OnError == 0 {
		cfg.OnError = 503
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: cfg.Roots, MinVersion: tls.VersionTLS12},
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: cfg.Timeout}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	f := &Forward{cfg: cfg, strip: cfg.ResponseHeaders, cache: map[string]forwardEntry{},
		client: &http.Client{Transport: tr, Timeout: cfg.Timeout,
			// The service's redirect is for the client, never followed here.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	return f
}

// Name is the block's name.
func (f *Forward) Name() string { return f.cfg.Name }

// Strip is the copied response headers.
func (f *Forward) Strip() []string { return f.strip }

// Check makes the subrequest (or answers from the cache).
func (f *Forward) Check(r Request, x *Exchange) Outcome {
	var ck string
	if f.cfg.CacheTTL > 0 {
		ck = f.cacheKey(r)
		if id, ok := f.cached(ck); ok {
			return Outcome{ID: id}
		}
	}
	resp, err := f.ask(r, x)
	if err != nil {
		return Outcome{Reply: f.unavailable(), Reason: "authentication service: " + unwrapURLError(err).Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxForwardBody)) // lets the connection be reused; a failure only costs it
		id := f.identity(resp.Header)
		if ck != "" {
			f.remember(ck, id)
		}
		return Outcome{ID: id}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardBody+1))
	if err != nil || len(body) > maxForwardBody {
		return Outcome{Reply: f.unavailable(), Reason: "authentication service: unreadable or oversized refusal"}
	}
	return Outcome{Reply: relayed(resp, body), Reason: "authentication service answered " + resp.Status}
}

// ask sends the subrequest: GET to the URL with the original request's
// method, scheme, host, URI and client in X-Forwarded-* and the listed
// headers as the client sent them.
func (f *Forward) ask(r Request, x *Exchange) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.cfg.URL, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	if x != nil {
		proto := "http"
		if x.TLS {
			proto = "https"
		}
		req.Header.Set("X-Forwarded-Method", string(x.Method))
		req.Header.Set("X-Forwarded-Proto", proto)
		req.Header.Set("X-Forwarded-Host", string(x.Host))
		req.Header.Set("X-Forwarded-Uri", string(x.URI))
		if x.Client.IsValid() {
			req.Header.Set("X-Forwarded-For", x.Client.String())
		}
	}
	for _, h := range f.cfg.RequestHeaders {
		if v, ok := r.Header(h); ok {
			req.Header.Set(h, string(v))
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// identity copies the listed response headers; the identity's name is
// the first of them the service sent (oauth2-proxy's X-Auth-Request-User).
func (f *Forward) identity(h http.Header) *Identity {
	id := &Identity{}
	for _, name := range f.cfg.ResponseHeaders {
		v := h.Get(name)
		if v == "" || !headerSafe([]byte(v)) {
			continue
		}
		if id.Name == "" {
			id.Name = v
		}
		id.Lines = append(id.Lines, []byte(name+": "+v))
	}
	return id
}

// relayed is the service's refusal as the client gets it: its status,
// body and end-to-end headers (Location, Set-Cookie, WWW-Authenticate,
// Content-Type...); framing and hop-by-hop headers are lbd's own.
func relayed(resp *http.Response, body []byte) *Reply {
	r := &Reply{Status: resp.StatusCode, Body: body}
	for name, vals := range resp.Header {
		switch strings.ToLower(name) {
		case "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
			"te", "trailer", "upgrade", "proxy-authenticate":
			continue
		}
		for _, v := range vals {
			if headerSafe([]byte(v)) {
				r.Lines = append(r.Lines, []byte(name+": "+v))
			}
		}
	}
	return r
}

func (f *Forward) unavailable() *Reply {
	if f.cfg.OnError == 401 {
		return &Reply{Status: 401, Lines: [][]byte{[]byte(`WWW-Authenticate: Bearer error="temporarily_unavailable"`)}, Body: []byte("401 Unauthorized\n")}
	}
	return &Reply{Status: 503, Lines: [][]byte{[]byte("Content-Type: text/plain")}, Body: []byte("503 Service Unavailable\n")}
}

// cacheKey is the forwarded header values; a request without any is
// not cached (its answer depends on nothing the key could name).
func (f *Forward) cacheKey(r Request) string {
	var b bytes.Buffer
	for _, h := range f.cfg.RequestHeaders {
		if v, ok := r.Header(h); ok {
			b.WriteString(h)
			b.WriteByte(0)
			b.Write(v)
			b.WriteByte(0)
		}
	}
	return b.String()
}

func (f *Forward) cached(key string) (*Identity, bool) {
	if key == "" {
		return nil, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.cache[key]
	if !ok || !f.cfg.Now().Before(e.expires) {
		return nil, false
	}
	return e.id, true
}

// maxForwardCache bounds the positive answers kept.
const maxForwardCache = 10000

func (f *Forward) remember(key string, id *Identity) {
	if key == "" {
		return
	}
	now := f.cfg.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cache) >= maxForwardCache {
		for k, e := range f.cache {
			if !now.Before(e.expires) || len(f.cache) >= maxForwardCache {
				delete(f.cache, k)
			}
		}
	}
	f.cache[key] = forwardEntry{id: id, expires: now.Add(f.cfg.CacheTTL)}
}

// Stats counts the decisions made with the check.
func (x *Forward) Stats() *Stats { return &x.stats }
