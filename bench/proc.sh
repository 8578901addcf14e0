#!/usr/bin/env bash
# proc.sh: helpers shared by the benchmark scripts (sourced): process
# trees (they expect PROXY_PID to name the proxy under test, if any),
# CPU pinning, ports and the upstreams of ../shared/bench/peers.sh's setup.

pids_of() { # PID and its descendants
	ps -e -o pid=,ppid= | awk -v root="$1" '{ parent[$1] = $2 }
		END { keep[root] = 1
			do { more = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; more = 1 } } while (more)
			for (p in keep) print p }'
}

stop() { # TERM a process tree, KILL what is left after 5 s
	local root=$1 pids p i left
	[[ -n $root ]] || return 0
	pids=$(pids_of "$root")
	kill -TERM $pids 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		left=""
		for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
		[[ -z $left ]] && break
		sleep 0.1
	done
	[[ -n $left ]] && kill -KILL $left 2>/dev/null
	wait "$root" 2>/dev/null
	return 0
}

# foreign_ticks: CPU ticks of every process outside this script's tree
# and the proxy's (kernel threads excluded), plus steal time: what else
# ran on the machine during a run.
foreign_ticks() {
	local mine
	mine=" $({ pids_of $$; [[ -z $PROXY_PID ]] || pids_of "$PROXY_PID"; } | tr '\n' ' ') "
	{ awk '/^cpu / { print "steal", $9 }' /proc/stat; cat /proc/[0-9]*/stat 2>/dev/null; } |
		awk -v mine="$mine" '
			$1 == "steal" { t += $2; next }
			{ pid = $1; s = $0; sub(/^.*\) /, "", s); split(s, f, " ")
			  if (pid == 2 || f[2] == 2 || index(mine, " " pid " ")) next
			  t += f[12] + f[13] + f[14] + f[15] }
			END { print t }'
}

# pin_sets: with PIN=1 and two CPUs or more, PROXY_SET and LOAD_SET are
# the taskset prefixes that put the proxy on PROXY_CPUS and the load
# tools and upstreams on LOAD_CPUS; otherwise PIN=0 and both are empty.
pin_sets() {
	if [[ $PIN == 1 ]] && command -v taskset >/dev/null && (($(nproc) >= 2)); then
		PROXY_SET="taskset -c $PROXY_CPUS" LOAD_SET="taskset -c $LOAD_CPUS"
	else
		PIN=0 PROXY_SET="" LOAD_SET=""
	fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { local i; for ((i = 0; i < 100; i++)); do port_open "$1" && return 0; sleep 0.1; done; return 1; }

# start_upstreams DIR: builds the upstream server ($UPSTREAM_SRC) into
# DIR and starts it (or nginx, with UPSTREAM=nginx) on ports UP1 and UP2
# with SIZE-byte bodies (UP_PID);
# on failure it says why on stderr and returns 1.
start_upstreams() {
	local p
	(cd "$UPSTREAM_SRC" && GOWORK=off GOFLAGS='' "$GO" build -o "$1/upstream" .) ||
		{ echo "upstream build failed ($UPSTREAM_SRC)" >&2; return 1; }
	for p in $UP1 $UP2; do
		port_open "$p" && { echo "port $p already in use (set PORT=...)" >&2; return 1; }
	done
	if [[ ${UPSTREAM:-go} == nginx ]]; then
		nginx_conf "$1" >"$1/nginx.conf"
		$LOAD_SET nginx -p "$1" -c "$1/nginx.conf" -g 'daemon off;' 2>"$1/upstream.log" &
	else
		$LOAD_SET "$1/upstream" -listen "127.0.0.1:$UP1,127.0.0.1:$UP2" -size "$SIZE" 2>"$1/upstream.log" &
	fi
	UP_PID=$!
	wait_port "$UP2" || { echo "upstream did not start: $(tail -3 "$1/upstream.log")" >&2; return 1; }
}

# nginx_conf DIR: with UPSTREAM=nginx, the upstreams are one nginx worker
# answering every request with SIZE bytes (and X-Backend, as the Go
# upstream, whose build is still needed for the probe): another
# implementation, to tell what the proxy does from what the Go upstream
# does. It does not free the load CPU: wrk keeps it ~99 % busy at 50
# connections either way (RESULTS 16.8).
nginx_conf() {
	local body port
	body=$(head -c "$SIZE" /dev/zero | tr '\0' x)
	printf 'worker_processes 1;\npid %s/nginx.pid;\nerror_log %s/nginx.err;\n' "$1" "$1"
	printf 'events { worker_connections 4096; }\nhttp {\n    access_log off;\n'
	printf '    keepalive_requests 100000000;\n    keepalive_timeout 60s;\n    default_type text/plain;\n'
	for port in $UP1 $UP2; do
		printf '    server {\n        listen 127.0.0.1:%s;\n' "$port"
		printf '        location / { add_header X-Backend 127.0.0.1:%s always; return 200 "%s"; }\n    }\n' "$port" "$body"
	done
	printf '}\n'
}
