package edgeauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// JWKSConfig is a key set fetched from a URL.
type JWKSConfig struct {
	URL string
	// Roots verify an https URL's certificate (nil: the system's).
	Roots *x509.CertPool
	// Refresh is the set's cache lifetime: a request after it starts a
	// background fetch (DefaultJWKSRefresh when 0).
	Refresh time.Duration
	// MinInterval rate-limits the fetches a token with an unknown key
	// ID causes (DefaultJWKSMinInterval when 0).
	MinInterval time.Duration
	// Timeout bounds one fetch (DefaultJWKSTimeout when 0).
	Timeout time.Duration
	// Logf reports fetch failures (the last good set stays in use).
	Logf func(format string, a ...any)
}

// The JWKS defaults: an hour's lifetime, as many identity providers
// announce with Cache-Control; an unknown key ID fetches at most every
// ten seconds; a fetch gives up after five.
const (
	DefaultJWKSRefresh     = time.Hour
	DefaultJWKSMinInterval = 10 * time.Second
	DefaultJWKSTimeout     = 5 * time.Second
	maxJWKSBytes           = 1 << 20
)

// jwksSource holds the last good key set of a URL.
type jwksSource struct {
	cfg    JWKSConfig
	client *http.Client
	now    func() time.Time
	set    atomic.Pointer[keySet]
	// fetchedAt is when the set was last fetched successfully,
	// triedAt when a fetch last started (unix ns).
	fetchedAt, triedAt atomic.Int64
	background         atomic.Bool
	mu                 sync.Mutex // one fetch at a time
	fetches            atomic.Int64
	lastErr            atomic.Pointer[string]
}

func newJWKS(cfg JWKSConfig, now func() time.Time) (*jwksSource, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultJWKSRefresh
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = DefaultJWKSMinInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultJWKSTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: cfg.Roots, MinVersion: tls.VersionTLS12},
		Proxy:               nil, // the key set comes from where the configuration says, never via $HTTPS_PROXY
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     cfg.Refresh,
	}
	s := &jwksSource{cfg: cfg, now: now, client: &http.Client{Transport: tr, Timeout: cfg.Timeout}}
	set, err := s.fetch(nil)
	if err != nil {
		return nil, err
	}
	s.store(set)
	return s, nil
}

func (s *jwksSource) store(set *keySet) {
	s.set.Store(set)
	s.fetchedAt.Store(s.now().UnixNano())
}

// current is the key set in use; past its lifetime it starts one
// background fetch and goes on with the set it has.
func (s *jwksSource) current() *keySet {
	set := s.set.Load()
	now := s.now().UnixNano()
	if now-s.fetchedAt.Load() >= int64(s.cfg.Refresh) && now-s.triedAt.Load() >= int64(s.cfg.MinInterval) &&
		s.background.CompareAndSwap(false, true) {
		go func() {
			defer s.background.Store(false)
			s.refresh()
		}()
	}
	return set
}

// refreshFor fetches the set again because a token names key ID kid the
// set does not have, unless a fetch started less than MinInterval ago;
// it returns the new set, or nil when none was fetched.
func (s *jwksSource) refreshFor(kid string) *keySet {
	if s.now().UnixNano()-s.triedAt.Load() < int64(s.cfg.MinInterval) {
		return nil
	}
	return s.refresh()
}

// refresh fetches the set; on failure the last good one stays.
func (s *jwksSource) refresh() *keySet {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().UnixNano()-s.triedAt.Load() < int64(s.cfg.MinInterval) {
		return s.set.Load() // another caller just fetched
	}
	old := s.set.Load()
	set, err := s.fetch(old)
	if err != nil {
		msg := err.Error()
		s.lastErr.Store(&msg)
		s.cfg.Logf("%s (keeping the %d keys fetched before)", msg, len(old.keys))
		return nil
	}
	s.lastErr.Store(nil)
	s.store(set)
	return set
}

// fetch gets and parses the set; the generation follows old's.
func (s *jwksSource) fetch(old *keySet) (*keySet, error) {
	s.triedAt.Store(s.now().UnixNano())
	s.fetches.Add(1)
	resp, err := s.client.Get(s.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", s.cfg.URL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("JWKS %s: status %s", s.cfg.URL, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", s.cfg.URL, err)
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("JWKS %s: larger than %d bytes", s.cfg.URL, maxJWKSBytes)
	}
	keys, err := ParseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", s.cfg.URL, err)
	}
	set := &keySet{keys: keys, gen: 1}
	if old != nil {
		set.gen = old.gen + 1
	}
	return set, nil
}

// unwrapURLError drops net/http's "Get URL:" prefix, which the message
// already names.
func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// JWKSStatus reports a JWT block's key set URL: how many keys it has,
// how many fetches were made and the last fetch error ("" when the last
// fetch succeeded). ok is false without a URL.
func (j *JWT) JWKSStatus() (keys int, fetches int64, lastErr string, ok bool) {
	if j.jwks == nil {
		return 0, 0, "", false
	}
	if e := j.jwks.lastErr.Load(); e != nil {
		lastErr = *e
	}
	return len(j.jwks.set.Load().keys), j.jwks.fetches.Load(), lastErr, true
}
