//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// paired runs lbd with one certificate and lbd with n side by side and
// alternates rounds of handshakes between them, so the load other users
// put on the machine falls on both alike: it prints lbd's CPU per
// handshake for each and their ratio, for the last exact name and the
// last wildcard name of the n.
func paired(lbd string, n, hs, rounds int) {
	one, stopOne := startWith(lbd, 1)
	defer stopOne()
	many, stopMany := startWith(lbd, n)
	defer stopMany()
	_, last := names(n - 1)
	_, lastExact := names((n - 1) &^ 1)
	_, only := names(0)
	var cpuOne, cpuExact, cpuWild int64
	for range rounds {
		cpuOne += cpuOf(one, only, hs)
		cpuExact += cpuOf(many, lastExact, hs)
		cpuOne += cpuOf(one, only, hs)
		cpuWild += cpuOf(many, last, hs)
	}
	per := func(ns int64, k int) float64 { return float64(ns) / 1e3 / float64(k*hs*rounds) }
	fmt.Printf("paired, %d rounds of %d handshakes: 1 cert %.1f µs; %d certs exact %.1f µs (%.3f×), wildcard %.1f µs (%.3f×)\n",
		rounds, hs, per(cpuOne, 2), n, per(cpuExact, 1), per(cpuExact, 1)/per(cpuOne, 2), per(cpuWild, 1), per(cpuWild, 1)/per(cpuOne, 2))
}

type instance struct {
	pid  int
	addr string
}

func cpuOf(in instance, sni string, hs int) int64 {
	c0 := cpuNs(in.pid)
	handshakes(in.addr, sni, hs)
	return cpuNs(in.pid) - c0
}

// startWith starts lbd serving n certificates; the function stops it.
func startWith(lbd string, n int) (instance, func()) {
	dir, err := os.MkdirTemp("", "certscale")
	check(err)
	certs := filepath.Join(dir, "certs")
	check(os.Mkdir(certs, 0o700))
	writeCerts(certs, n)
	port := freePort()
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nListenHTTPS\n Address 127.0.0.1\n Port %d\n Cert %q\n Service\n  Redirect \"https://x.test/\"\n End\nEnd\n",
		port, filepath.Join(certs, "*.pem"))
	path := filepath.Join(dir, "lbd.cfg")
	check(os.WriteFile(path, []byte(cfg), 0o644))
	cmd := exec.Command(lbd, "-F", "-f", path)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListen(addr)
	handshakes(addr, "site0.exact.test", 50)
	return instance{pid: cmd.Process.Pid, addr: addr}, func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
}
