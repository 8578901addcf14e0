#!/usr/bin/env bash
# Starts two demo backends and lbd on demo/lbd.cfg, all on 127.0.0.1, and
# stops them (by PID) on Ctrl-C. lbd is followed through its PID file, not
# as this script's child: after `lbctl upgrade` (or kill -USR2) the new
# process serves, and the demo goes on until Ctrl-C stops it too.
#
# The functional test of the README (functional-tests/readme_test.go)
# runs this script with its own ports and paths: LBD_DEMO_PORT (8080),
# LBD_DEMO_BACKENDS ("8081 8082"), LBD_DEMO_SOCK (/tmp/lbd-demo.sock) and
# LBD_DEMO_PID (/tmp/lbd-demo.pid) replace those of demo/lbd.cfg.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${LBD_DEMO_PORT:-8080}
read -r be1 be2 <<<"${LBD_DEMO_BACKENDS:-8081 8082}"
sock=${LBD_DEMO_SOCK:-/tmp/lbd-demo.sock}
pidfile=${LBD_DEMO_PID:-/tmp/lbd-demo.pid}
cfg=demo/lbd.cfg
tmp=
pids=()
stopped=0
# lbdpid prints the PID in the PID file when that process is alive.
lbdpid() {
	local p
	p=$(cat "$pidfile" 2>/dev/null) || return 1
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null && echo "$p"
}
cleanup() {
	[ "$stopped" = 1 ] && return
	stopped=1
	local p
	if p=$(lbdpid); then kill -TERM "$p" 2>/dev/null || true; fi
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "$tmp" ] && rm -rf "$tmp"
	echo "demo stopped"
}
# in_use reports whether something accepts on 127.0.0.1:$1.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$port" "$be1" "$be2"; do
	if in_use "$p"; then
		echo "make run: port $p on 127.0.0.1 is already in use (another make run? see: ss -ltnp 'sport = :$p'); nothing started" >&2
		exit 1
	fi
done
if p=$(lbdpid); then
	echo "make run: lbd is already running as PID $p ($pidfile); stop it first (kill -HUP $p)" >&2
	exit 1
fi

trap cleanup EXIT
trap 'cleanup; exit 0' INT TERM
if [ "$port:$be1:$be2:$sock:$pidfile" != "8080:8081:8082:/tmp/lbd-demo.sock:/tmp/lbd-demo.pid" ]; then
	tmp=$(mktemp -d) # removed by cleanup
	sed -e "s/8080/$port/g; s/Port 8081/Port $be1/; s/Port 8082/Port $be2/" \
		-e "s|/tmp/lbd-demo.sock|$sock|; s|/tmp/lbd-demo.pid|$pidfile|" demo/lbd.cfg >"$tmp/lbd.cfg"
	cfg=$tmp/lbd.cfg
fi

bin/demo-backend -listen "127.0.0.1:$be1" -name one & pids+=($!)
bin/demo-backend -listen "127.0.0.1:$be2" -name two & pids+=($!)
rm -f "$pidfile"
bin/lbd -e -f "$cfg" &
first=$!
# Ready when the listener accepts and the PID file names lbd; an lbd that
# exits first (a bind error, a bad file) has said why on stderr.
for _ in $(seq 100); do
	if ! kill -0 "$first" 2>/dev/null; then
		rc=0
		wait "$first" || rc=$?
		echo "make run: lbd did not start (exit status $rc; its error is above); demo stopped" >&2
		exit 1
	fi
	in_use "$port" && lbdpid >/dev/null && break
	sleep 0.1
done
if ! in_use "$port"; then
	echo "make run: lbd does not listen on 127.0.0.1:$port after 10 s; demo stopped" >&2
	exit 1
fi
cat <<TXT

lbd is running on http://127.0.0.1:$port (PID $(lbdpid), backends on :$be1 and :$be2).
Try:
  curl -s http://127.0.0.1:$port/hello            # answered by "one" or "two"
  curl -si http://127.0.0.1:$port/old/page        # 301 redirect
  bin/lbctl -s $sock list           # listeners, services, backends
  bin/lbctl -s $sock disable /1/1/0 # take backend "one" out
  bin/lbctl -s $sock route GET /hello   # which service and backend, and why
  bin/lbctl -s $sock dashboard      # the live dashboard, for a browser
  bin/lbctl -s $sock upgrade        # a new lbd takes over; the demo goes on
  curl --unix-socket $sock http://localhost/listener/1
The README's commands all work on it. Press Ctrl-C to stop.
TXT
# Follow lbd through its PID file: an upgrade replaces the process (the
# old one exits once the new one has written the file); a stop removes it.
while true; do
	if ! lbdpid >/dev/null; then
		sleep 0.5 # an upgrade between the old one's exit and the file
		lbdpid >/dev/null || break
	fi
	sleep 0.5
done
wait "$first" 2>/dev/null || true
echo "lbd has stopped"
