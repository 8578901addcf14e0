package htpasswd

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync/atomic"
)

// A password hash is meant to be slow (bcrypt at Apache's default cost
// takes milliseconds), and a Basic client sends its credentials with
// every request. The cache remembers the outcome of each check by a
// digest of the credentials, so only the first request of a client pays
// for the hash. It is keyed by SHA-256 over a random per-generation seed
// and the credentials: no password is kept in memory, and a digest
// cannot be matched against one taken from another process or file
// generation.
//
// Both tables are direct-mapped arrays of atomic pointers: a lookup is
// one load and a compare, with no lock, and their size is fixed, so a
// client sending endless new credentials replaces entries instead of
// growing memory. Failures have a table of their own, so such a client
// cannot push verified users out.
const (
	goodSlots = 4096 // verified credentials
	badSlots  = 1024 // refused credentials (a client retrying a stale password)
	// inlineCred is the longest credential digested in one pass from a
	// stack buffer; longer ones are digested first.
	inlineCred = 128
)

type digest [sha256.Size]byte

type cache struct {
	seed [16]byte
	good []atomic.Pointer[digest]
	bad  []atomic.Pointer[digest]
}

func (c *cache) init() {
	// crypto/rand.Read never returns an error (since Go 1.24 it panics
	// instead), so there is nothing to handle.
	_, _ = rand.Read(c.seed[:])
	c.good = make([]atomic.Pointer[digest], goodSlots)
	c.bad = make([]atomic.Pointer[digest], badSlots)
}

// sum is the cache key of cred.
func (c *cache) sum(cred []byte) digest {
	if len(cred) > inlineCred {
		d := sha256.Sum256(cred)
		cred = d[:]
	}
	var buf [len(c.seed) + inlineCred]byte
	n := copy(buf[:], c.seed[:])
	n += copy(buf[n:], cred)
	return sha256.Sum256(buf[:n])
}

func slot(d *digest, n int) int { return int(binary.LittleEndian.Uint64(d[:8]) & uint64(n-1)) }

// lookup returns the cached outcome for d, if any.
func (c *cache) lookup(d *digest) (ok, hit bool) {
	if p := c.good[slot(d, len(c.good))].Load(); p != nil && *p == *d {
		return true, true
	}
	if p := c.bad[slot(d, len(c.bad))].Load(); p != nil && *p == *d {
		return false, true
	}
	return false, false
}

// store records the outcome of a check; the slot's previous entry, if
// any, is forgotten.
func (c *cache) store(d *digest, ok bool) {
	e := new(digest)
	*e = *d
	if ok {
		c.good[slot(d, len(c.good))].Store(e)
	} else {
		c.bad[slot(d, len(c.bad))].Store(e)
	}
}
