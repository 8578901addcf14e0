#!/usr/bin/env bash
# peercfg.sh: the proxy configurations of ../shared/bench/peers.sh's setup,
# shared by the benchmark scripts (sourced): one listener on 127.0.0.1,
# one service round-robining two upstreams, keep-alive, logging off.

# lbd_cfg LISTENER PORT UP1 UP2 [LINE...]: lbd's, on stdout; LISTENER is
# ListenHTTP or ListenHTTPS, each LINE is added to it (Cert "...").
lbd_cfg() {
	local kind=$1 port=$2 up1=$3 up2=$4 line up
	shift 4
	printf 'Daemon 0\nLogLevel 0\n%s\n    Address 127.0.0.1\n    Port %s\n' "$kind" "$port"
	for line; do printf '    %s\n' "$line"; done
	printf '    Service "default"\n'
	for up in "$up1" "$up2"; do
		printf '        BackEnd\n            Address 127.0.0.1\n            Port %s\n        End\n' "$up"
	done
	printf '    End\nEnd\n'
}

# haproxy_cfg THREADS BIND UP1 UP2: HAProxy's, on stdout; BIND is the
# frontend's bind line after "bind" (address, and ssl options if any).
haproxy_cfg() {
	cat <<-EOF
		global
		    nbthread $1
		    maxconn 4096
		defaults
		    mode http
		    timeout connect 5s
		    timeout client 60s
		    timeout server 60s
		    timeout http-keep-alive 60s
		    http-reuse safe
		frontend fe
		    bind $2
		    default_backend be
		backend be
		    balance roundrobin
		    server s1 127.0.0.1:$3
		    server s2 127.0.0.1:$4
	EOF
}
