package acmecert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
	"github.com/sirupsen/logrus"
)

// Account is the ACME account and where its state is kept.
type Account struct {
	// Directory is the CA's directory URL.
	Directory string
	// Email is the account's contact ("" = none).
	Email string
	// EABKeyID and EABMACKey are the External Account Binding a CA may
	// require (both or neither).
	EABKeyID, EABMACKey string
	// Roots are PEM certificates that verify the CA's HTTPS server
	// (nil: the system's roots), for a private CA.
	Roots []byte
	// StorageDir holds the account and the certificates when Storage is
	// nil; it is created 0700.
	StorageDir string
	// Storage, when set, replaces StorageDir: the cluster's Redis.
	Storage certmagic.Storage
	// Owner, when set, is given StorageDir: the User and Group lbd
	// becomes after it started as root.
	Owner *Owner
}

// Owner is a user and group id; -1 leaves one as it is.
type Owner struct{ UID, GID int }

// Site is one HTTPS listener's automatic names and the addresses lbd
// answers their challenges on.
type Site struct {
	Names []string
	// HTTPAddr is the bound address of the HTTP listener answering
	// HTTP-01 ("" disables HTTP-01 for these names); TLSAddr that of the
	// HTTPS listener itself ("" disables TLS-ALPN-01).
	HTTPAddr, TLSAddr string
}

// Manager keeps the automatic certificates of one configuration.
type Manager struct {
	acct    Account
	log     logrus.FieldLogger
	storage certmagic.Storage
	cache   *certmagic.Cache
	ratio   float64 // fraction of the lifetime left when renewal is due

	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	sites  []*Source
	byName map[string]*Source
	state  map[string]*nameState
}

// New checks the account's settings and storage; nothing is contacted
// until Start.
func New(acct Account, log logrus.FieldLogger) (*Manager, error) {
	m := &Manager{acct: acct, log: log, byName: map[string]*Source{}, state: map[string]*nameState{}}
	// Renew when between 30 % and a third of the lifetime remains: the
	// point is drawn once per process so a cluster's members spread out.
	m.ratio = 0.30 + rand.Float64()*(1.0/3-0.30)
	m.storage = acct.Storage
	if m.storage == nil {
		if err := checkDir(acct.StorageDir, acct.Owner); err != nil {
			return nil, err
		}
		m.storage = &certmagic.FileStorage{Path: acct.StorageDir}
	}
	if acct.Roots == nil {
		// Go reads the system's roots once, on first use: now, before
		// lbd may enter a RootJail where they are out of reach.
		if _, err := x509.SystemCertPool(); err != nil {
			return nil, fmt.Errorf("the system's CA roots (to verify the ACME CA): %w", err)
		}
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: m.configForCert,
		Logger:           zapLogger(log),
	})
	return m, nil
}

// checkDir creates the storage directory (0700), gives it to owner and
// proves it writable, so that a directory lbd cannot use is an error at
// start, not at the first certificate. (The proof runs as the user lbd
// starts as; the directory then belongs to the one it becomes.)
func checkDir(dir string, owner *Owner) error {
	if dir == "" {
		return errors.New("no ACME storage directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ACME storage: %w", err)
	}
	if owner != nil {
		if err := os.Chown(dir, owner.UID, owner.GID); err != nil {
			return fmt.Errorf("ACME storage: %w", err)
		}
	}
	f, err := os.CreateTemp(dir, ".lbd-write-test-*")
	if err != nil {
		return fmt.Errorf("ACME storage %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("ACME storage %s: %w", filepath.Dir(name), err)
	}
	return nil
}

// Add registers the names of one HTTPS listener and returns the source
// its handshakes ask. A name may belong to one listener only.
func (m *Manager) Add(site Site) (*Source, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &Source{m: m, names: map[string]bool{}}
	for _, n := range site.Names {
		n = strings.ToLower(n)
		if m.byName[n] != nil {
			return nil, fmt.Errorf("%s is already an automatic name of another listener", n)
		}
		s.names[n] = true
		s.list = append(s.list, n)
	}
	cfg, iss, err := m.newConfig(site)
	if err != nil {
		return nil, err
	}
	s.cfg, s.issuer = cfg, iss
	for _, n := range s.list {
		m.byName[n] = s
		m.state[n] = &nameState{}
	}
	m.sites = append(m.sites, s)
	return s, nil
}

// newConfig is certmagic's configuration for one site: its issuer
// answers challenges on lbd's own ports.
func (m *Manager) newConfig(site Site) (*certmagic.Config, *certmagic.ACMEIssuer, error) {
	cfg := certmagic.New(m.cache, certmagic.Config{
		RenewalWindowRatio: m.ratio,
		Storage:            m.storage,
		OnEvent:            m.onEvent,
		Logger:             zapLogger(m.log),
	})
	tmpl := certmagic.ACMEIssuer{
		CA: m.acct.Directory, TestCA: m.acct.Directory, Email: m.acct.Email,
		Agreed: true, Logger: zapLogger(m.log),
		DisableHTTPChallenge: site.HTTPAddr == "", DisableTLSALPNChallenge: site.TLSAddr == "",
	}
	if m.acct.EABKeyID != "" {
		tmpl.ExternalAccount = &acme.EAB{KeyID: m.acct.EABKeyID, MACKey: m.acct.EABMACKey}
	}
	if m.acct.Roots != nil {
		tmpl.TrustedRoots = x509.NewCertPool()
		if !tmpl.TrustedRoots.AppendCertsFromPEM(m.acct.Roots) {
			return nil, nil, errors.New("the ACME CA roots file holds no PEM certificate")
		}
	}
	var err error
	if tmpl.ListenHost, tmpl.AltHTTPPort, err = hostPort(site.HTTPAddr); err != nil {
		return nil, nil, err
	}
	var tlsHost string
	if tlsHost, tmpl.AltTLSALPNPort, err = hostPort(site.TLSAddr); err != nil {
		return nil, nil, err
	}
	if site.HTTPAddr == "" {
		tmpl.ListenHost = tlsHost
	} else if site.TLSAddr != "" && tlsHost != tmpl.ListenHost {
		// certmagic has one ListenHost; its solver only checks that the
		// port is taken, so the HTTP listener's host serves for both.
		m.log.Debugf("ACME: HTTP-01 on %s and TLS-ALPN-01 on %s", site.HTTPAddr, site.TLSAddr)
	}
	iss := certmagic.NewACMEIssuer(cfg, tmpl)
	cfg.Issuers = []certmagic.Issuer{iss}
	return cfg, iss, nil
}

func hostPort(addr string) (string, int, error) {
	if addr == "" {
		return "", 0, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	return h, n, err
}

// configForCert tells the cache which site a stored certificate is for.
func (m *Manager) configForCert(c certmagic.Certificate) (*certmagic.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range c.Names {
		if s := m.byName[strings.ToLower(n)]; s != nil {
			return s.cfg, nil
		}
	}
	return nil, fmt.Errorf("no listener manages %v", c.Names)
}

// Preload caches the stored certificates of every name now, so that a
// listener configured right after serves them from its first handshake
// (at start, and when a reload builds a new Manager); certmagic's own
// loading runs in the background.
func (m *Manager) Preload(ctx context.Context) {
	m.mu.Lock()
	sites := append([]*Source(nil), m.sites...)
	m.mu.Unlock()
	for _, s := range sites {
		for _, name := range s.list {
			_, err := s.cfg.CacheManagedCertificate(ctx, name)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				m.log.Warnf("ACME: %s: loading the stored certificate: %v", name, err)
			}
		}
	}
}

// Start begins managing every name in the background: missing
// certificates are ordered, all are renewed when due.
func (m *Manager) Start() {
	m.mu.Lock()
	sites := append([]*Source(nil), m.sites...)
	m.mu.Unlock()
	for _, s := range sites {
		if err := s.cfg.ManageAsync(m.ctx, s.list); err != nil {
			m.log.Errorf("ACME: %v", err)
		}
	}
	if m.acct.Storage != nil {
		go m.syncLoop(sites)
	}
}

// Close stops renewals and the cache's maintenance, and closes the
// Redis connections of a cluster's storage.
func (m *Manager) Close() {
	m.cancel()
	m.cache.Stop()
	if rs, ok := m.storage.(*RedisStorage); ok {
		rs.close()
	}
}

// Renew forces a renewal of name now and swaps the new certificate in.
// A failure is kept as the name's last error.
func (m *Manager) Renew(ctx context.Context, name string) error {
	name = strings.ToLower(name)
	err := m.renew(ctx, name)
	if err != nil && !errors.Is(err, ErrUnknownName) {
		m.noteError(name, err)
	}
	return err
}

func (m *Manager) renew(ctx context.Context, name string) error {
	m.mu.Lock()
	s := m.byName[name]
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: %s is not an automatic name", ErrUnknownName, name)
	}
	order := func() error {
		if len(m.cache.AllMatchingCertificates(name)) == 0 {
			return s.cfg.ObtainCertSync(ctx, name)
		}
		return s.cfg.RenewCertSync(ctx, name, true)
	}
	err := order()
	if err != nil && strings.Contains(err.Error(), errAccountRecreated) {
		// certmagic (v0.25.6, acmeissuer.go doIssue) registers a new
		// account when the CA forgot ours (a reset private CA), then
		// orders again with parameters that still name the old one and
		// gives up with this error. The new account is stored by then:
		// the next order works.
		m.log.Warnf("ACME: %s: the CA did not know the account; ordering again with the new one", name)
		err = order()
	}
	if err != nil {
		return err
	}
	return m.swapIn(ctx, s, name)
}

// errAccountRecreated is certmagic's error after it recreated the
// account (see renew).
const errAccountRecreated = "no certificate chains"

// swapIn caches the stored certificate of name, then drops the ones it
// replaces: every handshake finds one, and those under way keep theirs.
func (m *Manager) swapIn(ctx context.Context, s *Source, name string) error {
	var old []string
	for _, c := range m.cache.AllMatchingCertificates(name) {
		old = append(old, c.Hash())
	}
	fresh, err := s.cfg.CacheManagedCertificate(ctx, name)
	if err != nil {
		return err
	}
	var gone []string
	for _, h := range old {
		if h != fresh.Hash() {
			gone = append(gone, h)
		}
	}
	m.cache.Remove(gone)
	return nil
}

// ErrUnknownName: Renew of a name no listener manages.
var ErrUnknownName = errors.New("unknown name")

// AnswerChallenge answers an HTTP-01 validation request for a token
// this lbd (or, in a cluster, any member) is presenting; false leaves
// the request to the listener's services.
func (m *Manager) AnswerChallenge(w http.ResponseWriter, r *http.Request) bool {
	host := strings.ToLower(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	m.mu.Lock()
	s := m.byName[host]
	m.mu.Unlock()
	return s != nil && s.issuer.HandleHTTPChallenge(w, r)
}

// Source is one listener's view: the certificates of its names.
type Source struct {
	m      *Manager
	names  map[string]bool
	list   []string
	cfg    *certmagic.Config
	issuer *certmagic.ACMEIssuer
}

// Certificate returns the certificate for a handshake: the TLS-ALPN-01
// challenge certificate for an acme-tls/1 hello, or the newest valid
// certificate of a managed name. (nil, nil) means the name is not
// managed here or has no certificate yet: the listener's own
// certificates decide.
func (s *Source) Certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if !s.names[name] {
		return nil, nil
	}
	if len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acmeTLS1 {
		return s.cfg.GetCertificate(hello)
	}
	return s.newest(name), nil
}

// Fallback is the certificate for a hello that names nothing the
// listener has, on a listener without Cert files: the first automatic
// name that has one (so that clients without SNI are served).
func (s *Source) Fallback(*tls.ClientHelloInfo) *tls.Certificate {
	for _, n := range s.list {
		if c := s.newest(n); c != nil {
			return c
		}
	}
	return nil
}

// newest is the valid certificate of name issued last (nil: none).
func (s *Source) newest(name string) *tls.Certificate {
	var best *certmagic.Certificate
	now := time.Now()
	certs := s.m.cache.AllMatchingCertificates(name)
	for i := range certs {
		c := &certs[i]
		if c.Leaf == nil || now.After(c.Leaf.NotAfter) {
			continue
		}
		if best == nil || c.Leaf.NotBefore.After(best.Leaf.NotBefore) {
			best = c
		}
	}
	if best == nil {
		return nil
	}
	return &best.Certificate
}

// acmeTLS1 is the ALPN protocol of TLS-ALPN-01 (RFC 8737).
const acmeTLS1 = "acme-tls/1"

// ALPN is the protocol a listener with automatic names must offer.
const ALPN = acmeTLS1
