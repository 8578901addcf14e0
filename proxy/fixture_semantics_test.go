package proxy

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"lbd/backend"
	"lbd/config"
	"lbd/http1"
	"lbd/rules"
	"lbd/service"
)

// fixture is a listener built from configuration text the way the engine
// builds one, for white-box tests of heads, rewrites and log lines.
type fixture struct {
	cfg *config.Config
	st  *Listener
}

func loadFixture(t testing.TB, text string) *fixture { return loadFixtureWith(t, text, nil) }

// loadFixtureWith is loadFixture with Lua calls resolved by scripts.
func loadFixtureWith(t testing.TB, text string, scripts rules.Scripts) *fixture {
	t.Helper()
	cfg, _, err := config.LoadBytes("test.cfg", []byte(text), config.LoadOptions{NoDNS: true})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	l := cfg.Listeners[0]
	st := &Listener{
		Cfg: l, Dialect: cfg.Dialect, Limits: http1.DefaultLimits, XHTTP: l.XHTTP,
		Client: time.Second, Scheme: "http", Port: "80", Forwarded: config.ForwardedOn(l.HeaderOption),
		MaxTries: 3,
	}
	if l.HTTPS {
		st.Scheme = "https"
	}
	custom := map[int][]byte{}
	for code, p := range l.ErrorFiles {
		custom[code] = p.Body
	}
	st.Errors = NewErrorPages(cfg.Dialect, custom)
	st.SvcEdits = map[*service.Service]*HeaderEdits{}
	env, err := rules.NewEnvScripts(cfg, scripts)
	if err != nil {
		t.Fatal(err)
	}
	lenv := env.Scope(l.Constants, l.TrustedIP, l.ForwardedHeader)
	st.Edits = testEdits(t, cfg, l, nil, lenv)
	testDialect(cfg, st)
	if st.ReqRules, err = lenv.CompileRewrite(l.Rewrites.Request); err != nil {
		t.Fatal(err)
	}
	if st.RespRules, err = lenv.CompileRewrite(l.Rewrites.Response); err != nil {
		t.Fatal(err)
	}
	st.Detached = len(env.Detached)
	for _, s := range append(append([]*config.Service{}, l.Services...), cfg.Services...) {
		svc, err := service.New(s, service.Options{Env: lenv})
		if err != nil {
			t.Fatal(err)
		}
		st.Router.Services = append(st.Router.Services, svc)
		st.SvcEdits[svc] = testEdits(t, cfg, l, s, lenv)
	}
	return &fixture{cfg: cfg, st: st}
}

// testEdits builds the edits of service s of listener l as the engine
// does (engine/build.go edits).
func testEdits(t testing.TB, cfg *config.Config, l *config.Listener, s *config.Service, env *rules.Env) *HeaderEdits {
	t.Helper()
	ec := EditsConfig{Listener: l, Service: s, Anonymise: cfg.Anonymise}
	if cfg.Dialect != config.DialectZproxy {
		ec.LocationInPlace = true
		return NewEdits(ec)
	}
	var err error
	if ec.Req, ec.Resp, err = env.CompileZproxyEdits(rules.NewZproxyEdits(cfg, l, s)); err != nil {
		t.Fatal(err)
	}
	return NewEdits(ec)
}

// testDialect sets the listener flags the engine sets for the dialect.
func testDialect(cfg *config.Config, st *Listener) {
	if cfg.Dialect == config.DialectZproxy {
		st.Forwarded, st.TLSHeadersLast, st.FramingInPlace = false, true, true
	}
}

// conn is a client connection from client (ip:port) holding raw in
// its read buffer, parsed, and routed when the head parses.
func (f *fixture) conn(t testing.TB, client, raw string) *conn {
	t.Helper()
	nc := &addrConn{memConn: memConn{keep: true}, remote: mustTCPAddr(t, client)}
	c := newConn(NewServer(f.st), nc)
	c.w = copy(*c.buf, raw)
	if err := http1.ParseRequestHead((*c.buf)[:c.w], &c.req, &f.st.Limits); err == nil {
		c.rs.Begin(c.client, f.st.Detached)
		service.LoadRequest(c.rs, &c.req, c.head())
		svc, err := f.st.Router.Route(c.rs)
		if err != nil {
			t.Fatal(err)
		}
		c.ex.svc = svc
	}
	return c
}

// respond parses raw as the backend's response to c.
func (f *fixture) respond(t testing.TB, c *conn, be *backend.Backend, raw string) {
	t.Helper()
	buf := []byte(raw)
	if err := http1.ParseResponseHead(buf, &c.resp, false); err != nil {
		t.Fatalf("response: %v", err)
	}
	c.ex.be = be
	c.ex.status = c.resp.Status
}

func mustTCPAddr(t testing.TB, s string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// addrConn is a memConn with a chosen client address.
type addrConn struct {
	memConn
	remote *net.TCPAddr
}

func (a *addrConn) RemoteAddr() net.Addr { return a.remote }

var listenAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}

func (a *addrConn) LocalAddr() net.Addr { return listenAddr }

// testBackend is a backend at addr that is never dialled.
func testBackend(addr string) *backend.Backend {
	return backend.New(backend.Options{
		Network: "tcp", Address: addr, Priority: 5, TimeOut: time.Second, ConnTO: time.Second,
		DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, net.ErrClosed },
	})
}

// crlfLines turns "a\nb\n" into "a\r\nb\r\n", for readable expectations.
func crlfLines(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
