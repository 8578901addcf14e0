#!/usr/bin/env bash
# scale.sh: the cost of routing as the configuration grows (bench/RESULTS.md
# §23, issue 36). For each shape (Host-matched services, literal-prefix URL
# services, Host services plus 20 regex services) at 1, 100, 1,000 and
# 10,000 services, one proxy routes requests to the last service; the
# figure is the proxy's CPU time (utime+stime, the proxy pinned to one
# core) per request.
#
#   bench/scale.sh lbd LABEL BINARY      # an lbd binary (before/after)
#   bench/scale.sh pound LABEL BINARY    # Pound 4 on the same configurations
#   bench/scale.sh haproxy               # HAProxy: a map file, and one ACL line per service
#   bench/scale.sh size BINARY           # lbd -c, start, reload (wall and CPU), RSS, lbctl list, dashboard at 10,000 services / 20,000 backends
#
#   bench/scale.sh size-curve BINARY     # lbd -c, start and RSS at each of SIZES services (one backend each)
#   bench/scale.sh size-start BINARY...  # lbd -c, start, reload at 10,000 services, wall and CPU, REPS [5] rounds
#   bench/scale.sh reload-load BINARY    # requests through reloads of the 10,000-service config: any failure fails
#   bench/scale.sh summary FILE.tsv      # median per point and its ratio to 1 service
#
# Environment: SIZES ["1 100 1000 10000"], SHAPES ["host url mix"],
# DURATION [4] seconds of load per point, REPS [1] rounds over the sizes
# (interleaved, so a drift of the shared machine hits every size alike), PORT [23100] the proxy's port,
# UP [23101] the upstream's, OUT [bench/out/scale-DATE.tsv] (appended).
# Hold the benchmark lock: flock /tmp/lbd-bench.lock bench/scale.sh ...
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"1 100 1000 10000"}
SHAPES=${SHAPES:-"host url mix"}
DURATION=${DURATION:-4}
REPS=${REPS:-1}
PORT=${PORT:-23100}
UP=${UP:-23101}
GO=${GO:-go}
UPSTREAM_SRC=${UPSTREAM_SRC:-../shared/bench/upstream}
mkdir -p bench/out
OUT=${OUT:-bench/out/scale-$(date +%Y%m%d-%H%M%S).tsv}
WORK=$(mktemp -d /tmp/lbd-scale.XXXXXX)
HZ=$(getconf CLK_TCK)
PROXY_PID="" UP_PID=""
cleanup() {
	[[ -z $PROXY_PID ]] || { kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null || true; }
	[[ -z $UP_PID ]] || { kill "$UP_PID" 2>/dev/null; wait "$UP_PID" 2>/dev/null || true; }
	rm -rf "$WORK"
}
trap cleanup EXIT

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # PORT SECONDS
	local i
	for ((i = 0; i < $2 * 20; i++)); do port_open "$1" && return 0; sleep 0.05; done
	return 1
}

# target SHAPE N: the Host and path of a request for the last service.
target() {
	case $1 in
	url) echo "example.com /app$(($2 - 1))/index.html" ;;
	*) echo "site$(($2 - 1)).example.com /index.html" ;;
	esac
}

# pound_cfg SHAPE N [BACKENDS]: a Pound configuration (lbd reads it too)
# of N services, each with BACKENDS backends on the upstream. The mix
# shape puts 20 regex services (unanchored, so no index can file them)
# evenly among the Host services.
pound_cfg() {
	awk -v shape="$1" -v n="$2" -v nb="${3:-1}" -v port="$PORT" -v up="$UP" 'BEGIN {
		printf "Daemon 0\nLogLevel 0\nListenHTTP\n    Address 127.0.0.1\n    Port %d\n", port
		step = int(n / 20); if (step < 1) step = 1
		for (i = 0; i < n; i++) {
			if (shape == "mix" && i % step == 0 && r < 20 && i < n - 1) {
				printf "    Service\n        URL \"/re%d/[0-9]+/\"\n", r++
				printf "        BackEnd\n            Address 127.0.0.1\n            Port %d\n        End\n    End\n", up
			}
			printf "    Service \"s%d\"\n", i
			if (shape == "url") printf "        URL \"^/app%d/\"\n", i
			else printf "        Host \"site%d.example.com\"\n", i
			for (b = 0; b < nb; b++)
				printf "        BackEnd\n            Address 127.0.0.1\n            Port %d\n        End\n", up
			printf "    End\n"
		}
		printf "End\n"
	}'
}

# haproxy_cfg SHAPE N STYLE: HAProxy 2.6 routing the same requests, by a
# map file (STYLE map) or by one use_backend line per service (acl).
haproxy_cfg() {
	local shape=$1 n=$2 style=$3
	awk -v shape="$shape" -v n="$n" -v style="$style" -v port="$PORT" -v up="$UP" -v map="$WORK/routes.map" 'BEGIN {
		printf "global\n    nbthread 1\n    maxconn 4096\ndefaults\n    mode http\n    timeout connect 5s\n"
		printf "    timeout client 60s\n    timeout server 60s\n    timeout http-keep-alive 60s\n    http-reuse safe\n"
		printf "frontend fe\n    bind 127.0.0.1:%d\n", port
		if (style == "map" && shape == "url") printf "    use_backend %%[path,map_beg(%s)]\n", map
		else if (style == "map") printf "    use_backend %%[req.hdr(host),lower,map(%s)]\n", map
		for (i = 0; style == "acl" && i < n; i++) {
			if (shape == "url") printf "    use_backend b%d if { path_beg /app%d/ }\n", i, i
			else printf "    use_backend b%d if { hdr(host) -i site%d.example.com }\n", i, i
		}
		for (i = 0; i < n; i++) {
			printf "backend b%d\n    server s 127.0.0.1:%d\n", i, up
			if (style != "map") continue
			if (shape == "url") printf "/app%d/ b%d\n", i, i > map
			else printf "site%d.example.com b%d\n", i, i > map
		}
	}'
}

# cpu_ticks PID: utime+stime of the process, all threads.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# measure PROXY SHAPE N: load the proxy (PROXY_PID, listening on PORT)
# with requests for the last service; prints requests, CPU µs/request.
measure() {
	local host path t0 t1 out reqs
	read -r host path < <(target "$2" "$3")
	# warm up: connections, pools, the first GC cycles
	taskset -c 0 wrk -t1 -c8 -d1s -H "Host: $host" "http://127.0.0.1:$PORT$path" >/dev/null
	t0=$(cpu_ticks "$PROXY_PID")
	out=$(taskset -c 0 wrk -t1 -c8 -d"${DURATION}s" -H "Host: $host" "http://127.0.0.1:$PORT$path")
	t1=$(cpu_ticks "$PROXY_PID")
	reqs=$(awk '/requests in/ { print $1 }' <<<"$out")
	if grep -q 'Non-2xx' <<<"$out"; then
		echo "$1 $2 $3: non-2xx answers, the route is wrong:" >&2
		echo "$out" >&2
		exit 1
	fi
	awk -v r="$reqs" -v t=$((t1 - t0)) -v hz="$HZ" 'BEGIN { printf "%d\t%.2f\n", r, t * 1e6 / hz / r }'
}

start_upstream() {
	(cd "$UPSTREAM_SRC" && GOWORK=off GOFLAGS='' "$GO" build -o "$WORK/upstream" .)
	taskset -c 0 "$WORK/upstream" -listen "127.0.0.1:$UP" -size 64 2>"$WORK/upstream.log" &
	UP_PID=$!
	wait_port "$UP" 10 || { echo "upstream did not start" >&2; exit 1; }
}

# run LABEL SHAPE N CMD...: start CMD pinned to CPU 1, measure, stop it.
run() {
	local label=$1 shape=$2 n=$3 line
	shift 3
	GOMAXPROCS=1 taskset -c 1 "$@" >"$WORK/proxy.log" 2>&1 &
	PROXY_PID=$!
	wait_port "$PORT" 60 || { echo "$label: proxy did not start: $(tail -3 "$WORK/proxy.log")" >&2; exit 1; }
	line=$(measure "$label" "$shape" "$n")
	kill "$PROXY_PID"
	wait "$PROXY_PID" 2>/dev/null || true
	PROXY_PID=""
	printf '%s\t%s\t%s\t%s\n' "$label" "$shape" "$n" "$line" | tee -a "$OUT"
}

# rss PID: VmRSS and RssAnon of the process, in MB ("169 (anon 150)").
rss() { awk '/^VmRSS/ { r = $2 } /^RssAnon/ { a = $2 } END { printf "%d (anon %d)", r / 1024, a / 1024 }' "/proc/$1/status"; }

# ctl_get PATH: GET on the control socket; prints "ms bytes".
ctl_get() {
	curl -sf -o /dev/null -w '%{time_total} %{size_download}' --unix-socket "$WORK/ctl.sock" "http://lbd$1" |
		awk '{ printf "%d ms, %d bytes", $1 * 1000, $2 }'
}

# size_start BINARY: lbd -c, start to listening and one lbctl reload at
# SIZE_SERVICES [10,000] services / 2 backends each, wall and CPU, one
# line; size-start alternates the binaries REPS [5] times, so that the
# shared machine's drift hits each alike.
size_start() {
	local lbd=$1 n=${SIZE_SERVICES:-10000} cfg=$WORK/size.cfg t0 t1 t2 t3 c0 c1 c2 check
	pound_cfg url "$n" 2 >"$cfg"
	printf 'Control "%s/ctl.sock"\n' "$WORK" | cat - "$cfg" >"$cfg.tmp" && mv "$cfg.tmp" "$cfg"
	t0=$(date +%s%N)
	/usr/bin/time -o "$WORK/time.out" -f '%U %S' "$lbd" -c -f "$cfg"
	t1=$(date +%s%N)
	check="$(((t1 - t0) / 1000000)) ms, CPU $(awk '{ printf "%d", ($1 + $2) * 1000 }' "$WORK/time.out") ms"
	t0=$(date +%s%N)
	GOMAXPROCS=1 taskset -c 1 "$lbd" -F -f "$cfg" >"$WORK/proxy.log" 2>&1 &
	PROXY_PID=$!
	wait_port "$PORT" 60
	t1=$(date +%s%N)
	c1=$(cpu_ticks "$PROXY_PID")
	sleep 1
	c0=$(cpu_ticks "$PROXY_PID")
	t2=$(date +%s%N)
	"${lbd%/lbd}/lbctl" -s "$WORK/ctl.sock" reload >/dev/null
	t3=$(date +%s%N)
	c2=$(cpu_ticks "$PROXY_PID")
	kill "$PROXY_PID"
	wait "$PROXY_PID" 2>/dev/null || true
	PROXY_PID=""
	printf 'size-start\t%s\tcheck %s\tstart %d ms, CPU %d ms\treload %d ms, CPU %d ms\tload %s\n' "$lbd" "$check" \
		$(((t1 - t0) / 1000000)) $((c1 * 1000 / HZ)) $(((t3 - t2) / 1000000)) $(((c2 - c0) * 1000 / HZ)) \
		"$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT"
}

# generation: the successful reloads so far (lbd_reloads_total).
generation() {
	curl -sf --unix-socket "$WORK/ctl.sock" 'http://lbd/metrics?family=lbd_reloads' |
		awk '/^lbd_reloads_total\{result="success"\}/ { print $2 }'
}

# reload_load BINARY: the size configuration under load (wrk -t1 -c16 for
# RELOAD_SECONDS [8] s, to the last service) with an lbctl reload at 2 s
# and at 5 s; every answer must be a 2xx and no socket may fail, and the
# reloads must both be applied (the control API's generation counts
# them). Prints requests, non-2xx, socket errors, generations; exits 1 on
# any failure.
reload_load() {
	local lbd=$1 n=${SIZE_SERVICES:-10000} cfg=$WORK/size.cfg host path out gen0 gen1 reqs bad errs
	pound_cfg url "$n" 2 >"$cfg"
	printf 'Control "%s/ctl.sock"\n' "$WORK" | cat - "$cfg" >"$cfg.tmp" && mv "$cfg.tmp" "$cfg"
	GOMAXPROCS=1 taskset -c 1 "$lbd" -F -f "$cfg" >"$WORK/proxy.log" 2>&1 &
	PROXY_PID=$!
	wait_port "$PORT" 60 || { echo "reload-load: lbd did not start: $(tail -3 "$WORK/proxy.log")" >&2; exit 1; }
	read -r host path < <(target url "$n")
	gen0=$(generation)
	taskset -c 0 wrk -t1 -c16 -d"${RELOAD_SECONDS:-8}s" -H "Host: $host" "http://127.0.0.1:$PORT$path" >"$WORK/wrk.out" &
	local wrk=$!
	sleep 2
	"${lbd%/lbd}/lbctl" -s "$WORK/ctl.sock" reload >/dev/null
	sleep 3
	"${lbd%/lbd}/lbctl" -s "$WORK/ctl.sock" reload >/dev/null
	wait "$wrk"
	gen1=$(generation)
	kill "$PROXY_PID"
	wait "$PROXY_PID" 2>/dev/null || true
	PROXY_PID=""
	out=$(cat "$WORK/wrk.out")
	reqs=$(awk '/requests in/ { print $1 }' <<<"$out")
	bad=$(awk '/Non-2xx/ { print $NF }' <<<"$out")
	errs=$(awk '/Socket errors/ { gsub(/,/, ""); print $4 + $6 + $8 + $10 }' <<<"$out")
	printf 'reload-load\t%s\t%s requests, %s non-2xx, %s socket errors, reloads applied %d\n' "$lbd" "$reqs" \
		"${bad:-0}" "${errs:-0}" $((gen1 - gen0)) | tee -a "$OUT"
	[[ ${bad:-0} == 0 && ${errs:-0} == 0 && $((gen1 - gen0)) == 2 ]] || { echo "$out" >&2; exit 1; }
}

# size BINARY: configuration-size costs at SIZE_SERVICES [10,000]
# services / 2 backends each: lbd -c, start, RSS (after start, 10 s later
# once the dashboard's sampler has run, after a reload, after the
# listings), lbctl list (3 runs), and the dashboard's api/state (a page
# of 100 services, the last page through a filter, the whole state) and
# api/history of one page, on the control socket.
size() {
	local lbd=$1 n=${SIZE_SERVICES:-10000} cfg=$WORK/size.cfg t0 t1 c0 c1 i page
	pound_cfg url "$n" 2 >"$cfg"
	printf 'Control "%s/ctl.sock"\n' "$WORK" | cat - "$cfg" >"$cfg.tmp" && mv "$cfg.tmp" "$cfg"
	printf 'size\tload average\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
	t0=$(date +%s%N)
	/usr/bin/time -o "$WORK/time.out" -f '%U %S' "$lbd" -c -f "$cfg"
	t1=$(date +%s%N)
	printf 'size\tcheck (lbd -c)\t%d ms; CPU %s ms\n' $(((t1 - t0) / 1000000)) \
		"$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$WORK/time.out")" | tee -a "$OUT"
	t0=$(date +%s%N)
	GOMAXPROCS=1 taskset -c 1 "$lbd" -F -f "$cfg" >"$WORK/proxy.log" 2>&1 &
	PROXY_PID=$!
	wait_port "$PORT" 60
	t1=$(date +%s%N)
	# CPU at the moment it listens (the clock ticks of /proc: 10 ms)
	printf 'size\tstart to listening\t%d ms; CPU %d ms\n' $(((t1 - t0) / 1000000)) \
		$(($(cpu_ticks "$PROXY_PID") * 1000 / HZ)) | tee -a "$OUT"
	sleep 1
	printf 'size\tRSS after start\t%s MB\n' "$(rss "$PROXY_PID")" | tee -a "$OUT"
	sleep 9
	printf 'size\tRSS 10 s after start\t%s MB\n' "$(rss "$PROXY_PID")" | tee -a "$OUT"
	c0=$(cpu_ticks "$PROXY_PID")
	t0=$(date +%s%N)
	"${lbd%/lbd}/lbctl" -s "$WORK/ctl.sock" reload >/dev/null
	t1=$(date +%s%N)
	c1=$(cpu_ticks "$PROXY_PID")
	printf 'size\treload (lbctl reload)\t%d ms; CPU lbd %d ms\n' $(((t1 - t0) / 1000000)) \
		$(((c1 - c0) * 1000 / HZ)) | tee -a "$OUT"
	sleep 2
	printf 'size\tRSS 2 s after reload\t%s MB\n' "$(rss "$PROXY_PID")" | tee -a "$OUT"
	# wall time, and the CPU it took: lbd's (utime+stime) and lbctl's,
	# which the shared machine's load does not inflate as it does the wall
	for i in 1 2 3; do
		c0=$(cpu_ticks "$PROXY_PID")
		t0=$(date +%s%N)
		/usr/bin/time -o "$WORK/time.out" -f '%U %S' "${lbd%/lbd}/lbctl" -s "$WORK/ctl.sock" list >"$WORK/list.out"
		t1=$(date +%s%N)
		c1=$(cpu_ticks "$PROXY_PID")
		printf 'size\tlbctl list (%d)\t%d ms, %d lines; CPU lbd %d ms + lbctl %s ms\n' "$i" $(((t1 - t0) / 1000000)) \
			"$(wc -l <"$WORK/list.out")" $(((c1 - c0) * 1000 / HZ)) "$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$WORK/time.out")" | tee -a "$OUT"
	done
	page=$(seq -s, -f '0/%g' 0 99)
	for i in 1 2 3; do
		printf 'size\tapi/state, first page of 100 (%d)\t%s\n' "$i" "$(ctl_get '/dashboard/api/state?offset=0&limit=100')" | tee -a "$OUT"
		printf 'size\tapi/state, filter q=s99 (%d)\t%s\n' "$i" "$(ctl_get '/dashboard/api/state?offset=0&limit=100&q=s99')" | tee -a "$OUT"
		printf 'size\tapi/history of the first page (%d)\t%s\n' "$i" "$(ctl_get "/dashboard/api/history?since=0&events=0&services=$page")" | tee -a "$OUT"
	done
	printf 'size\tapi/state, whole (unpaged)\t%s\n' "$(ctl_get '/dashboard/api/state')" | tee -a "$OUT"
	sleep 2
	printf 'size\tRSS after the listings\t%s MB\n' "$(rss "$PROXY_PID")" | tee -a "$OUT"
	printf 'size\tload average\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
}

# size_curve BINARY: the services cost curve: for N in SIZES, URL
# services of one backend each, a Control socket: lbd -c time, start
# time and RSS 1 s after start (VmRSS, anon in brackets).
size_curve() {
	local lbd=$1 n cfg=$WORK/curve.cfg t0 t1 t2
	for n in $SIZES; do
		pound_cfg url "$n" 1 >"$cfg"
		printf 'Control "%s/ctl.sock"\n' "$WORK" | cat - "$cfg" >"$cfg.tmp" && mv "$cfg.tmp" "$cfg"
		t0=$(date +%s%N)
		"$lbd" -c -f "$cfg"
		t1=$(date +%s%N)
		GOMAXPROCS=1 taskset -c 1 "$lbd" -F -f "$cfg" >"$WORK/proxy.log" 2>&1 &
		PROXY_PID=$!
		wait_port "$PORT" 60
		t2=$(date +%s%N)
		sleep 1
		printf 'curve\t%d services\tcheck %d ms, start %d ms, RSS %s MB\n' "$n" $(((t1 - t0) / 1000000)) \
			$(((t2 - t1) / 1000000)) "$(rss "$PROXY_PID")" | tee -a "$OUT"
		kill "$PROXY_PID"
		wait "$PROXY_PID" 2>/dev/null || true
		PROXY_PID=""
		rm -f "$WORK/ctl.sock"
	done
}

what=${1:?usage: scale.sh lbd|pound LABEL BINARY | haproxy | size BINARY}
shift
case $what in
lbd | pound)
	label=$1 bin=$2
	start_upstream
	for shape in $SHAPES; do
		for ((rep = 0; rep < REPS; rep++)); do
			for n in $SIZES; do
				pound_cfg "$shape" "$n" >"$WORK/p.cfg"
				if [[ $what == lbd ]]; then
					run "$label" "$shape" "$n" "$bin" -F -f "$WORK/p.cfg"
				else
					run "$label" "$shape" "$n" "$bin" -F -f "$WORK/p.cfg" -p "$WORK/pound.pid"
				fi
			done
		done
	done
	;;
haproxy)
	start_upstream
	for style in map acl; do
		for shape in ${SHAPES/mix/}; do
			for n in $SIZES; do
				haproxy_cfg "$shape" "$n" "$style" >"$WORK/h.cfg"
				run "haproxy-$style" "$shape" "$n" haproxy -db -f "$WORK/h.cfg"
			done
		done
	done
	;;
summary)
	sort -t$'\t' -k1,1 -k2,2 -k3,3n -k5,5n "$1" | awk -F'\t' '
		function flush() { if (n) { m = v[int((n + 1) / 2)]; if (key3 == 1) base = m
			printf "%s\t%s\t%s\t%.2f\t%.2fx\t(%d runs)\n", k1, k2, key3, m, base ? m / base : 0, n }; n = 0 }
		$1 != "size" { if ($1 != k1 || $2 != k2 || $3 != key3) { flush(); if ($1 != k1 || $2 != k2) base = 0; k1 = $1; k2 = $2; key3 = $3 }
			v[++n] = $5 }
		END { flush() }'
	;;
size)
	start_upstream
	size "$1"
	;;
size-curve)
	size_curve "$1"
	;;
reload-load)
	start_upstream
	reload_load "$1"
	;;
size-start)
	start_upstream
	for ((rep = 0; rep < ${REPS:-5}; rep++)); do
		for bin in "$@"; do
			size_start "$bin"
		done
	done
	;;
*)
	echo "unknown: $what" >&2
	exit 1
	;;
esac
