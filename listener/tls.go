// Package listener holds lbd's accept paths beyond a plain socket: TLS
// termination for ListenHTTPS (certificates chosen by SNI and reloaded
// when their files change, Pound's protocol, cipher and client
// certificate settings, zproxy's answer to plain HTTP on a TLS port) and
// the hand-off of HTTP/2 connections, negotiated by ALPN, to package h2.
//
// A TLS listener is a net.Listener: the proxy's accept loop receives
// connections whose handshake is already done, so HTTP/1.1 over TLS is
// served by exactly the same engine as plain HTTP.
package listener

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/acmecert"
	"lbd/config"
	"lbd/h2"
)

// TLS is a ListenHTTPS socket. Handshakes run in their own goroutines,
// so a slow or silent client never holds up the accept loop; finished
// HTTP/1.1 connections and HTTP/2 bridge connections are queued for
// Accept.
type TLS struct {
	inner net.Listener
	log   logrus.FieldLogger
	conns chan net.Conn
	done  chan struct{}

	state     atomic.Pointer[settings]
	mu        sync.Mutex // guards watcher, h2s, started, acceptErr, auto
	auto      Automatic
	watcher   *certWatcher
	h2s       []*h2.Server // every HTTP/2 server built, for Close
	started   bool
	acceptErr error
	closeOnce sync.Once
	wg        sync.WaitGroup // handshakes and HTTP/2 connections
}

// NewTLS wraps a bound socket. It accepts nothing until the first
// Configure.
func NewTLS(inner net.Listener, log logrus.FieldLogger) *TLS {
	return &TLS{inner: inner, log: log, conns: make(chan net.Conn), done: make(chan struct{})}
}

// Configure installs the settings of a ListenHTTPS block (at start and
// on every reload) and starts accepting. Certificates are taken from
// the freshly loaded configuration and their directories watched from
// now on. An error is logged by the caller; the listener then refuses
// handshakes rather than serve with settings it could not apply.
func (l *TLS) Configure(cfg *config.Config, lc *config.Listener) error {
	if lc.TLS == nil {
		return errors.New("a ListenHTTP cannot reuse the socket of a ListenHTTPS; restart to switch")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := newSettings(cfg, lc, l.auto)
	if s.h2 {
		// Connections keep the server they started with; a new one
		// carries the new idle timeout.
		s.h2srv = h2.New(h2.Options{Handoff: l.handoff, IdleTimeout: s.timeout, Log: l.log})
		l.h2s = append(l.h2s, s.h2srv)
	}
	if l.watcher != nil {
		l.watcher.Close()
		l.watcher = nil
	}
	if w, werr := watchCerts(s.store, l.log); werr == nil {
		l.watcher = w
	} else {
		l.log.Warnf("%s: certificates will only reload with the configuration: %v", lc.Pos, werr)
	}
	l.state.Store(s)
	if !l.started {
		l.started = true
		l.wg.Add(1)
		go l.acceptLoop()
	}
	return err
}

// Automatic supplies the certificates a listener obtains itself (package
// acmecert): for a handshake naming one of its names, the newest
// certificate, or the TLS-ALPN-01 challenge certificate for an
// acme-tls/1 hello. (nil, nil) leaves the choice to the Cert files.
type Automatic interface {
	Certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error)
	// Fallback serves a listener without Cert files when the hello
	// names none of its names (no SNI, say); nil fails the handshake.
	Fallback(hello *tls.ClientHelloInfo) *tls.Certificate
}

// SetAutomatic gives the listener its automatic certificates (nil:
// none) from the next Configure on.
func (l *TLS) SetAutomatic(a Automatic) {
	l.mu.Lock()
	l.auto = a
	l.mu.Unlock()
}

// Reload re-reads every certificate file now (as the watcher does on a
// change); it is there for tests and for a SIGHUP-style trigger.
func (l *TLS) Reload() {
	if s := l.state.Load(); s != nil {
		for _, r := range s.store.Reload("") {
			if r.Err != nil {
				l.log.Errorf("%s: keeping the previous certificate: %v", r.Path, r.Err)
			}
		}
	}
}

func (l *TLS) acceptLoop() {
	defer l.wg.Done()
	var delay time.Duration
	for {
		nc, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			l.mu.Lock()
			l.acceptErr = err
			l.mu.Unlock()
			l.Close()
			return
		}
		delay = 0
		l.wg.Add(1)
		go l.handshake(nc)
	}
}

// handshake terminates TLS on nc and routes the connection: HTTP/2 is
// served here, HTTP/1.1 goes to Accept. Plain HTTP gets zproxy's
// ErrNoSsl/NoSslRedirect answer when configured.
func (l *TLS) handshake(nc net.Conn) {
	defer l.wg.Done()
	s := l.state.Load()
	nc.SetDeadline(time.Now().Add(s.timeout))
	if s.nossl != nil {
		if b, err := peekByte(nc); err == nil && b != recordHandshake {
			answerPlain(nc, s.nossl)
			nc.Close()
			return
		}
	}
	tc := tls.Server(nc, s.tls)
	if err := tc.Handshake(); err != nil {
		l.log.Debugf("%s: TLS handshake failed: %v", nc.RemoteAddr(), err)
		nc.Close()
		return
	}
	nc.SetDeadline(time.Time{})
	cs := tc.ConnectionState()
	if cs.NegotiatedProtocol == acmecert.ALPN {
		// A TLS-ALPN-01 validation: the handshake was the answer.
		tc.Close()
		return
	}
	c := &Conn{Conn: tc, ssl: s.headers(&cs), noHTTPS11: s.noHTTPS11}
	if cs.NegotiatedProtocol == "h2" && s.h2srv != nil {
		s.h2srv.ServeConn(c)
		return
	}
	if !l.handoff(c) {
		c.Close()
	}
}

// handoff queues a connection for Accept; false once the listener is
// closed.
func (l *TLS) handoff(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

// Accept returns the next connection ready for HTTP/1.1.
func (l *TLS) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.acceptErr != nil {
			return nil, l.acceptErr
		}
		return nil, net.ErrClosed
	}
}

// Close stops accepting, asks HTTP/2 clients to go away once their
// streams are done (GOAWAY), and stops the certificate watcher.
// Connections already handed to the proxy are the proxy's to drain.
func (l *TLS) Close() error {
	var err error
	l.closeOnce.Do(func() {
		err = l.inner.Close()
		close(l.done)
		l.mu.Lock()
		for _, h := range l.h2s {
			h.Shutdown()
		}
		if l.watcher != nil {
			l.watcher.Close()
			l.watcher = nil
		}
		l.mu.Unlock()
	})
	return err
}

// Addr is the bound address.
func (l *TLS) Addr() net.Addr { return l.inner.Addr() }

// Wait blocks until every handshake and HTTP/2 connection has ended
// (after Close); tests use it to prove nothing leaks. An idle HTTP/2
// connection may be parked, without a goroutine: its server counts it.
func (l *TLS) Wait() {
	l.wg.Wait()
	l.mu.Lock()
	h2s := append([]*h2.Server(nil), l.h2s...)
	l.mu.Unlock()
	for _, h := range h2s {
		h.Wait()
	}
}
