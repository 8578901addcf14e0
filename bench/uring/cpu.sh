#!/usr/bin/env bash
# cpu.sh: user/system CPU per request, req/s, p99 (interleaved reps) for haproxy, lbd and
# lbd with LBD_URING=1, same upstreams, same wrk load, one run.
# Usage: [REPS=5] [DUR=5] cpu.sh LBD_BIN [CONNS...]   (default conns: 50 400)
# machine_busy% = all CPU time on the machine (both CPUs, % of one) during the run.
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
REPS=${REPS:-5}
HZ=$(getconf CLK_TCK)
ticks() { local t=0 s; for task in /proc/$1/task/*; do s=$(cat $task/stat 2>/dev/null) || continue; s=${s##*) }; t=$((t + $(awk -v f=$2 '{print $f}' <<<"$s"))); done; echo $t; }
fticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
printf 'rep\ttarget\tconns\treqs\treq/s\tp99us\tuser_us/req\tsys_us/req\tcpu_us/req\tmachine_busy%%\n'
for ((rep = 1; rep <= REPS; rep++)); do
for c in $CONNS; do
for tgt in haproxy lbd lbd-uring; do
	case $tgt in
	haproxy) port=18610; GOMAXPROCS=1 taskset -c 1 haproxy -db -f "$T/ha.cfg" >/dev/null 2>&1 & ;;
	lbd) port=18611; GOMAXPROCS=1 taskset -c 1 "$LBD" -F -f "$T/lbd.cfg" >/dev/null 2>&1 & ;;
	lbd-uring) port=18612; LBD_URING=1 GOMAXPROCS=1 taskset -c 1 "$LBD" -F -f "$T/lbdu.cfg" >/dev/null 2>&1 & ;;
	esac
	pid=$!
	for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	timeout 20 taskset -c 0 wrk -t1 -c$c -d1s -H "Connection: keep-alive" http://127.0.0.1:$port/100 >/dev/null 2>&1
	u0=$(ticks $pid 12); s0=$(ticks $pid 13); m0=$(fticks)
	out=$(timeout 30 taskset -c 0 wrk -t1 -c$c -d${DUR}s -H "Connection: keep-alive" --latency http://127.0.0.1:$port/100 2>&1)
	u1=$(ticks $pid 12); s1=$(ticks $pid 13); m1=$(fticks)
	kill $pid; wait $pid 2>/dev/null
	awk -v rep=$rep -v t=$tgt -v c=$c -v u=$((u1-u0)) -v s=$((s1-s0)) -v m=$((m1-m0)) -v hz=$HZ -v d=$DUR '
		function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1e3; if (v ~ /s$/) return v * 1e6; return 0 }
		/ requests in / { r = $1 } /^Requests\/sec/ { rps = $2 } $1 == "99%" { p99 = us($2) }
		END { printf "%d\t%s\t%s\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.0f\n", rep, t, c, r, rps, p99, u*1e6/hz/r, s*1e6/hz/r, (u+s)*1e6/hz/r, 100*m/hz/d/2 }' <<<"$out"
done
done
done
