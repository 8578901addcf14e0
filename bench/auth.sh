#!/usr/bin/env bash
# auth.sh: CPU per request of edge authentication (bench/RESULTS.md §22):
# a request carrying an ES256 token that lbd has verified before (the
# verified-token cache answers), a request with an API key, and the same
# request to a service without authentication, all in one lbd process
# and one run.
#
# lbd runs on CPU $PROXY_CPU [1] (taskset: GOMAXPROCS 1); wrk (-t1) and
# the backend (one nginx worker answering `return 200`) share CPU
# $LOAD_CPU [0]. Keep-alive on both sides. Targets (listeners of one lbd):
#   plain   a service without Authenticate
#   jwt     Authenticate on a JWTAuth block (ES256 key from a JWK Set,
#           issuer and audience checked, sub forwarded as X-User); every
#           request carries the same token
#   apikey  Authenticate on an APIKeyAuth block (X-API-Key)
# For each target REPS rounds of a wrk run of DURATION seconds with CONNS
# connections, rounds interleaved; CPU per request = utime+stime of lbd
# (/proc/PID/stat, before and after) / requests answered; medians.
# The first verification's cost (no cache) is measured by the Go
# benchmarks of edgeauth/ (BenchmarkVerify*), which this script runs too.
#
# Usage: bench/auth.sh            (make build first: bin/lbd)
# Environment [defaults]: LBD [bin/lbd]  DURATION [8]  CONNS [4]  REPS [3]
#   PORT [18800] (PORT..PORT+3)  PROXY_CPU [1]  LOAD_CPU [0]
#   TARGETS ["plain jwt apikey"]
# Needs: nginx, wrk, taskset (Debian: nginx-light wrk util-linux)
set -euo pipefail
cd "$(dirname "$0")/.."
PIN=1
. bench/proc.sh

LBD=${LBD:-bin/lbd} DURATION=${DURATION:-8} CONNS=${CONNS:-4} REPS=${REPS:-3} PORT=${PORT:-18800}
PROXY_CPU=${PROXY_CPU:-1} LOAD_CPU=${LOAD_CPU:-0}
die() { echo "auth.sh: $*" >&2; exit 1; }
[[ -x $LBD ]] || die "$LBD missing (make build)"
for c in nginx wrk taskset; do command -v $c >/dev/null || die "$c missing"; done
[[ $DURATION =~ ^[0-9]+$ && $CONNS =~ ^[0-9]+$ && $REPS =~ ^[0-9]+$ && $PORT =~ ^[0-9]+$ ]] ||
	die "DURATION, CONNS, REPS and PORT are numbers"
BE=$PORT P_PLAIN=$((PORT + 1)) P_JWT=$((PORT + 2)) P_KEY=$((PORT + 3))
for p in $BE $P_PLAIN $P_JWT $P_KEY; do
	port_open $p && die "port $p in use (set PORT=...)"
done

tmp=$(mktemp -d /tmp/lbd-auth-bench.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do stop "$p"; done
	rm -rf "$tmp"
}
trap cleanup EXIT

TOKEN=$(GOFLAGS='' go run ./bench/authtoken -jwks "$tmp/keys.jwks" -keys "$tmp/api-keys") || die "bench/authtoken failed"

printf '%s\n' "worker_processes 1;" "pid $tmp/backend.pid;" "error_log $tmp/backend.err;" \
	"events { worker_connections 1024; }" \
	"http { access_log off; client_body_temp_path $tmp/bbody; keepalive_requests 100000000;" \
	"	server { listen 127.0.0.1:$BE; location / { return 200 \"ok\"; } } }" >"$tmp/backend.conf"
taskset -c "$LOAD_CPU" nginx -p "$tmp" -e "$tmp/backend.err" -c "$tmp/backend.conf" -g 'daemon off;' &
PIDS+=($!)

listener() { # PORT [NAME of the check to require]
	printf 'ListenHTTP\n\tAddress 127.0.0.1\n\tPort %s\n\tService\n' "$1"
	[[ -z ${2-} ]] || printf '\t\tAuthenticate "%s"\n' "$2"
	printf '\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %s\n\t\tEnd\n\tEnd\nEnd\n' "$BE"
}
{
	echo "Daemon 0"
	echo "LogLevel 0"
	printf 'JWTAuth "jwt"\n\tKeyFile "%s"\n\tAlgorithms "ES256"\n\tIssuer "https://idp.bench"\n\tAudience "api"\n\tForwardClaim "sub" "X-User"\nEnd\n' "$tmp/keys.jwks"
	printf 'APIKeyAuth "key"\n\tKeyFile -file "%s"\n\tForwardName "X-Key"\nEnd\n' "$tmp/api-keys"
	listener $P_PLAIN
	listener $P_JWT jwt
	listener $P_KEY key
} >"$tmp/lbd.cfg"
taskset -c "$PROXY_CPU" "$LBD" -e -f "$tmp/lbd.cfg" >"$tmp/lbd.log" 2>&1 &
LBD_PID=$!
PIDS+=($LBD_PID)
for p in $BE $P_PLAIN $P_JWT $P_KEY; do
	wait_port $p || die "nothing listens on $p: $(tail -3 "$tmp"/*.err "$tmp"/*.log 2>/dev/null)"
done

# The same request everywhere, plus the credential.
printf '%s\n' 'wrk.method = "GET"' 'wrk.path = "/api/orders?page=2"' 'wrk.headers["Host"] = "api.example"' \
	'wrk.headers["User-Agent"] = "bench/1"' 'wrk.headers["Accept"] = "application/json"' >"$tmp/plain.lua"
{ cat "$tmp/plain.lua"; printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$TOKEN"; } >"$tmp/jwt.lua"
{ cat "$tmp/plain.lua"; printf 'wrk.headers["X-API-Key"] = "bench-key"\n'; } >"$tmp/apikey.lua"
declare -A PORT_OF=([plain]=$P_PLAIN [jwt]=$P_JWT [apikey]=$P_KEY)
TARGETS=${TARGETS:-plain jwt apikey}

ticks() { # CPU ticks (utime+stime) of a process
	local f
	f=$(cut -d')' -f2- "/proc/$1/stat")
	set -- $f
	echo $((${12} + ${13}))
}

# Every target must answer 200 (a 401 would measure the refusal).
for t in $TARGETS; do
	out=$(timeout 20 taskset -c "$LOAD_CPU" wrk -t1 -c1 -d1s -s "$tmp/$t.lua" "http://127.0.0.1:${PORT_OF[$t]}" 2>&1)
	if grep -q "Non-2xx" <<<"$out"; then
		die "$t answers with errors: $out $(tail -5 "$tmp/lbd.log")"
	fi
done

HZ=$(getconf CLK_TCK)
declare -A CPU RPS
for ((r = 1; r <= REPS; r++)); do
	for t in $TARGETS; do
		before=$(ticks $LBD_PID)
		out=$(timeout $((DURATION + 30)) taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" \
			-s "$tmp/$t.lua" "http://127.0.0.1:${PORT_OF[$t]}")
		after=$(ticks $LBD_PID)
		if grep -q "Non-2xx\|Socket errors" <<<"$out"; then
			die "$t: errors during the run: $out"
		fi
		n=$(awk '/requests in/ { print $1 }' <<<"$out")
		rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$out")
		us=$(awk -v d=$((after - before)) -v n="$n" -v hz="$HZ" 'BEGIN { printf "%.2f", d / hz * 1e6 / n }')
		CPU[$t]+="$us " RPS[$t]+="$rps "
		echo "round $r $t: $n requests, $rps req/s, $us µs CPU/request" >&2
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "${DURATION} s x $REPS rounds, $CONNS connections, lbd on CPU $PROXY_CPU, wrk and backend on CPU $LOAD_CPU ($(date -u +%Y-%m-%d), lbd $(git describe --always --dirty 2>/dev/null || echo ?))"
echo
echo "| target | µs CPU/req | × plain | req/s | rounds (µs) |"
echo "| --- | ---: | ---: | ---: | --- |"
plain=$(median <<<"${CPU[plain]-}")
for t in $TARGETS; do
	m=$(median <<<"${CPU[$t]}")
	echo "| $t | $m | $(awk -v a="$m" -v b="$plain" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }') | $(median <<<"${RPS[$t]}") | ${CPU[$t]}|"
done
echo
echo "First verification and cached lookups (edgeauth benchmarks, -cpu 1, CPU $PROXY_CPU):"
GOFLAGS='' taskset -c "$PROXY_CPU" go test -run '^$' -bench 'Verify' -benchmem -benchtime 2s -cpu 1 ./edgeauth | grep '^Benchmark'
