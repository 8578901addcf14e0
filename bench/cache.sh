#!/usr/bin/env bash
# cache.sh: the shared cache's cost (bench/RESULTS.md §21), lbd beside
# Varnish, one run:
#   varnish-hit   Varnish (default VCL, one thread pool), a 1 KiB hit
#   lbd-hit       lbd with Cache, the same 1 KiB hit
#   lbd-proxied   lbd without a cache, the same request relayed to the backend
#   varnish-1m    Varnish, a 1 MiB hit;  lbd-1m  lbd, a 1 MiB hit
# Each proxy runs on CPU $PROXY_CPU [1] (Varnish's child and lbd by
# taskset); wrk (-t1) and the backend (one nginx worker serving files)
# on CPU $LOAD_CPU [0]. Keep-alive. For each target REPS rounds of a wrk
# run of DURATION s with CONNS connections, interleaved; CPU per request
# = utime+stime of the proxy's process tree / requests; medians.
# Then memory: lbd with a 64 MiB cache filled with 640 MiB of distinct
# 64 KiB objects (ten times its budget): RSS before and after.
#
# With BASE=path/to/another/lbd, that binary serves the same cache
# config beside: targets base-hit and base-1m (a before/after in one run).
# MEMORY=0 skips the memory part.
#
# Usage: bench/cache.sh     (make build first)
# Environment [defaults]: DURATION [5] CONNS [4] REPS [3] PORT [21100]
#   PROXY_CPU [1] LOAD_CPU [0] OUT_MD [] also write the table there
#   TARGETS [all] BASE [] MEMORY [1]
# Needs: varnish nginx-light wrk util-linux (taskset).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/proc.sh
LBD=${LBD:-bin/lbd} DURATION=${DURATION:-5} CONNS=${CONNS:-4} REPS=${REPS:-3} PORT=${PORT:-21100}
PROXY_CPU=${PROXY_CPU:-1} LOAD_CPU=${LOAD_CPU:-0}
die() { echo "cache.sh: $*" >&2; exit 1; }
for c in nginx varnishd wrk taskset; do command -v $c >/dev/null || die "$c missing"; done
BE=$PORT VARNISH=$((PORT + 1)) LBD_C=$((PORT + 2)) LBD_P=$((PORT + 3)) LBD_M=$((PORT + 4)) LBD_B=$((PORT + 5))
BASE=${BASE:-} MEMORY=${MEMORY:-1}
for p in $BE $VARNISH $LBD_C $LBD_P $LBD_M $LBD_B; do port_open $p && die "port $p in use (set PORT=...)"; done

tmp=$(mktemp -d /tmp/lbd-cache-bench.XXXXXX)
PIDS=()
cleanup() { # errexit off: stop's wait returns the signalled status
	set +e
	local p
	for p in "${PIDS[@]}"; do stop "$p"; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# The backend: files of 1 KiB, 1 MiB and 64 KiB, cacheable for an hour.
chmod 755 "$tmp" # nginx's workers read the files
mkdir -p "$tmp/www/obj"
head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 >"$tmp/www/k1"
head -c 1048576 /dev/zero | tr '\0' 'm' >"$tmp/www/m1"
head -c 65536 /dev/zero | tr '\0' 'o' >"$tmp/www/o64"
cat >"$tmp/backend.conf" <<EOC
worker_processes 1;
pid $tmp/backend.pid;
error_log $tmp/backend.err;
events { worker_connections 1024; }
http {
	access_log off;
	keepalive_requests 100000000;
	server {
		listen 127.0.0.1:$BE;
		root $tmp/www;
		expires 1h;
		location /obj/ { try_files /o64 =404; }
	}
}
EOC
taskset -c "$LOAD_CPU" nginx -p "$tmp" -e "$tmp/backend.err" -c "$tmp/backend.conf" -g 'daemon off;' &
PIDS+=($!)

taskset -c "$PROXY_CPU" varnishd -F -n "$tmp/varnish" -a 127.0.0.1:$VARNISH -b 127.0.0.1:$BE \
	-s malloc,256m -p thread_pools=1 >"$tmp/varnish.log" 2>&1 &
VARNISH_PID=$!
PIDS+=($VARNISH_PID)

lbd_cfg() { # port, cache lines
	printf 'Daemon 0\nLogLevel 0\nThreads 1\nListenHTTP\n\tAddress 127.0.0.1\n\tPort %s\n\tService\n%s\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %s\n\t\tEnd\n\tEnd\nEnd\n' "$1" "$2" "$BE"
}
lbd_cfg $LBD_C $'\t\tCache 256m\n\t\tCacheMaxObject 2m\n' >"$tmp/lbd-cache.cfg"
lbd_cfg $LBD_P "" >"$tmp/lbd-plain.cfg"
lbd_cfg $LBD_M $'\t\tCache 64m\n' >"$tmp/lbd-mem.cfg"
taskset -c "$PROXY_CPU" "$LBD" -e -f "$tmp/lbd-cache.cfg" >"$tmp/lbd-cache.log" 2>&1 &
LBD_C_PID=$!
PIDS+=($LBD_C_PID)
taskset -c "$PROXY_CPU" "$LBD" -e -f "$tmp/lbd-plain.cfg" >"$tmp/lbd-plain.log" 2>&1 &
LBD_P_PID=$!
PIDS+=($LBD_P_PID)
for p in $BE $VARNISH $LBD_C $LBD_P; do wait_port $p || die "port $p did not open"; done

declare -A URL_OF=([varnish-hit]=http://127.0.0.1:$VARNISH/k1 [lbd-hit]=http://127.0.0.1:$LBD_C/k1
	[lbd-proxied]=http://127.0.0.1:$LBD_P/k1 [varnish-1m]=http://127.0.0.1:$VARNISH/m1 [lbd-1m]=http://127.0.0.1:$LBD_C/m1)
declare -A PID_OF=([varnish-hit]=$VARNISH_PID [lbd-hit]=$LBD_C_PID [lbd-proxied]=$LBD_P_PID [varnish-1m]=$VARNISH_PID [lbd-1m]=$LBD_C_PID)
TARGETS=${TARGETS:-varnish-hit lbd-hit lbd-proxied varnish-1m lbd-1m${BASE:+ base-hit base-1m}}
if [ -n "$BASE" ]; then
	lbd_cfg $LBD_B $'\t\tCache 256m\n\t\tCacheMaxObject 2m\n' >"$tmp/lbd-base.cfg"
	taskset -c "$PROXY_CPU" "$BASE" -e -f "$tmp/lbd-base.cfg" >"$tmp/lbd-base.log" 2>&1 &
	BASE_PID=$!
	PIDS+=($BASE_PID)
	wait_port $LBD_B || die "port $LBD_B did not open"
	URL_OF[base-hit]=http://127.0.0.1:$LBD_B/k1 URL_OF[base-1m]=http://127.0.0.1:$LBD_B/m1
	PID_OF[base-hit]=$BASE_PID PID_OF[base-1m]=$BASE_PID
fi

ticks() { # CPU ticks (utime+stime) of a process tree
	local p t=0 f
	for p in $(pids_of "$1"); do
		f=$(cut -d')' -f2- "/proc/$p/stat" 2>/dev/null) || continue
		set -- $f
		t=$((t + ${12} + ${13}))
	done
	echo $t
}

# Warm every cache, and check the hits are hits.
for t in "${!URL_OF[@]}"; do
	curl -s -o /dev/null "${URL_OF[$t]}"
	curl -s -o /dev/null "${URL_OF[$t]}"
done
h=$(curl -sI "http://127.0.0.1:$LBD_C/k1")
grep -qi '^Cache-Status: lbd; hit' <<<"$h" || die "lbd does not hit: $h"
h=$(curl -sI "http://127.0.0.1:$VARNISH/k1")
grep -qi '^X-Varnish: [0-9]* [0-9]' <<<"$h" || die "varnish does not hit: $h"

HZ=$(getconf CLK_TCK)
declare -A CPU RPS BPS MBS
for ((r = 1; r <= REPS; r++)); do
	for t in $TARGETS; do
		before=$(ticks "${PID_OF[$t]}")
		out=$(timeout $((DURATION + 30)) taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" "${URL_OF[$t]}")
		after=$(ticks "${PID_OF[$t]}")
		grep -q "Non-2xx\|Socket errors" <<<"$out" && die "$t: errors during the run:
$out"
		n=$(awk '/requests in/ { print $1 }' <<<"$out")
		rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$out")
		bps=$(awk '/^Transfer\/sec/ { print $2 }' <<<"$out")
		mbs=$(awk -v v="$bps" 'BEGIN { m = v + 0; u = v; sub(/^[0-9.]+/, "", u)
			f = u == "GB" ? 1073741824 : u == "MB" ? 1048576 : u == "KB" ? 1024 : 1; printf "%.0f", m * f / 1e6 }')
		us=$(awk -v d=$((after - before)) -v n="$n" -v hz="$HZ" 'BEGIN { printf "%.1f", d / hz * 1e6 / n }')
		CPU[$t]+="$us " RPS[$t]+="$rps " BPS[$t]+="$bps " MBS[$t]+="$mbs "
		echo "round $r $t: $n requests, $rps req/s, $bps/s, $us µs CPU/request" >&2
	done
done

# Memory: fill a 64 MiB cache with ten times as much.
if [ "$MEMORY" = 1 ]; then
	taskset -c "$PROXY_CPU" "$LBD" -e -f "$tmp/lbd-mem.cfg" >"$tmp/lbd-mem.log" 2>&1 &
	LBD_M_PID=$!
	PIDS+=($LBD_M_PID)
	wait_port $LBD_M || die "port $LBD_M did not open"
	curl -s -o /dev/null "http://127.0.0.1:$LBD_M/obj/warm"
	rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
	idle=$(rss $LBD_M_PID)
	cat >"$tmp/fill.lua" <<'EOL'
local n = 0
request = function() n = n + 1; return wrk.format(nil, "/obj/" .. n) end
EOL
	# 64 KiB x 10240 = 640 MiB: ten times the budget (wrk stops by time; the
	# count of distinct objects is printed below).
	out=$(timeout 120 taskset -c "$LOAD_CPU" wrk -t1 -c1 -d20s -s "$tmp/fill.lua" "http://127.0.0.1:$LBD_M")
	filled=$(awk '/requests in/ { print $1 }' <<<"$out")
	sleep 2
	full=$(rss $LBD_M_PID)
fi

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
{
	echo "${DURATION} s x $REPS rounds, $CONNS connections, proxy on CPU $PROXY_CPU, wrk and backend on CPU $LOAD_CPU, shared machine ($(date -u +%Y-%m-%d), lbd $(git describe --always --dirty 2>/dev/null || echo ?), $(varnishd -V 2>&1 | head -1))"
	echo
	echo "| target | µs CPU/request | req/s | MB/s (10^6, median) | transfer/s (wrk, rounds) |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	for t in $TARGETS; do
		echo "| $t | $(median <<<"${CPU[$t]}") | $(median <<<"${RPS[$t]}") | $(median <<<"${MBS[$t]}") | $(tr ' ' '\n' <<<"${BPS[$t]}" | grep . | tr '\n' ' ') |"
	done
	echo
	[ "$MEMORY" = 1 ] && echo "memory: lbd, Cache 64m, $filled distinct 64 KiB objects ($((filled * 64 / 1024)) MiB) through it: RSS idle $((idle / 1024)) MiB, after $((full / 1024)) MiB (budget 64 MiB; limit 1.3 x 64 + idle = $((83 + idle / 1024)) MiB)" && echo
	echo "rounds (µs CPU/request): $(for k in "${!CPU[@]}"; do echo -n "$k: ${CPU[$k]}; "; done)"
	echo
	echo "rounds (MB/s): $(for k in "${!MBS[@]}"; do echo -n "$k: ${MBS[$k]}; "; done)"
} | tee ${OUT_MD:+"$OUT_MD"}
