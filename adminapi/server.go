package adminapi

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Limits of the control server (http-strictness.md §A5). zproxy reads at
// most 4 KiB per request; 1 MiB leaves room for large session syncs.
const (
	// MaxBodyBytes is the largest request body read (413 beyond it).
	MaxBodyBytes = 1 << 20
	// MaxHeaderBytes is the largest request head accepted.
	MaxHeaderBytes = 64 << 10

	maxConns          = 64
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 10 * time.Second // zproxy's idle timer
)

// PeerCred is the identity of the process on the other end of a UNIX
// socket connection (SO_PEERCRED). Known is false elsewhere (TCP, or a
// platform without peer credentials), with the ids set to -1.
type PeerCred struct {
	PID, UID, GID int
	Known         bool
}

// RequestInfo describes a served request, for the engine's request log
// (Pound logs control requests as `socket GET /core/ HTTP/1.1 - 200 OK
// (localhost/- -> control) 0.000 sec`).
type RequestInfo struct {
	Method, URI, Proto string
	Host               string
	Status             int
	Duration           time.Duration
	Peer               PeerCred
}

// Server serves a control API handler (NewPoundHandler or
// NewZproxyHandler) with timeouts, size limits, a connection cap, and an
// audit log line for every request that may change state, naming the
// caller's pid and uid.
type Server struct {
	// Logger receives the audit lines; nil means logrus.StandardLogger().
	Logger logrus.FieldLogger
	// RequestLog, when set, is called after every request.
	RequestLog func(RequestInfo)

	handler http.Handler
	srv     *http.Server
	mu      sync.Mutex
	paths   []string       // socket files to remove on Close
	lns     []net.Listener // the sockets served, for HandOver
}

// NewServer prepares a server for h. Set Logger and RequestLog before
// calling Serve.
func NewServer(h http.Handler) *Server {
	s := &Server{handler: h}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnContext:       withPeer,
	}
	return s
}

// Serve accepts connections on ln until Close. It returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	if ua, ok := ln.Addr().(*net.UnixAddr); ok && ua.Name != "" && !strings.HasPrefix(ua.Name, "@") {
		s.mu.Lock()
		s.paths = append(s.paths, ua.Name)
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	err := s.srv.Serve(newCredListener(ln))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server, drops open connections and removes the socket
// files it served on.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.paths {
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode().Type() == fs.ModeSocket {
			if rerr := os.Remove(p); rerr != nil && err == nil {
				err = rerr
			}
		}
	}
	s.paths = nil
	return err
}

// HandOver stops the server for the process that took its sockets over
// (a binary upgrade): the socket files stay, requests in flight finish
// until ctx ends.
func (s *Server) HandOver(ctx context.Context) error {
	s.mu.Lock()
	s.paths = nil
	for _, ln := range s.lns {
		if ul, ok := ln.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
	}
	s.mu.Unlock()
	return s.srv.Shutdown(ctx)
}

// serve applies the body limit, runs the handler and writes the audit and
// request log entries.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	aw := &auditWriter{ResponseWriter: w}
	s.handler.ServeHTTP(aw, r)
	info := RequestInfo{
		Method: r.Method, URI: r.RequestURI, Proto: r.Proto, Host: r.Host,
		Status: aw.code(), Duration: time.Since(start), Peer: peerFrom(r.Context()),
	}
	if isMutation(r.Method) && !dryRun(r) {
		s.audit(info)
	}
	if s.RequestLog != nil {
		s.RequestLog(info)
	}
}

// audit logs a state-changing request with the caller's identity.
func (s *Server) audit(info RequestInfo) {
	logger := s.Logger
	if logger == nil {
		logger = logrus.StandardLogger()
	}
	e := logger.WithFields(logrus.Fields{
		"method": info.Method,
		"uri":    info.URI,
		"status": info.Status,
		"pid":    info.Peer.PID,
		"uid":    info.Peer.UID,
		"gid":    info.Peer.GID,
	})
	if info.Status >= 400 {
		e.Warn("control API change refused")
		return
	}
	e.Info("control API change")
}

// isMutation reports methods that may change state (anything but reads;
// refused unknown methods are logged too).
func isMutation(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// dryRun reports a POST that changes nothing: /route (lbctl route, the
// routing explainer) only asks where a request would go, and an audit
// line for it would read as a change to the operator.
func dryRun(r *http.Request) bool {
	p := strings.ToLower(r.URL.Path)
	return r.Method == http.MethodPost && (p == "/route" || p == "/route/")
}

// auditWriter records the status for the logs, including replies written
// on a hijacked connection (see writeRaw).
type auditWriter struct {
	http.ResponseWriter
	status int
}

func (a *auditWriter) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *auditWriter) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(b)
}

func (a *auditWriter) noteStatus(code int) { a.status = code }

// Unwrap lets http.ResponseController reach the connection (Hijack).
func (a *auditWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *auditWriter) code() int {
	if a.status == 0 {
		return http.StatusOK
	}
	return a.status
}

// peerKey is the context key of the caller's PeerCred.
type peerKey struct{}

// withPeer is the ConnContext hook: it stores the credentials read at
// accept time in the connection's context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*credConn); ok {
		return context.WithValue(ctx, peerKey{}, cc.cred)
	}
	return ctx
}

// peerFrom returns the caller's credentials, or "unknown".
func peerFrom(ctx context.Context) PeerCred {
	if p, ok := ctx.Value(peerKey{}).(PeerCred); ok {
		return p
	}
	return PeerCred{PID: -1, UID: -1, GID: -1}
}

// credListener caps concurrent connections and reads each caller's
// credentials at accept time.
type credListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newCredListener(ln net.Listener) *credListener {
	return &credListener{Listener: ln, sem: make(chan struct{}, maxConns), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *credListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &credConn{Conn: c, cred: peerCred(c), release: func() { <-l.sem }}, nil
}

// Close unblocks Accept and closes the underlying listener.
func (l *credListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// credConn is an accepted connection with its caller's credentials; closing
// it frees its slot.
type credConn struct {
	net.Conn
	cred    PeerCred
	once    sync.Once
	release func()
}

func (c *credConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
