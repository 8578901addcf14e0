package resolver

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"lbd/internal/dnstest"
)

const zone = `$ORIGIN example.org.
@	3600	IN SOA	ns rname 1 2h 1h 2w 1h
be	5	A	127.0.0.1
be	7	A	127.0.0.2
be	9	AAAA	::1
v6	30	AAAA	::2
alias	4	CNAME	be
alias2	60	CNAME	alias
alias3	60	CNAME	alias2
txt	60	TXT	"no addresses"
$ORIGIN _tcp.example.org.
_web	10	SRV	20 10 8082 c.example.org.
_web	12	SRV	10 40 8080 a.example.org.
_web	11	SRV	10 70 8081 b.example.org.
`

// newTest starts a server with zone and a Resolver pointed at it.
func newTest(t *testing.T, o Options) (*dnstest.Server, *Resolver) {
	t.Helper()
	srv := dnstest.Start(t)
	srv.MustSetZone(t, zone)
	conf, warns := ParseConf("nameserver " + srv.Addr + "\noptions timeout:1 attempts:1\n")
	if len(warns) > 0 {
		t.Fatal(warns)
	}
	o.Conf = conf
	return srv, New(o)
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestLookupAddrs(t *testing.T) {
	tests := []struct {
		name   string
		host   string
		family Family
		chain  int
		want   []netip.Addr
		ttl    time.Duration
		err    error
	}{
		{name: "A records, smallest TTL", host: "be.example.org", family: Inet, want: addrs("127.0.0.1", "127.0.0.2"), ttl: 5 * time.Second},
		{name: "AAAA only", host: "be.example.org", family: Inet6, want: addrs("::1"), ttl: 9 * time.Second},
		{name: "any: A then AAAA", host: "be.example.org", family: Any, want: addrs("127.0.0.1", "127.0.0.2", "::1"), ttl: 5 * time.Second},
		{name: "any with AAAA only", host: "v6.example.org", family: Any, want: addrs("::2"), ttl: 30 * time.Second},
		{name: "trailing dot", host: "be.example.org.", family: Inet, want: addrs("127.0.0.1", "127.0.0.2"), ttl: 5 * time.Second},
		{name: "one CNAME is always followed", host: "alias.example.org", family: Inet, want: addrs("127.0.0.1", "127.0.0.2"), ttl: 4 * time.Second},
		{name: "CNAME chain refused by default", host: "alias2.example.org", family: Inet, err: ErrNotFound},
		{name: "CNAME chain within CNAMEChain", host: "alias3.example.org", family: Inet, chain: 3, want: addrs("127.0.0.1", "127.0.0.2"), ttl: 4 * time.Second},
		{name: "CNAME chain beyond CNAMEChain", host: "alias3.example.org", family: Inet, chain: 2, err: ErrNotFound},
		{name: "NXDOMAIN", host: "nope.example.org", family: Any, err: ErrNotFound},
		{name: "NODATA", host: "txt.example.org", family: Inet, err: ErrNotFound},
		{name: "not a domain name", host: "a..b", family: Inet, err: ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, r := newTest(t, Options{CNAMEChain: tc.chain})
			got, err := r.LookupAddrs(context.Background(), tc.host, tc.family)
			if !errors.Is(err, tc.err) || (err != nil) != (tc.err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !slices.Equal(got.Addrs, tc.want) || got.TTL != tc.ttl {
				t.Errorf("got %v ttl %v, want %v ttl %v", got.Addrs, got.TTL, tc.want, tc.ttl)
			}
		})
	}
}

func TestLookupSRV(t *testing.T) {
	_, r := newTest(t, Options{})
	got, err := r.LookupSRV(context.Background(), "_web._tcp.example.org")
	if err != nil {
		t.Fatal(err)
	}
	want := []SRV{
		{Priority: 10, Weight: 70, Port: 8081, Target: "b.example.org"},
		{Priority: 10, Weight: 40, Port: 8080, Target: "a.example.org"},
		{Priority: 20, Weight: 10, Port: 8082, Target: "c.example.org"},
	}
	if !slices.Equal(got.Records, want) || got.TTL != 10*time.Second {
		t.Errorf("got %+v ttl %v, want %+v ttl 10s", got.Records, got.TTL, want)
	}
}

func TestServerFailures(t *testing.T) {
	tests := []struct {
		name string
		set  func(*dnstest.Server)
		err  error
	}{
		{name: "silent server is a temporary failure", set: func(s *dnstest.Server) { s.SetSilent(true) }, err: ErrTemporary},
		{name: "SERVFAIL is not found", set: func(s *dnstest.Server) { s.SetRcode(dns.RcodeServerFailure) }, err: ErrNotFound},
		{name: "REFUSED is not found", set: func(s *dnstest.Server) { s.SetRcode(dns.RcodeRefused) }, err: ErrNotFound},
		{name: "truncated UDP retried over TCP", set: func(s *dnstest.Server) { s.SetTruncate(true) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, r := newTest(t, Options{})
			tc.set(srv)
			_, err := r.LookupAddrs(context.Background(), "be.example.org", Inet)
			if !errors.Is(err, tc.err) || (err != nil) != (tc.err != nil) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

// A second server is asked when the first does not answer.
func TestNextServer(t *testing.T) {
	dead, live := dnstest.Start(t), dnstest.Start(t)
	dead.SetSilent(true)
	live.MustSetZone(t, zone)
	conf, _ := ParseConf("nameserver " + dead.Addr + "\nnameserver " + live.Addr + "\noptions timeout:1\n")
	r := New(Options{Conf: conf})
	got, err := r.LookupAddrs(context.Background(), "be.example.org", Inet)
	if err != nil || len(got.Addrs) != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
}

// Concurrent lookups of one name share one query.
func TestSingleflight(t *testing.T) {
	srv, r := newTest(t, Options{})
	srv.SetSilent(true) // the one query times out after a second: all join it
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := r.LookupAddrs(context.Background(), "be.example.org", Inet)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrTemporary) {
			t.Fatalf("err = %v, want the shared temporary failure", err)
		}
	}
	if n := srv.Queries(); n != 1 {
		t.Errorf("%d queries reached the server, want 1", n)
	}
}

func TestFakeDNS(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	fake := netip.MustParseAddrPort("192.0.2.24:53")
	other := netip.MustParseAddrPort("192.0.2.25:53")
	tests := []struct {
		name     string
		env      map[string]string
		network  string
		server   netip.AddrPort
		want     string // "" = no rewrite function
		rewrites bool
	}{
		{name: "without the library", env: map[string]string{"FAKEDNS_UDP_PORT": "5353"}},
		{name: "udp port", env: map[string]string{"LD_PRELOAD": "/x/libfakedns.so", "FAKEDNS_UDP_PORT": "5353"},
			network: "udp", server: fake, want: "127.0.0.1:5353"},
		{name: "tcp follows udp", env: map[string]string{"LD_PRELOAD": "/x/libfakedns.so", "FAKEDNS_UDP_PORT": "5353"},
			network: "tcp", server: fake, want: "127.0.0.1:5353"},
		{name: "tcp port and ip", env: map[string]string{"LD_PRELOAD": "libfakedns.so", "FAKEDNS_IP": "127.0.0.2", "FAKEDNS_TCP_PORT": "6000"},
			network: "tcp", server: fake, want: "127.0.0.2:6000"},
		{name: "defaults", env: map[string]string{"LD_PRELOAD": "libfakedns.so"}, network: "udp", server: fake, want: "127.0.0.1:15353"},
		{name: "other servers untouched", env: map[string]string{"LD_PRELOAD": "libfakedns.so"}, network: "udp", server: other, want: "192.0.2.25:53"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fn := FakeDNS(env(tc.env))
			if (fn == nil) != (tc.want == "") {
				t.Fatalf("rewrite function present = %v", fn != nil)
			}
			if fn != nil {
				if got := fn(tc.network, tc.server).String(); got != tc.want {
					t.Errorf("got %s, want %s", got, tc.want)
				}
			}
		})
	}
}

// The FakeDNS rewrite really sends the queries to the test server.
func TestFakeDNSQuery(t *testing.T) {
	srv := dnstest.Start(t)
	srv.MustSetZone(t, zone)
	port := netip.MustParseAddrPort(srv.Addr).Port()
	env := map[string]string{"LD_PRELOAD": "libfakedns.so", "FAKEDNS_UDP_PORT": strconv.Itoa(int(port))}
	conf, _ := ParseConf("nameserver 192.0.2.24\noptions timeout:1 attempts:1\n")
	r := New(Options{Conf: conf, Rewrite: FakeDNS(func(k string) string { return env[k] })})
	got, err := r.LookupAddrs(context.Background(), "be.example.org", Inet)
	if err != nil || len(got.Addrs) != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
}
