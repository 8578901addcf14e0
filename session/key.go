package session

import (
	"bytes"
	"net/netip"

	"lbd/http1"
)

// MinScratch is the scratch capacity RequestKey needs to format any client
// address (IPv6 with a zone of reasonable length) without allocating.
const MinScratch = 64

// Extractor finds a service's session key in requests and responses. It is
// immutable after construction and safe for concurrent use.
type Extractor struct {
	Type Type
	// ID is the cookie, query-parameter or header name (Pound's ID
	// directive). Cookie and parameter names match exactly (case-sensitive,
	// RFC 6265 and RFC 3986 treat them as opaque); header names match
	// case-insensitively (RFC 9110).
	ID []byte
}

// RequestKey returns the session key of req, or nil when the request has
// none, in which case no session must be created (zproxy: "if the key is
// non-empty"). The key is a sub-slice of the request's buffer, or of scratch
// for IP (give it MinScratch capacity); it is valid as long as those are and
// must be copied to outlive them (Table.Store does). Keys are raw wire bytes:
// percent-encoded values are not decoded, so a session is the exact string
// the client sends back. It never allocates.
func (e *Extractor) RequestKey(req *http1.Request, clientIP netip.Addr, scratch []byte) []byte {
	switch e.Type {
	case IP:
		if !clientIP.IsValid() {
			return nil
		}
		// Unmap so that an IPv4 client reached over a dual-stack socket is
		// the same session as over an IPv4 socket.
		return clientIP.Unmap().AppendTo(scratch[:0])
	case Basic:
		return basicKey(req.Headers)
	case URL:
		return queryParam(req.Query, e.ID)
	case Parm:
		return pathParam(req.Path)
	case Cookie, CookieInsert:
		return requestCookie(req.Headers, e.ID)
	case Header:
		return headerValue(req.Headers, e.ID)
	}
	return nil
}

// ResponseKey returns the session key a backend's response teaches, or nil:
// for COOKIE the value of "Set-Cookie: ID=..." (unless that Set-Cookie
// deletes the cookie), for HEADER the value of the response header ID. The
// other types learn nothing from responses (COOKIEINSERT keys are made by
// the proxy with CookieInsertKey).
func (e *Extractor) ResponseKey(headers []http1.Header) []byte {
	switch e.Type {
	case Cookie:
		return setCookieValue(headers, e.ID)
	case Header:
		return headerValue(headers, e.ID)
	}
	return nil
}

var (
	hdrAuthorization = []byte("Authorization")
	hdrCookie        = []byte("Cookie")
	hdrSetCookie     = []byte("Set-Cookie")
)

// headerValue is the first non-empty value of the header named name.
func headerValue(headers []http1.Header, name []byte) []byte {
	if len(name) == 0 {
		return nil
	}
	for i := range headers {
		h := &headers[i]
		if len(h.Value) > 0 && equalFold(h.Name, name) {
			return h.Value
		}
	}
	return nil
}

// basicKey is the credentials token of "Authorization: Basic <token>", as
// zproxy uses it (not decoded: the token identifies the user as well).
func basicKey(headers []http1.Header) []byte {
	const scheme = "basic"
	for i := range headers {
		h := &headers[i]
		if !equalFold(h.Name, hdrAuthorization) {
			continue
		}
		v := h.Value
		if len(v) <= len(scheme) || !equalFoldString(v[:len(scheme)], scheme) || !isSpace(v[len(scheme)]) {
			continue
		}
		v = trimSpace(v[len(scheme):])
		if n := indexSpace(v); n >= 0 {
			v = v[:n]
		}
		if len(v) > 0 {
			return v
		}
	}
	return nil
}

// queryParam is the value of the first non-empty query parameter named
// exactly name. Parameters are separated by '&'; the value ends at '&', ';'
// or '#' like Pound's "[?&]ID=([^&;#]*)", so "xsid=1" and "sid2=1" never
// match "sid".
func queryParam(query, name []byte) []byte {
	if len(name) == 0 {
		return nil
	}
	for len(query) > 0 {
		param := query
		if n := bytes.IndexByte(query, '&'); n >= 0 {
			param, query = query[:n], query[n+1:]
		} else {
			query = nil
		}
		if len(param) <= len(name) || param[len(name)] != '=' || string(param[:len(name)]) != string(name) {
			continue
		}
		v := param[len(name)+1:]
		for i, c := range v {
			if c == ';' || c == '#' {
				v = v[:i]
				break
			}
		}
		if len(v) > 0 {
			return v
		}
	}
	return nil
}

// pathParam is the text after the first ';' of the path (which holds no
// query), as Pound's and zproxy's PARM.
func pathParam(path []byte) []byte {
	n := bytes.IndexByte(path, ';')
	if n < 0 || n == len(path)-1 {
		return nil
	}
	return path[n+1:]
}

// requestCookie is the value of the first non-empty cookie named exactly
// name in the request's Cookie headers (all of them: HTTP/1.1 clients must
// send one, but some send several).
func requestCookie(headers []http1.Header, name []byte) []byte {
	if len(name) == 0 {
		return nil
	}
	for i := range headers {
		h := &headers[i]
		if !equalFold(h.Name, hdrCookie) {
			continue
		}
		if v := cookieValue(h.Value, name); v != nil {
			return v
		}
	}
	return nil
}

// cookieValue finds cookie name in one Cookie header value, parsed per
// RFC 6265 §4.2.1 (cookie-pair *( ";" SP cookie-pair )), tolerating missing
// or extra whitespace around pairs as browsers and servers do. The name
// ends at the first '=', so values may contain '=' (base64) and a cookie
// "xsid" or "sid2" never matches "sid". Pairs without '=' are ignored.
// Values are returned raw (quotes and percent-encoding kept).
func cookieValue(header, name []byte) []byte {
	for len(header) > 0 {
		pair := header
		if n := bytes.IndexByte(header, ';'); n >= 0 {
			pair, header = header[:n], header[n+1:]
		} else {
			header = nil
		}
		k, v, ok := cutPair(pair)
		if ok && len(v) > 0 && string(k) == string(name) {
			return v
		}
	}
	return nil
}

// cutPair splits "name=value" with optional whitespace around both.
func cutPair(pair []byte) (name, value []byte, ok bool) {
	n := bytes.IndexByte(pair, '=')
	if n < 0 {
		return nil, nil, false
	}
	return trimSpace(pair[:n]), trimSpace(pair[n+1:]), true
}
