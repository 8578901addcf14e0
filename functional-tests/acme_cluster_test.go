package functionaltests

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Automatic certificates shared by a cluster: two lbd instances on one
// redis-server. Pebble validates through l4Front, a TCP balancer of the
// test that deals the validation connections to the live instances in
// turn, so a challenge often reaches the instance that did not order.

// l4Front forwards each connection to the next live target in turn.
type l4Front struct {
	ln      net.Listener
	targets []string
	next    atomic.Uint32
}

func startL4Front(t *testing.T, port int, targets ...string) *l4Front {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	f := &l4Front{ln: ln, targets: targets}
	go f.serve()
	t.Cleanup(func() { ln.Close() })
	return f
}

func (f *l4Front) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.relay(c)
	}
}

func (f *l4Front) relay(c net.Conn) {
	defer c.Close()
	first := int(f.next.Add(1))
	for i := range f.targets {
		b, err := net.DialTimeout("tcp", f.targets[(first+i)%len(f.targets)], time.Second)
		if err != nil {
			continue // that instance is down: the next one
		}
		defer b.Close()
		go func() {
			io.Copy(b, c) // ends when either side closes
			b.(*net.TCPConn).CloseWrite()
		}()
		io.Copy(c, b)
		return
	}
}

// acmeMember is one cluster instance with its ports.
type acmeMember struct {
	node, dir, sock   string
	httpPort, tlsPort int
	p                 *proc
}

func (m *acmeMember) tlsAddr() string { return fmt.Sprintf("127.0.0.1:%d", m.tlsPort) }

func newACMEMember(t *testing.T, node string) *acmeMember {
	m := &acmeMember{node: node, dir: t.TempDir(), httpPort: freePort(t), tlsPort: freePort(t)}
	m.sock = filepath.Join(m.dir, "ctl.sock")
	return m
}

func (m *acmeMember) start(t *testing.T, e *pebbleEnv, redis string, names []string) {
	t.Helper()
	svc := "\tService\n\t\tError 404\n\tEnd\n"
	cfg := e.account(filepath.Join(m.dir, "unused")) + fmt.Sprintf("Control %q\n", m.sock) +
		fmt.Sprintf("Cluster\n\tNode %q\n\tRedis %q\n\tKeyPrefix \"acmeft\"\nEnd\n", m.node, redis) +
		fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort %d\n%sEnd\n", m.httpPort, svc) +
		fmt.Sprintf("ListenHTTPS\n\tAddress 127.0.0.1\n\tPort %d\n\tACMECert \"%s\"\n%sEnd\n", m.tlsPort, strings.Join(names, `" "`), svc)
	path := filepath.Join(m.dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	m.p = runLBD(t, m.dir, path, fmt.Sprintf("127.0.0.1:%d", m.httpPort))
}

// ordering reports whether the member is placing an order for name
// (certmagic announces it once it holds the name's lock).
func (m *acmeMember) ordering(t *testing.T, name string) bool {
	for _, line := range strings.Split(lbctlOK(t, m.sock, "acme"), "\n") {
		if strings.HasPrefix(line, name+" ") && strings.Contains(line, "ordering") {
			return true
		}
	}
	return false
}

// TestACMECluster: two members on one Redis order each name once and
// serve the same certificate, also after one of them renewed it; the member that holds a name's lock is
// killed mid-order (its finalize held back at the CA's door) and the
// other completes the order once the lock lapses.
func TestACMECluster(t *testing.T) {
	r := startRedisServer(t)
	a, b := newACMEMember(t, "a"), newACMEMember(t, "b")
	httpFront, tlsFront := freePort(t), freePort(t)
	e := startPebble(t, httpFront, tlsFront)
	startL4Front(t, httpFront, fmt.Sprintf("127.0.0.1:%d", a.httpPort), fmt.Sprintf("127.0.0.1:%d", b.httpPort))
	startL4Front(t, tlsFront, a.tlsAddr(), b.tlsAddr())

	const late = "k.example.com"
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.front.mu.Lock()
	e.front.hold = func(name string) bool {
		if name != late {
			return true
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return true // the survivor's own order
		}
		close(held)
		<-release
		return false
	}
	e.front.mu.Unlock()

	names := []string{"n1.example.com", "n2.example.com", "n3.example.com"}
	all := append(append([]string(nil), names...), late)
	a.start(t, e, r.sock, all)
	b.start(t, e, r.sock, all)
	roots := e.root()
	for _, n := range names {
		var sa, sb string
		poll(t, 20*time.Second, n+" served by both members", func() bool {
			var errA, errB error
			sa, errA = servedSerial(a.tlsAddr(), n, roots)
			sb, errB = servedSerial(b.tlsAddr(), n, roots)
			return errA == nil && errB == nil && sa == sb
		})
		if got := e.front.ordersFor(n); got != 1 {
			t.Errorf("%s: %d orders at Pebble, want exactly 1 for the cluster", n, got)
		}
	}

	// A renewal forced on one member is served by the other too.
	before, err := servedSerial(b.tlsAddr(), names[0], roots)
	if err != nil {
		t.Fatal(err)
	}
	lbctlOK(t, a.sock, "acme", "renew", names[0])
	renewed, _ := servedSerial(a.tlsAddr(), names[0], roots) // compared below
	poll(t, 15*time.Second, "member b serves the serial member a renewed", func() bool {
		sn, err := servedSerial(b.tlsAddr(), names[0], roots)
		return err == nil && sn == renewed && sn != before
	})

	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("no finalize for " + late + " within 20 s")
	}
	holder, other := a, b
	if b.ordering(t, late) {
		holder, other = b, a
	}
	if !holder.ordering(t, late) || other.ordering(t, late) {
		t.Fatalf("cannot tell which member holds the lock of %s", late)
	}
	holder.p.kill()
	close(release)
	t.Logf("killed %s mid-order; %s waits for the lock to lapse", holder.node, other.node)
	poll(t, 30*time.Second, other.node+" completes the order of "+late, func() bool {
		_, err := servedSerial(other.tlsAddr(), late, roots)
		return err == nil
	})
	if got := e.front.ordersFor(late); got != 2 {
		t.Errorf("%s: %d orders, want 2 (the killed member's, then the survivor's)", late, got)
	}
}
