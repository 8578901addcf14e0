package resolver

import (
	"testing"
	"time"
)

// FuzzParseConf checks that any text gives a usable configuration: at
// least one server, at most maxServers, and bounded timeouts and rounds.
func FuzzParseConf(f *testing.F) {
	for _, s := range []string{
		"", "nameserver 127.0.0.1\n", "nameserver [::1]:5353\noptions timeout:2 attempts:3\n",
		"nameserver 192.0.2.24\n", "search a b\ndomain c\noptions ndots:2 rotate\n",
		"nameserver\noptions timeout:\nnameserver ::ffff:127.0.0.1\n", "nameserver 1.2.3.4:0 # x ; y\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, _ := ParseConf(text)
		if len(c.Servers) == 0 || len(c.Servers) > maxServers {
			t.Fatalf("%d servers", len(c.Servers))
		}
		for _, s := range c.Servers {
			if !s.IsValid() || s.Port() == 0 || s.Addr().Is4In6() {
				t.Fatalf("bad server %v", s)
			}
		}
		if c.Timeout < time.Second || c.Timeout > maxTimeout || c.Attempts < 1 || c.Attempts > maxAttempts {
			t.Fatalf("timeout %v attempts %d", c.Timeout, c.Attempts)
		}
	})
}
