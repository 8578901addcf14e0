package acmecert

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"io/fs"
	"time"

	"github.com/caddyserver/certmagic"
)

// syncInterval is how often a cluster member looks in the shared storage
// for certificates another member obtained or renewed (a forced renewal
// above all: certmagic itself only looks when its own copy falls due).
// One small Redis read per name and interval.
const syncInterval = 10 * time.Second

// syncLoop keeps a cluster member serving what the storage holds.
func (m *Manager) syncLoop(sites []*Source) {
	t := time.NewTicker(syncInterval)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		for _, s := range sites {
			for _, name := range s.list {
				if err := m.syncName(m.ctx, s, name); err != nil && m.ctx.Err() == nil {
					m.log.Warnf("ACME: %s: reading the shared certificate: %v", name, err)
				}
			}
		}
	}
}

// syncName swaps in the stored certificate of name when it is not the
// one served.
func (m *Manager) syncName(ctx context.Context, s *Source, name string) error {
	data, err := m.storage.Load(ctx, certmagic.StorageKeys.SiteCert(s.issuer.IssuerKey(), name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // not obtained yet, by anyone
	}
	if err != nil {
		return err
	}
	block, _ := pem.Decode(data) // the first block is the leaf; the chain after it is not needed here
	if block == nil {
		return errors.New("the stored certificate is not PEM")
	}
	if cur := s.newest(name); cur != nil && bytes.Equal(cur.Certificate[0], block.Bytes) {
		return nil
	}
	return m.swapIn(ctx, s, name)
}
