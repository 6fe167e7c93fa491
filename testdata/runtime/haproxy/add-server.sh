#!/bin/bash
# Captures add-server.txt from HAProxy 2.6 on loopback: the replies of
# `add server` and `del server`, errors first, on add-server.cfg's layout.
# Needs haproxy and socat; writes the transcript to stdout.
#   ./add-server.sh > add-server.txt
set -eu
here=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d /tmp/addsrv.XXXXXX)
export DIR
cleanup() {
	for p in ${pids:-}; do kill "$p" 2>/dev/null || true; done
	rm -rf "$DIR"
}
trap cleanup EXIT
cd "$here"
haproxy -f add-server.cfg -db >"$DIR/haproxy.log" 2>&1 &
pids=$!
for _ in $(seq 50); do [ -S "$DIR/admin.sock" ] && break; sleep 0.1; done
run() {
	printf '$ echo "%s" | socat stdio ./run/admin.sock\n' "$1"
	echo "$1" | socat stdio "unix-connect:$DIR/admin.sock"
}
# The server a connection is held on (del server's "still has connections").
socat TCP-LISTEN:18191,bind=127.0.0.1,reuseaddr SYSTEM:"sleep 30" &
pids="$pids $!"
for c in \
	"add server" "add server web" "add server web/" "add server nobe/x 127.0.0.1:1" \
	"add server st/x 127.0.0.1:1" "add server hs/x 127.0.0.1:1" "add server ch/x 127.0.0.1:1" \
	"add server web/s1 127.0.0.1:1" "add server web/n1" "add server web/n2 127.0.0.1:abc" \
	"add server web/n3 127.0.0.1:70000" "add server web/n4 127.0.0.1:1 weight 300" \
	"add server web/n5 127.0.0.1:1 weight -1" "add server web/n6 127.0.0.1:1 bogus" \
	"add server web/n7 127.0.0.1:1 id 1" "add server web/n8 127.0.0.1:1 id 0" "add server web/n9 127.0.0.1:1 id" \
	"add server web/n10 127.0.0.1:1 inter" "add server web/n11 127.0.0.1:1 inter 0" \
	"add server web/n12 127.0.0.1:1 fastinter 0" "add server web/n13 127.0.0.1:1 downinter abc" \
	"add server web/n14 127.0.0.1:1 agent-inter 0" "add server web/n15 127.0.0.1:1 rise" \
	"add server web/n16 127.0.0.1:1 rise 0" "add server web/n17 127.0.0.1:1 fall -1" \
	"add server web/n18 127.0.0.1:1 agent-send" "add server web/n19 127.0.0.1:1 agent-addr" \
	"add server web/n20 127.0.0.1:1 agent-check" "add server web/n21 127.0.0.1:1 pool-low-conn" \
	"add server web/n22 127.0.0.1:1 pool-purge-delay x" "add server web/n23 127.0.0.1:1 observe layer9" \
	"add server web/n24 127.0.0.1:1 on-error x" "add server web/n25 127.0.0.1:1 error-limit 0" \
	"add server ch/n26 127.0.0.1:1 cookie abc" "add server web/b@d 127.0.0.1:1" \
	"add server ch/n27 127.0.0.1:1 weight abc" \
	"add server web/n28 127.0.0.1:1 resolvers dns" "add server web/n29 127.0.0.1:1 init-addr none" \
	"add server web/n30 127.0.0.1:1 resolve-prefer ipv4" "add server web/n31 127.0.0.1:1 resolve-opts allow-dup-ip" \
	"add server web/d1 127.0.0.1:18083 weight 10" "add server web/d2 127.0.0.1:18084 id 100 maxconn 5 backup" \
	"add server web/d3 127.0.0.1:18085 id 100" "show servers state web" \
	"del server" "del server web" "del server web/" "del server nobe/x" "del server web/nosuch" \
	"del server web/s1" "enable server web/d1" "del server web/d1" "disable server web/d1" \
	"del server web/d1" "del server web/d1" "add server tb/t1 127.0.0.1:18191" "enable server tb/t1"; do
	run "$c"
done
# A client holds a connection through the tcp frontend to tb/t1.
(sleep 20 | socat - TCP:127.0.0.1:18190) &
pids="$pids $!"
sleep 0.5
for c in "disable server tb/t1" "del server tb/t1"; do
	run "$c"
done
