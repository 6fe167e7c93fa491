#!/usr/bin/env bash
# Captures HAProxy 2.6's DNS discovery on loopback against dnsmasq: the
# replies of `show resolvers`, `show servers state` and the status column
# of `show stat` while SRV records and host addresses change. The output,
# timeline.txt, is the reference the fulcrum tests follow (resolve_e2e_test.go
# and runtime's resolvers tests). Run from anywhere; needs haproxy, dnsmasq,
# socat. Ports: DNS 15353 (15354 stays closed: a dead nameserver).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'kill $(cat $dir/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$dir"' EXIT

cat > "$dir/hosts" <<HOSTS
127.0.0.1 a1.svc.test
127.0.0.2 a2.svc.test
127.0.0.3 a3.svc.test
127.0.0.4 a4.svc.test
127.0.0.5 a5.svc.test
127.0.0.1 web.test
127.0.0.2 web.test
HOSTS

dnsmasq_start() { # SRV lines on stdin
  { echo "no-resolv"; echo "no-hosts"; echo "addn-hosts=$dir/hosts"; echo "local=/test/"
    echo "listen-address=127.0.0.1"; echo "bind-interfaces"; echo "port=15353"; echo "local-ttl=1"
    cat; } > "$dir/dnsmasq.conf"
  dnsmasq --no-daemon --conf-file="$dir/dnsmasq.conf" --user=root >/dev/null 2>&1 &
  echo $! > "$dir/dnsmasq.pid"
  sleep 0.3
}
dnsmasq_stop() { kill "$(cat "$dir/dnsmasq.pid")"; rm -f "$dir/dnsmasq.pid"; sleep 0.2; }

cat > "$dir/haproxy.cfg" <<CFG
global
    stats socket $dir/admin.sock level admin

defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s

resolvers dns
    nameserver ns1 127.0.0.1:15353
    nameserver ns2 127.0.0.1:15354
    accepted_payload_size 8192
    resolve_retries 2
    timeout resolve 500ms
    timeout retry 300ms
    hold valid 1s
    hold obsolete 2s
    hold nx 3s
    hold timeout 3s
    hold refused 3s
    hold other 3s

frontend fe
    bind 127.0.0.1:18080
    default_backend be_srv

backend be_srv
    server-template srv 4 _http._tcp.svc.test resolvers dns init-addr none

backend be_a
    server-template web 3 web.test:18081 resolvers dns init-addr none resolve-prefer ipv4

backend be_host
    server h1 a1.svc.test:18081 resolvers dns init-addr none
    server h2 nope.test:18081 resolvers dns init-addr none
    server plain 127.0.0.1:18081
CFG

out="$here/timeline.txt"
: > "$out"
cli() { echo "\$ echo \"$1\" | socat stdio ./admin.sock" >> "$out"; echo "$1" | socat stdio "unix:$dir/admin.sock" >> "$out"; }
status() { echo "\$ echo \"show stat\" | socat stdio ./admin.sock | cut -d, -f1,2,18,19 | grep -v FRONTEND" >> "$out"
  echo "show stat" | socat stdio "unix:$dir/admin.sock" | cut -d, -f1,2,18,19 | grep -v FRONTEND >> "$out"; }
note() { printf '### %s\n' "$*" >> "$out"; }

srv3() { printf 'srv-host=_http._tcp.svc.test,a1.svc.test,18081,0,10\nsrv-host=_http._tcp.svc.test,a2.svc.test,18082,0,300\nsrv-host=_http._tcp.svc.test,a3.svc.test,18083,0,60000\n'; }

note "t=0: SRV a1 (weight 10), a2 (300), a3 (60000); web.test has 127.0.0.1 and .2; ns2 is closed"
srv3 | dnsmasq_start
haproxy -f "$dir/haproxy.cfg" -W >/dev/null 2>&1 & echo $! > "$dir/haproxy.pid"
sleep 2
cli "show servers state"
status

note "a3 removed from the SRV records: its slot stays during hold obsolete (2s)"
dnsmasq_stop; srv3 | grep -v a3 | dnsmasq_start
sleep 1
cli "show servers state be_srv"
note "after hold obsolete: MAINT (resolution), no address, no port, the fqdn flag (0x40) stays"
sleep 2.5
cli "show servers state be_srv"
status

note "a4 and a5 added: they fill the free slots"
dnsmasq_stop; { srv3 | grep -v a3; printf 'srv-host=_http._tcp.svc.test,a4.svc.test,18084,0,1\nsrv-host=_http._tcp.svc.test,a5.svc.test,18085,0,256\n'; } | dnsmasq_start
sleep 1.5
cli "show servers state be_srv"
status

note "a1.svc.test moves to 127.0.0.9 (hosts file, SIGHUP): h1 keeps 127.0.0.1 while that record is not obsolete (2s)"
sed -i 's/^127.0.0.1 a1.svc.test/127.0.0.9 a1.svc.test/' "$dir/hosts"
kill -HUP "$(cat "$dir/dnsmasq.pid")"
sleep 1
cli "show servers state be_host"
note "then h1 and the SRV slot follow"
sleep 2.5
cli "show servers state be_host"
cli "show servers state be_srv"

note "dnsmasq stopped: within hold timeout (3s) every server keeps its address"
dnsmasq_stop
sleep 1.5
cli "show servers state"
note "after hold timeout"
sleep 4
cli "show servers state"
status

note "the counters"
cli "show resolvers"
cli "show resolvers dns"
cli "show resolvers nosuch"
cli "show stat domain resolvers"
cli "set server be_host/h1 fqdn a2.svc.test"
cli "set server be_srv/srv1 fqdn a1.svc.test"
cli "set server be_host/plain fqdn a2.svc.test"
cli "set server be_host/h1 fqdn"
