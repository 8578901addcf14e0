//go:build linux

// Command sessweep measures what expiring sessions cost the requests
// that run beside their expiry: it starts lbd with one HEADER-session
// service, fills its table with -sessions sessions as fast as pipelined
// requests allow, then sends paced requests on live sessions until all
// the filled ones have expired, and compares the latency of the requests
// sent while no session expired (baseline) with that of the requests
// sent while the once-a-second sweep removed them.
//
//	go run ./bench/sessweep -lbd bin/lbd -sessions 500000 -ttl 45
//
// The session count (lbd_service_sessions, read from the control
// socket) is printed at both windows' ends, so the table shows that the
// sweep window is the one in which the sessions went.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"lbd/bench/internal/benchproc"
)

func main() {
	bin := flag.String("lbd", "bin/lbd", "lbd binary")
	sessions := flag.Int("sessions", 500000, "sessions to fill and let expire")
	ttl := flag.Int("ttl", 45, "session TTL, seconds (must exceed the fill time by 10 s)")
	rate := flag.Int("rate", 2000, "paced requests per second on live sessions")
	cpu := flag.String("cpu", "1", "CPU list for lbd (taskset -c); empty: not pinned")
	flag.Parse()

	dir, err := os.MkdirTemp("", "sessweep")
	check(err)
	defer os.RemoveAll(dir)
	backend := startBackend()
	port, err := benchproc.FreePort()
	check(err)
	sock := filepath.Join(dir, "ctl.sock")
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nControl %q\nListenHTTP\n Address 127.0.0.1\n Port %d\n"+
		" Service\n  Session\n   Type HEADER\n   ID \"X-Sess\"\n   TTL %d\n  End\n"+
		"  BackEnd\n   Address 127.0.0.1\n   Port %d\n  End\n End\nEnd\n", sock, port, *ttl, backend)
	cfgPath := filepath.Join(dir, "lbd.cfg")
	check(os.WriteFile(cfgPath, []byte(cfg), 0o600))
	cmd := exec.Command(*bin, "-F", "-f", cfgPath)
	if *cpu != "" {
		cmd = exec.Command("taskset", "-c", *cpu, *bin, "-F", "-f", cfgPath)
	}
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	benchproc.AtExit(func() { _ = cmd.Process.Kill() }) // best effort: the run is over
	defer benchproc.RunAtExit()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	check(benchproc.WaitListen(addr, 10*time.Second))

	fill0 := time.Now()
	check(fill(addr, *sessions))
	fill1 := time.Now()
	fmt.Printf("filled %d sessions in %.1f s; table holds %d\n", *sessions, fill1.Sub(fill0).Seconds(), sessionCount(sock))
	ttlD := time.Duration(*ttl) * time.Second
	base := window{name: "baseline (no session expires)", from: fill1.Add(2 * time.Second), to: fill0.Add(ttlD - time.Second)}
	sweep := window{name: "sweeps remove the filled sessions", from: fill0.Add(ttlD), to: fill1.Add(ttlD + 2*time.Second)}
	if base.to.Sub(base.from) < 5*time.Second {
		die("the fill took too long for this TTL; raise -ttl")
	}
	p := newProber(addr, *rate)
	go p.run(sweep.to)
	atEnd := func(w window) int {
		time.Sleep(time.Until(w.to))
		return sessionCount(sock)
	}
	base.sessionsAtEnd = atEnd(base)
	sweep.sessionsAtEnd = atEnd(sweep)
	samples := p.wait()
	fmt.Printf("\n| window | seconds | requests | p50 µs | p99 µs | p99.9 µs | max µs | sessions at its end |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range []window{base, sweep} {
		w.print(samples)
	}
}

// window is a span of the run whose requests are summarised together.
type window struct {
	name          string
	from, to      time.Time
	sessionsAtEnd int
}

func (w window) print(all []sample) {
	var lat []time.Duration
	for _, s := range all {
		if !s.at.Before(w.from) && s.at.Before(w.to) {
			lat = append(lat, s.took)
		}
	}
	if len(lat) == 0 {
		fmt.Printf("| %s | – | 0 | | | | | %d |\n", w.name, w.sessionsAtEnd)
		return
	}
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	fmt.Printf("| %s | %.1f | %d | %.0f | %.0f | %.0f | %.0f | %d |\n", w.name, w.to.Sub(w.from).Seconds(),
		len(lat), q(0.5), q(0.99), q(0.999), q(1), w.sessionsAtEnd)
}

// fill opens 8 connections and creates n sessions with distinct 32-byte
// keys, 64 pipelined requests at a time on each connection.
func fill(addr string, n int) error {
	const conns, depth = 8, 64
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- fillOne(addr, c, conns, n, depth)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func fillOne(addr string, first, step, n, depth int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	// Bounded: a fill that has not ended in 10 minutes fails.
	if err := c.SetDeadline(time.Now().Add(10 * time.Minute)); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	var req []byte
	for i := first; i < n; {
		req = req[:0]
		sent := 0
		for ; sent < depth && i < n; i += step {
			req = fmt.Appendf(req, "GET / HTTP/1.1\r\nHost: fill\r\nX-Sess: %032x\r\n\r\n", i)
			sent++
		}
		if _, err := c.Write(req); err != nil {
			return err
		}
		for range sent {
			if err := readResponse(br); err != nil {
				return err
			}
		}
	}
	return nil
}

// readResponse reads one response and fails unless it is a 200.
func readResponse(br *bufio.Reader) error {
	status, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		return fmt.Errorf("answer %q", strings.TrimSpace(status))
	}
	length := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			if length, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return err
			}
		}
	}
	_, err = br.Discard(length)
	return err
}

// startBackend serves a fixed 200 to every request, keep-alive, and
// returns its port.
func startBackend() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveFixed(c)
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func serveFixed(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	for {
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) == 2 {
				break
			}
		}
		if _, err := bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}

// sessionCount reads lbd_service_sessions from the control socket.
func sessionCount(sock string) int {
	hc := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := hc.Get("http://lbd/metrics?family=lbd_service_sessions")
	check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	check(err)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "lbd_service_sessions{") {
			f := strings.Fields(line)
			n, err := strconv.Atoi(f[len(f)-1])
			check(err)
			return n
		}
	}
	die(fmt.Sprintf("no lbd_service_sessions in\n%s", body))
	return 0
}

var (
	check = benchproc.Check
	die   = benchproc.Die
)
