#!/bin/bash
# Captures add-server-tls.txt from HAProxy 2.6 on loopback: the replies of
# `add server` with TLS and PROXY protocol keywords, on add-server.cfg's
# layout. Needs haproxy and socat; writes the transcript to stdout.
#   ./add-server-tls.sh > add-server-tls.txt
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
for c in \
	"add server web/t1 127.0.0.1:1 ssl ca-file /nonexistent/ca.pem" \
	"add server web/t2 127.0.0.1:1 ssl verify required ca-file rel/ca.pem" \
	"add server web/t3 127.0.0.1:1 ssl verify none sni nosuchfetch(x)" \
	"add server web/t4 127.0.0.1:1 ssl verify maybe" \
	"add server web/t5 127.0.0.1:1 ssl verify none crt /nonexistent/c.pem" \
	"add server web/t6 127.0.0.1:1 ssl verify none alpn" \
	"add server web/t7 127.0.0.1:1 send-proxy-v2 proxy-v2-options bogus" \
	"add server web/t8 127.0.0.1:1 ssl" \
	"add server web/t9 127.0.0.1:1 ssl verify none sni" \
	"add server web/t10 127.0.0.1:1 ssl verify none verifyhost" \
	"add server web/t11 127.0.0.1:1 ssl verify none ca-file" \
	"add server web/t12 127.0.0.1:1 ssl verify none crt" \
	"add server web/t13 127.0.0.1:1 proxy-v2-options" \
	"add server web/t14 127.0.0.1:1 verify" \
	"add server web/t15 127.0.0.1:1 ssl verify none sni str(www.test) alpn h2,http/1.1 send-proxy-v2 proxy-v2-options ssl,authority check-ssl check-send-proxy" \
	"add server web/t16 127.0.0.1:1 no-ssl" \
	"add server tb/t17 127.0.0.1:1 ssl verify none sni req.hdr(host)" \
	"add server web/t18 127.0.0.1:1 ssl verify none sni req.hdr(host)" \
	"add server web/t19 127.0.0.1:1 send-proxy check-send-proxy" \
	"add server web/t20 127.0.0.1:1 check-ssl verify none verifyhost www.test"; do
	run "$c"
done
