#!/usr/bin/env bash
# bench/syscalls.sh - kernel crossings per request, fulcrum and HAProxy 2.6
# side by side (issue 21, point 1). Counts do not depend much on how busy the
# machine is, unlike req/s: use this to judge a change on a shared machine.
#
# Starts three nginx upstreams, HAProxy (nbthread $HAP_NBTHREAD) and fulcrum
# with the same configs as bench/run.sh (on other ports), then for each mode
# and target runs wrk -c$CONNS for $DUR seconds while perf stat counts, in the
# proxy's process (all its threads, those started meanwhile too):
#   - every system call (raw_syscalls:sys_enter) and each of the usual kinds
#     (syscalls:sys_enter_NAME; "other" is the rest);
#   - the reads that failed with EAGAIN (syscalls:sys_exit_NAME for read,
#     recvfrom, readv and recvmsg with ret == -11: a read that found the
#     socket empty), and the accept4 calls that did (no connection waiting);
#   - context switches and CPU migrations of its threads;
# and reads the proxy's CPU time (/proc) and, for fulcrum, its goroutine runs
# (`show activity` sched_runs: goroutines put on a P, estimated from the
# runtime's /sched/latencies:seconds, which records one run in 8). Every
# figure is divided by the requests wrk completed meanwhile.
#
# Modes: http-ka (keep-alive), http-close (a connection per request), tcp-ka
# (wrk keep-alive through the tcp frontend: small messages); track and peers
# (not in the default MODES), as in bench/run.sh: keep-alive against a
# frontend that tracks each connection (track-sc0 src_port) in a table
# storing http_req_cnt and http_req_rate(10s), alone (track) or replicated
# over the peers protocol to a sink of the same kind (peers: a second
# fulcrum or `haproxy -L hapsink`, started only for this mode, whose own
# counts are not included): peers minus track is replication's cost; h2c (not
# in the default MODES: h2load -c$CONNS -m$H2_STREAMS, HTTP/2 with prior
# knowledge on a "proto h2" bind, to the same HTTP/1.1 upstreams; needs h2load);
# tls-ka and tls-close (not in the default MODES): http-ka and http-close over
# https, TLS terminated by the proxy on a bind "ssl crt bench.pem alpn
# http/1.1" (a self-signed certificate made by openssl here, TLS_KEY ecdsa
# P-256 or rsa 2048, as bench/run.sh's TLS modes): tls-close is a full
# handshake per request (a second bind with no-tls-tickets, and HAProxy's
# session cache off, as run.sh: wrk resumes whenever it is given a ticket).
#
# Knobs (defaults): DUR=5 CONNS=64 WARM=1 MODES="http-ka http-close tcp-ka"
#   ONLY="haproxy fulcrum" FULCRUM=./bin/fulcrum FUL_GOMAXPROCS=2 HAP_NBTHREAD=2
#   UP_BASE=23901 FUL_HTTP=23080 FUL_TCP=23081
#   HAP_HTTP=23180 HAP_TCP=23181 WORKDIR=$(mktemp -d)
#   FUL_T=23084 FUL_P=23083 HAP_T=23184 HAP_P=23183 PEER_BASE=23280
#               (peers mode: peer ports PEER_BASE+0/+1 fulcrum and its sink,
#               +2/+3 haproxy and its sink)
#   FUL_H2=23082 HAP_H2=23182 H2_STREAMS=10 (h2c mode)
#   FUL_TLS=23085 HAP_TLS=23185 TLS_KEY=ecdsa (tls-ka and tls-close modes)
#   FUL_TLSF=23086 HAP_TLSF=23186 (tls-close's binds, no tickets)
#   FUL_ENV="NAME=value ..."   extra environment for fulcrum (experiments)
#   FUL_NETIO=   fulcrum's tune_netio ("go" or "epoll"; empty: the default)
#   RECORD=0     1: after the counts, a perf record -g profile of each run in
#                WORKDIR/raw/MODE.TARGET.data (build fulcrum without -s -w
#                for symbols: go build -o /tmp/fulcrum ./cmd/fulcrum)
# Needs: haproxy nginx wrk socat linux-perf (openssl for the TLS modes); root (or perf_event_paranoid <= 1).
# Everything listens on 127.0.0.1; every process is stopped at exit.
set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)

DUR=${DUR:-5}
CONNS=${CONNS:-64}
WARM=${WARM:-1}
MODES=${MODES:-"http-ka http-close tcp-ka"}
ONLY=${ONLY:-"haproxy fulcrum"}
FULCRUM=${FULCRUM:-./bin/fulcrum}
FUL_GOMAXPROCS=${FUL_GOMAXPROCS-2}
HAP_NBTHREAD=${HAP_NBTHREAD:-2}
UP_BASE=${UP_BASE:-23901}
FUL_HTTP=${FUL_HTTP:-23080}
FUL_TCP=${FUL_TCP:-23081}
HAP_HTTP=${HAP_HTTP:-23180}
HAP_TCP=${HAP_TCP:-23181}
FUL_T=${FUL_T:-23084}
FUL_P=${FUL_P:-23083}
HAP_T=${HAP_T:-23184}
HAP_P=${HAP_P:-23183}
PEER_BASE=${PEER_BASE:-23280}
FUL_H2=${FUL_H2:-23082}
HAP_H2=${HAP_H2:-23182}
H2_STREAMS=${H2_STREAMS:-10}
FUL_TLS=${FUL_TLS:-23085}
HAP_TLS=${HAP_TLS:-23185}
FUL_TLSF=${FUL_TLSF:-23086}
HAP_TLSF=${HAP_TLSF:-23186}
TLS_KEY=${TLS_KEY:-ecdsa}
FUL_ENV=${FUL_ENV:-}
FUL_NETIO=${FUL_NETIO:-}
RECORD=${RECORD:-0}
UP_PORTS="$UP_BASE $((UP_BASE + 1)) $((UP_BASE + 2))"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

for t in haproxy nginx wrk socat perf; do
  command -v "$t" >/dev/null || die "missing $t: apt-get install -y haproxy nginx wrk socat linux-perf"
done
for v in DUR CONNS WARM UP_BASE FUL_HTTP FUL_TCP HAP_HTTP HAP_TCP HAP_NBTHREAD FUL_T FUL_P HAP_T HAP_P PEER_BASE FUL_H2 HAP_H2 H2_STREAMS FUL_TLS HAP_TLS FUL_TLSF HAP_TLSF; do
  case ${!v} in ''|*[!0-9]*) die "$v must be a non-negative integer";; esac
done
for m in $MODES; do case $m in http-ka|http-close|tcp-ka|track|peers) ;;
  tls-ka|tls-close) command -v openssl >/dev/null || die "missing openssl";; h2c) command -v h2load >/dev/null || die "missing h2load: apt-get install -y nghttp2-client";; *) die "unknown mode $m";; esac; done
case $FULCRUM in /*) BIN=$FULCRUM;; *) BIN=$ROOT/${FULCRUM#./};; esac
case " $ONLY " in *" fulcrum "*) [ -x "$BIN" ] || die "$BIN not found: run 'make build'";; esac

if [ -n "${WORKDIR:-}" ]; then mkdir -p "$WORKDIR" && D=$WORKDIR; else D=$(mktemp -d -t fulcrum-sys.XXXXXX); fi
D=$(cd "$D" && pwd)
mkdir -p "$D/tmp" "$D/raw"
SOCK=$D/admin.sock
PIDS=()
PROBE=""
cleanup() {
  local p
  [ -n "$PROBE" ] && kill -INT "$PROBE" 2>/dev/null
  for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]+"${PIDS[@]}"}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$p" 2>/dev/null
  done
  log "workdir: $D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { for _ in $(seq 100); do port_open "$1" && return 0; sleep 0.1; done; return 1; }
WANT_PEERS=0
case " $MODES " in *" peers "*) WANT_PEERS=1;; esac
WANT_TLS=0
case " $MODES " in *" tls-"*) WANT_TLS=1;; esac
case $TLS_KEY in ecdsa|rsa) ;; *) die "TLS_KEY must be ecdsa or rsa";; esac
TLS_PORTS=""
[ "$WANT_TLS" = 1 ] && TLS_PORTS="$FUL_TLS $HAP_TLS $FUL_TLSF $HAP_TLSF"
for p in $UP_PORTS $FUL_HTTP $FUL_TCP $HAP_HTTP $HAP_TCP $FUL_T $FUL_P $HAP_T $HAP_P $FUL_H2 $HAP_H2 $TLS_PORTS $(seq "$PEER_BASE" $((PEER_BASE + 3))); do port_open "$p" && die "127.0.0.1:$p is in use"; done

# ------------------------------------------------------------------ configs
# the TLS modes' certificate (self-signed, certificate then key in one PEM)
if [ "$WANT_TLS" = 1 ]; then
  if [ "$TLS_KEY" = rsa ]; then kopt=(-newkey rsa:2048); else kopt=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
  openssl req -x509 "${kopt[@]}" -nodes -days 2 -subj /CN=bench.test -addext subjectAltName=DNS:bench.test \
    -keyout "$D/tmp/bench.key" -out "$D/tmp/bench.crt" 2> "$D/tmp/openssl.err" || { cat "$D/tmp/openssl.err" >&2; die "openssl could not make the certificate"; }
  cat "$D/tmp/bench.crt" "$D/tmp/bench.key" > "$D/bench.pem"
fi
{
  echo "worker_processes 1; daemon off; pid $D/nginx.pid; error_log $D/nginx.err warn;"
  [ "$(id -u)" = 0 ] && echo "user root;"
  echo "events { worker_connections 8192; }"
  echo "http { access_log off; client_body_temp_path $D/tmp/cb; proxy_temp_path $D/tmp/px;"
  echo "  fastcgi_temp_path $D/tmp/fc; uwsgi_temp_path $D/tmp/uw; scgi_temp_path $D/tmp/sc;"
  echo "  default_type text/plain; tcp_nodelay on;"
  echo "  keepalive_requests 100000000; keepalive_timeout 300s;"
  n=0
  for p in $UP_PORTS; do
    n=$((n + 1))
    echo "  server { listen 127.0.0.1:$p backlog=4096; location / { add_header X-Upstream b$n; return 200 \"ok\\n\"; } }"
  done
  echo "}"
} > "$D/nginx.conf"

srv_hap() { local n=0 p; for p in $UP_PORTS; do n=$((n + 1)); echo "    server b$n 127.0.0.1:$p"; done; }
cat > "$D/haproxy.cfg" <<EOF
global
    nbthread $HAP_NBTHREAD
    stats socket $D/haproxy.sock level admin
    maxconn 4000
$([ "$WANT_TLS" = 1 ] && printf '    # no session cache: tls-close (no-tls-tickets bind) is a full handshake each time\n    tune.ssl.cachesize 0')
defaults
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend fe_http
    mode http
    bind 127.0.0.1:$HAP_HTTP
    bind 127.0.0.1:$HAP_H2 proto h2
    default_backend be_http
frontend fe_tcp
    mode tcp
    bind 127.0.0.1:$HAP_TCP
    default_backend be_tcp
backend be_http
    mode http
    balance roundrobin
    http-reuse always
$(srv_hap)
backend be_tcp
    mode tcp
    balance roundrobin
$(srv_hap)
peers mesh
    peer hap 127.0.0.1:$((PEER_BASE + 2))
    peer hapsink 127.0.0.1:$((PEER_BASE + 3))
frontend fe_p
    mode http
    bind 127.0.0.1:$HAP_P
    stick-table type integer size 100k expire 1m store http_req_cnt,http_req_rate(10s) peers mesh
    http-request track-sc0 src_port
    default_backend be_http
frontend fe_t
    mode http
    bind 127.0.0.1:$HAP_T
    stick-table type integer size 100k expire 1m store http_req_cnt,http_req_rate(10s)
    http-request track-sc0 src_port
    default_backend be_http
EOF
[ "$WANT_TLS" = 1 ] && cat >> "$D/haproxy.cfg" <<EOF
frontend fe_tls
    mode http
    bind 127.0.0.1:$HAP_TLS ssl crt $D/bench.pem alpn http/1.1
    default_backend be_http
frontend fe_tlsf
    mode http
    bind 127.0.0.1:$HAP_TLSF ssl crt $D/bench.pem alpn http/1.1 no-tls-tickets
    default_backend be_http
EOF
cat > "$D/haproxy-sink.cfg" <<EOF
global
    stats socket $D/haproxy-sink.sock level admin
peers mesh
    peer hap 127.0.0.1:$((PEER_BASE + 2))
    peer hapsink 127.0.0.1:$((PEER_BASE + 3))
backend fe_p
    stick-table type integer size 100k expire 1m store http_req_cnt,http_req_rate(10s) peers mesh
EOF

srv_ful() { local n=0 p; for p in $UP_PORTS; do n=$((n + 1)); printf '[[backend.server]]\nname = "b%d"\naddress = "127.0.0.1:%s"\n' "$n" "$p"; done; }
cat > "$D/fulcrum.toml" <<EOF
[global]
log_level = "error"
${FUL_NETIO:+tune_netio = \"$FUL_NETIO\"}
[[global.stats_socket]]
path = "$SOCK"
level = "admin"
[defaults]
timeout_connect = "5s"
timeout_client = "60s"
timeout_server = "60s"
[[frontend]]
name = "fe_http"
bind = ["127.0.0.1:$FUL_HTTP", "127.0.0.1:$FUL_H2 proto h2"]
mode = "http"
default_backend = "be_http"
[[frontend]]
name = "fe_tcp"
bind = ["127.0.0.1:$FUL_TCP"]
mode = "tcp"
default_backend = "be_tcp"
[[backend]]
name = "be_http"
mode = "http"
balance = "roundrobin"
http_reuse = "always"
$(srv_ful)
[[backend]]
name = "be_tcp"
mode = "tcp"
balance = "roundrobin"
$(srv_ful)
[[peers]]
name = "mesh"
localpeer = "ful"
peer = [
  { name = "ful", address = "127.0.0.1:$PEER_BASE" },
  { name = "fulsink", address = "127.0.0.1:$((PEER_BASE + 1))" },
]
[[frontend]]
name = "fe_p"
bind = ["127.0.0.1:$FUL_P"]
mode = "http"
default_backend = "be_http"
stick_table = { type = "integer", size = 100000, expire = "1m", store = ["http_req_cnt", "http_req_rate(10s)"], peers = "mesh" }
http_request = ["track-sc0 src_port"]
[[frontend]]
name = "fe_t"
bind = ["127.0.0.1:$FUL_T"]
mode = "http"
default_backend = "be_http"
stick_table = { type = "integer", size = 100000, expire = "1m", store = ["http_req_cnt", "http_req_rate(10s)"] }
http_request = ["track-sc0 src_port"]
EOF
[ "$WANT_TLS" = 1 ] && cat >> "$D/fulcrum.toml" <<EOF
[[frontend]]
name = "fe_tls"
bind = ["127.0.0.1:$FUL_TLS ssl crt $D/bench.pem alpn http/1.1"]
mode = "http"
default_backend = "be_http"
[[frontend]]
name = "fe_tlsf"
bind = ["127.0.0.1:$FUL_TLSF ssl crt $D/bench.pem alpn http/1.1 no-tls-tickets"]
mode = "http"
default_backend = "be_http"
EOF
cat > "$D/fulcrum-sink.toml" <<EOF
[global]
log_level = "error"
[[global.stats_socket]]
path = "$D/fulcrum-sink.sock"
[[peers]]
name = "mesh"
localpeer = "fulsink"
peer = [
  { name = "ful", address = "127.0.0.1:$PEER_BASE" },
  { name = "fulsink", address = "127.0.0.1:$((PEER_BASE + 1))" },
]
[[frontend]]
name = "unused"
bind = ["127.0.0.1:0"]
mode = "tcp"
default_backend = "unused"
[[backend]]
name = "unused"
mode = "tcp"
[[backend.server]]
name = "unused"
address = "127.0.0.1:9"
[[table]]
name = "fe_p"
type = "integer"
size = 100000
expire = "1m"
store = ["http_req_cnt", "http_req_rate(10s)"]
peers = "mesh"
EOF

# ------------------------------------------------------------------ start
start() { # name cmd... -> START_PID
  local name=$1; shift
  setsid "$@" > "$D/$name.log" 2>&1 < /dev/null &
  START_PID=$!
  PIDS+=("$START_PID")
}
start nginx nginx -p "$D" -e "$D/nginx.err" -c "$D/nginx.conf"
for p in $UP_PORTS; do wait_port "$p" || die "nginx did not start (see $D/nginx.err)"; done
declare -A PID HPORT TPORT H2PORT
declare -A TLSPORT=([haproxy]=$HAP_TLS [fulcrum]=$FUL_TLS) TLSFPORT=([haproxy]=$HAP_TLSF [fulcrum]=$FUL_TLSF)
HPORT=([haproxy]=$HAP_HTTP [fulcrum]=$FUL_HTTP)
H2PORT=([haproxy]=$HAP_H2 [fulcrum]=$FUL_H2)
TPORT=([haproxy]=$HAP_TCP [fulcrum]=$FUL_TCP)
declare -A TRACK_PORT=([haproxy]=$HAP_T [fulcrum]=$FUL_T) PEERS_PORT=([haproxy]=$HAP_P [fulcrum]=$FUL_P)
declare -A SINK_PORT=([haproxy]=$((PEER_BASE + 3)) [fulcrum]=$((PEER_BASE + 1)))
for t in $ONLY; do
  if [ "$WANT_PEERS" = 1 ]; then
    # the peers mode's sink first, so that the first updates have a peer
    case $t in
      haproxy) start haproxy-sink haproxy -db -L hapsink -f "$D/haproxy-sink.cfg" ;;
      fulcrum) start fulcrum-sink "$BIN" run -c "$D/fulcrum-sink.toml" ;;
    esac
    wait_port "${SINK_PORT[$t]}" || { tail "$D/$t-sink.log" >&2; die "the $t sink did not start"; }
  fi
  case $t in
    haproxy) start haproxy haproxy -db -L hap -f "$D/haproxy.cfg" ;;
    fulcrum)
      # shellcheck disable=SC2086
      if [ -n "$FUL_GOMAXPROCS" ]; then start fulcrum env GOMAXPROCS="$FUL_GOMAXPROCS" $FUL_ENV "$BIN" run -c "$D/fulcrum.toml"
      else start fulcrum env $FUL_ENV "$BIN" run -c "$D/fulcrum.toml"; fi ;;
    *) die "unknown target $t" ;;
  esac
  PID[$t]=$START_PID
  wait_port "${HPORT[$t]}" && wait_port "${TPORT[$t]}" || { tail "$D/$t.log" >&2; die "$t did not start"; }
  if [ "$WANT_TLS" = 1 ]; then wait_port "${TLSPORT[$t]}" || { tail "$D/$t.log" >&2; die "$t does not listen on its TLS port"; }; fi
done

# ------------------------------------------------------------------ measuring
HZ=$(getconf CLK_TCK)
# the PID that holds the threads: `env` execs, setsid forks once at most
real_pid() { local p=$1 c; c=$(pgrep -P "$p" | head -1); [ -n "$c" ] && [ "$(cat /proc/$p/comm)" = setsid ] && p=$c; echo "$p"; }
ticks() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }; s=${s##*) }; set -- $s; echo $(( ${12} + ${13} )); }
# the peers mode: the last update id pushed to the sink (show peers'
# last_pushed: one id per entry sent, an entry changed many times between two
# pushes being sent once)
pushed() {
  local s=$SOCK; [ "$1" = haproxy ] && s=$D/haproxy.sock
  echo "show peers" | socat -t 2 stdio "unix-connect:$s" 2>/dev/null | sed -n 's/.*last_pushed=\([0-9]*\).*/\1/p' | head -1
}
# the peers mode: the fd of pid's connection with its sink
peer_fd() {
  local mine=$PEER_BASE sink=$((PEER_BASE + 1))
  [ "$1" = haproxy ] && mine=$((PEER_BASE + 2)) sink=$((PEER_BASE + 3))
  ss -Htnp state established 2>/dev/null | awk -v pid="pid=$2," -v a=":$mine" -v b=":$sink" '
    index($0, pid) && (substr($3, length($3) - length(a) + 1) == a || substr($4, length($4) - length(b) + 1) == b) {
      if (match($0, pid "fd=[0-9]+")) { print substr($0, RSTART + length(pid) + 3, RLENGTH - length(pid) - 3); exit } }'
}
sched_runs() { [ "$1" = fulcrum ] || { echo 0; return; }; echo "show activity" | socat -t 2 stdio "unix-connect:$SOCK" 2>/dev/null | awk -F': ' '$1=="sched_runs"{print $2}'; }
url() { case $1 in tcp-ka) echo "http://127.0.0.1:${TPORT[$2]}/";; tls-ka) echo "https://127.0.0.1:${TLSPORT[$2]}/";; tls-close) echo "https://127.0.0.1:${TLSFPORT[$2]}/";; h2c) echo "http://127.0.0.1:${H2PORT[$2]}/";; track) echo "http://127.0.0.1:${TRACK_PORT[$2]}/";;
  peers) echo "http://127.0.0.1:${PEERS_PORT[$2]}/";; *) echo "http://127.0.0.1:${HPORT[$2]}/";; esac; }
load() { # mode target secs outfile
  if [ "$1" = h2c ]; then
    timeout $(( $3 + 20 )) h2load -c"$CONNS" -m"$H2_STREAMS" -D"$3" "$(url "$1" "$2")" > "$4" 2>&1
    awk '/^requests:/{print $8}' "$4"
    return
  fi
  local hdr=()
  case $1 in http-close|tls-close) hdr=(-H "Connection: close");; esac
  timeout $(( $3 + 20 )) wrk -t1 -c"$CONNS" -d"${3}s" "${hdr[@]+"${hdr[@]}"}" "$(url "$1" "$2")" > "$4" 2>&1
  awk '/requests in/{print $1}' "$4"
}

KINDS="read write recvfrom sendto readv writev recvmsg sendmsg epoll_wait epoll_pwait epoll_ctl futex nanosleep sched_yield
  accept4 connect close shutdown socket setsockopt getsockopt getsockname getpeername splice pipe2 clock_gettime
  io_uring_enter mmap munmap madvise tgkill getpid rt_sigreturn"
EVENTS="raw_syscalls:sys_enter,context-switches,cpu-migrations"
for k in $KINDS; do EVENTS="$EVENTS,syscalls:sys_enter_$k"; done
AGAIN=()   # one event per call that can fail with EAGAIN, each with its filter
for k in read recvfrom readv recvmsg accept4; do AGAIN+=(-e "syscalls:sys_exit_$k" --filter 'ret == -11'); done
RES=$D/results.tsv
printf 'mode\ttarget\trequests\tname\tcount\n' > "$RES"
for mode in $MODES; do
  for t in $ONLY; do
    pid=$(real_pid "${PID[$t]}")
    [ "$WARM" -gt 0 ] && load "$mode" "$t" "$WARM" /dev/null > /dev/null
    out=$D/raw/$mode.$t
    PEERFD=()   # the peers mode: the system calls on the connection with the sink
    if [ "$mode" = peers ]; then
      fd=$(peer_fd "$t" "$pid")
      [ -n "$fd" ] || die "$t has no connection with its sink"
      for k in read write recvfrom sendto; do PEERFD+=(-e "syscalls:sys_enter_$k" --filter "fd == $fd"); done
    fi
    perf stat -x, -e "$EVENTS" "${AGAIN[@]}" "${PEERFD[@]+"${PEERFD[@]}"}" -p "$pid" -o "$out.perf" &
    PROBE=$!
    sleep 0.5   # let perf attach
    c0=$(ticks "$pid"); g0=$(sched_runs "$t"); u0=0; [ "$mode" = peers ] && u0=$(pushed "$t")
    n=$(load "$mode" "$t" "$DUR" "$out.wrk")
    c1=$(ticks "$pid"); g1=$(sched_runs "$t"); u1=0; [ "$mode" = peers ] && u1=$(pushed "$t")
    kill -INT "$PROBE"; wait "$PROBE" 2>/dev/null; PROBE=""
    n=${n:-0}
    [ "$n" -gt 0 ] || { log "$mode $t: no request completed"; continue; }
    {
      printf '%s\t%s\t%s\tcpu_ticks\t%s\n' "$mode" "$t" "$n" $(( c1 - c0 ))
      [ "$t" = fulcrum ] && printf '%s\t%s\t%s\tsched_runs\t%s\n' "$mode" "$t" "$n" $(( ${g1:-0} - ${g0:-0} ))
      printf '%s\t%s\t%s\tpeer_updates\t%s\n' "$mode" "$t" "$n" $(( (${u1:-0} - ${u0:-0} + 4294967296) % 4294967296 ))
      awk -F, -v m="$mode" -v t="$t" -v n="$n" '$3 != "" && $1 ~ /^[0-9]+$/ {
          name = $3; sub(/^syscalls:sys_enter_/, "", name); sub(/^syscalls:sys_exit_/, "EAGAIN_", name)
          if (name in seen) name = "peer_" name   # the second of a kind: filtered on the sink connection (PEERFD)
          seen[name] = 1
          printf "%s\t%s\t%s\t%s\t%s\n", m, t, n, name, $1 }' "$out.perf"
    } >> "$RES"
    log "$mode $t: $n requests"
    if [ "$RECORD" = 1 ]; then
      # a CPU profile of the same load (kernel and user): perf report -i FILE
      perf record -q -g -p "$pid" -o "$out.data" > /dev/null 2>&1 &
      PROBE=$!
      sleep 0.5
      load "$mode" "$t" "$DUR" "$out.rec.wrk" > /dev/null
      kill -INT "$PROBE"; wait "$PROBE" 2>/dev/null; PROBE=""
      log "$mode $t: profile in $out.data"
    fi
  done
done

# ------------------------------------------------------------------ report
{
  echo
  echo "kernel crossings per request: fulcrum ($BIN, GOMAXPROCS=${FUL_GOMAXPROCS:-default}${FUL_NETIO:+, tune_netio $FUL_NETIO}${FUL_ENV:+, $FUL_ENV}) vs haproxy $(haproxy -v | awk 'NR==1{print $3}') (nbthread $HAP_NBTHREAD)"
  echo "wrk -t1 -c$CONNS -d${DUR}s per pass (h2c: h2load -c$CONNS -m$H2_STREAMS) on $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "per request, from perf stat on the proxy's threads: syscalls, EAGAIN (reads that found the socket empty),"
  echo "cs (context switches), mig (CPU migrations); runs: goroutines put on a P (fulcrum's sched_runs, +-8 per pass);"
  echo "upd: updates pushed to the peers mode's sink (show peers last_pushed); peersys: read, write, recvfrom"
  echo "and sendto on the connection with the sink (updates out, acknowledgements in, their EAGAIN reads);"
  echo "cpu_us: the proxy's CPU time per request (it depends on the machine's load: compare with care)"
  echo
  awk -F'\t' -v hz="$HZ" -v kinds="$KINDS" 'NR > 1 {
      k = $1 SUBSEP $2; n[k] = $3; v[k, $4] = $5
      if (!(k in seen)) { seen[k] = 1; order[++no] = k }
    }
    END {
      printf "%-10s %-7s %8s %8s %6s %6s %6s %6s %7s %6s %7s\n", "mode", "target", "requests", "syscalls", "EAGAIN", "cs", "mig", "runs", "cpu_us", "upd", "peersys"
      for (i = 1; i <= no; i++) { k = order[i]; split(k, a, SUBSEP)
        ea = v[k, "EAGAIN_read"] + v[k, "EAGAIN_recvfrom"] + v[k, "EAGAIN_readv"] + v[k, "EAGAIN_recvmsg"]
        printf "%-10s %-7s %8d %8.2f %6.2f %6.2f %6.2f %6s %7.1f %6s %7s\n", a[1], a[2], n[k], v[k, "raw_syscalls:sys_enter"] / n[k],
          ea / n[k], v[k, "context-switches"] / n[k], v[k, "cpu-migrations"] / n[k],
          (a[2] == "fulcrum" ? sprintf("%.2f", v[k, "sched_runs"] / n[k]) : "-"), v[k, "cpu_ticks"] / hz * 1e6 / n[k],
          (a[1] == "peers" ? sprintf("%.3f", v[k, "peer_updates"] / n[k]) : "-"),
          (a[1] == "peers" ? sprintf("%.3f", (v[k, "peer_read"] + v[k, "peer_write"] + v[k, "peer_recvfrom"] + v[k, "peer_sendto"]) / n[k]) : "-") }
      print ""
      print "system calls per request by kind (>= 0.01/req; other = the rest), then those failing with EAGAIN:"
      nk = split(kinds, kk, /[ \n]+/)
      for (i = 1; i <= no; i++) { k = order[i]; split(k, a, SUBSEP)
        line = sprintf("%-10s %-7s", a[1], a[2]); sum = 0
        for (j = 1; j <= nk; j++) { if (kk[j] == "") continue; c = v[k, kk[j]] + 0; sum += c
          if (c / n[k] >= 0.01) line = line sprintf(" %s %.2f", kk[j], c / n[k]) }
        o = v[k, "raw_syscalls:sys_enter"] - sum
        if (o / n[k] >= 0.01) line = line sprintf(" other %.2f", o / n[k])
        line = line " | EAGAIN:"
        split("read recvfrom readv recvmsg accept4", ek, " ")
        for (j = 1; j <= 5; j++) { c = v[k, "EAGAIN_" ek[j]] + 0; if (c / n[k] >= 0.01) line = line sprintf(" %s %.2f", ek[j], c / n[k]) }
        print line }
    }' "$RES"
  echo
  echo "raw: $RES"
} | tee "$D/summary.txt"
if [ "$WANT_PEERS" = 1 ]; then
  # the proof that replication ran: the sinks' tables
  for t in $ONLY; do
    printf '%s sink: ' "$t"
    echo "show table fe_p" | socat -t 2 stdio "unix-connect:$D/$t-sink.sock" 2>/dev/null | head -1
  done
fi
