package proxy

import (
	"strconv"

	"lbd/config"
	"lbd/http1"
	"lbd/rules"
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
	crlfBytes   = []byte(crlf)
	// continueBody is the interim response forward.go sends for Expect.
	continueBody = []byte(continue100)
)

// HeaderEdits are what the proxy applies to requests routed to one
// service of one listener besides the listener's and the service's rule
// programs: the edits compiled for that pair (zproxy's header and URL
// directives, which rules.CompileZproxyEdits turns into a program like
// any other), RewriteLocation when the proxy applies it in place, and
// RewriteDestination. Everything is prepared at load.
type HeaderEdits struct {
	// Req and Resp run after the listener's and the service's programs
	// (nil: nothing to do). Resp also edits the replies lbd writes.
	Req, Resp *rules.Program
	// loc is the RewriteLocation mode applied in place (Pound's); 0 off.
	loc         int
	rewriteDest bool
	lst         listenerFacts
}

// EditsConfig says for which listener and service NewEdits prepares
// edits; Service is nil for the listener's own.
type EditsConfig struct {
	Listener *config.Listener
	Service  *config.Service
	// Req and Resp are the pair's compiled edits (may be nil).
	Req, Resp *rules.Program
	// LocationInPlace: the proxy applies RewriteLocation to Location and
	// Content-Location in place (Pound); otherwise Resp does it, if at
	// all (rewrite_location).
	LocationInPlace bool
	// Anonymise (global) also hides the last byte of %[remoteip].
	Anonymise bool
}

// NewEdits prepares the edits of requests routed to one service of a
// listener.
func NewEdits(ec EditsConfig) *HeaderEdits {
	l, s := ec.Listener, ec.Service
	e := &HeaderEdits{Req: ec.Req, Resp: ec.Resp, lst: newListenerFacts(l)}
	e.lst.anon = ec.Anonymise
	if l != nil {
		e.rewriteDest = l.RewriteDest
		if ec.LocationInPlace {
			e.loc = l.RewriteLoc
		}
	}
	if s != nil && s.Rare().RewriteLoc != nil && ec.LocationInPlace {
		e.loc = *s.Rare().RewriteLoc
	}
	return e
}

// appendRequestHead writes the request head as it goes to the backend.
func (c *conn) appendRequestHead(st *Listener, svc *service.Service, dst []byte) []byte {
	return c.buildRequestHead(st, svc, nil, dst)
}

// buildRequestHead is appendRequestHead with the way the request
// programs run passed in: nil runs them for real (appendRuledRequest); the
// routing explainer passes its tracing dry run, so both build the head
// with the same code.
func (c *conn) buildRequestHead(st *Listener, svc *service.Service, run programRunner, dst []byte) []byte {
	c.keepRequest()
	e := c.editsFor(st, svc)
	ruled := c.hasRequestRules(st, svc, e)
	// The body will reuse the buffer the head is in: the rules, and Lua
	// scripts after the response, need the lines where it cannot.
	if len(c.keep) > 0 && (ruled || c.ex.scripted) {
		head := c.head()
		c.rs.Rebase(func(s []byte) []byte { return rebase(s, head, c.keep) })
	}
	if ruled {
		return c.appendRuledRequest(st, svc, e, run, dst)
	}
	dst = c.appendForwardLine(dst, c.req.Target)
	return c.appendPoundHeaders(st, dst)
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
func (c *conn) appendPoundHeaders(st *Listener, dst []byte) []byte {
	p := c.planForwarded(st)
	for i := range c.req.Headers {
		dst = c.appendReceived(st, &p, i, dst)
	}
	dst = c.appendFraming(dst, true)
	dst = c.appendMissingForwarded(st, &p, dst)
	dst = c.appendSSLHeaders(dst)
	return append(dst, crlf...)
}

// appendReceived writes received header i as Pound forwards it.
func (c *conn) appendReceived(st *Listener, p *fwdPlan, i int, dst []byte) []byte {
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
// absolute-form request (unless host is false: the program put a Host
// line for the backend's address, zproxy's RewriteHost) and the
// hop-by-hop framing it re-creates.
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
