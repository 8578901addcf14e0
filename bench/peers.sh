#!/usr/bin/env bash
# Runs ../shared/bench/peers.sh (HAProxy, nginx and lbd side by side on
# loopback, same upstreams, same wrk load) with the freshly built lbd and
# writes the table to bench/out/peers-<date>.md. Environment variables are
# passed through (SCENARIOS, DURATION, REPS, PEERS, ...; see its header).
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${PEERS_SH:-../shared/bench/peers.sh}
[ -x "$peers" ] || { echo "bench: $peers not found (it lives in the shared/ folder beside the repo)"; exit 1; }
mkdir -p bench/out
out=bench/out/peers-$(date +%Y%m%d-%H%M%S)
OUT_MD=$out.md OUT_TSV=$out.tsv PEERS=${PEERS-"direct haproxy nginx"} \
	"$peers" "$PWD/bin/lbd -F -f {cfg}"
echo "table written to $out.md"
