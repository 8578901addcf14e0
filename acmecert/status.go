package acmecert

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/caddyserver/certmagic"
)

// nameState is what the control API shows of one name beyond its
// certificate: the outcome of the last attempt.
type nameState struct {
	lastError   string
	lastErrorAt time.Time
	obtained    uint64 // certificates obtained or renewed by this process
	failures    uint64 // attempts that failed
	busy        bool   // an order is under way
}

// Status is one automatic name as the control API and lbctl show it.
type Status struct {
	Name string
	// Issuer, Serial, NotBefore and NotAfter describe the certificate
	// served (zero without one yet); NextRenewal is when it is due.
	Issuer      string
	Serial      string
	NotBefore   time.Time
	NotAfter    time.Time
	NextRenewal time.Time
	// Stapled: an OCSP response is stapled to the handshakes.
	Stapled bool
	// LastError is the last failed attempt's error, "" once one
	// succeeds after it.
	LastError   string
	LastErrorAt time.Time
	Obtained    uint64
	Failures    uint64
	Busy        bool
}

// onEvent is certmagic's event hook: it keeps each name's outcome.
func (m *Manager) onEvent(_ context.Context, event string, data map[string]any) error {
	name, _ := data["identifier"].(string) // absent from other events
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.state[name]
	if st == nil {
		return nil
	}
	switch event {
	case "cert_obtaining":
		st.busy = true
	case "cert_obtained":
		st.busy, st.lastError = false, ""
		st.obtained++
		m.log.Infof("ACME: certificate for %s obtained", name)
	case "cert_failed":
		st.busy = false
		st.failures++
		st.lastError, st.lastErrorAt = fmt.Sprint(data["error"]), time.Now()
		m.log.Errorf("ACME: %s: %s", name, st.lastError)
	}
	return nil
}

// noteError records an error of a forced renewal that certmagic did not
// report as an event (a lock or storage failure before the order).
func (m *Manager) noteError(name string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.state[name]; st != nil && st.lastError == "" {
		st.failures++
		st.lastError, st.lastErrorAt = err.Error(), time.Now()
	}
}

// Status lists every automatic name, sorted.
func (m *Manager) Status() []Status {
	m.mu.Lock()
	out := make([]Status, 0, len(m.state))
	for name, st := range m.state {
		out = append(out, Status{
			Name: name, LastError: st.lastError, LastErrorAt: st.lastErrorAt,
			Obtained: st.obtained, Failures: st.failures, Busy: st.busy,
		})
	}
	m.mu.Unlock()
	for i := range out {
		m.describe(&out[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// describe fills in the certificate served for s.Name.
func (m *Manager) describe(s *Status) {
	var best *certmagic.Certificate
	certs := m.cache.AllMatchingCertificates(s.Name)
	for i := range certs {
		if c := &certs[i]; c.Leaf != nil && (best == nil || c.Leaf.NotBefore.After(best.Leaf.NotBefore)) {
			best = c
		}
	}
	if best == nil {
		return
	}
	leaf := best.Leaf
	s.Issuer = leaf.Issuer.CommonName
	if s.Issuer == "" {
		s.Issuer = leaf.Issuer.String()
	}
	s.Serial = hex.EncodeToString(leaf.SerialNumber.Bytes())
	s.NotBefore, s.NotAfter = leaf.NotBefore, leaf.NotAfter
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	s.NextRenewal = leaf.NotAfter.Add(-time.Duration(float64(life) * m.ratio))
	s.Stapled = len(best.OCSPStaple) > 0
}
