package acmecert

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startRedis runs redis-server on a UNIX socket of the test (the test
// fails, it is not skipped, without one: .ci/run installs it).
func startRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): install the Debian package redis-server", err)
	}
	sock := filepath.Join(t.TempDir(), "redis.sock")
	cmd := exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", filepath.Dir(sock))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait() // killed: the status says so
	})
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server does not listen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestRedisStorageValues(t *testing.T) {
	ctx := context.Background()
	s := newRedisStorage(startRedis(t), "t:acme:")
	for k, v := range map[string]string{
		"acme/ca/users/a/key": "K", "acme/ca/users/a/reg.json": "R",
		"certificates/ca/x.example.com/x.crt": "C", "certificates/ca/x.example.com/x.key": "P",
		"odd[*]?/y": "glob characters in a key",
	} {
		if err := s.Store(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := s.Load(ctx, "acme/ca/users/a/key"); err != nil || string(v) != "K" {
		t.Errorf("Load: %q %v", v, err)
	}
	if _, err := s.Load(ctx, "acme/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing key: %v, want fs.ErrNotExist", err)
	}
	for _, tc := range []struct {
		path      string
		recursive bool
		want      []string
	}{
		{"acme/ca/users", false, []string{"acme/ca/users/a"}},
		{"acme/ca/users/a", false, []string{"acme/ca/users/a/key", "acme/ca/users/a/reg.json"}},
		{"certificates", true, []string{"certificates/ca/x.example.com/x.crt", "certificates/ca/x.example.com/x.key"}},
		{"odd[*]?", false, []string{"odd[*]?/y"}},
	} {
		got, err := s.List(ctx, tc.path, tc.recursive)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("List(%q, %v) = %v, %v; want %v", tc.path, tc.recursive, got, err, tc.want)
		}
	}
	if _, err := s.List(ctx, "nothing", true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List of nothing: %v, want fs.ErrNotExist", err)
	}
	if !s.Exists(ctx, "acme/ca") || !s.Exists(ctx, "acme/ca/users/a/key") || s.Exists(ctx, "acme/c") {
		t.Error("Exists: a directory and a value exist, a prefix that is no component does not")
	}
	ki, err := s.Stat(ctx, "acme/ca/users/a/reg.json")
	if err != nil || !ki.IsTerminal || ki.Size != 1 || time.Since(ki.Modified) > time.Minute {
		t.Errorf("Stat of a value: %+v %v", ki, err)
	}
	if ki, err := s.Stat(ctx, "acme/ca"); err != nil || ki.IsTerminal {
		t.Errorf("Stat of a directory: %+v %v", ki, err)
	}
	if err := s.Delete(ctx, "acme/ca/users"); err != nil {
		t.Fatal(err)
	}
	if s.Exists(ctx, "acme/ca/users/a/key") || !s.Exists(ctx, "certificates/ca/x.example.com/x.crt") {
		t.Error("Delete of a directory: its keys must go, the others stay")
	}
	if _, err := s.Stat(ctx, "acme/ca/users/a/key"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after Delete: %v", err)
	}
}

// TestRedisStorageLock: one holder at a time; a holder that keeps its
// lock alive keeps it past the TTL; one that dies (stops renewing) loses
// it once the TTL passes; Unlock frees it at once and only for its holder.
func TestRedisStorageLock(t *testing.T) {
	rdb := startRedis(t)
	a, b := newRedisStorage(rdb, "t:acme:"), newRedisStorage(rdb, "t:acme:")
	for _, s := range []*RedisStorage{a, b} {
		s.ttl, s.renew = 300*time.Millisecond, 100*time.Millisecond
	}
	ctx := context.Background()
	if err := a.Lock(ctx, "issue_cert_x"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second) // three TTLs
	err := b.Lock(short, "issue_cert_x")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while the first is held and renewed: %v, want the deadline", err)
	}
	if err := b.Unlock(ctx, "issue_cert_x"); err == nil {
		t.Error("Unlock by a storage that does not hold the lock succeeded")
	}
	if err := a.Unlock(ctx, "issue_cert_x"); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx, "issue_cert_x"); err != nil {
		t.Fatal(err)
	}

	// b dies: its renewals stop, the lock lapses after the TTL.
	b.mu.Lock()
	h := b.locks["issue_cert_x"]
	b.mu.Unlock()
	h.stop()
	<-h.done
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.Lock(wait, "issue_cert_x"); err != nil {
		t.Fatalf("the dead holder's lock never lapsed: %v", err)
	}
	if err := a.Unlock(ctx, "issue_cert_x"); err != nil {
		t.Fatal(err)
	}
}

func TestGlobQuote(t *testing.T) {
	for in, want := range map[string]string{
		"p:k:acme/*":     "p:k:acme/*",
		"p:k:a[b]*c?/*":  `p:k:a\[b\]\*c\?/*`,
		`p:k:back\slash`: `p:k:back\\slash`,
	} {
		if got := globQuote(in); got != want {
			t.Errorf("globQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
