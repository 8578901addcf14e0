package acmecert

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/redis/go-redis/v9"

	"lbd/cluster"
	"lbd/config"
)

// RedisStorage is certmagic's Storage on the cluster's Redis, so that
// every member shares the ACME account, the certificates, the HTTP-01
// and TLS-ALPN-01 challenge tokens and the lock that makes one member
// order each name. Under the prefix P (the cluster's KeyPrefix + ":acme:"):
//
//	P:k:<key>    hash: v = the value, m = Unix milliseconds of the Store
//	P:l:<name>   a lock: a random token, expiring lockTTL after its
//	             holder last renewed it, so a killed holder's lock
//	             lapses and another member takes the work over
type RedisStorage struct {
	rdb    redis.UniversalClient
	prefix string
	// ttl and renew are lockTTL and lockRenew (shorter in tests).
	ttl, renew time.Duration

	mu    sync.Mutex
	locks map[string]*heldLock
}

type heldLock struct {
	token string
	stop  context.CancelFunc
	done  chan struct{}
}

// lockTTL is how long a lock outlives its holder; lockRenew how often
// the holder extends it; lockPoll how often a waiter tries again.
const (
	lockTTL   = 10 * time.Second
	lockRenew = 3 * time.Second
	lockPoll  = 250 * time.Millisecond
)

// NewRedisStorage uses the cluster's Redis.
func NewRedisStorage(c *config.Cluster) *RedisStorage {
	return newRedisStorage(cluster.NewClient(c), c.KeyPrefix+":acme:")
}

func newRedisStorage(rdb redis.UniversalClient, prefix string) *RedisStorage {
	return &RedisStorage{rdb: rdb, prefix: prefix, ttl: lockTTL, renew: lockRenew, locks: map[string]*heldLock{}}
}

var _ certmagic.Storage = (*RedisStorage)(nil)

func (s *RedisStorage) key(k string) string { return s.prefix + "k:" + k }

// Store implements certmagic.Storage.
func (s *RedisStorage) Store(ctx context.Context, key string, value []byte) error {
	return s.rdb.HSet(ctx, s.key(key), "v", value, "m", time.Now().UnixMilli()).Err()
}

// Load implements certmagic.Storage.
func (s *RedisStorage) Load(ctx context.Context, key string) ([]byte, error) {
	v, err := s.rdb.HGet(ctx, s.key(key), "v").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fs.ErrNotExist
	}
	return v, err
}

// Delete implements certmagic.Storage: the key and everything below it.
func (s *RedisStorage) Delete(ctx context.Context, key string) error {
	keys, err := s.scan(ctx, s.key(key)+"/*")
	if err != nil {
		return err
	}
	return s.rdb.Del(ctx, append(keys, s.key(key))...).Err()
}

// Exists implements certmagic.Storage: a value, or a directory.
func (s *RedisStorage) Exists(ctx context.Context, key string) bool {
	if n, err := s.rdb.Exists(ctx, s.key(key)).Result(); err == nil && n > 0 {
		return true
	}
	keys, err := s.scan(ctx, s.key(key)+"/*")
	return err == nil && len(keys) > 0
}

// List implements certmagic.Storage.
func (s *RedisStorage) List(ctx context.Context, path string, recursive bool) ([]string, error) {
	base := strings.TrimSuffix(path, "/")
	keys, err := s.scan(ctx, s.key(base)+"/*")
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fs.ErrNotExist
	}
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		rel := strings.TrimPrefix(k, s.key(base)+"/")
		if !recursive {
			rel, _, _ = strings.Cut(rel, "/") // no "/": rel is a direct child already
		}
		if name := base + "/" + rel; !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// Stat implements certmagic.Storage.
func (s *RedisStorage) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	vals, err := s.rdb.HMGet(ctx, s.key(key), "m", "v").Result()
	if err != nil {
		return certmagic.KeyInfo{}, err
	}
	if vals[1] == nil {
		if s.Exists(ctx, key) {
			return certmagic.KeyInfo{Key: key}, nil // a directory
		}
		return certmagic.KeyInfo{}, fs.ErrNotExist
	}
	ms, _ := strconv.ParseInt(fmt.Sprint(vals[0]), 10, 64) // written by Store: a number
	v, _ := vals[1].(string)                               // HMGET's values are strings
	return certmagic.KeyInfo{Key: key, Modified: time.UnixMilli(ms), Size: int64(len(v)), IsTerminal: true}, nil
}

// scan lists the keys matching pattern (a storage holds a few dozen).
func (s *RedisStorage) scan(ctx context.Context, pattern string) ([]string, error) {
	var out []string
	it := s.rdb.Scan(ctx, 0, globQuote(pattern), 100).Iterator()
	for it.Next(ctx) {
		out = append(out, it.Val())
	}
	return out, it.Err()
}

// globQuote escapes SCAN MATCH's pattern characters except a final "*".
func globQuote(p string) string {
	body, star := strings.CutSuffix(p, "*")
	var b strings.Builder
	for _, c := range body {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	if star {
		b.WriteByte('*')
	}
	return b.String()
}

var (
	renewScript  = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	unlockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
)

// Lock implements certmagic.Locker: it waits for the lock, then keeps it
// alive until Unlock.
func (s *RedisStorage) Lock(ctx context.Context, name string) error {
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	token, key := hex.EncodeToString(tok), s.prefix+"l:"+name
	for {
		ok, err := s.rdb.SetNX(ctx, key, token, s.ttl).Result()
		if err == nil && ok {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
	lctx, stop := context.WithCancel(context.Background())
	h := &heldLock{token: token, stop: stop, done: make(chan struct{})}
	go s.keepAlive(lctx, key, h)
	s.mu.Lock()
	s.locks[name] = h
	s.mu.Unlock()
	return nil
}

// keepAlive renews a held lock until Unlock stops it.
func (s *RedisStorage) keepAlive(ctx context.Context, key string, h *heldLock) {
	defer close(h.done)
	t := time.NewTicker(s.renew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failed renewal is retried at the next tick; if Redis
			// stays away the lock lapses, which is what a waiter needs.
			renewScript.Run(ctx, s.rdb, []string{key}, h.token, s.ttl.Milliseconds())
		}
	}
}

// close stops renewing the locks still held (they lapse) and closes the
// connections.
func (s *RedisStorage) close() {
	s.mu.Lock()
	held := s.locks
	s.locks = map[string]*heldLock{}
	s.mu.Unlock()
	for _, h := range held {
		h.stop()
		<-h.done
	}
	s.rdb.Close() // nothing is waiting on this client any more
}

// Unlock implements certmagic.Locker.
func (s *RedisStorage) Unlock(ctx context.Context, name string) error {
	s.mu.Lock()
	h := s.locks[name]
	delete(s.locks, name)
	s.mu.Unlock()
	if h == nil {
		return fmt.Errorf("lock %s is not held", name)
	}
	h.stop()
	<-h.done
	return unlockScript.Run(ctx, s.rdb, []string{s.prefix + "l:" + name}, h.token).Err()
}
