// Package resolver looks up the A, AAAA and SRV records of Pound 4's
// dynamic backends. It sends its own queries (github.com/miekg/dns) to the
// name servers of a resolv.conf text, because Pound's Resolver section
// names those servers itself (ConfigText) instead of using the system's;
// it returns the records' TTL, which the system resolver hides; and it
// collapses concurrent lookups of one name into one query.
package resolver

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Conf is what lbd uses of a resolv.conf.
type Conf struct {
	// Servers are tried in order; port 53 unless a test rewrites it.
	Servers []netip.AddrPort
	// Timeout bounds one query to one server.
	Timeout time.Duration
	// Attempts is how many rounds over Servers a lookup makes.
	Attempts int
}

// Limits of resolv.conf values: a bounded number of servers and rounds
// keeps the worst-case lookup time bounded too.
const (
	maxServers  = 5
	maxAttempts = 5
	maxTimeout  = 30 * time.Second
	maxConfLen  = 64 << 10
)

// defaultConf is glibc's and adns's behaviour with an empty file.
func defaultConf() Conf {
	return Conf{Timeout: 5 * time.Second, Attempts: 2}
}

// ParseConf reads the nameserver and options lines of a resolv.conf text
// (search, domain, sortlist and the rest have no use for absolute names
// and are skipped). Lines it cannot use are returned as warnings; with
// no valid nameserver, 127.0.0.1 is used, as glibc and adns do.
func ParseConf(text string) (Conf, []string) {
	c := defaultConf()
	var warns []string
	if len(text) > maxConfLen {
		text = text[:maxConfLen]
		warns = append(warns, fmt.Sprintf("resolver configuration truncated to %d bytes", maxConfLen))
	}
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexAny(line, "#;"); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var w string
		switch f[0] {
		case "nameserver":
			w = c.addServer(f[1:])
		case "options":
			w = c.setOptions(f[1:])
		}
		if w != "" {
			warns = append(warns, fmt.Sprintf("line %d: %s", i+1, w))
		}
	}
	if len(c.Servers) == 0 {
		c.Servers = []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 53)}
	}
	return c, warns
}

func (c *Conf) addServer(args []string) string {
	if len(args) == 0 {
		return "nameserver without an address"
	}
	ap, err := parseServer(args[0])
	switch {
	case err != nil:
		return fmt.Sprintf("nameserver %q is not an IP address", args[0])
	case len(c.Servers) >= maxServers:
		return fmt.Sprintf("more than %d name servers: %s ignored", maxServers, args[0])
	}
	c.Servers = append(c.Servers, ap)
	return ""
}

// parseServer reads an address, or (lbd's extension, for servers on
// another port) address:port with an IPv6 address in brackets.
func parseServer(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a.Unmap(), 53), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err == nil && ap.Port() == 0 {
		err = fmt.Errorf("port 0")
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), err
}

func (c *Conf) setOptions(args []string) string {
	var bad []string
	for _, o := range args {
		name, val, ok := strings.Cut(o, ":")
		n, err := strconv.Atoi(val)
		switch {
		case !ok:
			continue // flags such as rotate or edns0 change nothing here
		case err != nil || n < 1:
			bad = append(bad, o)
		case name == "timeout":
			c.Timeout = min(time.Duration(n)*time.Second, maxTimeout)
		case name == "attempts":
			c.Attempts = min(n, maxAttempts)
		}
	}
	if len(bad) > 0 {
		return "bad option " + strings.Join(bad, " ")
	}
	return ""
}
