#!/usr/bin/env bash
# tls.sh: TLS termination benchmark, lbd beside HAProxy, loopback only
# (issue 9). Same ECDSA P-256 certificate, same 2 upstreams
# (../shared/bench/upstream), same load tools, proxy pinned to one CPU.
#
# Scenarios (each DURATION seconds, after WARMUP):
#   handshake  wrk -t1 -cC with "Connection: close": every request is a new
#              connection and a full TLS 1.3 handshake (wrk does not resume)
#              -> the req/s column is full handshakes per second
#   h1         wrk -t1 -cC, HTTPS keep-alive requests per second
#   h2         h2load -t1 -cC -m M: HTTP/2 over TLS (ALPN h2), requests/s
# For each: req/s, the proxy's CPU time per request (utime+stime of its
# process tree / requests), errors, and the CPU other processes used
# meanwhile. Prints a markdown table; median of REPS.
#
# Usage: bench/tls.sh [-h]   (run `make build` first; needs wrk, h2load,
#        haproxy, openssl: apt-get install wrk nghttp2-client haproxy)
# Environment (defaults in brackets):
#   LBD [bin/lbd]  PEERS ["lbd haproxy"]  SCENARIOS ["handshake h1 h2"]
#   CONNS [50] connections;  STREAMS [10] h2 streams per connection
#   DURATION [10] WARMUP [2] seconds;  REPS [1];  SIZE [100] body bytes
#   PIN [1] proxy on CPU $PROXY_CPUS [1], load and upstreams on $LOAD_CPUS [0]
#   THREADS [1] proxy threads (GOMAXPROCS, haproxy nbthread)
#   PORT [18500] upstreams PORT+1, PORT+2; proxies from PORT+3
#   OUT_MD  also write the table there;  KEEP=1 keep the scratch dir
# Bounded: every load run has a timeout; every process started here is
# stopped by PID (TERM, then KILL after 5 s).

set -uo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi

LBD=${LBD:-bin/lbd}
PEERS=${PEERS:-"lbd haproxy"}
SCENARIOS=${SCENARIOS:-"handshake h1 h2"}
CONNS=${CONNS:-50} STREAMS=${STREAMS:-10}
DURATION=${DURATION:-10} WARMUP=${WARMUP:-2} REPS=${REPS:-1} SIZE=${SIZE:-100}
PIN=${PIN:-1} PROXY_CPUS=${PROXY_CPUS:-1} LOAD_CPUS=${LOAD_CPUS:-0} THREADS=${THREADS:-1}
PORT=${PORT:-18500}
UP1=$((PORT + 1)) UP2=$((PORT + 2)) LPORT=$((PORT + 2))
UPSTREAM_SRC=${UPSTREAM_SRC:-../shared/bench/upstream}

log() { printf 'tls: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
for tool in wrk h2load openssl; do command -v $tool >/dev/null || die "$tool missing (apt-get install wrk nghttp2-client openssl)"; done
[[ -x $LBD ]] || die "$LBD not built (make build)"
LBD=$(realpath "$LBD")
GO=$(command -v go || echo /usr/local/go/bin/go)
HZ=$(getconf CLK_TCK)
ulimit -n 65536 2>/dev/null || true

T=$(mktemp -d /tmp/tlsbench.XXXXXX) || die "mktemp failed"
TSV=$T/results.tsv
: >"$TSV"
UP_PID="" PROXY_PID=""

# pids_of, stop, foreign_ticks
. bench/proc.sh # the script runs from the repository root (cd above)
. bench/peercfg.sh
pin_sets
cpu_ticks() { # utime+stime (+ reaped children) of a process tree
	local p s t=0
	for p in $(pids_of "$1"); do
		s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		s=${s##*) }
		t=$((t + $(awk '{ print $12 + $13 + $14 + $15 }' <<<"$s")))
	done
	echo "$t"
}
cleanup() {
	stop "$PROXY_PID"
	stop "$UP_PID"
	if [[ ${KEEP:-0} == 1 ]]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- certificate and upstreams ------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=bench.test -addext subjectAltName=DNS:bench.test \
	-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || die "openssl req failed"
cat "$T/cert.pem" "$T/key.pem" >"$T/site.pem"
start_upstreams "$T" || die "the upstreams did not start"

# --- configs ---------------------------------------------------------------------
write_cfg() { # KIND FILE PORT
	case $1 in
	lbd) lbd_cfg ListenHTTPS "$3" "$UP1" "$UP2" "Cert \"$T/site.pem\"" >"$2" ;;
	haproxy) haproxy_cfg "$THREADS" "127.0.0.1:$3 ssl crt $T/site.pem alpn h2,http/1.1" "$UP1" "$UP2" >"$2" ;;
	esac
}

start_proxy() { # KIND PORT -> PROXY_PID
	local cfg=$T/$1.cfg
	write_cfg "$1" "$cfg" "$2"
	case $1 in
	lbd) GOMAXPROCS=$THREADS $PROXY_SET "$LBD" -e -f "$cfg" >"$T/$1.log" 2>&1 & ;;
	haproxy) $PROXY_SET haproxy -db -f "$cfg" >"$T/$1.log" 2>&1 & ;;
	esac
	PROXY_PID=$!
	wait_port "$2" || { log "$1 did not start: $(tail -3 "$T/$1.log")"; return 1; }
}

# load SCENARIO URL SECONDS OUT: runs the load tool, writes its output.
load() {
	case $1 in
	handshake) timeout -k 5 $(($3 + 30)) $LOAD_SET wrk -t1 -c"$CONNS" -d"$3s" --timeout 5s \
		-H "Connection: close" "$2" >"$4" 2>&1 ;;
	h1) timeout -k 5 $(($3 + 30)) $LOAD_SET wrk -t1 -c"$CONNS" -d"$3s" --timeout 5s \
		-H "Connection: keep-alive" "$2" >"$4" 2>&1 ;;
	h2) timeout -k 5 $(($3 + 30)) $LOAD_SET h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$3" "$2" >"$4" 2>&1 ;;
	esac
}

# parse OUT: "requests errors" from wrk or h2load output.
parse() {
	awk '/ requests in / { reqs = $1 }
		/Non-2xx/ { err += $NF }
		/Socket errors/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) err += $i + 0 }
		/^requests: / { reqs = $8; err += $10 + $12 + $14 }
		/^status codes: / { err += $5 + $7 }
		END { printf "%d %d\n", reqs, err }' "$1"
}

run_one() { # REP KIND SCENARIO
	local rep=$1 kind=$2 sc=$3 port t0 t1 reqs errs
	LPORT=$((LPORT + 1))
	while port_open "$LPORT"; do LPORT=$((LPORT + 1)); done
	port=$LPORT
	start_proxy "$kind" "$port" || { printf '%s\t%s\t%s\t\t\t\tstart failed\n' "$rep" "$kind" "$sc" >>"$TSV"; return; }
	local url=https://127.0.0.1:$port/$SIZE out=$T/$kind-$sc-$rep.out
	load "$sc" "$url" "$WARMUP" /dev/null
	local f0 f1
	f0=$(foreign_ticks) t0=$(cpu_ticks "$PROXY_PID")
	load "$sc" "$url" "$DURATION" "$out"
	t1=$(cpu_ticks "$PROXY_PID") f1=$(foreign_ticks)
	stop "$PROXY_PID"
	PROXY_PID=""
	read -r reqs errs < <(parse "$out")
	awk -v rep="$rep" -v k="$kind" -v sc="$sc" -v r="$reqs" -v e="$errs" -v d="$DURATION" -v n="$(nproc)" \
		-v ticks=$((t1 - t0)) -v f=$((f1 - f0)) -v hz="$HZ" 'BEGIN {
			printf "%s\t%s\t%s\t%.0f\t%.2f\t%d\t%s\t%.1f\n", rep, k, sc, r / d, r ? ticks * 1e6 / hz / r : 0, e,
				r ? "" : "no requests", 100 * f / hz / (d * n) }' >>"$TSV"
	tail -1 "$TSV" | awk -F'\t' '{ printf "tls: %-8s %-9s %9.0f req/s  cpu %7.2f us/req  errors %d  other %4.1f%% %s\n", $2, $3, $4, $5, $6, $8, $7 }' >&2
}

log "pin=$PIN threads=$THREADS conns=$CONNS streams=$STREAMS duration=${DURATION}s reps=$REPS"
for ((rep = 1; rep <= REPS; rep++)); do
	for sc in $SCENARIOS; do
		for kind in $PEERS; do
			[[ $kind == haproxy ]] && ! command -v haproxy >/dev/null && { log "haproxy missing, skipped"; continue; }
			run_one "$rep" "$kind" "$sc"
		done
	done
done

{
	echo "TLS on loopback, ECDSA P-256 certificate, ${DURATION}s runs, median of $REPS; proxy on CPU $PROXY_CPUS," \
		"load tools and upstreams on CPU $LOAD_CPUS (pin=$PIN); threads=$THREADS; conns=$CONNS, h2 streams=$STREAMS;" \
		"$(haproxy -v 2>/dev/null | head -1 | cut -d' ' -f1-3)"
	echo
	echo "Other % = CPU used by processes not started here, plus steal (% of all CPUs): above ~5 the run was disturbed."
	echo
	echo "| target | scenario | req/s | CPU µs/req | errors | other % |"
	echo "|---|---|---:|---:|---:|---:|"
	awk -F'\t' '
		function med(key, col,   n, i, j, t, a) {
			n = cnt[key]; for (i = 1; i <= n; i++) a[i] = v[key, col, i]
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		$4 == "" { next }
		{ key = $3 SUBSEP $2; if (!(key in cnt)) order[++nk] = key
		  n = ++cnt[key]; v[key, 4, n] = $4; v[key, 5, n] = $5; v[key, 8, n] = $8; errs[key] += $6 }
		END { for (k = 1; k <= nk; k++) { split(order[k], f, SUBSEP)
			printf "| %s | %s | %.0f | %.2f | %d | %.1f |\n", f[2], f[1], med(order[k], 4), med(order[k], 5),
				errs[order[k]], med(order[k], 8) } }' "$TSV"
} >"$T/table.md"
echo
cat "$T/table.md"
[[ -n ${OUT_MD:-} ]] && cp "$T/table.md" "$OUT_MD"
exit 0
