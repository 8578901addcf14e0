package backend

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log sink safe to read while probe goroutines log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// count returns how many log lines contain sub.
func (s *syncBuffer) count(sub string) int { return strings.Count(s.String(), sub) }

func testLogger() (*logrus.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	l := logrus.New()
	l.Out = buf
	l.Formatter = &logrus.TextFormatter{DisableTimestamp: true, DisableQuote: true}
	return l, buf
}

// pipeDialer hands out in-memory conns and closes the far ends at cleanup.
type pipeDialer struct {
	mu    sync.Mutex
	peers []net.Conn
}

func (d *pipeDialer) dial(context.Context, string, string) (net.Conn, error) {
	c, s := net.Pipe()
	d.mu.Lock()
	d.peers = append(d.peers, s)
	d.mu.Unlock()
	return c, nil
}

func (d *pipeDialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.peers {
		p.Close()
	}
}

// pipeBackend returns a backend whose dials produce net.Pipe conns.
func pipeBackend(t testing.TB, o Options) *Backend {
	t.Helper()
	d := &pipeDialer{}
	t.Cleanup(d.close)
	o.DialContext = d.dial
	if o.Logger == nil {
		o.Logger, _ = testLogger()
	}
	if o.Address == "" {
		o.Address = "10.0.0.1:80"
	}
	return New(o)
}

// waitFor polls cond until it holds; the bound only stops a broken test
// from hanging, it is not a timing assertion.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// listen opens a TCP listener on 127.0.0.1:0 that accepts and holds conns
// until closed; it returns the listener and its address.
func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln
}
