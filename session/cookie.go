package session

import (
	"bytes"
	"net/netip"
	"strconv"
	"time"

	"lbd/http1"
)

// setCookieValue is the value a backend sets for cookie name in its
// Set-Cookie headers (RFC 6265 §4.1: the first pair is the cookie, the rest
// are attributes). A Set-Cookie that deletes the cookie (Max-Age <= 0)
// teaches nothing: the client will not send that value back. Expires in
// the past is not checked (that needs a date parser; Max-Age wins anyway
// where both are present, and the worst case is one idle session).
func setCookieValue(headers []http1.Header, name []byte) []byte {
	if len(name) == 0 {
		return nil
	}
	for i := range headers {
		h := &headers[i]
		if !equalFold(h.Name, hdrSetCookie) {
			continue
		}
		pair, attrs := h.Value, []byte(nil)
		if n := bytes.IndexByte(pair, ';'); n >= 0 {
			pair, attrs = pair[:n], pair[n+1:]
		}
		k, v, ok := cutPair(pair)
		if ok && len(v) > 0 && string(k) == string(name) && !deletes(attrs) {
			return v
		}
	}
	return nil
}

// deletes reports whether Set-Cookie attributes hold a Max-Age of zero or
// less, which RFC 6265 §5.2.2 makes an immediate expiry.
func deletes(attrs []byte) bool {
	for len(attrs) > 0 {
		attr := attrs
		if n := bytes.IndexByte(attrs, ';'); n >= 0 {
			attr, attrs = attrs[:n], attrs[n+1:]
		} else {
			attrs = nil
		}
		k, v, ok := cutPair(attr)
		if !ok || !equalFoldString(k, "max-age") || len(v) == 0 {
			continue
		}
		neg := v[0] == '-'
		if neg {
			v = v[1:]
		}
		if len(v) == 0 || !allDigits(v) {
			continue // RFC 6265 §5.2.2: ignore a malformed Max-Age
		}
		if neg || allZero(v) {
			return true
		}
	}
	return false
}

// CookieInsertKey is the key zproxy's COOKIEINSERT sessions give a backend
// (its "cookie-key"): "4-" + the IPv4 address as 8 hex digits in network
// order + "-" + hex(port << 16), e.g. 127.0.0.1:18081 -> "4-7f000001-46a10000"
// (zproxy.md §3.5, verified). zproxy has no IPv6 form; lbd uses "6-" + 32
// hex digits in the same pattern. An invalid address gives "".
func CookieInsertKey(addr netip.AddrPort) string {
	a := addr.Addr().Unmap()
	if !a.IsValid() {
		return ""
	}
	var buf [48]byte
	b := buf[:0]
	if a.Is4() {
		b = append(b, "4-"...)
	} else {
		b = append(b, "6-"...)
	}
	for _, c := range a.AsSlice() {
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(addr.Port())<<16, 16)
	return string(b)
}

const hexDigits = "0123456789abcdef"

// AppendSetCookie appends the value of the Set-Cookie header that a
// COOKIEINSERT service adds to every response:
// "<id>=<key>[; Domain=<domain>][; Path=<path>]; Max-Age=<ttl seconds>",
// in zproxy's attribute order. Max-Age is the TTL in seconds, rounded up so
// that a sub-second TTL does not delete the cookie (zproxy multiplies by
// 1000, a bug not copied). A ttl <= 0 omits Max-Age, making a browser-session
// cookie. The header name and CRLF are the caller's.
func AppendSetCookie(dst []byte, key string, c CookieSpec) []byte {
	dst = append(dst, c.ID...)
	dst = append(dst, '=')
	dst = append(dst, key...)
	if c.Domain != "" {
		dst = append(dst, "; Domain="...)
		dst = append(dst, c.Domain...)
	}
	if c.Path != "" {
		dst = append(dst, "; Path="...)
		dst = append(dst, c.Path...)
	}
	if c.TTL > 0 {
		dst = append(dst, "; Max-Age="...)
		dst = strconv.AppendInt(dst, int64((c.TTL+time.Second-1)/time.Second), 10)
	}
	return dst
}

// CookieSpec is what a COOKIEINSERT Session block says about its cookie:
// the name (ID), the Path and Domain attributes and the session TTL.
type CookieSpec struct {
	ID, Path, Domain string
	TTL              time.Duration
}
