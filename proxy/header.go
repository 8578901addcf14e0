package proxy

import (
	"strconv"
	"strings"

	"lbd/config"
	"lbd/http1"
	"lbd/service"
)

var (
	hdrXFF      = "X-Forwarded-For"
	hdrXFProto  = "X-Forwarded-Proto"
	hdrXFPort   = "X-Forwarded-Port"
	hdrHost     = "Host"
	hdrExpect   = "Expect"
	hdrDest     = "Destination"
	crlf        = "\r\n"
	chunkedLine = "Transfer-Encoding: chunked\r\n"
	upgradeLine = "Connection: Upgrade\r\n"
	closeLine   = "Connection: close\r\n"
	keepLine    = "Connection: keep-alive\r\n"
	// continueBody is the interim response forward.go sends for Expect.
	continueBody = []byte(continue100)
)

// HeaderEdits are the precompiled header rules for requests routed to
// one service of one listener, in the semantics of the configuration's
// dialect. Everything is prepared at load so that the hot path only
// walks slices.
type HeaderEdits struct {
	zproxy bool
	// levels are Pound 4's request rules: the listener's, then the
	// service's, each applied as DeleteHeader then SetHeader.
	levels []editLevel
	sets   []setLine // every SetHeader line of every level, in order
	// zproxy: a service's list of a kind replaces the listener's.
	reqRemove   []*config.Pattern
	reqReplace  []config.ReplaceHeader // service rules, then listener rules
	reqAdd      []string               // complete lines with CRLF
	respRemove  []*config.Pattern
	respReplace []config.ReplaceHeader
	respAdd     []string
	sts         string // "Strict-Transport-Security: max-age=N\r\n"
	rewriteURL  []config.RewriteURL
	// trimParm: zproxy does not forward the ;param a PARM session keys on.
	trimParm bool

	loc         int  // RewriteLocation mode 0..2
	locURL      bool // zproxy: undo RewriteUrl in Location
	rewriteDest bool
	rewriteHost bool
	lst         listenerFacts
}

type editLevel struct {
	remove []*config.Pattern
	sets   []int // indexes into HeaderEdits.sets
}

// setLine is a SetHeader line and its name.
type setLine struct {
	line string // without CRLF
	name string
	dyn  bool // has $N or %[...] to expand per request
}

// NewHeaderEdits prepares Pound 4 rules: each argument is one level
// (the listener's, then a service's), applied in that order.
func NewHeaderEdits(rules ...config.HeaderRules) *HeaderEdits {
	e := &HeaderEdits{}
	for _, r := range rules {
		e.addLevel(r)
	}
	return e
}

// EditsConfig says for which listener and service NewEdits prepares
// rules; Service is nil for the listener's own.
type EditsConfig struct {
	Dialect  config.Dialect   // whose semantics the rules have
	Listener *config.Listener // the listener's rules and rewrites
	Service  *config.Service  // the service's rules; nil for the listener's own
	// Anonymise (global) also hides the last byte of %[remoteip].
	Anonymise bool
}

// NewEdits prepares the rules and rewrites (RewriteLocation,
// RewriteDestination, RewriteHost, RewriteUrl, StrictTransportSecurity)
// for requests of one service of a listener.
func NewEdits(ec EditsConfig) *HeaderEdits {
	l, s := ec.Listener, ec.Service
	e := &HeaderEdits{zproxy: ec.Dialect == config.DialectZproxy, lst: newListenerFacts(l)}
	e.lst.anon = ec.Anonymise
	if l != nil {
		e.loc, e.locURL = l.RewriteLoc, l.RewriteLocURL
		e.rewriteDest, e.rewriteHost = l.RewriteDest, l.RewriteHost
	}
	var lr, sr config.HeaderRules
	if l != nil {
		lr = l.Headers
	}
	if s != nil {
		sr = s.Headers
		if s.RewriteLoc != nil {
			e.loc = *s.RewriteLoc
		}
		e.rewriteURL = s.RewriteURL
		e.trimParm = e.zproxy && s.Session != nil && s.Session.Type == config.SessionParm
		if s.STS > 0 {
			e.sts = "Strict-Transport-Security: max-age=" + strconv.Itoa(s.STS) + crlf
		}
	}
	if !e.zproxy {
		e.addLevel(lr)
		e.addLevel(sr)
		// Response rules are applied service first, then listener (4.12).
		e.respRemove = append(append(e.respRemove, sr.ResponseRemove...), lr.ResponseRemove...)
		e.respAdd = lines(append(append([]string{}, sr.ResponseAdd...), lr.ResponseAdd...))
		return e
	}
	e.reqRemove = override(sr.RequestRemove, lr.RequestRemove)
	e.respRemove = override(sr.ResponseRemove, lr.ResponseRemove)
	e.reqAdd = lines(override(append(sr.RequestAdd, sr.RequestSet...), append(lr.RequestAdd, lr.RequestSet...)))
	e.respAdd = lines(override(sr.ResponseAdd, lr.ResponseAdd))
	for _, rules := range [][]config.ReplaceHeader{sr.Replace, lr.Replace} {
		for _, r := range rules {
			if r.Response {
				e.respReplace = append(e.respReplace, r)
			} else {
				e.reqReplace = append(e.reqReplace, r)
			}
		}
	}
	return e
}

func override[T any](svc, lst []T) []T {
	if len(svc) > 0 {
		return svc
	}
	return lst
}

func lines(ls []string) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l+crlf)
	}
	return out
}

func (e *HeaderEdits) addLevel(r config.HeaderRules) {
	lv := editLevel{remove: r.RequestRemove}
	// Pound 4 made AddHeader an alias of SetHeader; a Pound config keeps
	// them in RequestSet, anything else in RequestAdd is treated alike.
	for _, l := range append(append([]string{}, r.RequestAdd...), r.RequestSet...) {
		lv.sets = append(lv.sets, len(e.sets))
		e.sets = append(e.sets, setLine{line: l, name: headerName(l), dyn: strings.ContainsAny(l, "$%")})
	}
	e.respRemove = append(e.respRemove, r.ResponseRemove...)
	if len(lv.remove) > 0 || len(lv.sets) > 0 {
		e.levels = append(e.levels, lv)
	}
}

func headerName(line string) string {
	if i := strings.IndexByte(line, ':'); i >= 0 {
		return line[:i]
	}
	return line
}

// needBackend reports whether the head depends on the backend picked
// (RewriteDestination, zproxy RewriteHost); see bindBackend.
func (e *HeaderEdits) needBackend() bool {
	return e.rewriteDest || (e.zproxy && e.rewriteHost)
}

// appendRequestHead writes the request head as it goes to the backend.
func (c *conn) appendRequestHead(st *Listener, svc *service.Service, dst []byte) []byte {
	c.keepRequest()
	e := c.editsFor(st, svc)
	if e.zproxy {
		return c.appendZproxyRequest(st, e, dst)
	}
	ruled := c.hasRequestRules(st, svc)
	// The body will reuse the buffer the head is in: the rules, and Lua
	// scripts after the response, need the lines where it cannot.
	if len(c.keep) > 0 && (ruled || c.ex.scripted) {
		head := c.head()
		c.rs.Rebase(func(s []byte) []byte { return rebase(s, head, c.keep) })
	}
	if ruled {
		return c.appendRuledRequest(st, svc, dst)
	}
	dst = c.appendForwardLine(dst, c.req.Target)
	return c.appendPoundHeaders(st, e, dst)
}

var noEdits = &HeaderEdits{}

// appendForwardLine writes the request line with target (absolute-form
// is reduced to origin-form: RFC 9112 §3.2.2).
func (c *conn) appendForwardLine(dst, target []byte) []byte {
	req := &c.req
	dst = append(dst, req.Method...)
	dst = append(dst, ' ')
	if req.AbsoluteForm {
		dst = append(dst, req.Path...)
		if req.Query != nil {
			dst = append(dst, '?')
			dst = append(dst, req.Query...)
		}
	} else {
		dst = append(dst, target...)
	}
	dst = append(dst, " HTTP/1."...)
	dst = append(dst, byte('0'+req.Minor))
	return append(dst, crlf...)
}

// fwdRole is what Pound's forwarding code does to a received header.
type fwdRole uint8

const (
	fwdNone  fwdRole = iota
	fwdSkip          // hop-by-hop, Expect, absolute-form Host: never sent
	fwdXFF           // first X-Forwarded-For: client address appended
	fwdProto         // first X-Forwarded-Proto: replaced
	fwdPort          // first X-Forwarded-Port: replaced
)

// fwdPlan records which received headers Pound's add_forwarded_headers
// rewrites in place (the first of each name) and which it appends.
type fwdPlan struct {
	xff, proto, port int // index of the first such header, -1 if none
	on               bool
	withPort         bool // X-Forwarded-Port only for IP clients
}

func (c *conn) planForwarded(st *Listener) fwdPlan {
	p := fwdPlan{xff: -1, proto: -1, port: -1, on: st.Forwarded, withPort: c.client.IsValid()}
	if !p.on {
		return p
	}
	for i := range c.req.Headers {
		n := c.req.Headers[i].Name
		switch {
		case p.xff < 0 && http1.EqualFold(n, hdrXFF):
			p.xff = i
		case p.proto < 0 && http1.EqualFold(n, hdrXFProto):
			p.proto = i
		case p.port < 0 && http1.EqualFold(n, hdrXFPort):
			p.port = i
		}
	}
	return p
}

func (c *conn) role(p *fwdPlan, i int) fwdRole {
	h := &c.req.Headers[i]
	if c.req.IsHopByHop(h.Name) || http1.EqualFold(h.Name, hdrExpect) ||
		(c.req.AbsoluteForm && http1.EqualFold(h.Name, hdrHost)) || c.forgedSSL(h.Name) {
		return fwdSkip
	}
	switch i {
	case p.xff:
		return fwdXFF
	case p.proto:
		return fwdProto
	case p.port:
		return fwdPort
	}
	return fwdNone
}

// appendPoundHeaders is the fast path: no SetHeader/DeleteHeader rules.
// Pound 4 (add_forwarded_headers) appends the client to the first
// X-Forwarded-For in place ("192.0.2.2, 127.0.0.1"), replaces the first
// X-Forwarded-Proto and -Port in place, and adds the missing ones at the
// end.
func (c *conn) appendPoundHeaders(st *Listener, e *HeaderEdits, dst []byte) []byte {
	p := c.planForwarded(st)
	for i := range c.req.Headers {
		dst = c.appendReceived(st, e, &p, i, dst)
	}
	dst = c.appendFraming(dst, true)
	dst = c.appendMissingForwarded(st, &p, dst)
	dst = c.appendSSLHeaders(dst)
	return append(dst, crlf...)
}

// appendReceived writes received header i as Pound forwards it.
func (c *conn) appendReceived(st *Listener, e *HeaderEdits, p *fwdPlan, i int, dst []byte) []byte {
	h := &c.req.Headers[i]
	switch c.role(p, i) {
	case fwdSkip:
		return dst
	case fwdXFF:
		return c.appendXFF(dst, h)
	case fwdProto:
		return appendLine(dst, hdrXFProto, st.Scheme)
	case fwdPort:
		return c.appendXFPort(st, dst)
	}
	return appendRaw(dst, h)
}

// appendXFF writes "Name: value, client" (Pound's H_APPEND; an empty
// value is replaced).
func (c *conn) appendXFF(dst []byte, h *http1.Header) []byte {
	if len(h.Value) == 0 {
		dst = append(dst, hdrXFF...)
		dst = append(dst, ": "...)
	} else {
		dst = append(dst, h.Name...)
		dst = append(dst, ": "...)
		dst = append(dst, h.Value...)
		dst = append(dst, ", "...)
	}
	dst = appendAddr(dst, c.client)
	return append(dst, crlf...)
}

func (c *conn) appendXFPort(st *Listener, dst []byte) []byte {
	dst = append(dst, hdrXFPort...)
	dst = append(dst, ": "...)
	dst = strconv.AppendInt(dst, int64(c.listenerPort(st)), 10)
	return append(dst, crlf...)
}

// appendFraming adds the lines lbd itself owns: the Host of an
// absolute-form request (unless host is false: zproxy's RewriteHost
// writes its own) and the hop-by-hop framing it re-creates.
func (c *conn) appendFraming(dst []byte, host bool) []byte {
	req := &c.req
	if req.AbsoluteForm && host {
		dst = appendLine(dst, hdrHost, req.Host)
	}
	if req.Chunked {
		dst = append(dst, chunkedLine...)
	}
	if req.Upgrade {
		dst = append(dst, upgradeLine...)
	}
	return dst
}

func (c *conn) appendMissingForwarded(st *Listener, p *fwdPlan, dst []byte) []byte {
	if !p.on {
		return dst
	}
	if p.xff < 0 {
		dst = append(dst, hdrXFF...)
		dst = append(dst, ": "...)
		dst = appendAddr(dst, c.client)
		dst = append(dst, crlf...)
	}
	if p.proto < 0 {
		dst = appendLine(dst, hdrXFProto, st.Scheme)
	}
	if p.port < 0 && p.withPort {
		dst = c.appendXFPort(st, dst)
	}
	return dst
}

func appendLine[V ~string | ~[]byte](dst []byte, name string, value V) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, crlf...)
}

func appendHeader(dst []byte, h *http1.Header) []byte {
	dst = append(dst, h.Name...)
	dst = append(dst, ": "...)
	dst = append(dst, h.Value...)
	return append(dst, crlf...)
}

// rawLine returns a header line "Name: value" as received, from the
// buffer the name and value alias (the offset is the difference of
// their capacities, so no copy and no unsafe). Pound sends and matches
// header lines as received.
func rawLine(h *http1.Header) ([]byte, bool) {
	end := cap(h.Name) - cap(h.Value) + len(h.Value)
	if cap(h.Value) == 0 || end <= len(h.Name) || end > cap(h.Name) {
		return nil, false
	}
	return h.Name[:end], true
}

// appendRaw writes a received header line as received.
func appendRaw(dst []byte, h *http1.Header) []byte {
	if line, ok := rawLine(h); ok {
		dst = append(dst, line...)
		return append(dst, crlf...)
	}
	return appendHeader(dst, h)
}

// lineOf is the received line for matching, normalised when it cannot
// be recovered; scratch backs the normalised form.
func lineOf(h *http1.Header, scratch []byte) []byte {
	if line, ok := rawLine(h); ok {
		return line
	}
	b := appendHeader(scratch, h)
	return b[:len(b)-len(crlf)]
}
