#!/usr/bin/env bash
# callgrind.sh: instructions per request through the real lbd binary, with
# and without the 10-rule program of bench/rules10.sh (bench/RESULTS.md §9).
# Noise does not move instruction counts, so this is the figure to compare
# between commits; peers.sh gives the wall-clock CPU on a quiet machine.
# The counter is valgrind's cachegrind without cache simulation (the same
# Ir callgrind counts: callgrind 3.19 aborts on a signal in Go's runtime),
# with asynchronous preemption off so no SIGURG reaches the process.
#
# Usage: bench/callgrind.sh [LBD]   (default bin/lbd)
#   N1, N2   request counts of the two runs [500, 2500]; the per-request
#            figure is (Ir(N2) - Ir(N1)) / (N2 - N1), so start-up and
#            shutdown cancel out.
#   PORT     upstreams on PORT+1, PORT+2, lbd on PORT+3 [18600]
#   URLPATH  request path [/100]: 100-byte bodies from the upstream
#   KEEP=DIR keep the cachegrind outputs there (cg_annotate FILE shows
#            where the instructions go)
#   OWN=1    also count the instructions outside Go's runtime (scheduler,
#            netpoll, timers, GC: their share follows wall time, which
#            valgrind stretches unevenly on a busy machine, so they are
#            the noise). Needs a binary with symbols:
#            go build -trimpath -o /tmp/lbd-sym ./cmd/lbd
# Needs valgrind, h2load (nghttp2-client: HTTP/1.1 keep-alive requests,
# as wrk sends them, but a fixed number of them) and Go (builds ../shared/bench/upstream,
# or $UPSTREAM). Every process it starts is stopped by PID.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LBD=$(realpath "${1:-$HERE/../bin/lbd}")
N1=${N1:-500}
N2=${N2:-2500}
PORT=${PORT:-18600}
URLPATH=${URLPATH:-/100}
UP1=$((PORT + 1))
UP2=$((PORT + 2))
LPORT=$((PORT + 3))
DIR=$(mktemp -d /tmp/lbd-callgrind.XXXXXX)
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$DIR"
}
trap cleanup EXIT

UPSTREAM=${UPSTREAM:-}
if [ -z "$UPSTREAM" ]; then
	(cd "$HERE/../../shared/bench/upstream" && go build -o "$DIR/upstream" .)
	UPSTREAM=$DIR/upstream
fi
"$UPSTREAM" -listen "127.0.0.1:$UP1,127.0.0.1:$UP2" -size 100 >/dev/null 2>&1 &
PIDS+=($!)

. "$HERE/peercfg.sh"
lbd_cfg ListenHTTP "$LPORT" "$UP1" "$UP2" >"$DIR/plain.cfg"
# rules10.sh writes plain-rules10.cfg, then runs its command (true).
"$HERE/rules10.sh" "$DIR/plain.cfg" true

wait_port() {
	for _ in $(seq 200); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "callgrind: nothing listens on port $1" >&2
	return 1
}

# instructions CFG N: total Ir of lbd serving N keep-alive requests. It
# runs in a subshell ($(...)), so it stops its own lbd on every path.
instructions() {
	local out=$DIR/cg.$2.$(basename "$1")
	GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out" \
		"$LBD" -F -f "$1" >"$DIR/lbd.log" 2>&1 &
	local pid=$!
	local ok=1
	if ! wait_port "$LPORT"; then
		ok=0
	elif ! h2load --h1 -c 1 -n "$2" "http://127.0.0.1:$LPORT$URLPATH" >"$DIR/load.log" 2>&1 ||
		! grep -q "^requests: $2 total, $2 started, $2 done, $2 succeeded" "$DIR/load.log"; then
		grep "^requests:\|^status codes:" "$DIR/load.log" >&2
		ok=0
	fi
	kill -TERM "$pid"
	wait "$pid" || true
	[ "$ok" = 1 ] || return 1
	if [ -n "${OWN:-}" ]; then
		# Ir of the functions outside the runtime, from the annotation.
		cg_annotate --threshold=0 "$out" | awk '
			/file:function/ { on = 1; next }
			on && $1 ~ /^[0-9,]+$/ && $NF !~ /^(\.\/runtime\/|\.\/internal\/runtime|\?\?\?)/ && $NF !~ /:runtime\./ {
				gsub(",", "", $1); n += $1 }
			END { print n }'
	else
		awk '/^summary:/ {print $2}' "$out"
	fi
	if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$out" "$KEEP/"; fi
}

wait_port "$UP1"
what=Ir
[ -n "${OWN:-}" ] && what="Ir outside the runtime"
printf '| config | %s at %d req | at %d req | per request |\n|---|---:|---:|---:|\n' "$what" "$N1" "$N2"
for cfg in plain plain-rules10; do
	a=$(instructions "$DIR/$cfg.cfg" "$N1") || exit 1
	b=$(instructions "$DIR/$cfg.cfg" "$N2") || exit 1
	printf '| %s | %d | %d | %d |\n' "$cfg" "$a" "$b" $(((b - a) / (N2 - N1)))
done
