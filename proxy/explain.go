package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"
	"time"

	"lbd/config"
	"lbd/explain"
	"lbd/http1"
	"lbd/rules"
	"lbd/service"
)

// The routing explainer (lbctl route, the control API's POST /route)
// runs a request through the same code the data path runs, on a conn of
// its own whose network connection accepts no bytes, and stops where the
// data path would dial a backend or write a reply. Everything that has
// a side effect elsewhere has a dry twin: the tracing rules evaluator,
// the session lookup that refreshes nothing, the balancer's dry-run pick
// and the TBF and password-cache peeks. No counter moves: the generated
// replies are rendered, never written or counted.

// ErrBadQuery is wrapped by Explain's errors about the question itself
// (not a request lbd would refuse, which is explained).
var ErrBadQuery = errors.New("bad route query")

// errDryRun is what the explainer's connection answers to any I/O.
var errDryRun = errors.New("routing explainer: no I/O in a dry run")

// dryConn is the explainer's network connection: addresses only.
type dryConn struct{ local, remote net.Addr }

func (d dryConn) Read([]byte) (int, error)         { return 0, errDryRun }
func (d dryConn) Write([]byte) (int, error)        { return 0, errDryRun }
func (d dryConn) Close() error                     { return nil }
func (d dryConn) LocalAddr() net.Addr              { return d.local }
func (d dryConn) RemoteAddr() net.Addr             { return d.remote }
func (d dryConn) SetDeadline(time.Time) error      { return nil }
func (d dryConn) SetReadDeadline(time.Time) error  { return nil }
func (d dryConn) SetWriteDeadline(time.Time) error { return nil }

// Explain says what the server would do with the request q describes,
// without doing any of it. index is the listener's number, for the
// answer.
func (s *Server) Explain(q explain.Query, index int) (*explain.Route, error) {
	client, err := queryClient(q.Client)
	if err != nil {
		return nil, err
	}
	raw, err := queryHead(q)
	if err != nil {
		return nil, err
	}
	st := s.state.Load()
	s.mu.Lock()
	var local net.Addr = &net.TCPAddr{}
	if s.ln != nil {
		local = s.ln.Addr()
	}
	s.mu.Unlock()
	buf := append(raw, make([]byte, 0, 512)...)
	c := &conn{srv: s, buf: &buf, w: len(raw), now: time.Now(), client: client,
		nc: dryConn{local: local, remote: net.TCPAddrFromAddrPort(netip.AddrPortFrom(client, 40000))}}
	c.req.Headers = make([]http1.Header, 0, 16)
	c.rs = &rules.State{Dry: true} // a Lua function may do anything: none runs
	x := &explainer{c: c, st: st, seed: querySeed(q), r: &explain.Route{Checks: []explain.Check{}, Services: []explain.Service{}}}
	x.r.Listener = explain.Listener{Index: index, Address: local.String(), Protocol: st.Scheme, Dialect: string(st.Dialect)}
	if st.Cfg != nil {
		x.r.Listener.Name = st.Cfg.Name
	}
	if st.Tunnel {
		x.r.Listener.Protocol = "tunnel"
	}
	x.run(s.Enabled())
	return x.r, nil
}

// explainer is one explanation in progress.
type explainer struct {
	c    *conn
	st   *Listener
	seed uint64
	r    *explain.Route
	err  error // why a request rule failed
}

// luaDecides ends an explanation at a Lua call the dry run does not
// make; it reports whether err was one.
func (x *explainer) luaDecides(err error) bool {
	var dry *rules.DryScriptError
	if !errors.As(err, &dry) {
		return false
	}
	x.check("Lua", false, dry.Error())
	x.r.Outcome = "undetermined: " + dry.Error()
	return true
}

// check records a listener check; it reports ok for chaining.
func (x *explainer) check(name string, ok bool, detail string) bool {
	x.r.Checks = append(x.r.Checks, explain.Check{Check: name, OK: ok, Detail: detail})
	return ok
}

// run follows conn.serve and conn.handle.
func (x *explainer) run(enabled bool) {
	c, st := x.c, x.st
	x.r.Request.Client = c.client.String()
	if st.Tunnel {
		x.tunnel(enabled)
		return
	}
	err := http1.ParseRequestHead((*c.buf)[:c.w], &c.req, &st.Limits)
	x.request()
	var he *http1.Error
	switch {
	case errors.As(err, &he):
		x.check("request head parses", false, he.Reason)
		x.generated(he.Status, CauseNone, "error", "the listener refuses the request head: "+he.Reason)
		return
	case err != nil:
		x.check("request head parses", false, err.Error())
		x.generated(400, CauseNone, "error", "the request head is incomplete")
		return
	}
	x.check("request head parses", true, "")
	if !x.check("listener enabled", enabled, "") {
		x.generated(503, CauseNone, "error", "the listener is disabled")
		return
	}
	if status, cause := checkRequest(st, &c.req); status != 0 {
		x.check("request allowed (xHTTP, CheckURL, MaxRequest)", false, fmt.Sprintf("answered %d", status))
		x.generated(status, cause, "error", "the listener's request checks refuse it")
		return
	}
	x.check("request allowed (xHTTP, CheckURL, MaxRequest)", true, "")
	c.rs.Begin(c.client, st.Detached)
	service.LoadRequest(c.rs, &c.req, c.head())
	if len(st.Combine) > 0 {
		c.rs.Combine(&c.rs.Req, st.Combine)
	}
	svc, traces, err := st.Router.RouteTrace(c.rs)
	x.r.Services = x.markGlobal(traces)
	if x.luaDecides(err) {
		return
	}
	if err != nil {
		x.generated(500, CauseNone, "error", "a condition could not be evaluated: "+err.Error())
		return
	}
	if svc == nil {
		x.generated(503, CauseNoService, "no service", "no enabled service matches the request")
		return
	}
	c.ex.svc = svc
	for i, s := range st.Router.Services {
		if s == svc {
			x.r.Service = &i
		}
	}
	if x.authDecides(svc) || x.wafDecides() {
		return
	}
	if c.req.MethodID == http1.MethodPURGE {
		x.purgeDecides(svc) // purge.go
		return
	}
	if use, why := svc.ExplainSpecial(x.seed); use {
		x.special(svc, why)
		return
	} else if why != "" {
		x.check("special backend", true, why)
	}
	if svc.Cache != nil {
		x.cacheCheck(svc)
	}
	x.forward(svc)
}

// request records the request as parsed (or as written, if it did not
// parse).
func (x *explainer) request() {
	c := x.c
	r := &x.r.Request
	line, _, _ := bytes.Cut((*c.buf)[:c.w], []byte(crlf))
	parts := strings.SplitN(string(line), " ", 3)
	r.Method, r.Target = parts[0], parts[1]
	r.Version = parts[2]
	r.Headers = []string{}
	for i := range c.req.Headers {
		r.Headers = append(r.Headers, string(lineOf(&c.req.Headers[i], nil)))
	}
}

// markGlobal flags the services that are global rather than the
// listener's own.
func (x *explainer) markGlobal(ts []explain.Service) []explain.Service {
	own := 0
	if x.st.Cfg != nil {
		own = len(x.st.Cfg.Services)
	}
	for i := range ts {
		ts[i].Global = i >= own
	}
	if ts == nil {
		ts = []explain.Service{}
	}
	return ts
}

// tunnel explains a Tunnel listener: no HTTP, the one service's balancer.
func (x *explainer) tunnel(enabled bool) {
	x.r.Request = explain.Request{Client: x.c.client.String(), Headers: []string{}}
	x.check("tunnel listener: the connection is relayed byte for byte, the request is not read", true, "")
	if !x.check("listener enabled", enabled, "") || len(x.st.Router.Services) == 0 {
		x.r.Outcome = "the connection would be closed: the listener is disabled"
		return
	}
	svc := x.st.Router.Services[0]
	zero := 0
	x.r.Service = &zero
	x.r.Services = []explain.Service{{Index: 0, Name: svc.Name, Pos: svc.Cfg.Pos.String(), Verdict: "matched"}}
	if !svc.Enabled() {
		x.r.Services[0].Verdict = "disabled"
		x.r.Service = nil
		x.r.Outcome = "the connection would be closed: the service is disabled"
		return
	}
	_, eb, b := svc.ExplainPick(nil, x.seed)
	x.r.Balancer = eb
	if b == nil {
		x.r.Outcome = "the connection would be closed: no backend is available"
		return
	}
	x.r.Backend = &explain.Backend{Index: svc.Index(b), ID: b.ID(), Address: b.Address(), Via: "balancer"}
	x.r.Outcome = fmt.Sprintf("relayed to backend %d %s", x.r.Backend.Index, b.Address())
}

// forward explains forward and send: the session key, the request rules
// and head, the pick.
func (x *explainer) forward(svc *service.Service) {
	c, st := x.c, x.st
	key := svc.SessionKey(&c.req, c.client, c.key[:0])
	// The head is built as the proxy builds it, the programs traced.
	head := c.buildRequestHead(st, svc, x.rewrite, nil)
	if c.ex.badExpand {
		if !x.luaDecides(x.err) {
			x.generated(500, CauseNone, "error", "a request rule's expansion failed")
		}
		return
	}
	es, eb, b := svc.ExplainPick(key, x.seed)
	x.r.Session, x.r.Balancer = es, eb
	if b == nil {
		cause := CauseNoBackend
		if st.Dialect != config.DialectZproxy {
			cause = CauseNone
		}
		x.generated(503, cause, "no backend", "no backend of the service is available")
		return
	}
	via := "balancer"
	if es != nil && es.Pinned {
		via = "session"
	}
	x.r.Backend = &explain.Backend{Index: svc.Index(b), ID: b.ID(), Address: b.Address(), Via: via}
	head = c.bindBackend(st, svc, b, head)
	head = c.bindServerName(b, head)
	x.r.Forwarded = x.forwarded(head)
	x.r.Outcome = fmt.Sprintf("service %d%s → backend %d %s (%s)", *x.r.Service, quoted(svc.Name),
		x.r.Backend.Index, b.Address(), via)
}

// rewrite is the dry run's programRunner: it traces each program's
// steps, and keeps the error that stopped them.
func (x *explainer) rewrite(p *rules.Program, m *rules.Message) error {
	steps, err := p.RewriteTrace(x.c.rs, m)
	x.r.Rewrites = append(x.r.Rewrites, steps...)
	if err != nil {
		x.err = err
	}
	return err
}

// forwarded splits the head to send and compares it with the request.
func (x *explainer) forwarded(head []byte) *explain.Forwarded {
	lines := strings.Split(strings.TrimSuffix(string(head), crlf+crlf), crlf)
	f := &explain.Forwarded{RequestLine: lines[0], Headers: append([]string{}, lines[1:]...)}
	f.Added = difference(f.Headers, x.r.Request.Headers)
	f.Removed = difference(x.r.Request.Headers, f.Headers)
	return f
}

// difference lists the lines of a that b does not have (as many times as
// a has them more).
func difference(a, b []string) []string {
	left := map[string]int{}
	for _, l := range b {
		left[l]++
	}
	var out []string
	for _, l := range a {
		if left[l] > 0 {
			left[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}

func quoted(name string) string {
	if name == "" {
		return ""
	}
	return " " + fmt.Sprintf("%q", name)
}

// querySeed makes the dry run's random draws repeatable for one
// question.
func querySeed(q explain.Query) uint64 {
	h := fnv.New64a()
	for _, s := range append([]string{q.Method, q.URL, q.Client, q.Listener}, q.Headers...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
