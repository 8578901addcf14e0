package cluster

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"lbd/config"
	"lbd/service"
)

// freeTCPPort returns a loopback port free right now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProc starts a command, killed (by its PID) when the test ends
// or when the returned function is called.
func startProc(t *testing.T, name string, args ...string) (kill func()) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait() // killed on purpose
		})
	}
	t.Cleanup(kill)
	return kill
}

// waitTCP waits until addr accepts connections.
func waitTCP(t *testing.T, addr string) {
	t.Helper()
	waitFor(t, 5*time.Second, addr+" accepts", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// TestSentinel: instances that find Redis through a Sentinel share
// sessions and state as with a standalone server, and go on sharing
// them with the replica the Sentinel promotes when the master dies.
func TestSentinel(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): install the Debian package redis-server", err)
	}
	dir := t.TempDir()
	master := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	_, mport, _ := net.SplitHostPort(master)
	killMaster := startProc(t, "redis-server", "--bind", "127.0.0.1", "--port", mport, "--save", "", "--appendonly", "no", "--dir", dir)
	waitTCP(t, master)
	replica := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	_, rport, _ := net.SplitHostPort(replica)
	startProc(t, "redis-server", "--bind", "127.0.0.1", "--port", rport, "--save", "", "--appendonly", "no",
		"--dir", dir, "--replicaof", "127.0.0.1", mport)
	waitTCP(t, replica)
	sentinel := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	_, sport, _ := net.SplitHostPort(sentinel)
	conf := filepath.Join(dir, "sentinel.conf") // Sentinel rewrites its file: it must be writable
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("bind 127.0.0.1\nport %s\ndir %s\nsentinel monitor lbdtest 127.0.0.1 %s 1\n"+
		"sentinel down-after-milliseconds lbdtest 300\nsentinel failover-timeout lbdtest 2000\n", sport, dir, mport)), 0o600); err != nil {
		t.Fatal(err)
	}
	startProc(t, "redis-server", conf, "--sentinel")
	waitTCP(t, sentinel)

	join := func(name string) *member {
		web := newWebService(t, time.Minute, 0)
		eng := &fakeEngine{services: map[[2]string]*service.Service{{"front", "web"}: web}, known: map[string]bool{"front": true}}
		n, err := New(&config.Cluster{Node: name, Sentinels: []string{sentinel}, Master: "lbdtest", KeyPrefix: "t",
			ShareAll: true}, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		n.Start(eng)
		t.Cleanup(n.Close)
		return &member{n: n, eng: eng, web: web}
	}
	a, b := join("a"), join("b")
	waitFor(t, within, "both connected through the Sentinel", func() bool { return a.n.connected() && b.n.connected() })
	a.web.Sessions.Store([]byte("s1"), a.backend("10.0.0.2:80"))
	waitFor(t, within, "the pin reached b", func() bool { return b.pinnedTo("s1") == "10.0.0.2:80" })

	killMaster()
	waitFor(t, 15*time.Second, "a pin made after the failover reaches b", func() bool {
		a.web.Sessions.Store([]byte("s2"), a.backend("10.0.0.3:80"))
		deadline := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(deadline) {
			if b.pinnedTo("s2") == "10.0.0.3:80" {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	})
	c := join("c")
	if c.pinnedTo("s1") == "" || c.pinnedTo("s2") == "" {
		t.Fatalf("a node joining after the failover has s1 %q, s2 %q", c.pinnedTo("s1"), c.pinnedTo("s2"))
	}
}
