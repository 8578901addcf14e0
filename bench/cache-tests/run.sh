#!/bin/bash
# run.sh DIR [NAME...]: runs the HTTP caching test suite (npm
# http-cache-tests) through lbd and, in the same session, through Debian's
# varnish, squid, trafficserver and nginx, each a shared cache in front of
# the suite's own origin on loopback. Results: DIR/NAME.json, and the
# summary of each (summary.mjs) in DIR/NAME.txt.
#
# Needs: nodejs npm (the suite installed in DIR/node_modules by
# `npm install --prefix DIR http-cache-tests`), bin/lbd built, and for the
# peers: apt-get install varnish squid trafficserver nginx-light.
# Ports: PORT_BASE (default 21000) for the origin, +1.. for the caches.
set -u
dir=$(realpath "$1"); shift
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(lbd varnish squid trafficserver nginx)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
pkg=$dir/node_modules/http-cache-tests
base=${PORT_BASE:-21000}
work=$dir/work
mkdir -p "$work"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; pids=(); }
trap stop EXIT

wait_port() {
	for _ in $(seq 1 100); do
		(exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "port $1 did not open" >&2
	return 1
}

(cd "$pkg" && npm_config_protocol=http npm_config_port="$base" npm_config_pidfile="$work/origin.pid" \
	exec node server/server.mjs >"$work/origin.log" 2>&1) &
pids+=($!)
origin_pid=$!
wait_port "$base" || exit 1

start_lbd() {
	sed -e "s/@PORT@/$1/" -e "s/@ORIGIN@/$base/" "$here/lbd.cfg" >"$work/lbd.cfg"
	"$top/bin/lbd" -e -f "$work/lbd.cfg" >"$work/lbd.log" 2>&1 &
	peer=$!
}
start_varnish() {
	rm -rf "$work/varnish"
	varnishd -F -n "$work/varnish" -a 127.0.0.1:"$1" -b 127.0.0.1:"$base" -s malloc,64m >"$work/varnish.log" 2>&1 &
	peer=$!
}
start_squid() {
	sed -e "s/@PORT@/$1/g" -e "s/@ORIGIN@/$base/g" -e "s#@WORK@#$work#g" "$here/squid.conf" >"$work/squid.conf"
	squid -N -f "$work/squid.conf" >"$work/squid.log" 2>&1 &
	peer=$!
}
start_nginx() {
	mkdir -p "$work/nginx"
	sed -e "s/@PORT@/$1/g" -e "s/@ORIGIN@/$base/g" -e "s#@WORK@#$work#g" "$here/nginx.conf" >"$work/nginx.conf"
	nginx -c "$work/nginx.conf" -p "$work/nginx" >"$work/nginx.log" 2>&1 &
	peer=$!
}
start_trafficserver() {
	local ts=$work/ats
	rm -rf "$ts" && mkdir -p "$ts/etc" "$ts/cache" "$ts/run" "$ts/log"
	cp -r /etc/trafficserver/. "$ts/etc/"
	sed -e "s/@PORT@/$1/g" -e "s/@ORIGIN@/$base/g" "$here/ats-records.config" >"$ts/etc/records.config"
	echo "map / http://127.0.0.1:$base/" >"$ts/etc/remap.config"
	echo "$ts/cache 64M" >"$ts/etc/storage.config"
	cat >"$ts/runroot.yaml" <<-YAML
	prefix: /usr
	exec_prefix: /usr
	bindir: /usr/bin
	sbindir: /usr/sbin
	sysconfdir: $ts/etc
	datadir: /usr/share/trafficserver
	includedir: /usr/include
	libdir: /usr/lib
	libexecdir: /usr/lib/trafficserver/modules
	localstatedir: $ts/run
	runtimedir: $ts/run
	logdir: $ts/log
	cachedir: $ts/cache
	YAML
	chown -R trafficserver:trafficserver "$ts" 2>/dev/null
	traffic_server --run-root="$ts/runroot.yaml" >"$work/trafficserver.log" 2>&1 &
	peer=$!
}

port=$((base + 1))
for name in "${names[@]}"; do
	"start_$name" "$port"
	pids+=("$peer")
	if wait_port "$port"; then
		sleep 1
		(cd "$pkg" && npm_config_base="http://127.0.0.1:$port" npm_config_id="" npm_package_config_id="" \
			timeout 900 node --no-warnings cli.mjs) >"$dir/$name.json" 2>"$work/$name.cli.err"
		node "$here/summary.mjs" "$dir/$name.json" "$pkg" >"$dir/$name.txt"
		echo "== $name"; head -20 "$dir/$name.txt"
	fi
	kill "$peer" 2>/dev/null
	wait "$peer" 2>/dev/null
	port=$((port + 1))
done
