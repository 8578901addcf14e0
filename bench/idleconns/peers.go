//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// proxySpec is what every proxy's configuration says alike: listen on
// port, forward to backend, keep idle clients for client seconds; with
// cert, terminate TLS with that certificate (and its key, in the same
// file), offering h2 and http/1.1 by ALPN.
type proxySpec struct {
	dir           string
	port, backend int
	client        int
	n             int
	cert          string
}

func (p proxySpec) write(name, cfg string) string {
	path := filepath.Join(p.dir, name)
	check(os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func (p proxySpec) lbd(bin string) *exec.Cmd {
	listen := "ListenHTTP"
	if p.cert != "" {
		listen = "ListenHTTPS\n Cert \"" + p.cert + "\""
	}
	cfg := fmt.Sprintf("Daemon 0\nLogLevel 0\nClient %d\n%s\n Address 127.0.0.1\n Port %d\n Service\n  BackEnd\n   Address 127.0.0.1\n   Port %d\n  End\n End\nEnd\n",
		p.client, listen, p.port, p.backend)
	return exec.Command(bin, "-F", "-f", p.write("lbd.cfg", cfg))
}

// haproxy is Debian's HAProxy in one process (-db), HTTP mode, its
// threads as many as the CPUs (its default, as lbd's GOMAXPROCS). Its
// ulimit-n is the process's limit: HAProxy reserves two descriptors per
// maxconn and refuses to start above the hard limit otherwise, though
// idle client connections need one each.
func (p proxySpec) haproxy() *exec.Cmd {
	var l syscall.Rlimit
	check(syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l))
	cfg := fmt.Sprintf(`global
	maxconn %d
	ulimit-n %d
defaults
	mode http
	timeout connect 5s
	timeout client %ds
	timeout server 30s
	timeout http-keep-alive %ds
frontend f
	bind 127.0.0.1:%d%s
	default_backend b
backend b
	server s1 127.0.0.1:%d
`, p.n+500, l.Max, p.client, p.client, p.port, p.haproxyTLS(), p.backend)
	return exec.Command("haproxy", "-db", "-f", p.write("haproxy.cfg", cfg))
}

func (p proxySpec) haproxyTLS() string {
	if p.cert == "" {
		return ""
	}
	return " ssl crt " + p.cert + " alpn h2,http/1.1"
}

// nginx is Debian's nginx (nginx-light will do) as one process
// (master_process off, so the RSS measured is the worker's).
func (p proxySpec) nginx() *exec.Cmd {
	cfg := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile %d;
pid %s/nginx.pid;
error_log %s/nginx.err warn;
events { worker_connections %d; }
http {
	access_log off;
	keepalive_timeout %ds;
	keepalive_requests 1000000;
	client_body_temp_path %s;
	proxy_temp_path %s;
	fastcgi_temp_path %s;
	uwsgi_temp_path %s;
	scgi_temp_path %s;
	http2_idle_timeout %ds;
	server {
		listen 127.0.0.1:%d%s;
		location / { proxy_pass http://127.0.0.1:%d; }
	}
}
`, p.fds(), p.dir, p.dir, p.fds(), p.client, p.dir, p.dir, p.dir, p.dir, p.dir, p.client, p.port, p.nginxTLS(), p.backend)
	return exec.Command("nginx", "-p", p.dir, "-c", p.write("nginx.conf", cfg))
}

// nginxTLS: nginx 1.22 spells HTTP/2 on the listen line; ALPN then
// offers h2 and http/1.1.
func (p proxySpec) nginxTLS() string {
	if p.cert == "" {
		return ""
	}
	return " ssl http2;\n\t\tssl_certificate " + p.cert + ";\n\t\tssl_certificate_key " + p.cert
}

// fds is what nginx may open: twice the connections (client and
// upstream sides), within the hard limit.
func (p proxySpec) fds() uint64 {
	var l syscall.Rlimit
	check(syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l))
	return min(uint64(2*p.n+1000), l.Max)
}
