#!/usr/bin/env bash
# acme.sh: what an automatic (ACME) certificate costs a TLS handshake,
# beside a Cert file, in one lbd (issue 33). Pebble (Debian: pebble)
# issues the automatic certificate on loopback; the Cert file is an
# ECDSA P-256 certificate like certmagic's, so only the lookup differs.
#
# For each listener: h2load opens N new TLS connections, one request
# each (no SNI: h2load is given an IP address, so the Cert listener
# serves its default and the automatic one its first name), and the
# script reports lbd's CPU time (utime+stime from /proc) per connection
# and h2load's failures. Median of REPS rounds.
#
# Usage: bench/acme.sh [-h]   (run `make build` first; needs pebble,
#        pebble-challtestsrv, h2load, openssl)
# Environment: N [2000] connections a round;  REPS [3];  PORT [20100]
#   (uses PORT to PORT+9);  KEEP=1 keeps the scratch directory.
# Bounded: every h2load run has a timeout; every process started here is
# stopped by PID.

set -uo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
N=${N:-2000} REPS=${REPS:-3} PORT=${PORT:-20100}
ACME=$PORT MGMT=$((PORT + 1)) DNS=$((PORT + 2)) HTTP=$((PORT + 3)) AUTO=$((PORT + 4)) FILE=$((PORT + 5)) UP=$((PORT + 6)) CHM=$((PORT + 7))
log() { printf 'acme: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
for tool in pebble pebble-challtestsrv h2load openssl; do command -v $tool >/dev/null || die "$tool missing"; done
[[ -x bin/lbd && -x bin/demo-backend && -x bin/lbctl ]] || die "run make build first"
HZ=$(getconf CLK_TCK)
T=$(mktemp -d /tmp/acmebench.XXXXXX) || die "mktemp failed"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[[ ${KEEP:-0} == 1 ]] && log "kept $T" || rm -rf "$T"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" \
	-days 2 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null || die openssl
cat "$T/ca.pem" "$T/ca.key" >"$T/file.pem"
cat >"$T/pebble.json" <<EOF
{"pebble": {"listenAddress": "127.0.0.1:$ACME", "managementListenAddress": "127.0.0.1:$MGMT",
 "certificate": "$T/ca.pem", "privateKey": "$T/ca.key", "httpPort": $HTTP, "tlsPort": $AUTO,
 "ocspResponderURL": "", "externalAccountBindingRequired": false}}
EOF
pebble-challtestsrv -dns01 127.0.0.1:$DNS -http01 "" -https01 "" -tlsalpn01 "" -defaultIPv6 "" \
	-management 127.0.0.1:$CHM >"$T/chall.log" 2>&1 &
PIDS+=($!)
PEBBLE_VA_NOSLEEP=1 pebble -config "$T/pebble.json" -dnsserver 127.0.0.1:$DNS >"$T/pebble.log" 2>&1 &
PIDS+=($!)
bin/demo-backend -listen 127.0.0.1:$UP >/dev/null 2>&1 &
PIDS+=($!)
svc="	Service
		Backend
			Address 127.0.0.1
			Port $UP
		End
	End"
cat >"$T/lbd.cfg" <<EOF
ACMEAccount
	Directory "https://127.0.0.1:$ACME/dir"
	CARoots "$T/ca.pem"
	Storage "$T/acme"
End
Control "$T/ctl.sock"
ListenHTTP
	Address 127.0.0.1
	Port $HTTP
$svc
End
ListenHTTPS
	Address 127.0.0.1
	Port $AUTO
	ACMECert "bench.example.com"
$svc
End
ListenHTTPS
	Address 127.0.0.1
	Port $FILE
	Cert "$T/file.pem"
$svc
End
EOF
sleep 1
bin/lbd -e -f "$T/lbd.cfg" >"$T/lbd.log" 2>&1 &
LBD_PID=$!
PIDS+=($LBD_PID)
for ((i = 0; i < 100; i++)); do
	bin/lbctl -s "$T/ctl.sock" -j acme 2>/dev/null | grep -q '"serial": "' && break
	sleep 0.2
done
((i < 100)) || die "no certificate from Pebble in 20 s (see $T)"

ticks() { awk '{ print $14 + $15 }' "/proc/$LBD_PID/stat"; }
round() { # port -> "µs CPU per connection<TAB>failed"
	local before after out failed
	before=$(ticks)
	out=$(timeout 120 h2load -t1 -c "$N" -n "$N" "https://127.0.0.1:$1/" 2>&1)
	after=$(ticks)
	failed=$(sed -n 's/.* \([0-9]*\) failed, \([0-9]*\) errored.*/\1+\2/p' <<<"$out")
	awk -v d=$((after - before)) -v hz="$HZ" -v n="$N" -v f="$failed" 'BEGIN { printf "%.1f\t%s\n", d / hz * 1e6 / n, f }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
round $FILE >/dev/null # warm-up
printf '| listener | µs CPU per connection (median of %d) | rounds | failed+errored |\n| --- | ---: | --- | --- |\n' "$REPS"
for which in file auto; do
	port=$FILE
	[[ $which == auto ]] && port=$AUTO
	rs=() fs=()
	for ((r = 0; r < REPS; r++)); do
		IFS=$'\t' read -r us f < <(round $port)
		rs+=("$us") fs+=("$f")
	done
	printf '| %s | %s | %s | %s |\n' "$which" "$(printf '%s\n' "${rs[@]}" | median)" "${rs[*]}" "${fs[*]}"
done
