package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"lbd/acmecert"
	"lbd/adminapi"
	"lbd/config"
	"lbd/listener"
)

// Automatic certificates in the engine: one acmecert.Manager per
// configuration's ACMEAccount, built once the sockets are bound (its
// challenge solvers are pointed at them), kept across reloads that do
// not change what it manages, replaced (and the old one closed) by
// those that do.

// acmeRun is the manager in use and the source of each listener.
type acmeRun struct {
	key     string
	m       *acmecert.Manager
	sources []*acmecert.Source // by listener index; nil entries: none
	started bool               // StartACME ran (DeferACME)
}

// newManager checks the ACMEAccount of cfg (its storage above all) so
// that a directory lbd cannot write stops it at start.
func newManager(cfg *config.Config, e *Engine) (*acmecert.Manager, error) {
	a := cfg.ACME
	acct := acmecert.Account{
		Directory: a.Directory, Email: a.Email, EABKeyID: a.EABKeyID, EABMACKey: a.EABMACKey,
		StorageDir: a.Storage, Owner: e.opts.ACMEOwner,
	}
	if a.CARoots != nil {
		acct.Roots = a.CARoots.Data
	}
	if cfg.Cluster != nil {
		acct.Storage = acmecert.NewRedisStorage(cfg.Cluster)
	}
	m, err := acmecert.New(acct, e.opts.Log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Pos, err)
	}
	return m, nil
}

// acmeKey identifies what a manager was built from: the account, the
// cluster's Redis, and each listener's names and addresses.
func acmeKey(cfg *config.Config, servers []*server) string {
	type site struct {
		ACME *config.ListenerACME
		Addr string
	}
	var sites []site
	for i, l := range cfg.Listeners {
		if l.TLS != nil && l.TLS.ACME != nil && i < len(servers) {
			sites = append(sites, site{l.TLS.ACME, servers[i].ln.Addr().String()})
		}
	}
	b, err := json.Marshal(struct {
		Account *config.ACMEAccount
		EAB     string
		Cluster *config.Cluster
		HTTP    string
		Sites   []site
	}{cfg.ACME, cfg.ACME.EABMACKey, cfg.Cluster, challengeAddr(cfg, servers), sites})
	if err != nil {
		// Plain structs of strings: Marshal cannot fail on them.
		panic("engine: acmeKey: " + err.Error())
	}
	return string(b)
}

// challengeAddr is the bound address of the first plain HTTP listener,
// where lbd answers HTTP-01 ("" when there is none).
func challengeAddr(cfg *config.Config, servers []*server) string {
	for i, l := range cfg.Listeners {
		if l.TLS == nil && !l.Tunnel && !l.Unix && i < len(servers) {
			if _, ok := servers[i].ln.Addr().(*net.TCPAddr); ok {
				return servers[i].ln.Addr().String()
			}
		}
	}
	return ""
}

// setupACME makes the manager for cfg once servers are bound: the same
// one when nothing it manages changed (cur), else a new one, started.
// It returns the run to use and the one to close after the swap.
func (e *Engine) setupACME(cfg *config.Config, servers []*server, cur *acmeRun, fresh *acmecert.Manager) (next, old *acmeRun, err error) {
	if cfg.ACME == nil {
		return nil, cur, nil
	}
	key := acmeKey(cfg, servers)
	if cur != nil && cur.key == key && fresh == nil {
		return cur, nil, nil
	}
	m := fresh
	if m == nil {
		if m, err = newManager(cfg, e); err != nil {
			return nil, nil, err
		}
	}
	run := &acmeRun{key: key, m: m, sources: make([]*acmecert.Source, len(cfg.Listeners))}
	httpAddr := challengeAddr(cfg, servers)
	for i, l := range cfg.Listeners {
		if l.TLS == nil || l.TLS.ACME == nil {
			continue
		}
		site := acmecert.Site{Names: l.TLS.ACME.Names, HTTPAddr: httpAddr, TLSAddr: servers[i].ln.Addr().String()}
		switch l.TLS.ACME.Challenge {
		case "http-01":
			site.TLSAddr = ""
		case "tls-alpn-01":
			site.HTTPAddr = ""
		}
		if site.HTTPAddr == "" && site.TLSAddr == "" {
			m.Close()
			return nil, nil, fmt.Errorf("%s: ACMEChallenge http-01 needs a ListenHTTP to answer on", l.Pos)
		}
		if run.sources[i], err = m.Add(site); err != nil {
			m.Close()
			return nil, nil, fmt.Errorf("%s: %w", l.Pos, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), preloadTimeout)
	defer cancel()
	m.Preload(ctx)
	return run, cur, nil
}

// preloadTimeout bounds reading the stored certificates before serving
// (a Redis that does not answer must not hold a start or a reload).
const preloadTimeout = 10 * time.Second

// applyACME points the graph's plain listeners at the run's HTTP-01
// answers and the TLS sockets at their automatic certificates; call it
// before configureTLS and the servers' Swap.
func applyACME(run *acmeRun, g *graph, servers []*server) {
	for i, st := range g.listeners {
		if run != nil && st.Cfg != nil && st.Cfg.TLS == nil {
			st.Challenges = run.m
		}
		if i >= len(servers) {
			continue
		}
		if tl, ok := servers[i].ln.(*listener.TLS); ok {
			if run != nil && i < len(run.sources) && run.sources[i] != nil {
				tl.SetAutomatic(run.sources[i])
			} else {
				tl.SetAutomatic(nil)
			}
		}
	}
}

// StartACME starts the automatic certificates' orders and renewals
// when Options.DeferACME held them back at Start.
func (e *Engine) StartACME() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.acme != nil && e.opts.DeferACME && !e.acme.started {
		e.acme.started = true
		e.acme.m.Start()
	}
}

// acmeStatus is the control API's view of the automatic certificates
// (nil without an ACMEAccount).
func (e *Engine) acmeStatus(cfg *config.Config) *adminapi.ACMEStatus {
	e.mu.Lock()
	run := e.acme
	e.mu.Unlock()
	if run == nil || cfg.ACME == nil {
		return nil
	}
	st := &adminapi.ACMEStatus{Directory: cfg.ACME.Directory, Certs: []adminapi.ACMECert{}}
	for _, s := range run.m.Status() {
		st.Certs = append(st.Certs, adminapi.ACMECert{
			Name: s.Name, Issuer: s.Issuer, Serial: s.Serial,
			NotBefore: s.NotBefore, NotAfter: s.NotAfter, NextRenew: s.NextRenewal,
			Stapled: s.Stapled, Busy: s.Busy, LastError: s.LastError, LastErrorAt: s.LastErrorAt,
			Obtained: s.Obtained, Failures: s.Failures,
		})
	}
	return st
}

// RenewCertificate forces the renewal of an automatic name
// (adminapi.ACMERenewer).
func (e *Engine) RenewCertificate(ctx context.Context, name string) error {
	e.mu.Lock()
	run := e.acme
	e.mu.Unlock()
	if run == nil {
		return fmt.Errorf("%w: no automatic certificates (no ACMEAccount section)", adminapi.ErrNotFound)
	}
	err := run.m.Renew(ctx, name)
	if errors.Is(err, acmecert.ErrUnknownName) {
		return fmt.Errorf("%w: %s is not an automatic name", adminapi.ErrNotFound, name)
	}
	return err
}
