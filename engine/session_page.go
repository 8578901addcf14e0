package engine

import (
	"lbd/adminapi"
	"lbd/backend"
	"lbd/service"
)

// SessionPage is adminapi.SessionPager: a page of a service's session
// table in key order, without copying the rest of it.
func (e *Engine) SessionPage(ref adminapi.Ref, after string, limit int) ([]adminapi.Session, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, _, err := e.sessionTarget(ref, -1)
	if err != nil {
		return nil, false, err
	}
	page, more := s.Sessions.Page(after, limit)
	index := backendIndexes(s)
	ttl := s.Sessions.TTL()
	out := make([]adminapi.Session, len(page))
	for i, x := range page {
		out[i] = adminapi.Session{Key: x.Key, Backend: index[x.Value], LastSeen: x.LastUsed, Expire: x.LastUsed.Add(ttl)}
	}
	return out, more, nil
}

// backendIndexes maps each backend of s to its index in the service's
// listing, as serviceView numbers them: the special backend first, when
// there is one, then one index per listing entry (a dynamic backend's
// template included).
func backendIndexes(s *service.Service) map[*backend.Backend]int {
	offset := 0
	if s.Special != nil {
		offset = 1
	}
	m := make(map[*backend.Backend]int, len(s.Listing))
	for i, en := range s.Listing {
		if en.Backend != nil {
			m[en.Backend] = offset + i
		}
	}
	return m
}
