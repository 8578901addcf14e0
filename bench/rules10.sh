#!/bin/sh
# rules10.sh CFG LBD [ARGS...]: run lbd on peers.sh's Pound config with the
# 10-rule program of proxy/alloc_rules_test.go added to its service, for
# the cost of the request language (bench/RESULTS.md §9):
#   ../shared/bench/peers.sh "$PWD/bin/lbd -F -f {cfg}" "$PWD/bench/rules10.sh {cfg} $PWD/bin/lbd -F"
set -eu
cfg=$1
shift
out=${cfg%.cfg}-rules10.cfg
awk '
/^[ \t]*ListenHTTP/ { print; print "    SetHeader \"X-Proxy: lbd\""; next }
/^[ \t]*Service/ {
	print
	print "        Path -beg \"/\""
	print "        Not Header \"X-Block\""
	print "        Method \"^(GET|HEAD)$\""
	print "        Header \"Host\" -contain \"127.0.0.1\""
	print "        Rewrite"
	print "            Path \"\\\\.html$\""
	print "            SetPath \"/static/index.html\""
	print "        Else"
	print "            SetHeader \"X-Kind: other\""
	print "        End"
	print "        DeleteHeader \"^Cookie:\""
	print "        SetHeader \"X-Query: %[query]\""
	print "        SetHeader \"X-Via: %[host]\""
	next
}
{ print }' "$cfg" > "$out"
exec "$@" -f "$out"
