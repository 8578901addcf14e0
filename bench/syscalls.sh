#!/usr/bin/env bash
# syscalls.sh: system calls per request, lbd beside HAProxy (issue 20).
#
# Same setup as ../shared/bench/peers.sh: 2 upstreams, round robin over
# them, keep-alive on both sides, logging off, the proxy on CPU 1 with one
# worker (GOMAXPROCS=1, nbthread 1), wrk -t1 and the upstreams on CPU 0.
# For each proxy and each connection count, after a warm-up, a wrk run of
# DURATION seconds for each of these (TRACERS picks the counted ones):
#   clean   no tracer: req/s, p99, CPU µs per request (utime+stime / requests,
#           and each apart)
#   perf    perf stat counting syscall tracepoints on the proxy (cheap: the
#           timing barely moves, so this is what the proxy does untraced)
#   strace  strace -c -f -p PID attached for the run (Debian strace; it
#           stops the proxy at every call, which gives peers time to
#           answer: reads that would fail untraced often succeed here)
#   sched   (on request, see TRACERS) context switches of both CPUs
# and prints, per request: read (read+recvfrom+recvmsg+readv), of those
# EAGAIN, write (write+sendto+sendmsg+writev), epoll_wait (+epoll_pwait), futex, other
# and total. Medians over REPS.
#
# Usage: bench/syscalls.sh [-h] [NAME=LBD_BINARY ...]
#   default: lbd=bin/lbd (run `make build` first). Several lbd builds can
#   be compared in one run: bench/syscalls.sh before=/tmp/lbd-main after=bin/lbd
#   GLOBAL_<NAME>="LINE" puts LINE at the top of target NAME's config, so
#   one binary can run twice with different settings:
#   GLOBAL_nohdr="HeaderOption none" bench/syscalls.sh lbd=bin/lbd nohdr=bin/lbd
# Environment (defaults in brackets):
#   PEERS ["haproxy"] other proxies (haproxy only; empty: none)
#   CONNS ["50 400"]  DURATION [5]  WARMUP [2]  REPS [1]  SIZE [100] body bytes
#   TRACERS ["perf strace"] which counted runs to make (clean always runs);
#           "sched" adds one recording context switches (perf record),
#           read for the proxy's CPU (needs PIN=1): CPU time other tasks
#           took there, and how long they kept the proxy off it at a
#           stretch; and the load CPU's context switches per request
#           (RESULTS §16.11)
#   PIN [1] proxy on CPU $PROXY_CPUS [1], wrk+upstreams on $LOAD_CPUS [0]
#   PORT [18600] upstreams PORT+1, PORT+2; proxies from PORT+3
#   UPSTREAM [go] the upstreams: go (../shared/bench/upstream, as peers.sh)
#                or nginx (one worker: another upstream, same load CPU)
#   THINK [] milliseconds each wrk connection waits between a response
#                and its next request (wrk's delay() hook; wrk times a request
#                from its send, so the wait is not in the latency): a lighter
#                load that leaves the load CPU idle part of the time, so p99
#                is less the load side's queue (RESULTS §16.12)
#   ORDER [alternate] targets forwards in odd reps, backwards in even ones
#                (fixed: always forwards)
#   OUT_MD also write the tables there;  OUT_TSV raw rows;  KEEP=1 keep scratch
#   PROFILE=DIR  in the first rep, one more run of each lbd, started afresh,
#                with its CPU profile in DIR/NAME-cCONNS-r1.prof
#                (LBD_CPUPROFILE) and, with TRACE=1, its execution trace
#                beside it (LBD_TRACE)
# Bounded: every wrk, perf and strace run has a timeout; every process
# started here is stopped by PID (TERM, then KILL after 5 s).

set -uo pipefail
[[ -n ${PROFILE:-} ]] && PROFILE=$(realpath -m "$PROFILE")
cd "$(dirname "$0")/.."
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi

PEERS=${PEERS-haproxy}
CONNS=${CONNS:-"50 400"}
DURATION=${DURATION:-5} WARMUP=${WARMUP:-2} REPS=${REPS:-1} SIZE=${SIZE:-100}
TRACERS=${TRACERS-"perf strace"}
PIN=${PIN:-1} PROXY_CPUS=${PROXY_CPUS:-1} LOAD_CPUS=${LOAD_CPUS:-0}
PORT=${PORT:-18600}
UP1=$((PORT + 1)) UP2=$((PORT + 2)) LPORT=$((PORT + 2))
UPSTREAM_SRC=${UPSTREAM_SRC:-../shared/bench/upstream}

log() { printf 'syscalls: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
command -v wrk >/dev/null || die "wrk missing (apt-get install wrk)"
[[ -z ${THINK:-} || $THINK =~ ^[0-9]+$ ]] || die "THINK is whole milliseconds, not '$THINK'"
[[ ${UPSTREAM:-go} == go ]] || [[ $UPSTREAM == nginx ]] || die "UPSTREAM is go or nginx"
[[ ${UPSTREAM:-go} != nginx ]] || command -v nginx >/dev/null || die "nginx missing (apt-get install nginx-light)"
if [[ " $TRACERS " == *" strace "* ]] && ! command -v strace >/dev/null; then
	log "strace missing (apt-get install strace): strace runs skipped"
	TRACERS=${TRACERS//strace/}
fi
if [[ " $TRACERS " == *" perf "* ]] && ! perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1; then
	log "perf cannot count syscall tracepoints here: perf runs skipped"
	TRACERS=${TRACERS//perf/}
fi
if [[ " $TRACERS " == *" sched "* ]] && { [[ $PIN != 1 ]] || ! perf record -e sched:sched_switch -o /dev/null -- true >/dev/null 2>&1; }; then
	log "perf cannot record sched_switch here (or PIN=0): sched runs skipped"
	TRACERS=${TRACERS//sched/}
fi
GO=$(command -v go || echo /usr/local/go/bin/go)
HZ=$(getconf CLK_TCK)
ulimit -n 65536 2>/dev/null || true

# targets: NAMES[i] kind BINS[i]
NAMES=() KINDS=() BINS=()
(($#)) || set -- lbd=bin/lbd
for a in "$@"; do
	[[ $a == *=* ]] || a="$(basename "$a")=$a"
	bin=${a#*=}
	[[ -x $bin ]] || die "${bin} is not an executable (make build?)"
	NAMES+=("${a%%=*}") KINDS+=(lbd) BINS+=("$(realpath "$bin")")
done
for p in $PEERS; do
	case $p in
	haproxy) command -v haproxy >/dev/null && { NAMES+=(haproxy) KINDS+=(haproxy) BINS+=(haproxy); } ||
		log "haproxy missing, skipped" ;;
	*) die "unknown peer $p" ;;
	esac
done

T=$(mktemp -d /tmp/syscalls.XXXXXX) || die "mktemp failed"
THINK_SCRIPT=
if [[ -n ${THINK:-} ]]; then
	THINK_SCRIPT=$T/think.lua
	printf 'function delay()\n\treturn %d\nend\n' "$THINK" >"$THINK_SCRIPT"
fi
TSV=$T/results.tsv
: >"$TSV"
UP_PID="" PROXY_PID="" TRACER_PID=""

# pids_of, stop, foreign_ticks
. bench/proc.sh # the script runs from the repository root (cd above)
. bench/peercfg.sh
pin_sets
cpu_ticks() { # "user system" ticks (with reaped children) of a process tree
	local p s u=0 k=0
	for p in $(pids_of "$1"); do
		s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		s=${s##*) }
		read -r s <<<"$(awk '{ print $12 + $14, $13 + $15 }' <<<"$s")"
		u=$((u + ${s% *})) k=$((k + ${s#* }))
	done
	echo "$u $k"
}
# cpu_busy CPUS: "busy all" ticks of the listed CPUs (comma-separated
# numbers) from /proc/stat, to tell a run bound by its load side (wrk and
# the upstreams at ~100 % of their CPU) from one bound by the proxy.
cpu_busy() {
	awk -v list=",$1," '$1 ~ /^cpu[0-9]+$/ && index(list, "," substr($1, 4) ",") {
			b += $2 + $3 + $4 + $7 + $8; a += $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }
		END { print b + 0, a + 0 }' /proc/stat
}
cleanup() {
	stop "$TRACER_PID"
	stop "$PROXY_PID"
	stop "$UP_PID"
	if [[ ${KEEP:-0} == 1 ]]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_upstreams "$T" || die "the upstreams did not start"

write_cfg() { # KIND FILE PORT GLOBALVAR: the configs peers.sh writes
	case $1 in
	lbd) { [[ -n ${!4:-} ]] && printf '%s\n' "${!4}"; lbd_cfg ListenHTTP "$3" "$UP1" "$UP2"; } >"$2" ;;
	haproxy) haproxy_cfg 1 "127.0.0.1:$3" "$UP1" "$UP2" >"$2" ;;
	esac
}

start_proxy() { # INDEX PORT TAG [ENV...] -> PROXY_PID
	local cfg=$T/$3.cfg
	write_cfg "${KINDS[$1]}" "$cfg" "$2" "GLOBAL_${NAMES[$1]//[^A-Za-z0-9_]/_}"
	case ${KINDS[$1]} in
	lbd) env GOMAXPROCS=1 "${@:4}" $PROXY_SET "${BINS[$1]}" -F -f "$cfg" >"$T/$3.log" 2>&1 & ;;
	haproxy) $PROXY_SET haproxy -db -f "$cfg" >"$T/$3.log" 2>&1 & ;;
	esac
	PROXY_PID=$!
	wait_port "$2" || { log "${NAMES[$1]} did not start: $(tail -3 "$T/$3.log")"; return 1; }
	"$T/upstream" -probe "http://127.0.0.1:$2/$SIZE" -n 16 -want 2 2>"$T/$3.probe" ||
		{ log "${NAMES[$1]} probe failed: $(tail -1 "$T/$3.probe")"; return 1; }
}

wrk_run() { # CONNS URL SECONDS OUT
	timeout -k 5 $(($3 + 30)) $LOAD_SET wrk -t1 -c"$1" -d"$3s" --timeout 5s --latency \
		${THINK_SCRIPT:+-s "$THINK_SCRIPT"} -H "Connection: keep-alive" "$2" >"$4" 2>&1
}
# wrk_stats OUT: "requests req/s p99_us errors"
wrk_stats() {
	awk 'function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1e3; if (v ~ /s$/) return v * 1e6; return 0 }
		/ requests in / { reqs = $1 }
		/^Requests\/sec:/ { rps = $2 }
		$1 == "99%" { p99 = us($2) }
		/Non-2xx/ { err += $NF }
		/Socket errors/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) err += $i + 0 }
		END { printf "%d %.0f %.0f %d\n", reqs, rps, p99, err }' "$1"
}

# The syscall classes, as "name class" for both tracers' outputs.
CLASSES='read read
recvfrom read
readv read
recvmsg read
write write
sendto write
writev write
sendmsg write
epoll_wait epoll
epoll_pwait epoll
futex futex'

# counts_strace FILE: "read eagain write epoll futex total" from strace -c.
counts_strace() {
	awk -v classes="$CLASSES" '
		BEGIN { n = split(classes, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], f, " "); cls[f[1]] = f[2] } }
		$NF == "total" { total = $4; next }
		$1 ~ /^[0-9.]+$/ && NF >= 5 {
			name = $NF; calls = $4; errs = NF == 6 ? $5 : 0
			if (name in cls) { c[cls[name]] += calls; if (cls[name] == "read") eagain += errs }
		}
		END { printf "%d %d %d %d %d %d\n", c["read"], eagain, c["write"], c["epoll"], c["futex"], total }' "$1"
}

PERF_EVENTS=(-e raw_syscalls:sys_enter)
for n in read recvfrom recvmsg readv write sendto sendmsg writev epoll_wait epoll_pwait futex; do
	PERF_EVENTS+=(-e "syscalls:sys_enter_$n")
done
for n in read recvfrom recvmsg; do PERF_EVENTS+=(-e "syscalls:sys_exit_$n" --filter 'ret == -11'); done

# counts_perf FILE: the same from perf stat -x, output.
counts_perf() {
	awk -F, -v classes="$CLASSES" '
		BEGIN { n = split(classes, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], f, " "); cls[f[1]] = f[2] } }
		{ v = $1 + 0; ev = $3 }
		ev == "raw_syscalls:sys_enter" { total = v; next }
		ev ~ /^syscalls:sys_exit_/ { eagain += v; next }
		ev ~ /^syscalls:sys_enter_/ { name = ev; sub(/^syscalls:sys_enter_/, "", name); if (name in cls) c[cls[name]] += v }
		END { printf "%d %d %d %d %d %d\n", c["read"], eagain, c["write"], c["epoll"], c["futex"], total }' "$1"
}

# traced TRACER PID CONNS URL TAG: a wrk run with the tracer attached to
# the proxy; prints "requests read eagain write epoll futex total".
traced() {
	local tracer=$1 pid=$2 out=$T/$5.$1 i
	case $tracer in
	perf) timeout -s INT -k 5 $((DURATION + 40)) perf stat -x, -o "$out" "${PERF_EVENTS[@]}" -p "$pid" \
		2>"$out.err" & ;;
	strace) timeout -s INT -k 5 $((DURATION + 40)) strace -c -f -p "$pid" -o "$out" 2>"$out.err" & ;;
	sched) # over the middle of the wrk run; perf itself on the load side
		wrk_run "$3" "$4" "$DURATION" "$T/$5.$1.wrk" &
		local wrk_pid=$!
		sleep 1
		# (perf sched record leaves out switches away from idle here)
		timeout -k 5 $((DURATION + 40)) $LOAD_SET perf record -e sched:sched_switch -a \
			-o "$out.data" -- sleep $((DURATION > 3 ? DURATION - 2 : 1)) \
			>/dev/null 2>"$out.err"
		wait "$wrk_pid"
		local p99 rps
		read -r _ rps p99 _ < <(wrk_stats "$T/$5.$1.wrk")
		echo "$p99 $(sched_stats "$out.data" "$pid" "$rps")"
		[[ ${KEEP:-0} == 1 ]] || rm -f "$out.data"
		return ;;
	esac
	TRACER_PID=$!
	# attached once strace reports it (every thread), or after 1 s for perf
	for ((i = 0; i < 50; i++)); do
		[[ $tracer == strace ]] && grep -q 'Process .* attached' "$out.err" 2>/dev/null && break
		[[ $tracer == perf ]] && ((i >= 10)) && break
		sleep 0.1
	done
	sleep 0.2
	wrk_run "$3" "$4" "$DURATION" "$T/$5.$1.wrk"
	kill -INT "$TRACER_PID" 2>/dev/null
	wait "$TRACER_PID" 2>/dev/null
	TRACER_PID=""
	local reqs
	read -r reqs _ < <(wrk_stats "$T/$5.$1.wrk")
	echo "$reqs $(counts_"$tracer" "$out")"
}

# sched_stats DATA PID RPS: from the context switches of the proxy's CPU
# (the proxy still running): "other_ms_per_s longest_stretch_ms
# stretches_over_0.5ms_per_s", then the load CPU's context switches and
# preemptions per request (RPS: the run's requests per second). "Other" is any task but the proxy's
# threads and the idle task running there (kernel threads, the VM's
# agent...); a stretch is their time between two runs of the proxy: how
# long they kept it off its CPU. (How long the proxy waits after a
# wake-up is not read here: Go's sysmon thread, woken by its timer, waits
# for the thread serving requests, which would count as the proxy's.)
sched_stats() {
	perf script -i "$1" -F cpu,time,event,trace 2>/dev/null | awk -v cpu="[$(printf '%03d' "$PROXY_CPUS")]" \
		-v load="[$(printf '%03d' "${LOAD_CPUS%%,*}")]" -v rps="$3" -v tids=" $(ls "/proc/$2/task" | tr '\n' ' ') " '
		function val(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
		function ours(p) { return index(tids, " " p " ") > 0 }
		{ t = $2 + 0; if (!t0) t0 = t; t1 = t }
		$3 == "sched:sched_switch:" && $1 == load { lsw++; if (val("prev_state") == "R") lpre++; next }
		$3 != "sched:sched_switch:" || $1 != cpu { next }
		{ prev = val("prev_pid"); nxt = val("next_pid")
		  if (last && prev != 0 && !ours(prev)) { r = (t - last) * 1000; other += r; streak += r }
		  last = t
		  if (ours(nxt)) { if (streak > smax) smax = streak; if (streak > 0.5) long++; streak = 0 } }
		END { s = t1 - t0 > 0 ? t1 - t0 : 1
		  q = rps > 0 ? rps * s : 1e100
		  printf "%.2f %.3f %.2f %.3f %.3f\n", other / s, smax, long / s, lsw / q, lpre / q }'
}

run_one() { # REP INDEX CONNS
	local rep=$1 i=$2 c=$3 name=${NAMES[$2]} tag="${NAMES[$2]}-c$3-r$1" port t0 t1 reqs rps p99 errs
	LPORT=$((LPORT + 1))
	while port_open "$LPORT"; do LPORT=$((LPORT + 1)); done
	port=$LPORT
	if ! start_proxy "$i" "$port" "$tag"; then
		stop "$PROXY_PID"
		PROXY_PID=""
		return
	fi
	local url=http://127.0.0.1:$port/$SIZE
	wrk_run "$c" "$url" "$WARMUP" /dev/null
	local f0 f1 u0 k0 u1 k1 lb0 la0 lb1 la1 pb0 pa0 pb1 pa1
	f0=$(foreign_ticks)
	read -r u0 k0 <<<"$(cpu_ticks "$PROXY_PID")"
	read -r lb0 la0 <<<"$(cpu_busy "$LOAD_CPUS")"
	read -r pb0 pa0 <<<"$(cpu_busy "$PROXY_CPUS")"
	wrk_run "$c" "$url" "$DURATION" "$T/$tag.wrk"
	read -r pb1 pa1 <<<"$(cpu_busy "$PROXY_CPUS")"
	read -r lb1 la1 <<<"$(cpu_busy "$LOAD_CPUS")"
	read -r u1 k1 <<<"$(cpu_ticks "$PROXY_PID")"
	f1=$(foreign_ticks)
	read -r reqs rps p99 errs < <(wrk_stats "$T/$tag.wrk")
	awk -v r="$rep" -v n="$name" -v c="$c" -v q="$reqs" -v rps="$rps" -v p="$p99" -v e="$errs" \
		-v u=$((u1 - u0)) -v k=$((k1 - k0)) -v hz="$HZ" -v f=$((f1 - f0)) -v d="$DURATION" -v ncpu="$(nproc)" \
		-v lb=$((lb1 - lb0)) -v la=$((la1 - la0)) -v pb=$((pb1 - pb0)) -v pa=$((pa1 - pa0)) \
		'BEGIN { q = q > 0 ? q : 1e100; la = la > 0 ? la : 1; pa = pa > 0 ? pa : 1
			printf "%s\t%s\t%s\tclean\t%s\t%s\t%s\t%.2f\t%.1f\t%.2f\t%.2f\t%.1f\t%.1f\n", r, n, c, rps, p, e, (u + k) * 1e6 / hz / q,
			100 * f / hz / (d * ncpu), u * 1e6 / hz / q, k * 1e6 / hz / q, 100 * lb / la, 100 * pb / pa }' >>"$TSV"
	log "$(tail -1 "$TSV" | awk -F'\t' '{ printf "%-10s c=%-4s %8.0f req/s  p99 %6.0f us  cpu %5.2f us/req (user %.2f, system %.2f)  errors %d  other %s%%  busy: load %s%% proxy %s%%",
		$2, $3, $5, $6, $8, $10, $11, $7, $9, $12, $13 }')"
	local tr v
	for tr in $TRACERS; do
		v=$(traced "$tr" "$PROXY_PID" "$c" "$url" "$tag")
		if [[ $tr == sched ]]; then
			printf '%s\t%s\t%s\tsched\t%s\n' "$rep" "$name" "$c" "${v// /$'\t'}" >>"$TSV"
			log "$(tail -1 "$TSV" | awk -F'\t' '{ printf "%-10s c=%-4s sched  p99 %s us; on its CPU others ran %s ms/s, the longest stretch %s ms, %s/s over 0.5 ms; load CPU: %s switches, %s preemptions per request", $2, $3, $5, $6, $7, $8, $9, $10 }')"
			continue
		fi
		awk -v r="$rep" -v n="$name" -v c="$c" -v tr="$tr" -v v="$v" 'BEGIN { split(v, f, " "); q = f[1]
			if (q <= 0) { printf "%s\t%s\t%s\t%s\n", r, n, c, tr; exit }
			printf "%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", r, n, c, tr,
				f[2] / q, f[3] / q, f[4] / q, f[5] / q, f[6] / q, (f[7] - f[2] - f[4] - f[5] - f[6]) / q, f[7] / q }' >>"$TSV"
		log "$(tail -1 "$TSV" | awk -F'\t' '{ printf "%-10s c=%-4s %-6s read %s (EAGAIN %s) write %s epoll %s futex %s other %s total %s per request", $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }')"
	done
	stop "$PROXY_PID"
	PROXY_PID=""
	[[ -n ${PROFILE:-} && $rep == 1 && ${KINDS[$i]} == lbd ]] && profile_one "$i" "$c" "$tag"
}

# profile_one INDEX CONNS TAG: a fresh lbd with its CPU profile (and
# trace) on, warmed up and loaded like the clean run.
profile_one() {
	local port env=(LBD_CPUPROFILE="$PROFILE/$3.prof")
	[[ ${TRACE:-0} == 1 ]] && env+=(LBD_TRACE="$PROFILE/$3.trace")
	mkdir -p "$PROFILE"
	LPORT=$((LPORT + 1))
	while port_open "$LPORT"; do LPORT=$((LPORT + 1)); done
	port=$LPORT
	if start_proxy "$1" "$port" "$3-prof" "${env[@]}"; then
		wrk_run "$2" "http://127.0.0.1:$port/$SIZE" "$WARMUP" /dev/null
		wrk_run "$2" "http://127.0.0.1:$port/$SIZE" "$DURATION" "$T/$3-prof.wrk"
		log "profile of ${NAMES[$1]} c=$2 in $PROFILE/$3.prof ($(wrk_stats "$T/$3-prof.wrk" | cut -d' ' -f2) req/s)"
	fi
	stop "$PROXY_PID"
	PROXY_PID=""
}

log "pin=$PIN conns=$CONNS duration=${DURATION}s reps=$REPS tracers=$TRACERS targets=${NAMES[*]}"
# The targets run one after the other, forwards in odd reps and backwards
# in even ones: the machine drifts within a rep, and a fixed order would
# hand that drift to whoever runs first or last (with ORDER=fixed: always
# forwards, as before session 9).
for ((rep = 1; rep <= REPS; rep++)); do
	for c in $CONNS; do
		for ((j = 0; j < ${#NAMES[@]}; j++)); do
			k=$j
			[[ ${ORDER:-alternate} != fixed ]] && ((rep % 2 == 0)) && k=$((${#NAMES[@]} - 1 - j))
			run_one "$rep" "$k" "$c"
		done
	done
done

# report: medians over reps, per (target, conns, kind)
# MEDIAN_AWK: median(a, n) sorts a[1..n] as numbers and returns their
# median, leaving the smallest and largest in lo and hi; med(key, col)
# is that of the rows the tables keep in cnt and v.
MEDIAN_AWK='
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		lo = a[1]; hi = a[n]
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	function med(key, col,   n, i, a) { # the median of column col of the rows counted in cnt[key], kept in v
		n = cnt[key]; for (i = 1; i <= n; i++) a[i] = v[key, col, i]
		return median(a, n) }'
table() { # KIND TITLE
	echo "$2"
	echo
	echo "| target | conns | read | of which EAGAIN | write | epoll_wait | futex | other | **total** |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' -v kind="$1" "$MEDIAN_AWK"'
		$4 != kind || $5 == "" { next }
		{ key = $3 SUBSEP $2; if (!(key in cnt)) order[++nk] = key
		  n = ++cnt[key]; for (m = 5; m <= 11; m++) v[key, m, n] = $m }
		END { for (k = 1; k <= nk; k++) { split(order[k], f, SUBSEP)
			printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | **%.2f** |\n", f[2], f[1],
				med(order[k], 5), med(order[k], 6), med(order[k], 7), med(order[k], 8), med(order[k], 9),
				med(order[k], 10), med(order[k], 11) } }' "$TSV"
	echo
}
sched_table() {
	echo "Over the middle of a wrk run (perf record of context switches; median of $REPS): on the proxy's CPU, the CPU time other tasks took there and the stretches they kept the proxy off it; on the load CPU, context switches and preemptions (a runnable task switched out) per request:"
	echo
	echo "| target | conns | p99 ms (this run) | others ms/s | longest stretch ms | stretches > 0.5 ms /s | load CPU switches /req | load CPU preemptions /req |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' "$MEDIAN_AWK"'
		$4 != "sched" || $5 == "" { next }
		{ key = $3 SUBSEP $2; if (!(key in cnt)) order[++nk] = key
		  n = ++cnt[key]; for (m = 5; m <= 10; m++) v[key, m, n] = $m }
		END { for (k = 1; k <= nk; k++) { split(order[k], f, SUBSEP)
			printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f |\n", f[2], f[1], med(order[k], 5) / 1e3,
				med(order[k], 6), med(order[k], 7), med(order[k], 8), med(order[k], 9), med(order[k], 10) } }' "$TSV"
	echo
}
# ratios: each lbd target against HAProxy, rep by rep (the two ran one
# after the other, so they share the machine's phase), then the median
# and range of those ratios: the figure to read on a noisy machine.
ratios() {
	echo "Against HAProxy, per rep (same rep, one after the other), then median (range) of the ratios:"
	echo
	echo "| target | conns | reps | p99 | CPU µs/req | req/s |"
	echo "|---|---:|---:|---:|---:|---:|"
	awk -F'\t' "$MEDIAN_AWK"'
		function stat(list,   n, a, m) {
			n = split(substr(list, 2), a, " ")
			m = median(a, n)
			return sprintf("%.2f (%.2f–%.2f)", m, lo, hi) }
		$4 != "clean" { next }
		{ p99[$1, $2, $3] = $6; cpu[$1, $2, $3] = $8; rps[$1, $2, $3] = $5
		  if ($2 != "haproxy" && !(($2, $3) in seen)) { seen[$2, $3] = 1; order[++nk] = $2 SUBSEP $3 } }
		END { for (k = 1; k <= nk; k++) { split(order[k], f, SUBSEP); lp = lc = lr = ""; n = 0
			for (r = 1; (r, f[1], f[2]) in p99 || (r, "haproxy", f[2]) in p99; r++) {
				if (!((r, f[1], f[2]) in p99) || !((r, "haproxy", f[2]) in p99) || p99[r, "haproxy", f[2]] <= 0) continue
				n++; lp = lp " " p99[r, f[1], f[2]] / p99[r, "haproxy", f[2]]
				lc = lc " " cpu[r, f[1], f[2]] / cpu[r, "haproxy", f[2]]; lr = lr " " rps[r, f[1], f[2]] / rps[r, "haproxy", f[2]] }
			if (n) printf "| %s | %s | %d | %s | %s | %s |\n", f[1], f[2], n, stat(lp), stat(lc), stat(lr) } }' "$TSV"
	echo
}
{
	echo "Syscalls per request, HTTP/1.1 keep-alive, ${SIZE} B bodies, wrk -t1${THINK:+ with ${THINK} ms think time per connection}, ${DURATION}s runs, median of $REPS;" \
		"proxy on CPU $PROXY_CPUS with 1 worker, wrk+upstreams (${UPSTREAM:-go}) on CPU $LOAD_CPUS (pin=$PIN); $(nproc) CPUs;" \
		"$(haproxy -v 2>/dev/null | head -1 | cut -d' ' -f1-3)"
	echo
	echo "Other % = CPU used meanwhile by processes not started here, plus steal (% of all CPUs): above ~5 the run was disturbed."
	echo
	echo "Busy % = how busy the load CPU (wrk and the upstreams) and the proxy's CPU were: near 100 on the load side, the run measures the load side's queue as much as the proxy."
	echo
	echo "| target | conns | req/s | p99 ms | CPU µs/req | user | system | errors | req/s spread | p99 spread | other % | load busy % | proxy busy % |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' "$MEDIAN_AWK"'
		function spread(key, col,   m) { m = med(key, col); return cnt[key] > 1 && m > 0 ? sprintf("±%.0f%%", 50 * (hi - lo) / m) : "-" }
		$4 != "clean" { next }
		{ key = $3 SUBSEP $2; if (!(key in cnt)) order[++nk] = key
		  n = ++cnt[key]; for (m = 5; m <= 13; m++) v[key, m, n] = $m; errs[key] += $7 }
		END { for (k = 1; k <= nk; k++) { split(order[k], f, SUBSEP)
			printf "| %s | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %d | %s | %s | %.1f | %.1f | %.1f |\n", f[2], f[1], med(order[k], 5),
				med(order[k], 6) / 1e3, med(order[k], 8), med(order[k], 10), med(order[k], 11), errs[order[k]],
				spread(order[k], 5), spread(order[k], 6), med(order[k], 9), med(order[k], 12), med(order[k], 13) } }' "$TSV"
	echo
	[[ " ${NAMES[*]} " == *" haproxy "* ]] && ratios
	[[ " $TRACERS " == *" perf "* ]] && table perf "Counted by perf stat (syscall tracepoints; the proxy runs at nearly full speed):"
	[[ " $TRACERS " == *" sched "* ]] && sched_table
	[[ " $TRACERS " == *" strace "* ]] && table strace "Counted by strace -c -f -p PID (every call stops the proxy; slower, so peers have answered more often):"
} >"$T/table.md"
echo
cat "$T/table.md"
[[ -n ${OUT_MD:-} ]] && cp "$T/table.md" "$OUT_MD"
[[ -n ${OUT_TSV:-} ]] && cp "$TSV" "$OUT_TSV"
exit 0
