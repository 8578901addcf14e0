//go:build linux

// Command idleconns measures what idle client keep-alive connections cost
// a proxy: it starts lbd (or HAProxy, or nginx, with -peer) and a
// backend, opens N connections from source addresses spread over
// 127.0.0.0/8 (so ephemeral ports never run out), sends one request on
// each, keeps them open and idle, and reports the proxy's RSS growth per
// connection. With -proto tls the connections are HTTP/1.1 over TLS
// (ALPN http/1.1), with -proto h2 HTTP/2 over TLS (ALPN h2: the preface,
// SETTINGS and one finished stream each); every proxy then serves the
// same ECDSA P-256 certificate.
//
//	go run ./bench/idleconns -lbd bin/lbd -n 10000
//	go run ./bench/idleconns -lbd bin/lbd -n 8000 -proto h2
//	go run ./bench/idleconns -peer nginx -n 8000 -proto tls
//	go run ./bench/idleconns -peer haproxy -n 100000
//
// Run as root for N near or above the hard limit of open files: it
// raises the limit (both for itself and, inherited, for the proxy).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"lbd/bench/internal/benchproc"
)

func main() {
	lbd := flag.String("lbd", "bin/lbd", "lbd binary")
	peer := flag.String("peer", "lbd", "proxy to measure: lbd, haproxy or nginx")
	n := flag.Int("n", 10000, "idle connections")
	proto := flag.String("proto", "http", "client protocol: http (HTTP/1.1), tls (HTTP/1.1 over TLS) or h2 (HTTP/2 over TLS)")
	useH2 := flag.Bool("h2", false, "the same as -proto h2")
	client := flag.Int("client", 600, "the proxy's client idle timeout, seconds")
	settle := flag.Duration("settle", 3*time.Second, "idle time before measuring")
	perSource := flag.Int("per-source", 1000, "connections per source address")
	workers := flag.Int("workers", 8, "connections opened in parallel")
	later := flag.Duration("later", 0, "measure RSS again this long after the first measurement (0: not)")
	flag.Parse()
	raiseNoFile(uint64(*n)*2 + 1000)

	be, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go http.Serve(be, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	dir, err := os.MkdirTemp("", "idleconns")
	check(err)
	defer os.RemoveAll(dir)
	p := proxySpec{dir: dir, port: freePort(), backend: be.Addr().(*net.TCPAddr).Port, client: *client, n: *n}
	if *useH2 {
		*proto = "h2"
	}
	open := request
	switch *proto {
	case "http":
	case "tls":
		p.cert, open = writeCert(dir), requestTLS
	case "h2":
		p.cert, open = writeCert(dir), requestH2
	default:
		check(fmt.Errorf("unknown -proto %q", *proto))
	}
	var cmd *exec.Cmd
	switch {
	case *peer == "lbd":
		cmd = p.lbd(*lbd)
	case *peer == "haproxy":
		cmd = p.haproxy()
	case *peer == "nginx":
		cmd = p.nginx()
	default:
		check(fmt.Errorf("unknown -peer %q", *peer))
	}
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	// Killed however the run ends: the run is over, an error cannot matter.
	benchproc.AtExit(func() { _ = cmd.Process.Kill() })
	defer benchproc.RunAtExit()
	addr := fmt.Sprintf("127.0.0.1:%d", p.port)
	waitListen(addr)

	// Warm up: one connection, one request, so pools and code pages exist.
	conns := make([]net.Conn, *n+1)
	conns[0] = open(dial(addr, 0, *perSource))
	time.Sleep(500 * time.Millisecond)
	before := rssKiB(cmd.Process.Pid)
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1 + w; i <= *n; i += *workers {
				conns[i] = open(dial(addr, i, *perSource))
			}
		}()
	}
	wg.Wait()
	opened := time.Since(t0)
	time.Sleep(*settle)
	after := rssKiB(cmd.Process.Pid)
	per := float64(after-before) * 1024 / float64(*n)
	fmt.Printf("proxy: %s (%s)\nidle connections: %d (opened in %v)\nRSS before: %d KiB\nRSS after:  %d KiB (%v after the last connection)\nper connection: %.0f bytes (%.1f KiB)\n",
		*peer, *proto, *n, opened.Round(time.Millisecond), before, after, *settle, per, per/1024)
	if *later > 0 {
		time.Sleep(*later)
		after = rssKiB(cmd.Process.Pid)
		per = float64(after-before) * 1024 / float64(*n)
		fmt.Printf("RSS later:  %d KiB (%v after)\nper connection later: %.0f bytes (%.1f KiB)\n", after, *settle+*later, per, per/1024)
	}
	for _, c := range conns {
		c.Close()
	}
}

// dial connects connection i from source address 127.a.b.7, a new
// address every perSource connections, so ephemeral ports suffice.
func dial(addr string, i, perSource int) net.Conn {
	k := i / perSource
	local := &net.TCPAddr{IP: net.IPv4(127, byte(10+k/250), byte(1+k%250), 7)}
	d := net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	check(err)
	return c
}

func request(c net.Conn) net.Conn {
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	check(err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	check(err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		check(fmt.Errorf("status %s", resp.Status))
	}
	return c
}

// raiseNoFile lifts the open-file limit to n: the hard limit too when
// the process may (root with CAP_SYS_RESOURCE), else up to it.
func raiseNoFile(n uint64) {
	var l syscall.Rlimit
	check(syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l))
	if l.Max < n && syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}) == nil {
		return
	}
	l.Cur = min(n, l.Max)
	check(syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l))
	if l.Cur < n {
		fmt.Fprintf(os.Stderr, "idleconns: open files limited to %d (hard limit; raising it was refused)\n", l.Cur)
	}
}

var (
	check    = benchproc.Check
	rssKiB   = benchproc.MustRSSKiB
	freePort = benchproc.MustFreePort
)

func waitListen(addr string) {
	check(benchproc.WaitListen(addr, 10*time.Second))
}
