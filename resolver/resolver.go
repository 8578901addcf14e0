package resolver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/sirupsen/logrus"
	"golang.org/x/sync/singleflight"
)

// Family selects the address records a lookup asks for.
type Family int

// Families, named as in Pound's Family statement.
const (
	Any   Family = iota // A and AAAA
	Inet                // A only
	Inet6               // AAAA only
)

// ErrNotFound is wrapped by lookups whose name has no records of the
// type asked (NXDOMAIN, NODATA, or a server refusing the name).
var ErrNotFound = errors.New("no such records")

// ErrTemporary is wrapped when no server answered in time.
var ErrTemporary = errors.New("temporary DNS failure")

// Options configure New.
type Options struct {
	Conf Conf
	// CNAMEChain is the longest CNAME chain followed; below 1 means 1.
	CNAMEChain int
	// Rewrite maps a server address before a query is sent ("udp" or
	// "tcp"); nil sends to the address itself. See FakeDNS.
	Rewrite func(network string, server netip.AddrPort) netip.AddrPort
	// Debug logs every query and its outcome to Log at Info level.
	Debug bool
	Log   logrus.FieldLogger
}

// Resolver answers address and SRV lookups. It is safe for concurrent
// use; it caches nothing, so every lookup sees the current records.
type Resolver struct {
	o  Options
	sf singleflight.Group
}

// New returns a Resolver for o.
func New(o Options) *Resolver {
	if len(o.Conf.Servers) == 0 {
		o.Conf, _ = ParseConf("") // the empty text has nothing to warn about
	}
	o.Conf.Attempts = max(o.Conf.Attempts, 1)
	if o.Conf.Timeout <= 0 {
		o.Conf.Timeout = defaultConf().Timeout
	}
	o.CNAMEChain = max(o.CNAMEChain, 1)
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	return &Resolver{o: o}
}

// Addrs is the answer of an address lookup. TTL is the smallest TTL of
// the records used (CNAMEs included), so the answer is valid that long.
type Addrs struct {
	Addrs []netip.Addr
	TTL   time.Duration
}

// SRV is one SRV record.
type SRV struct {
	Priority, Weight, Port uint16
	Target                 string // absolute, without the final dot
}

// SRVs is the answer of an SRV lookup, sorted by ascending priority,
// then descending weight, then target, as Pound sorts it.
type SRVs struct {
	Records []SRV
	TTL     time.Duration
}

// LookupAddrs returns the addresses of name in family: A records first,
// then AAAA. For Any it succeeds when either type has records.
func (r *Resolver) LookupAddrs(ctx context.Context, name string, f Family) (Addrs, error) {
	switch f {
	case Inet:
		return r.addrs(ctx, name, dns.TypeA)
	case Inet6:
		return r.addrs(ctx, name, dns.TypeAAAA)
	}
	a4, err4 := r.addrs(ctx, name, dns.TypeA)
	a6, err6 := r.addrs(ctx, name, dns.TypeAAAA)
	switch {
	case err4 != nil && err6 != nil:
		if errors.Is(err4, ErrTemporary) {
			return Addrs{}, err4
		}
		return Addrs{}, err6
	case err4 != nil:
		return a6, nil
	case err6 != nil:
		return a4, nil
	}
	all := append(slices.Clip(a4.Addrs), a6.Addrs...)
	return Addrs{Addrs: all, TTL: min(a4.TTL, a6.TTL)}, nil
}

func (r *Resolver) addrs(ctx context.Context, name string, qtype uint16) (Addrs, error) {
	recs, ttl, err := r.query(ctx, name, qtype)
	if err != nil {
		return Addrs{}, err
	}
	out := Addrs{TTL: ttl}
	for _, rr := range recs {
		switch rr := rr.(type) {
		case *dns.A:
			if a, ok := netip.AddrFromSlice(rr.A.To4()); ok {
				out.Addrs = append(out.Addrs, a)
			}
		case *dns.AAAA:
			if a, ok := netip.AddrFromSlice(rr.AAAA.To16()); ok {
				out.Addrs = append(out.Addrs, a)
			}
		}
	}
	return out, nil
}

// LookupSRV returns the SRV records of name.
func (r *Resolver) LookupSRV(ctx context.Context, name string) (SRVs, error) {
	recs, ttl, err := r.query(ctx, name, dns.TypeSRV)
	if err != nil {
		return SRVs{}, err
	}
	out := SRVs{TTL: ttl}
	for _, rr := range recs {
		if s, ok := rr.(*dns.SRV); ok {
			out.Records = append(out.Records, SRV{Priority: s.Priority, Weight: s.Weight, Port: s.Port,
				Target: strings.TrimSuffix(s.Target, ".")})
		}
	}
	slices.SortStableFunc(out.Records, func(a, b SRV) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return strings.Compare(strings.ToLower(a.Target), strings.ToLower(b.Target))
	})
	return out, nil
}

// result is what one shared query returns.
type result struct {
	recs []dns.RR
	ttl  time.Duration
}

// query resolves name's records of qtype through its CNAMEs. Callers
// asking for the same name and type at the same time share one query;
// they must not modify the records.
func (r *Resolver) query(ctx context.Context, name string, qtype uint16) ([]dns.RR, time.Duration, error) {
	fqdn := dns.Fqdn(name)
	if _, ok := dns.IsDomainName(fqdn); !ok || name == "" {
		return nil, 0, fmt.Errorf("%q is not a domain name: %w", name, ErrNotFound)
	}
	key := dns.TypeToString[qtype] + " " + strings.ToLower(fqdn)
	// Whether the answer was shared with a concurrent caller changes nothing.
	v, err, _ := r.sf.Do(key, func() (any, error) {
		recs, ttl, err := r.follow(ctx, fqdn, qtype)
		r.debugf("query %s: %d records, ttl %s, err %v", key, len(recs), ttl, err)
		return result{recs, ttl}, err
	})
	if err != nil {
		return nil, 0, err
	}
	res := v.(result)
	return res.recs, res.ttl, nil
}

func (r *Resolver) debugf(format string, a ...any) {
	if r.o.Debug {
		r.o.Log.Infof("resolver: "+format, a...)
	}
}
