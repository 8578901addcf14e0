#!/usr/bin/env bash
# rssfile.sh: how much of lbd's own binary a running lbd keeps resident
# (bench/RESULTS.md §42, issue 36). VmRSS counts the binary's pages mapped
# from the page cache (RssFile) beside the heap (RssAnon); this script
# prints both, per mapping of the binary, for a 1-service configuration
# and for scale.sh size's 10,000 services / 20,000 backends, with the
# binary's pages cold (dropped from the page cache before the start) and
# warm (just written in one write(2), as the Go linker leaves its output:
# the page cache then holds large folios and the kernel maps the text with
# 2 MB pages, FilePmdMapped; a copy by cp or install does not).
#
#   bench/rssfile.sh BINARY...     # one line per binary, configuration and cache state
#
# Environment: PORT [26300], SERVICES [10000]. Hold the benchmark lock:
# flock /tmp/lbd-bench.lock bench/rssfile.sh before/bin/lbd after/bin/lbd
set -euo pipefail
PORT=${PORT:-26300}
SERVICES=${SERVICES:-10000}
WORK=$(mktemp -d /tmp/lbd-rssfile.XXXXXX)
PID=""
cleanup() {
	[[ -z $PID ]] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
	rm -rf "$WORK"
}
trap cleanup EXIT

# config N: a Pound configuration of N URL services with two backends
# each and a control socket, the shape of scale.sh size.
config() {
	awk -v n="$1" -v port="$PORT" -v work="$WORK" 'BEGIN {
		printf "Control \"%s/ctl.sock\"\nDaemon 0\nLogLevel 0\nListenHTTP\n    Address 127.0.0.1\n    Port %d\n", work, port
		for (i = 0; i < n; i++) {
			printf "    Service \"s%d\"\n        URL \"^/app%d/\"\n", i, i
			for (b = 0; b < 2; b++)
				printf "        BackEnd\n            Address 127.0.0.1\n            Port %d\n        End\n", port + 1
			printf "    End\n"
		}
		printf "End\n"
	}'
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# copy SRC DST: DST written in one write(2), as the linker writes.
copy() {
	python3 -c 'import sys
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb") as f:
	f.write(data)' "$1" "$2"
	chmod +x "$2"
}

# drop FILE: write it out and drop its pages from the page cache.
drop() {
	sync "$1"
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

# mappings PID BINARY: kB resident per mapping of BINARY (perms:Rss,
# FilePmdMapped in brackets when not 0), then the process's totals.
mappings() {
	awk -v bin="$2" '
		/^[0-9a-f]+-[0-9a-f]+ / { cur = ($6 == bin) ? $2 : ""; next }
		cur != "" && /^Rss:/ { rss[cur] += $2 }
		cur != "" && /^FilePmdMapped:/ { pmd[cur] += $2 }
		END { for (m in rss) printf "%s %d%s  ", m, rss[m], pmd[m] ? " (pmd " pmd[m] ")" : "" }' "/proc/$1/smaps"
	awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s %d  ", $1, $2 }' "/proc/$1/status"
}

# run LABEL BINARY CONFIG STATE: start a copy of BINARY on CONFIG, its
# pages cold or warm, and print its resident memory 1 s after it listens.
run() {
	local label=$1 copy=$WORK/lbd i
	copy "$2" "$copy"
	[[ $4 == warm ]] || drop "$copy"
	GOMAXPROCS=1 taskset -c 1 "$copy" -F -f "$3" >"$WORK/lbd.log" 2>&1 &
	PID=$!
	for ((i = 0; i < 600; i++)); do port_open "$PORT" && break; sleep 0.05; done
	port_open "$PORT" || { echo "$label: lbd did not start: $(tail -3 "$WORK/lbd.log")" >&2; exit 1; }
	sleep 1
	printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$(stat -c %s "$2")" "$(basename "$3" .cfg)" "$4" "$(mappings "$PID" "$copy")"
	kill "$PID"
	wait "$PID" 2>/dev/null || true
	PID=""
	rm -f "$WORK/ctl.sock" "$copy"
}

config 1 >"$WORK/1-service.cfg"
config "$SERVICES" >"$WORK/$SERVICES-services.cfg"
printf 'binary\tbytes\tconfig\tcache\tkB resident per mapping of the binary, process totals (kB)\n'
for cfg in "$WORK/1-service.cfg" "$WORK/$SERVICES-services.cfg"; do
	for state in cold warm; do
		for bin in "$@"; do
			run "$bin" "$bin" "$cfg" "$state"
		done
	done
done
