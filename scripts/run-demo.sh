#!/usr/bin/env bash
# Starts two demo backends and lbd on demo/lbd.cfg, all on 127.0.0.1, and
# stops them (by PID) on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
pids=()
stopped=0
cleanup() {
	[ "$stopped" = 1 ] && return
	stopped=1
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	echo "demo stopped"
}
trap cleanup EXIT
trap 'cleanup; exit 0' INT TERM
bin/demo-backend -listen 127.0.0.1:8081 -name one & pids+=($!)
bin/demo-backend -listen 127.0.0.1:8082 -name two & pids+=($!)
bin/lbd -e -f demo/lbd.cfg & pids+=($!)
sleep 0.5
cat <<'TXT'

lbd is running on http://127.0.0.1:8080 (backends on :8081 and :8082).
Try:
  curl -s http://127.0.0.1:8080/hello            # answered by "one" or "two"
  curl -si http://127.0.0.1:8080/old/page        # 301 redirect
  bin/lbctl -s /tmp/lbd-demo.sock list           # listeners, services, backends
  bin/lbctl -s /tmp/lbd-demo.sock disable /1/1/0 # take backend "one" out
  bin/lbctl -s /tmp/lbd-demo.sock route GET /hello   # which service and backend, and why
  bin/lbctl -s /tmp/lbd-demo.sock dashboard      # the live dashboard, for a browser
  curl --unix-socket /tmp/lbd-demo.sock http://localhost/listener/1
Press Ctrl-C to stop.
TXT
wait "${pids[2]}"
