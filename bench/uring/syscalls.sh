#!/usr/bin/env bash
# syscalls.sh: system calls per request (strace -c -f -p) for haproxy, lbd and
# lbd with LBD_URING=1, same upstreams, same wrk load, one run.
# Usage: syscalls.sh LBD_BIN [CONNS...]   (default conns: 50 400)
set -uo pipefail
LBD=$1; shift
CONNS=${*:-"50 400"}
DUR=${DUR:-5}
T=$(mktemp -d /tmp/sysc.XXXXXX)
UP=18601
(cd "$(dirname "$0")"/../../../shared/bench/upstream && GOWORK=off GOFLAGS='' go build -o "$T/upstream" .) || exit 1
taskset -c 0 "$T/upstream" -listen 127.0.0.1:$UP,127.0.0.1:$((UP+1)) -size 100 2>/dev/null &
UPID=$!
trap 'kill $UPID 2>/dev/null; rm -rf $T' EXIT
cat >"$T/ha.cfg" <<EOC
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
    http-reuse safe
frontend fe
    bind 127.0.0.1:18610
    default_backend be
backend be
    balance roundrobin
    server s1 127.0.0.1:$UP
    server s2 127.0.0.1:$((UP+1))
EOC
pcfg() {
	cat <<EOC
Daemon 0
LogLevel 0
ListenHTTP
    Address 127.0.0.1
    Port $1
    Service "default"
        BackEnd
            Address 127.0.0.1
            Port $UP
        End
        BackEnd
            Address 127.0.0.1
            Port $((UP+1))
        End
    End
End
EOC
}
pcfg 18611 >"$T/lbd.cfg"; pcfg 18612 >"$T/lbdu.cfg"
sleep 0.5
printf '| target | conns | requests | syscalls | syscalls/req | top calls per request |\n|---|---:|---:|---:|---:|---|\n'
for c in $CONNS; do
for tgt in haproxy lbd lbd-uring; do
	case $tgt in
	haproxy) port=18610; GOMAXPROCS=1 taskset -c 1 haproxy -db -f "$T/ha.cfg" >/dev/null 2>&1 & ;;
	lbd) port=18611; GOMAXPROCS=1 taskset -c 1 "$LBD" -F -f "$T/lbd.cfg" >/dev/null 2>&1 & ;;
	lbd-uring) port=18612; LBD_URING=1 GOMAXPROCS=1 taskset -c 1 "$LBD" -F -f "$T/lbdu.cfg" >/dev/null 2>&1 & ;;
	esac
	pid=$!
	for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	timeout 20 taskset -c 0 wrk -t1 -c$c -d2s -H "Connection: keep-alive" http://127.0.0.1:$port/100 >/dev/null 2>&1
	strace -c -f -p $pid -o "$T/st" 2>/dev/null &
	sp=$!
	sleep 0.5
	out=$(timeout 30 taskset -c 0 wrk -t1 -c$c -d${DUR}s -H "Connection: keep-alive" http://127.0.0.1:$port/100 2>&1)
	kill -INT $sp; wait $sp
	kill $pid; wait $pid 2>/dev/null
	reqs=$(awk '/ requests in /{print $1}' <<<"$out")
	awk -v t=$tgt -v c=$c -v r=$reqs '
		$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { calls = $4; name = $NF; tot += calls; n[name] = calls }
		END { s = ""; for (k in n) if (n[k] / r >= 0.01) s = s sprintf("%s %.2f, ", k, n[k] / r)
			printf "| %s | %s | %d | %d | %.3f | %s |\n", t, c, r, tot, tot / r, s }' "$T/st"
done
done
