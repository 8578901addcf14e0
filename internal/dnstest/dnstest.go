// Package dnstest is a small authoritative DNS server on 127.0.0.1 for
// tests: UDP and TCP on one port, answering from records a test replaces
// at any time, and able to fall silent, fail or truncate on demand.
package dnstest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// Server is a running test DNS server.
type Server struct {
	// Addr is "127.0.0.1:PORT", the same port for UDP and TCP.
	Addr string

	mu       sync.Mutex
	rrs      []dns.RR
	silent   bool // drop every query
	rcode    int  // answer every query with this rcode when non-zero
	truncate bool // set TC on UDP answers, so clients retry over TCP

	queries atomic.Int64
	udp     *dns.Server
	tcp     *dns.Server
}

// Start runs a server until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	pc, ln, err := listenPair()
	if err != nil {
		t.Fatalf("dnstest: %v", err)
	}
	s.Addr = pc.LocalAddr().String()
	h := dns.HandlerFunc(s.serve)
	s.udp = &dns.Server{PacketConn: pc, Handler: h}
	s.tcp = &dns.Server{Listener: ln, Handler: h}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() {
			if err := srv.ActivateAndServe(); err != nil {
				t.Logf("dnstest: %v", err)
			}
		}()
		<-started
	}
	t.Cleanup(func() {
		s.udp.Shutdown() // errors only when it was never started
		s.tcp.Shutdown()
	})
	return s
}

// listenPair opens UDP and TCP sockets on one free loopback port; a few
// tries, since the TCP port may be taken by someone else.
func listenPair() (net.PacketConn, net.Listener, error) {
	var err error
	for range 10 {
		var pc net.PacketConn
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		var ln net.Listener
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
	}
	return nil, nil, err
}

// SetZone replaces every record with those of a zone file text
// ($ORIGIN and $TTL work; names without an origin are absolute).
func (s *Server) SetZone(text string) error {
	zp := dns.NewZoneParser(strings.NewReader(text), ".", "")
	var rrs []dns.RR
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		return fmt.Errorf("dnstest: %w", err)
	}
	s.mu.Lock()
	s.rrs = rrs
	s.mu.Unlock()
	return nil
}

// MustSetZone is SetZone that fails the test on a bad zone.
func (s *Server) MustSetZone(t testing.TB, text string) {
	t.Helper()
	if err := s.SetZone(text); err != nil {
		t.Fatal(err)
	}
}

// SetSilent makes the server drop (true) or answer (false) queries.
func (s *Server) SetSilent(on bool) {
	s.mu.Lock()
	s.silent = on
	s.mu.Unlock()
}

// SetRcode makes every answer carry rcode (0 = answer normally).
func (s *Server) SetRcode(rcode int) {
	s.mu.Lock()
	s.rcode = rcode
	s.mu.Unlock()
}

// SetTruncate makes UDP answers empty and truncated.
func (s *Server) SetTruncate(on bool) {
	s.mu.Lock()
	s.truncate = on
	s.mu.Unlock()
}

// Queries is the number of queries received so far.
func (s *Server) Queries() int64 { return s.queries.Load() }

func (s *Server) serve(w dns.ResponseWriter, q *dns.Msg) {
	s.queries.Add(1)
	s.mu.Lock()
	silent, rcode, trunc, rrs := s.silent, s.rcode, s.truncate, s.rrs
	s.mu.Unlock()
	if silent || len(q.Question) != 1 {
		return
	}
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	_, udp := w.RemoteAddr().(*net.UDPAddr)
	switch {
	case rcode != 0:
		m.Rcode = rcode
	case trunc && udp:
		m.Truncated = true
	default:
		m.Answer, m.Rcode = answer(rrs, q.Question[0])
	}
	if err := w.WriteMsg(m); err != nil {
		return // the client went away; nothing to tell it
	}
}

// answer follows CNAMEs (a bounded number) and returns the records of
// the question's type, NXDOMAIN when the name has no records at all.
func answer(rrs []dns.RR, q dns.Question) ([]dns.RR, int) {
	name := q.Name
	var out []dns.RR
	for range 8 {
		var cname *dns.CNAME
		var recs []dns.RR
		known := false
		for _, rr := range rrs {
			h := rr.Header()
			if !strings.EqualFold(h.Name, name) {
				continue
			}
			known = true
			if c, ok := rr.(*dns.CNAME); ok && q.Qtype != dns.TypeCNAME {
				cname = c
			} else if h.Rrtype == q.Qtype {
				recs = append(recs, rr)
			}
		}
		if !known && name == q.Name {
			return nil, dns.RcodeNameError
		}
		if len(recs) > 0 || cname == nil {
			return append(out, recs...), dns.RcodeSuccess
		}
		out = append(out, cname)
		name = cname.Target
	}
	return out, dns.RcodeSuccess
}
