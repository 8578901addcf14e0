package session

import (
	"net/netip"
	"strings"
	"testing"

	"lbd/http1"
)

// refCookie is an obviously-correct (allocating) reading of a Cookie header
// for differential fuzzing: the first non-empty value of the pair whose
// trimmed name is exactly name.
func refCookie(header, name string) string {
	if name == "" {
		return ""
	}
	for _, pair := range strings.Split(header, ";") {
		k, v, ok := strings.Cut(pair, "=")
		v = strings.Trim(v, " \t")
		if ok && v != "" && strings.Trim(k, " \t") == name {
			return v
		}
	}
	return ""
}

func FuzzCookieKey(f *testing.F) {
	f.Add("sid=abc", "sid")
	f.Add("xsid=1; sid=2", "sid")
	f.Add("xsid=1", "sid")
	f.Add(" sid = a=b ; sid=c", "sid")
	f.Add(`a="x;y"; sid=%41`, "sid")
	f.Add(";;=;sid", "")
	f.Fuzz(func(t *testing.T, header, name string) {
		req := &http1.Request{Headers: []http1.Header{{Name: []byte("Cookie"), Value: []byte(header)}}}
		e := Extractor{Type: Cookie, ID: []byte(name)}
		got := e.RequestKey(req, netip.Addr{}, nil)
		if want := refCookie(header, name); string(got) != want {
			t.Fatalf("cookie %q in %q = %q, reference says %q", name, header, got, want)
		}
		if got != nil && !within(got, req.Headers[0].Value) {
			t.Fatalf("key %q is not a slice of the header", got)
		}
		// A cookie whose name merely ends with name never matches it,
		// whatever its value (without ';', which would start a new pair).
		val := strings.ReplaceAll(header, ";", "")
		req.Headers[0].Value = []byte("x" + name + "=" + val)
		if got := e.RequestKey(req, netip.Addr{}, nil); got != nil {
			t.Fatalf("cookie %q matched x%s=%s: %q", name, name, val, got)
		}
		// The same holds for responses.
		set := []http1.Header{{Name: []byte("Set-Cookie"), Value: []byte("x" + name + "=" + val)}}
		if got := e.ResponseKey(set); got != nil {
			t.Fatalf("Set-Cookie x%s=%s learned %q for %q", name, val, got, name)
		}
	})
}

// fuzzRequest lays target and "Name: value" lines out in one buffer, the
// way http1 would, so aliasing can be checked against it.
func fuzzRequest(target, headers string) (*http1.Request, []byte) {
	buf := []byte(target + "\n" + headers)
	req := &http1.Request{Target: buf[:len(target)]}
	path, _, hasQuery := strings.Cut(target, "?")
	req.Path = req.Target[:len(path)]
	if hasQuery {
		req.Query = req.Target[len(path)+1:]
	}
	off := len(target) + 1
	for _, line := range strings.Split(headers, "\n") {
		name, _, _ := strings.Cut(line, ":")
		h := http1.Header{Name: buf[off : off+len(name)]}
		if vstart := off + len(name) + 1; vstart <= off+len(line) {
			h.Value = trimSpace(buf[vstart : off+len(line)])
		}
		req.Headers = append(req.Headers, h)
		off += len(line) + 1
	}
	return req, buf
}

func FuzzRequestKey(f *testing.F) {
	f.Add(uint8(Cookie), "sid", "/a?sid=1", "Cookie: xsid=1; sid=2", []byte{10, 0, 0, 1})
	f.Add(uint8(URL), "sid", "/a?xsid=1&sid=%26", "Host: h", []byte{})
	f.Add(uint8(Parm), "", "/a;p=1?q", "", []byte{})
	f.Add(uint8(Basic), "", "/", "Authorization: Basic dG9r", []byte{})
	f.Add(uint8(Header), "X-S", "/", "x-s: v\nX-S: w", []byte{})
	f.Add(uint8(IP), "", "/", "", []byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(uint8(CookieInsert), "BCK", "*", "Cookie: BCK=4-7f000001-46a10000", []byte{})
	f.Fuzz(func(t *testing.T, typ uint8, id, target, headers string, ip []byte) {
		req, buf := fuzzRequest(target, headers)
		addr, _ := netip.AddrFromSlice(ip)
		scratch := make([]byte, 0, MinScratch)
		e := Extractor{Type: Type(typ % 9), ID: []byte(id)}
		key := e.RequestKey(req, addr, scratch)
		if key != nil && len(key) == 0 {
			t.Fatal("empty non-nil key: would create a session for nothing")
		}
		if key != nil && !within(key, buf) && !within(key, scratch) {
			t.Fatalf("key %q aliases neither the request nor scratch", key)
		}
		if rk := e.ResponseKey(req.Headers); rk != nil && (len(rk) == 0 || !within(rk, buf)) {
			t.Fatalf("response key %q is empty or a copy", rk)
		}
	})
}
