#!/usr/bin/env bash
# grpc.sh: gRPC through lbd and through HAProxy (Debian's, `proto h2` on
# both sides), same backend, same load, one run (bench/RESULTS.md §24).
#
# The proxy under test runs on CPU $PROXY_CPU [1] (lbd by taskset, so
# GOMAXPROCS is 1; HAProxy with nbthread 1); the backend (grpcpeer
# serve: grpc-go's interop TestService) and the load generator (grpcpeer
# load, grpc-go clients) share CPU $LOAD_CPU [0]. The clients speak h2c
# to the proxy, the proxy h2c to the backend. Loads:
#   unary   CALLS unary calls of 100 bytes each way, CONC callers at once
#   stream  SCALLS messages of 100 bytes ping-ponged on CONC long-lived
#           bidirectional streams
# CPU per call = utime+stime of the proxy (/proc/PID/stat, before and
# after) / calls. REPS rounds, targets interleaved; medians.
#
# Usage: make build bin/tools/grpcpeer && bench/grpc.sh
# Environment [defaults]: CALLS [40000] SCALLS [100000] CONC [32] REPS [3]
#   PORT [24100] (PORT..PORT+3) PROXY_CPU [1] LOAD_CPU [0] OUT_MD []
#   BASE_LBD [] another lbd binary (an older build, say) measured beside
#     the two as "lbd-base", with the same configuration

# Needs: haproxy, taskset (Debian: haproxy util-linux).
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=${CALLS:-40000} SCALLS=${SCALLS:-100000} CONC=${CONC:-32} REPS=${REPS:-3}
PORT=${PORT:-24100} PROXY_CPU=${PROXY_CPU:-1} LOAD_CPU=${LOAD_CPU:-0}
PEER=bin/tools/grpcpeer LBD=bin/lbd
die() { echo "grpc.sh: $*" >&2; exit 1; }
[[ -x $LBD && -x $PEER ]] || die "make build bin/tools/grpcpeer first"
for c in haproxy taskset; do command -v $c >/dev/null || die "$c missing"; done
BE=$PORT HA=$((PORT + 1)) LB=$((PORT + 2)) LB0=$((PORT + 3))
TARGETS="haproxy lbd"
tmp=$(mktemp -d /tmp/lbd-grpc-bench.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

taskset -c "$LOAD_CPU" "$PEER" serve -addr 127.0.0.1:$BE >"$tmp/peer.log" 2>&1 &
PIDS+=($!)
printf '%s\n' global '	nbthread 1' defaults '	mode http' '	timeout connect 5s' \
	'	timeout client 60s' '	timeout server 60s' 'frontend fe' "	bind 127.0.0.1:$HA proto h2" \
	'	default_backend be' 'backend be' "	server s1 127.0.0.1:$BE proto h2" >"$tmp/haproxy.cfg"
taskset -c "$PROXY_CPU" haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
HAPID=$!
PIDS+=($HAPID)
printf 'Daemon 0\nLogLevel 0\nTimeOut 60\nListenHTTP\n\tAddress 127.0.0.1\n\tPort %s\n\tHTTP2 1\n\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %s\n\t\t\tProtocol h2\n\t\tEnd\n\tEnd\nEnd\n' $LB $BE >"$tmp/lbd.cfg"
taskset -c "$PROXY_CPU" "$LBD" -e -f "$tmp/lbd.cfg" >"$tmp/lbd.log" 2>&1 &
LBPID=$!
PIDS+=($LBPID)
if [[ -n ${BASE_LBD:-} ]]; then
	sed "s/Port $LB\$/Port $LB0/" "$tmp/lbd.cfg" >"$tmp/lbd-base.cfg"
	taskset -c "$PROXY_CPU" "$BASE_LBD" -e -f "$tmp/lbd-base.cfg" >"$tmp/lbd-base.log" 2>&1 &
	BASEPID=$!
	PIDS+=($BASEPID)
	TARGETS="haproxy lbd lbd-base"
fi
sleep 1
for p in $BE $HA $LB ${BASE_LBD:+$LB0}; do "$PEER" unary -addr 127.0.0.1:$p >/dev/null || die "nothing serves gRPC on $p"; done

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
declare -A cpu rate
for ((r = 1; r <= REPS; r++)); do
	for load in unary stream; do
		for target in $TARGETS; do
			case $target in
			haproxy) pid=$HAPID port=$HA ;;
			lbd) pid=$LBPID port=$LB ;;
			*) pid=$BASEPID port=$LB0 ;;
			esac
			n=$CALLS flag=""
			[[ $load == stream ]] && n=$SCALLS flag=-stream
			t0=$(ticks $pid)
			out=$(taskset -c "$LOAD_CPU" "$PEER" load -addr 127.0.0.1:$port -n $n -c $CONC $flag) || die "$target $load: $out"
			t1=$(ticks $pid)
			us=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n=$n 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
			cps=$(sed -n 's/.*calls\/s=\([0-9]*\).*/\1/p' <<<"$out")
			cpu[$target.$load]+="$us " rate[$target.$load]+="$cps "
			echo "round $r $load $target: $us µs CPU/call, $cps calls/s" >&2
		done
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
{
	echo "| load | proxy | CPU µs per call (median of $REPS) | calls/s (median) | rounds (µs CPU per call) |"
	echo "|---|---|---|---|---|"
	for load in unary stream; do
		for target in $TARGETS; do
			echo "| $load | $target | $(median <<<"${cpu[$target.$load]}") | $(median <<<"${rate[$target.$load]}") | ${cpu[$target.$load]}|"
		done
	done
} | tee ${OUT_MD:+"$OUT_MD"}
