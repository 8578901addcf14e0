package resolver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// follow asks for name's qtype records and walks the CNAMEs of the
// answers. A server that answers with the CNAME only is asked again for
// the CNAME's target; either way at most CNAMEChain links are followed.
func (r *Resolver) follow(ctx context.Context, name string, qtype uint16) ([]dns.RR, time.Duration, error) {
	links := 0
	var ttl time.Duration = -1
	for range r.o.CNAMEChain + 1 { // one query per link at most
		msg, err := r.exchange(ctx, name, qtype)
		if err != nil {
			return nil, 0, err
		}
		target, recs, minTTL, n := walk(msg.Answer, name, qtype, r.o.CNAMEChain-links)
		links += n
		ttl = minDur(ttl, minTTL)
		switch {
		case links > r.o.CNAMEChain:
			return nil, 0, fmt.Errorf("%s: CNAME chain longer than %d: %w", name, r.o.CNAMEChain, ErrNotFound)
		case len(recs) > 0:
			return recs, max(ttl, 0), nil
		case n == 0:
			return nil, 0, fmt.Errorf("%s %s: %w", dns.TypeToString[qtype], name, ErrNotFound)
		}
		name = target
	}
	return nil, 0, fmt.Errorf("%s: CNAME chain longer than %d: %w", name, r.o.CNAMEChain, ErrNotFound)
}

// walk follows the CNAMEs from name within one answer section (allowing
// one more than budget, so the caller can tell a chain too long) and
// returns the last name, its qtype records, the smallest TTL of what it
// used, and how many CNAMEs it followed.
func walk(answer []dns.RR, name string, qtype uint16, budget int) (string, []dns.RR, time.Duration, int) {
	var ttl time.Duration = -1
	n := 0
	for n <= budget {
		next := ""
		for _, rr := range answer {
			if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, name) {
				next, ttl = c.Target, minDur(ttl, rrTTL(rr))
				break
			}
		}
		if next == "" {
			break
		}
		name = next
		n++
	}
	var recs []dns.RR
	for _, rr := range answer {
		if rr.Header().Rrtype == qtype && strings.EqualFold(rr.Header().Name, name) {
			recs = append(recs, rr)
			ttl = minDur(ttl, rrTTL(rr))
		}
	}
	return name, recs, ttl, n
}

func rrTTL(rr dns.RR) time.Duration { return time.Duration(rr.Header().Ttl) * time.Second }

// minDur is min where a negative value means "none yet".
func minDur(a, b time.Duration) time.Duration {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

// exchange sends one question to the servers in turn, Attempts rounds
// at most, and returns the first usable answer. NXDOMAIN and an empty
// answer are final; a server failure or refusal tries the next server.
func (r *Resolver) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	var lastErr error
	for range r.o.Conf.Attempts {
		for _, srv := range r.o.Conf.Servers {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w (%v)", name, ErrTemporary, err)
			}
			msg, err := r.ask(ctx, q, srv.String())
			switch {
			case err != nil:
				lastErr = fmt.Errorf("%s: %w (%v)", name, ErrTemporary, err)
			case msg.Rcode == dns.RcodeSuccess || msg.Rcode == dns.RcodeNameError:
				return msg, nil
			default:
				lastErr = fmt.Errorf("%s: server %s answered %s: %w", name, srv, dns.RcodeToString[msg.Rcode], ErrNotFound)
			}
		}
	}
	return nil, lastErr
}

// ask queries one server over UDP, and again over TCP when the answer
// was truncated.
func (r *Resolver) ask(ctx context.Context, q *dns.Msg, server string) (*dns.Msg, error) {
	msg, err := r.askOver(ctx, "udp", q, server)
	if err == nil && msg.Truncated {
		msg, err = r.askOver(ctx, "tcp", q, server)
	}
	if err == nil && msg.Id != q.Id {
		err = errors.New("answer id does not match the query")
	}
	return msg, err
}

func (r *Resolver) askOver(ctx context.Context, network string, q *dns.Msg, server string) (*dns.Msg, error) {
	if r.o.Rewrite != nil {
		server = rewrite(r.o.Rewrite, network, server)
	}
	c := &dns.Client{Net: network, Timeout: r.o.Conf.Timeout}
	msg, _, err := c.ExchangeContext(ctx, q, server) // the round-trip time is not needed
	return msg, err
}
