#!/usr/bin/env bash
# waf.sh: CPU per request of the web application firewall, lbd (Coraza)
# beside nginx with libmodsecurity 3, both on the OWASP CRS at paranoia
# level 1, from the same rule files (bench/RESULTS.md §18).
#
# Each proxy runs one worker on CPU $PROXY_CPU [1] (nginx
# worker_processes 1; lbd by taskset, so GOMAXPROCS is 1); wrk (-t1) and
# the backend (an nginx worker answering `return 200`) share CPU
# $LOAD_CPU [0]. Keep-alive on both sides. Targets, all in one run:
#   nginx         nginx, no WAF (a server without modsecurity)
#   nginx+modsec  nginx, modsecurity on, CRS
#   lbd           lbd without any WAF in its configuration
#   lbd-other     lbd, WAF (CRS) configured on ANOTHER listener: the
#                 no-WAF path of a configuration that has a WAF
#   lbd+waf       lbd, WafRules on the CRS
# Loads: get  (a browser navigation: Chrome's headers and cookies)
#        post (a 4 KiB application/x-www-form-urlencoded form)
# Both pass the CRS at PL1 (checked before the runs: a 403 stops them).
# For each target and load, REPS rounds of a wrk run of DURATION seconds
# with CONNS connections; CPU per request = utime+stime of the proxy's
# process tree (/proc/PID/stat, before and after) / requests answered.
# Medians over the rounds, rounds interleaved so that a noisy stretch of
# the machine hits every target.
#
# Usage: bench/waf.sh            (make build first: bin/lbd)
# Environment [defaults]: LBD [bin/lbd]  RULESET [crs4] crs4 (lbd's
#   built-in CRS 4, the coraza-coreruleset module's files, as the
#   differential test uses them) or crs3 (Debian's modsecurity-crs)
#   DURATION [10]  CONNS [4]  REPS [3]  PORT [18700] (PORT..PORT+5)
#   PROXY_CPU [1]  LOAD_CPU [0]  OUT_MD [] also write the table there
#   TARGETS [all five]  LOADS ["get post"] a subset, e.g. TARGETS="lbd lbd-other"
# Needs: nginx, libnginx-mod-http-modsecurity, wrk, taskset (Debian:
#   nginx-light libnginx-mod-http-modsecurity modsecurity-crs wrk util-linux)
set -euo pipefail
cd "$(dirname "$0")/.."
PIN=1
. bench/proc.sh

LBD=${LBD:-bin/lbd} RULESET=${RULESET:-crs4} DURATION=${DURATION:-10} CONNS=${CONNS:-4}
REPS=${REPS:-3} PORT=${PORT:-18700} PROXY_CPU=${PROXY_CPU:-1} LOAD_CPU=${LOAD_CPU:-0}
MODULE=/usr/lib/nginx/modules/ngx_http_modsecurity_module.so
die() { echo "waf.sh: $*" >&2; exit 1; }
[[ -x $LBD ]] || die "$LBD missing (make build)"
for c in nginx wrk taskset; do command -v $c >/dev/null || die "$c missing"; done
[[ -f $MODULE ]] || die "$MODULE missing (apt-get install libnginx-mod-http-modsecurity)"
[[ $DURATION =~ ^[0-9]+$ && $CONNS =~ ^[0-9]+$ && $REPS =~ ^[0-9]+$ && $PORT =~ ^[0-9]+$ ]] ||
	die "DURATION, CONNS, REPS and PORT are numbers"
BE=$PORT NG_PLAIN=$((PORT + 1)) NG_WAF=$((PORT + 2)) LBD_PLAIN=$((PORT + 3)) LBD_OTHER=$((PORT + 4)) LBD_WAF=$((PORT + 5))
for p in $BE $NG_PLAIN $NG_WAF $LBD_PLAIN $LBD_OTHER $LBD_WAF; do
	port_open $p && die "port $p in use (set PORT=...)"
done

tmp=$(mktemp -d /tmp/lbd-waf-bench.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do stop "$p"; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# The rule files, as the differential test writes them.
RULES=$(GOFLAGS='' go run ./bench/wafrules -set "$RULESET" -pl 1 -out "$tmp/rules") || die "bench/wafrules failed"

# The backend: one nginx worker on the load CPU, 200 and 2 bytes.
cat >"$tmp/backend.conf" <<EOF
worker_processes 1;
pid $tmp/backend.pid;
error_log $tmp/backend.err;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/bbody;
	keepalive_requests 100000000;
	server { listen 127.0.0.1:$BE; location / { return 200 "ok"; } }
}
EOF
taskset -c "$LOAD_CPU" nginx -p "$tmp" -e "$tmp/backend.err" -c "$tmp/backend.conf" -g 'daemon off;' &
PIDS+=($!)

# nginx under test: one worker, keep-alive to the backend, logs off.
cat >"$tmp/nginx.conf" <<EOF
load_module $MODULE;
user root;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/body;
	proxy_temp_path $tmp/proxy;
	fastcgi_temp_path $tmp/fastcgi;
	uwsgi_temp_path $tmp/uwsgi;
	scgi_temp_path $tmp/scgi;
	client_body_buffer_size 64k;
	keepalive_requests 100000000;
	upstream be { server 127.0.0.1:$BE; keepalive 16; }
	server { listen 127.0.0.1:$NG_PLAIN;
		location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection ""; } }
	server { listen 127.0.0.1:$NG_WAF; modsecurity on; modsecurity_rules_file $RULES;
		location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
EOF
taskset -c "$PROXY_CPU" nginx -p "$tmp" -e "$tmp/nginx.err" -c "$tmp/nginx.conf" -g 'daemon off;' &
NGINX=$!
PIDS+=($NGINX)

# lbd: one process without a WAF, one with a plain listener beside a WAF one.
listener() { # PORT [WafRules line]
	printf 'ListenHTTP\n\tAddress 127.0.0.1\n\tPort %s\n%s\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %s\n\t\tEnd\n\tEnd\nEnd\n' \
		"$1" "${2:+	$2
}" "$BE"
}
{ echo "Daemon 0"; echo "LogLevel 0"; listener $LBD_PLAIN; } >"$tmp/lbd-plain.cfg"
{ echo "Daemon 0"; echo "LogLevel 0"; listener $LBD_OTHER; listener $LBD_WAF "WafRules \"$RULES\""; } >"$tmp/lbd-waf.cfg"
taskset -c "$PROXY_CPU" "$LBD" -e -f "$tmp/lbd-plain.cfg" >"$tmp/lbd-plain.log" 2>&1 &
LBD0=$!
PIDS+=($LBD0)
taskset -c "$PROXY_CPU" "$LBD" -e -f "$tmp/lbd-waf.cfg" >"$tmp/lbd-waf.log" 2>&1 &
LBD1=$!
PIDS+=($LBD1)
for p in $BE $NG_PLAIN $NG_WAF $LBD_PLAIN $LBD_OTHER $LBD_WAF; do
	wait_port $p || die "nothing listens on $p: $(tail -3 "$tmp"/*.err "$tmp"/*.log 2>/dev/null)"
done

# The loads, as wrk scripts.
cat >"$tmp/get.lua" <<'EOF'
wrk.method = "GET"
wrk.path = "/products/1042?color=navy&size=M"
wrk.headers["Host"] = "shop.example"
wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
wrk.headers["Accept"] = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
wrk.headers["Accept-Language"] = "en-US,en;q=0.9"
wrk.headers["Accept-Encoding"] = "gzip, deflate, br, zstd"
wrk.headers["sec-ch-ua"] = '"Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"'
wrk.headers["sec-ch-ua-mobile"] = "?0"
wrk.headers["sec-ch-ua-platform"] = '"Windows"'
wrk.headers["Sec-Fetch-Site"] = "same-origin"
wrk.headers["Sec-Fetch-Mode"] = "navigate"
wrk.headers["Sec-Fetch-Dest"] = "document"
wrk.headers["Referer"] = "https://shop.example/category/shoes?page=2"
wrk.headers["Cookie"] = "_ga=GA1.2.1427683012.1715001234; sid=7f3a9c2e1b4d5a60; cart=A-100%3A2; theme=dark"
EOF
# 4096 bytes exactly: prose (no percent escapes, so that the cut cannot
# split one) between the other fields.
head="first_name=Maria&last_name=Okafor&stay=2024-05-03&rating=4&title=Lovely+quiet+place&review=" tail="&consent=on"
review=$(printf 'We+stayed+three+nights+at+the+cottage+by+the+lake+and+the+kids+loved+the+canoe.+The+kitchen+was+well+stocked+and+the+beds+were+comfortable.+The+host+left+fresh+bread+every+morning.+%.0s' {1..30})
body=$head${review:0:$((4096 - ${#head} - ${#tail}))}$tail
((${#body} == 4096)) || die "POST body is ${#body} bytes"
{ sed -e 's/wrk.method = "GET"/wrk.method = "POST"/' -e 's|^wrk.path = .*|wrk.path = "/reviews/new"|' "$tmp/get.lua"
	echo 'wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"'
	echo 'wrk.headers["Origin"] = "https://shop.example"'
	echo "wrk.body = \"$body\""; } >"$tmp/post.lua"

declare -A PORT_OF=([nginx]=$NG_PLAIN [nginx+modsec]=$NG_WAF [lbd]=$LBD_PLAIN [lbd-other]=$LBD_OTHER [lbd+waf]=$LBD_WAF)
declare -A PID_OF=([nginx]=$NGINX [nginx+modsec]=$NGINX [lbd]=$LBD0 [lbd-other]=$LBD1 [lbd+waf]=$LBD1)
TARGETS=${TARGETS:-nginx nginx+modsec lbd lbd-other lbd+waf} LOADS=${LOADS:-get post}

ticks() { # CPU ticks (utime+stime) of a process tree
	local p t=0 f
	for p in $(pids_of "$1"); do
		f=$(cut -d')' -f2- "/proc/$p/stat" 2>/dev/null) || continue
		set -- $f
		t=$((t + ${12} + ${13}))
	done
	echo $t
}

# Both loads must pass every target (a 403 would measure the deny page).
for t in $TARGETS; do
	for load in $LOADS; do
		out=$(timeout 20 taskset -c "$LOAD_CPU" wrk -t1 -c1 -d1s -s "$tmp/$load.lua" "http://127.0.0.1:${PORT_OF[$t]}" 2>&1)
		grep -q "Non-2xx" <<<"$out" && die "$t answers the $load load with errors (a WAF deny?):
$out
$(tail -5 "$tmp/nginx.err" "$tmp/lbd-waf.log")"
	done
done

HZ=$(getconf CLK_TCK)
declare -A CPU RPS
for ((r = 1; r <= REPS; r++)); do
	for load in $LOADS; do
		for t in $TARGETS; do
			before=$(ticks "${PID_OF[$t]}")
			out=$(timeout $((DURATION + 30)) taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" \
				-s "$tmp/$load.lua" "http://127.0.0.1:${PORT_OF[$t]}")
			after=$(ticks "${PID_OF[$t]}")
			grep -q "Non-2xx\|Socket errors" <<<"$out" && die "$t $load: errors during the run:
$out"
			n=$(awk '/requests in/ { print $1 }' <<<"$out")
			rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$out")
			us=$(awk -v d=$((after - before)) -v n="$n" -v hz="$HZ" 'BEGIN { printf "%.1f", d / hz * 1e6 / n }')
			CPU[$load,$t]+="$us " RPS[$load,$t]+="$rps "
			echo "round $r $load $t: $n requests, $rps req/s, $us µs CPU/request" >&2
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
{
	echo "CRS $RULESET at PL1, ${DURATION} s x $REPS rounds, $CONNS connections, proxy on CPU $PROXY_CPU, wrk and backend on CPU $LOAD_CPU ($(date -u +%Y-%m-%d), lbd $(git describe --always --dirty 2>/dev/null || echo ?))"
	echo
	echo "| target | GET µs CPU/req | GET req/s | POST 4 KiB µs CPU/req | POST req/s |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	for t in $TARGETS; do
		echo "| $t | $(median <<<"${CPU[get,$t]-}") | $(median <<<"${RPS[get,$t]-}") | $(median <<<"${CPU[post,$t]-}") | $(median <<<"${RPS[post,$t]-}") |"
	done
	echo
	echo "rounds (µs CPU/request): $(for k in "${!CPU[@]}"; do echo -n "$k: ${CPU[$k]}; "; done)"
} | tee ${OUT_MD:+"$OUT_MD"}
