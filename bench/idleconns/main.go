//go:build linux

// Command idleconns measures what idle client keep-alive connections cost
// lbd: it starts lbd and a backend, opens N connections (from several
// 127.0.0.x source addresses), sends one request on each, keeps them
// open and idle, and reports lbd's RSS growth per connection. With -h2
// the connections are HTTP/2 over TLS (ListenHTTPS, ALPN h2), each with
// one finished stream.
//
//	go run ./bench/idleconns -lbd bin/lbd -n 10000
//	go run ./bench/idleconns -lbd bin/lbd -n 10000 -h2
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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	lbd := flag.String("lbd", "bin/lbd", "lbd binary")
	n := flag.Int("n", 10000, "idle connections")
	useH2 := flag.Bool("h2", false, "HTTP/2 over TLS instead of HTTP/1.1")
	client := flag.Int("client", 600, "lbd's Client timeout, seconds")
	settle := flag.Duration("settle", 2*time.Second, "idle time before measuring")
	flag.Parse()
	raiseNoFile(uint64(*n)*2 + 1000)

	be, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go http.Serve(be, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	port := freePort()
	dir, err := os.MkdirTemp("", "idleconns")
	check(err)
	defer os.RemoveAll(dir)
	_, bport, _ := net.SplitHostPort(be.Addr().String()) // a TCPAddr's form always splits
	listen := "ListenHTTP"
	open := request
	if *useH2 {
		listen = "ListenHTTPS\n Cert \"" + writeCert(dir) + "\""
		open = requestH2
	}
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nClient %d\n%s\n Address 127.0.0.1\n Port %d\n Service\n  BackEnd\n   Address 127.0.0.1\n   Port %s\n  End\n End\nEnd\n", *client, listen, port, bport)
	path := filepath.Join(dir, "lbd.cfg")
	check(os.WriteFile(path, []byte(cfg), 0o644))
	cmd := exec.Command(*lbd, "-F", "-f", path)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	defer cmd.Process.Kill()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListen(addr)

	// Warm up: one connection, one request, so pools and code pages exist.
	conns := []net.Conn{open(dial(addr, 0))}
	time.Sleep(500 * time.Millisecond)
	before := rssKiB(cmd.Process.Pid)
	for i := 1; i <= *n; i++ {
		conns = append(conns, open(dial(addr, i)))
	}
	time.Sleep(*settle)
	after := rssKiB(cmd.Process.Pid)
	per := float64(after-before) * 1024 / float64(*n)
	fmt.Printf("idle connections: %d\nlbd RSS before: %d KiB\nlbd RSS after:  %d KiB\nper connection: %.0f bytes (%.1f KiB)\n",
		*n, before, after, per, per/1024)
	for _, c := range conns {
		c.Close()
	}
}

// dial connects from 127.0.0.(2 + i/20000) so ephemeral ports suffice.
func dial(addr string, i int) net.Conn {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/20000))}
	d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
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
	return c
}

func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			v, err := strconv.Atoi(f[1])
			check(err)
			return v
		}
	}
	return 0
}

func raiseNoFile(n uint64) {
	var l syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	if l.Cur < n {
		l.Cur = min(n, l.Max)
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListen(addr string) {
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "lbd did not start")
	os.Exit(1)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "idleconns:", err)
		os.Exit(1)
	}
}
