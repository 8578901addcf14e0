package service

import (
	"net/netip"
	"time"

	"lbd/backend"
	"lbd/http1"
	"lbd/rules"
	"lbd/session"
)

// cookieLines precomputes, for zproxy's COOKIEINSERT, the Set-Cookie line
// each backend's responses carry, so inserting it costs an append.
func (s *Service) cookieLines() map[*backend.Backend][]byte {
	cfg := s.Cfg.Session
	m := make(map[*backend.Backend][]byte, len(s.Backends))
	for _, b := range s.Backends {
		ap, err := netip.ParseAddrPort(b.Address())
		if err != nil {
			continue // UNIX-socket backends have no zproxy cookie key
		}
		key := session.CookieInsertKey(ap)
		line := append([]byte("Set-Cookie: "), session.AppendSetCookie(nil, key, session.CookieSpec{
			ID: cfg.ID, Path: cfg.Path, Domain: cfg.Domain, TTL: time.Duration(cfg.TTL)})...)
		m[b] = append(line, "\r\n"...)
		s.keys.cookieKeys[b] = []byte(key)
	}
	return m
}

// CookieKey is the COOKIEINSERT key of backend b ("" for other session
// types), shown by zproxy's control API as "cookie-key".
func (s *Service) CookieKey(b *backend.Backend) string {
	if s.keys == nil {
		return ""
	}
	return string(s.keys.cookieKeys[b])
}

// Learn applies what a response teaches about sessions, given the backend
// that sent it: COOKIE and HEADER keys the backend set (Pound and zproxy
// learn those), and for COOKIEINSERT the key of the cookie lbd adds. It
// returns the header line to add to the response (nil: none).
func (s *Service) Learn(headers []http1.Header, b *backend.Backend) []byte {
	if s.Sessions == nil {
		return nil
	}
	k := s.keys
	if k.extractor.Type == session.CookieInsert {
		if key := k.cookieKeys[b]; key != nil {
			s.Pin(key, b)
		}
		return k.setCookie[b]
	}
	if key := k.extractor.ResponseKey(headers); key != nil {
		s.Pin(key, b)
	}
	return nil
}

// LearnLines learns a COOKIE or HEADER key from the response's header
// lines as the response rules left them: Pound learns after its rules,
// so a Set-Cookie a Lua script (cookie injection) or SetHeader adds
// starts a session too.
func (s *Service) LearnLines(lines [][]byte, b *backend.Backend) {
	if s.Sessions == nil || s.keys.extractor.Type != session.Cookie && s.keys.extractor.Type != session.Header {
		return
	}
	var one [1]http1.Header
	for _, l := range lines {
		one[0] = http1.Header{Name: rules.LineName(l), Value: rules.LineValue(l)}
		if key := s.keys.extractor.ResponseKey(one[:]); key != nil {
			s.Pin(key, b)
			return
		}
	}
}
