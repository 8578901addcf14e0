//go:build linux

// Command certscale measures what SNI certificates cost lbd as their
// number grows: for each count it writes that many ECDSA P-256
// certificates (half exact names, half wildcards) into one directory,
// starts lbd with `Cert "dir/*.pem"`, and reports the time to listening,
// the time of an `lbctl reload`, the RSS growth per certificate against
// the one-certificate run, and lbd's CPU (utime+stime) per full TLS 1.3
// handshake naming the last certificate (exact, then wildcard). It then
// rewrites one file and reports lbd's CPU for the incremental reload.
//
//	go run ./bench/certscale -lbd bin/lbd -n 1,100,1000,10000
//	go run ./bench/certscale -lbd bin/lbd -paired 10000 -handshakes 200 -reps 10
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"lbd/internal/testpki"

	"lbd/bench/internal/benchproc"
)

func main() {
	lbd := flag.String("lbd", "bin/lbd", "lbd binary (lbctl is taken from the same directory)")
	counts := flag.String("n", "1,100,1000,10000", "certificate counts")
	hs := flag.Int("handshakes", 1000, "handshakes per name and round")
	reps := flag.Int("reps", 3, "rounds per name (the median is reported)")
	port := flag.Int("port", 0, "listening port (0: a free one)")
	pair := flag.Int("paired", 0, "instead: compare 1 and this many certificates side by side (rounds: -reps)")
	flag.Parse()
	if *pair > 0 {
		paired(*lbd, *pair, *hs, *reps)
		return
	}
	fmt.Println("certs\tstart_ms\treload_ms\trss_kib\tper_cert_B\texact_us_cpu\twild_us_cpu\tdefault_us_cpu\tone_file_ms_cpu")
	base := -1
	for _, f := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(f)
		check(err)
		r := run(*lbd, n, *hs, *reps, *port)
		per := "-"
		if base < 0 {
			base = r.rss
		} else if n > 1 {
			per = fmt.Sprintf("%.0f", float64(r.rss-base)*1024/float64(n-1))
		}
		fmt.Printf("%d\t%d\t%d\t%d\t%s\t%.1f\t%.1f\t%.1f\t%.1f\n", n, r.start.Milliseconds(), r.reload.Milliseconds(),
			r.rss, per, r.exact, r.wild, r.def, r.oneFile)
	}
}

type result struct {
	start, reload    time.Duration
	rss              int
	exact, wild, def float64 // µs of lbd CPU per handshake
	oneFile          float64 // ms of lbd CPU for one changed file
}

// name i: even certificates are exact (site<i>.exact.test), odd ones
// wildcards (*.w<i>.wild.test).
func names(i int) (cn, serve string) {
	if i%2 == 0 {
		n := fmt.Sprintf("site%d.exact.test", i)
		return n, n
	}
	return fmt.Sprintf("*.w%d.wild.test", i), fmt.Sprintf("www.w%d.wild.test", i)
}

func writeCerts(dir string, n int) {
	for i := 0; i < n; i++ {
		cn, _ := names(i) // the name a client asks for is not needed to issue
		c, err := testpki.Issue(testpki.Spec{CommonName: cn, DNSNames: []string{cn}, NotAfter: time.Now().Add(48 * time.Hour)}, nil)
		check(err)
		check(os.WriteFile(filepath.Join(dir, fmt.Sprintf("c%05d.pem", i)), append(c.CertPEM(), c.KeyPEM()...), 0o600))
	}
}

func run(lbd string, n, hs, reps, port int) result {
	dir, err := os.MkdirTemp("", "certscale")
	check(err)
	defer os.RemoveAll(dir)
	certs := filepath.Join(dir, "certs")
	check(os.Mkdir(certs, 0o700))
	writeCerts(certs, n)
	if port == 0 {
		port = freePort()
	}
	sock := filepath.Join(dir, "ctl.sock")
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nControl %q\nListenHTTPS\n Address 127.0.0.1\n Port %d\n Cert %q\n Service\n  Redirect \"https://x.test/\"\n End\nEnd\n",
		sock, port, filepath.Join(certs, "*.pem"))
	path := filepath.Join(dir, "lbd.cfg")
	check(os.WriteFile(path, []byte(cfg), 0o644))
	var r result
	t0 := time.Now()
	cmd := exec.Command(lbd, "-F", "-f", path)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	defer cmd.Process.Kill()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListen(addr)
	r.start = time.Since(t0)
	// Warm up code paths and pools, then let the heap settle.
	handshakes(addr, "site0.exact.test", 50)
	time.Sleep(time.Second)
	r.rss = rssKiB(cmd.Process.Pid)
	_, last := names(n - 1)
	_, lastExact := names((n - 1) &^ 1)
	pid := cmd.Process.Pid
	// Rounds interleave the names so drift from other load on the
	// machine touches each alike.
	var ex, wi, de []float64
	for range reps {
		ex = append(ex, perHandshake(pid, addr, lastExact, hs))
		wi = append(wi, perHandshake(pid, addr, last, hs))
		de = append(de, perHandshake(pid, addr, "", hs))
	}
	r.exact, r.wild, r.def = median(ex), median(wi), median(de)
	t0 = time.Now()
	out, err := exec.Command(filepath.Join(filepath.Dir(lbd), "lbctl"), "-s", sock, "reload").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "certscale: lbctl reload: %v: %s\n", err, out)
		os.Exit(1)
	}
	r.reload = time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	// One file rewritten with a new certificate for the same name: the
	// watcher's cost is lbd's CPU across the settle time.
	c0 := cpuNs(pid)
	writeOne(certs, n-1)
	time.Sleep(2 * time.Second)
	r.oneFile = float64(cpuNs(pid)-c0) / 1e6
	cmd.Process.Kill()
	cmd.Wait()
	return r
}

func writeOne(dir string, i int) {
	cn, _ := names(i) // the name a client asks for is not needed to issue
	c, err := testpki.Issue(testpki.Spec{CommonName: cn, DNSNames: []string{cn}, NotAfter: time.Now().Add(72 * time.Hour)}, nil)
	check(err)
	tmp := filepath.Join(dir, "new.tmp")
	check(os.WriteFile(tmp, append(c.CertPEM(), c.KeyPEM()...), 0o600))
	check(os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("c%05d.pem", i))))
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// perHandshake is lbd's CPU per full handshake (no resumption) naming sni.
func perHandshake(pid int, addr, sni string, n int) float64 {
	c0 := cpuNs(pid)
	handshakes(addr, sni, n)
	return float64(cpuNs(pid)-c0) / 1e3 / float64(n)
}

func handshakes(addr, sni string, n int) {
	for i := 0; i < n; i++ {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		check(err)
		tc := tls.Client(nc, &tls.Config{ServerName: sni, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if sni != "" && cs.PeerCertificates[0].VerifyHostname(sni) != nil {
					return fmt.Errorf("%s: served %v", sni, cs.PeerCertificates[0].DNSNames)
				}
				return nil
			}})
		check(tc.Handshake())
		tc.Close()
	}
}

// cpuNs is the CPU time lbd's threads have run, in nanoseconds (the sum
// of /proc/PID/task/*/schedstat; Go's threads do not exit, so nothing is
// lost, and it is finer than utime+stime's 10 ms ticks).
func cpuNs(pid int) int64 {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	check(err)
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended between the glob and the read
		}
		v, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		check(err)
		sum += v
	}
	return sum
}

var (
	check    = benchproc.Check
	rssKiB   = benchproc.MustRSSKiB
	freePort = benchproc.MustFreePort
)

func waitListen(addr string) {
	check(benchproc.WaitListen(addr, 30*time.Second))
}
