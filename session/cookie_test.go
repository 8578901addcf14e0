package session

import (
	"net/netip"
	"testing"
	"time"
)

func TestCookieInsertKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		addr netip.AddrPort
		want string
	}{
		{name: "zproxy verified loopback", addr: netip.MustParseAddrPort("127.0.0.1:18081"), want: "4-7f000001-46a10000"},
		{name: "zproxy doc example", addr: netip.MustParseAddrPort("10.2.1.1:80"), want: "4-0a020101-500000"},
		{name: "ipv4-mapped", addr: netip.MustParseAddrPort("[::ffff:10.2.1.1]:80"), want: "4-0a020101-500000"},
		{name: "port zero", addr: netip.MustParseAddrPort("10.0.0.1:0"), want: "4-0a000001-0"},
		{name: "max port", addr: netip.MustParseAddrPort("10.0.0.1:65535"), want: "4-0a000001-ffff0000"},
		{name: "ipv6", addr: netip.MustParseAddrPort("[2001:db8::1]:443"), want: "6-20010db8000000000000000000000001-1bb0000"},
		{name: "invalid", addr: netip.AddrPort{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CookieInsertKey(tt.addr); got != tt.want {
				t.Fatalf("CookieInsertKey(%v) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}

func TestAppendSetCookie(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		dst    string
		path   string
		domain string
		ttl    time.Duration
		want   string
	}{
		{name: "all attributes in zproxy order", path: "/", domain: "example.org", ttl: 300 * time.Second,
			want: "BCK=4-7f000001-46a10000; Domain=example.org; Path=/; Max-Age=300"},
		{name: "no domain", path: "/app", ttl: time.Minute, want: "BCK=4-7f000001-46a10000; Path=/app; Max-Age=60"},
		{name: "no path", domain: "d", ttl: time.Hour, want: "BCK=4-7f000001-46a10000; Domain=d; Max-Age=3600"},
		{name: "seconds not milliseconds", ttl: 10 * time.Second, want: "BCK=4-7f000001-46a10000; Max-Age=10"},
		{name: "fraction rounds up", ttl: 1500 * time.Millisecond, want: "BCK=4-7f000001-46a10000; Max-Age=2"},
		{name: "sub-second is not a deletion", ttl: time.Millisecond, want: "BCK=4-7f000001-46a10000; Max-Age=1"},
		{name: "no ttl is a browser-session cookie", want: "BCK=4-7f000001-46a10000"},
		{name: "appends to dst", dst: "Set-Cookie: ", ttl: time.Second, want: "Set-Cookie: BCK=4-7f000001-46a10000; Max-Age=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AppendSetCookie([]byte(tt.dst), "4-7f000001-46a10000", CookieSpec{ID: "BCK", Path: tt.path, Domain: tt.domain, TTL: tt.ttl})
			if string(got) != tt.want {
				t.Fatalf("AppendSetCookie = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAppendSetCookieRoundTrip(t *testing.T) {
	t.Parallel()
	// The inserted cookie must parse as a cookie named ID with the key as
	// its value, and the browser's echo of it must give the key back.
	key := CookieInsertKey(netip.MustParseAddrPort("127.0.0.1:18081"))
	set := AppendSetCookie([]byte("Set-Cookie: "), key, CookieSpec{ID: "BCK", Path: "/", Domain: "example.org", TTL: time.Minute})
	learn := Extractor{Type: Cookie, ID: []byte("BCK")}
	if got := learn.ResponseKey(parseHeaders([]string{string(set)})); string(got) != key {
		t.Fatalf("Set-Cookie %q parses to %q, want %q", set, got, key)
	}
	req := newRequest("/", "Cookie: other=1; BCK="+key)
	e := Extractor{Type: CookieInsert, ID: []byte("BCK")}
	if got := e.RequestKey(req, netip.Addr{}, nil); string(got) != key {
		t.Fatalf("RequestKey = %q, want %q", got, key)
	}
}

func TestAppendSetCookieAllocs(t *testing.T) {
	dst := make([]byte, 0, 128)
	allocs := testing.AllocsPerRun(100, func() {
		dst = AppendSetCookie(dst[:0], "4-7f000001-46a10000", CookieSpec{ID: "BCK", Path: "/", Domain: "example.org", TTL: time.Hour})
	})
	if allocs != 0 {
		t.Fatalf("AppendSetCookie allocs = %v, want 0", allocs)
	}
}
