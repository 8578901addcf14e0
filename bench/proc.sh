#!/usr/bin/env bash
# proc.sh: process-tree helpers shared by the benchmark scripts (sourced;
# they expect PROXY_PID to name the proxy under test, if any).

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
