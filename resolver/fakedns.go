package resolver

import (
	"net/netip"
	"strconv"
	"strings"
)

// Pound's test suite starts its DNS server on free loopback ports and
// points the resolver at 192.0.2.24:53 (TEST-NET-1, never a real server),
// with an LD_PRELOAD library (tests/libfakedns.so) redirecting the
// libc socket calls to the real ports. A Go binary makes its system calls
// itself, so the library cannot reach lbd: FakeDNS applies the same
// redirection inside lbd, under the same conditions and variables.

// fakeDNSServer is the address the suite writes into ConfigText.
var fakeDNSServer = netip.MustParseAddrPort("192.0.2.24:53")

// fakeDNSPort is libfakedns's default for both ports.
const fakeDNSPort = 15353

// FakeDNS returns the rewrite libfakedns would do, or nil when getenv's
// LD_PRELOAD does not name libfakedns. Queries to 192.0.2.24:53 then go
// to FAKEDNS_IP (default 127.0.0.1) at FAKEDNS_UDP_PORT or
// FAKEDNS_TCP_PORT (default 15353); every other server is left alone.
func FakeDNS(getenv func(string) string) func(string, netip.AddrPort) netip.AddrPort {
	if !strings.Contains(getenv("LD_PRELOAD"), "libfakedns") {
		return nil
	}
	ip, err := netip.ParseAddr(getenv("FAKEDNS_IP"))
	if err != nil {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	udp := envPort(getenv("FAKEDNS_UDP_PORT"), fakeDNSPort)
	tcp := envPort(getenv("FAKEDNS_TCP_PORT"), udp) // as the library: TCP follows UDP
	return func(network string, server netip.AddrPort) netip.AddrPort {
		if server != fakeDNSServer {
			return server
		}
		if network == "tcp" {
			return netip.AddrPortFrom(ip, tcp)
		}
		return netip.AddrPortFrom(ip, udp)
	}
}

// envPort reads a port variable; anything unusable is def.
func envPort(s string, def uint16) uint16 {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return def
	}
	return uint16(n)
}

// rewrite applies fn to a "host:port" server string.
func rewrite(fn func(string, netip.AddrPort) netip.AddrPort, network, server string) string {
	ap, err := netip.ParseAddrPort(server)
	if err != nil {
		return server
	}
	return fn(network, ap).String()
}
