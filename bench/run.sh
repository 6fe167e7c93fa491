#!/usr/bin/env bash
# bench/run.sh - fulcrum vs HAProxy 2.6 on this machine, same upstreams, one run.
#
# Starts three nginx upstreams (127.0.0.1:9001-9003, one nginx, one worker),
# HAProxy (nbthread 2, :8180 http / :8181 tcp) and fulcrum (:8080 http /
# :8081 tcp) with equivalent configs written into WORKDIR, then measures with
# wrk / curl, alternating the order of the targets every round:
#   round 1: haproxy, fulcrum   round 2: fulcrum, haproxy   round 3: haproxy, ...
#
# Modes (MODES):
#   http-ka     wrk keep-alive against the mode-http frontend
#   http-close  wrk with "Connection: close" (one TCP connection per request)
#   tcp-ka      wrk keep-alive through the mode-tcp frontend (small messages)
#   tcp-bulk    curl downloading a sparse BULK_MB file (/big) through the
#               mode-tcp frontend, back to back, for BULK_DUR seconds -> MB/s
#   queue       wrk with QCONNS (256) keep-alive connections against a third
#               HTTP frontend whose servers have maxconn 8: most requests wait
#               in the queues (not in the default MODES)
#   peers       http-ka against a fourth HTTP frontend that tracks each
#               connection (track-sc0 src_port) in a stick table storing
#               http_req_cnt and http_req_rate(10s), replicated over the peers
#               protocol to a second instance of the same proxy (a sink
#               holding the same table): compare with http-ka for the cost of
#               replication (not in the default MODES)
#   track       the same as peers without the peers section: the baseline
#               of replication's cost (tracking and counting alone)
#   TLS modes (not in the default MODES; MODES="tls-ka tls-close tls-resume tls-bulk"),
#   against TLS binds (certificate made by openssl here: TLS_KEY=ecdsa P-256 or rsa 2048):
#   tls-ka      wrk keep-alive over https (http mode, TLS terminated)
#   tls-close   wrk over https with "Connection: close": a full handshake per request
#               (binds with no-tls-tickets, and HAProxy's session cache off:
#               wrk resumes sessions when it can, which made this mode a
#               resumption benchmark before 2026-12-02 08:40 UTC)
#   tls-resume  openssl s_time -reuse -www /: a new connection per request,
#               each resuming the TLS session (one client, back to back)
#   tls-bulk    curl downloading /big over TLS through a mode-tcp TLS frontend -> MB/s
#   HTTP/2 modes (not in the default MODES; MODES="h2c h2tls"), h2load -c H2_CONNS (64)
#   -m H2_STREAMS (10): multiplexed streams to the same HTTP/1.1 upstreams:
#   h2c         HTTP/2 with prior knowledge on a bind with "proto h2"
#   h2tls       HTTP/2 over TLS, h2 chosen through ALPN ("alpn h2,http/1.1";
#               the TLS modes' certificate)
#
# Environment knobs (defaults):
#   ROUNDS=3 DUR=10 CONNS=64 THREADS=1 WARM=1 BULK_DUR=$DUR BULK_MB=256
#   MODES="http-ka http-close tcp-ka tcp-bulk"
#   ONLY="haproxy fulcrum"      targets to run (e.g. ONLY=haproxy)
#   FULCRUM=./bin/fulcrum       binary, relative to the repo root (or absolute)
#   BUILD=0                     BUILD=1 runs `make build` first
#   WORKDIR=$(mktemp -d)        configs, logs, raw wrk output, results.tsv
#   KEEP=0                      KEEP=1 keeps the bulk file in WORKDIR at exit
#   FUL_GOMAXPROCS=             GOMAXPROCS for fulcrum; empty (the default): unset, fulcrum runs
#                               its default thread count (one fewer than the CPUs, at least one)
#   HAP_SPLICE=0                1 = option splice-request/-response in haproxy's tcp backend
#   FUL_HTTP=8080 FUL_TCP=8081 HAP_HTTP=8180 HAP_TCP=8181   listen ports
#   UP_BASE=9001   the nginx upstreams' first port (they use UP_BASE..UP_BASE+2)
#   QCONNS=256 QMAXCONN=8 FUL_Q=8082 HAP_Q=8182             the queue mode
#   FUL_T=8084 HAP_T=8184                                   the track mode
#   FUL_P=8083 HAP_P=8183 PEER_BASE=10080                   the peers mode (peer
#               ports PEER_BASE+0/+1 fulcrum and sink, +2/+3 haproxy and sink)
#   TLS_KEY=ecdsa FUL_TLS=8443 FUL_TLST=8444 HAP_TLS=8543 HAP_TLST=8544  the TLS modes
#   FUL_TLSF=8445 HAP_TLSF=8545                                 tls-close's binds (no tickets)
#   H2_CONNS=64 H2_STREAMS=10 FUL_H2=8085 HAP_H2=8185 FUL_H2S=8086 HAP_H2S=8186  the HTTP/2 modes
#
# Everything listens on 127.0.0.1 only; every process is started by this
# script and stopped by its PID at exit; every load run is time-bounded.
# See bench/README.md.

set -u
export LC_ALL=C

cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)

ROUNDS=${ROUNDS:-3}
DUR=${DUR:-10}
CONNS=${CONNS:-64}
THREADS=${THREADS:-1}
WARM=${WARM:-1}
BULK_DUR=${BULK_DUR:-$DUR}
BULK_MB=${BULK_MB:-256}
MODES=${MODES:-"http-ka http-close tcp-ka tcp-bulk"}
ONLY=${ONLY:-"haproxy fulcrum"}
FULCRUM=${FULCRUM:-./bin/fulcrum}
BUILD=${BUILD:-0}
KEEP=${KEEP:-0}
FUL_GOMAXPROCS=${FUL_GOMAXPROCS-}   # empty: fulcrum's default thread count (issue 21: default settings)
HAP_SPLICE=${HAP_SPLICE:-0}
FUL_HTTP=${FUL_HTTP:-8080}
FUL_TCP=${FUL_TCP:-8081}
HAP_HTTP=${HAP_HTTP:-8180}
HAP_TCP=${HAP_TCP:-8181}
QCONNS=${QCONNS:-256}
QMAXCONN=${QMAXCONN:-8}
FUL_Q=${FUL_Q:-8082}
HAP_Q=${HAP_Q:-8182}
FUL_P=${FUL_P:-8083}
HAP_P=${HAP_P:-8183}
PEER_BASE=${PEER_BASE:-10080}
FUL_T=${FUL_T:-8084}
HAP_T=${HAP_T:-8184}
TLS_KEY=${TLS_KEY:-ecdsa}
FUL_TLS=${FUL_TLS:-8443}
FUL_TLST=${FUL_TLST:-8444}
HAP_TLS=${HAP_TLS:-8543}
HAP_TLST=${HAP_TLST:-8544}
FUL_TLSF=${FUL_TLSF:-8445}
HAP_TLSF=${HAP_TLSF:-8545}
H2_CONNS=${H2_CONNS:-64}
H2_STREAMS=${H2_STREAMS:-10}
FUL_H2=${FUL_H2:-8085}
HAP_H2=${HAP_H2:-8185}
FUL_H2S=${FUL_H2S:-8086}
HAP_H2S=${HAP_H2S:-8186}
UP_BASE=${UP_BASE:-9001}
UP_PORTS="$UP_BASE $((UP_BASE + 1)) $((UP_BASE + 2))"

# progress goes to the script's own stderr (fd 9), even from a trap that fires
# while a redirected command is running
exec 9>&2
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&9; }
die() { log "ERROR: $*"; exit 2; }

for v in ROUNDS DUR CONNS THREADS WARM BULK_DUR BULK_MB FUL_HTTP FUL_TCP HAP_HTTP HAP_TCP QCONNS QMAXCONN FUL_Q HAP_Q FUL_P HAP_P PEER_BASE FUL_T HAP_T FUL_TLS FUL_TLST HAP_TLS HAP_TLST FUL_TLSF HAP_TLSF H2_CONNS H2_STREAMS FUL_H2 HAP_H2 FUL_H2S HAP_H2S $([ -n "$FUL_GOMAXPROCS" ] && echo FUL_GOMAXPROCS); do
  case ${!v} in ''|*[!0-9]*) die "$v must be a non-negative integer (got '${!v}')";; esac
done
[ "$ROUNDS" -ge 1 ] && [ "$DUR" -ge 1 ] && [ "$CONNS" -ge 1 ] && [ "$THREADS" -ge 1 ] && [ "$BULK_DUR" -ge 1 ] \
  || die "ROUNDS, DUR, CONNS, THREADS and BULK_DUR must be >= 1"
for m in $MODES; do
  case $m in http-ka|http-close|tcp-ka|tcp-bulk|queue|peers|track|tls-ka|tls-close|tls-resume|tls-bulk|h2c|h2tls) ;;
    *) die "unknown mode '$m' (http-ka http-close tcp-ka tcp-bulk queue peers track tls-ka tls-close tls-resume tls-bulk h2c h2tls)";; esac
done
case $TLS_KEY in ecdsa|rsa) ;; *) die "TLS_KEY must be ecdsa or rsa (got '$TLS_KEY')";; esac
WANT_TLS=0
case " $MODES " in *" tls-"*|*" h2tls "*) WANT_TLS=1;; esac
WANT_H2=0
case " $MODES " in *" h2c "*|*" h2tls "*) WANT_H2=1;; esac
for t in $ONLY; do
  case $t in haproxy|fulcrum) ;; *) die "unknown target '$t' in ONLY (haproxy fulcrum)";; esac
done

# ------------------------------------------------------------------ tools
missing=""
tools="haproxy nginx wrk curl"
[ "$WANT_TLS" = 1 ] && tools="$tools openssl"
[ "$WANT_H2" = 1 ] && tools="$tools h2load"
for t in $tools; do command -v "$t" >/dev/null 2>&1 || missing="$missing $t"; done
for t in setsid timeout; do command -v "$t" >/dev/null 2>&1 || die "missing $t (package util-linux / coreutils)"; done
if [ -n "$missing" ]; then
  log "missing tools:$missing"
  log "install them with:  apt-get install -y$missing"
  exit 2
fi
HAPROXY=$(command -v haproxy); NGINX=$(command -v nginx)
HAP_VER=$("$HAPROXY" -v 2>/dev/null | awk 'NR==1{print $3}')
case $HAP_VER in 2.6.*) ;; *) log "warning: haproxy $HAP_VER is not 2.6 (the reference this harness assumes)";; esac
HZ=$(getconf CLK_TCK)

# ------------------------------------------------------------------ targets
want() { case " $ONLY " in *" $1 "*) return 0;; esac; return 1; }
TARGETS=""
want haproxy && TARGETS="haproxy"
if want fulcrum; then
  if [ "$BUILD" = 1 ]; then
    log "make build"
    timeout 600 make build >&2 || die "make build failed"
  fi
  case $FULCRUM in /*) FUL_BIN=$FULCRUM;; *) FUL_BIN=$ROOT/${FULCRUM#./};; esac
  if [ -x "$FUL_BIN" ] && [ -f "$FUL_BIN" ]; then
    TARGETS="$TARGETS fulcrum"
  elif [ "$ONLY" = fulcrum ]; then
    die "fulcrum binary $FUL_BIN not found: run 'make build' (or BUILD=1 / FULCRUM=path)"
  else
    log "fulcrum binary $FUL_BIN not found (run 'make build', BUILD=1 or FULCRUM=path): skipping the fulcrum target"
  fi
fi
TARGETS=${TARGETS# }
[ -n "$TARGETS" ] || die "no target to run"

# ------------------------------------------------------------------ workdir
if [ -n "${WORKDIR:-}" ]; then mkdir -p "$WORKDIR" || exit 2; D=$WORKDIR
else D=$(mktemp -d -t fulcrum-bench.XXXXXX) || exit 2; fi
D=$(cd "$D" && pwd)
mkdir -p "$D/www" "$D/tmp" "$D/raw"
RES=$D/results.tsv
printf 'mode\tround\tslot\ttarget\tvalue\tunit\tp50_ms\tp99_ms\tcpu_s\terrors\tcount\twall_s\tforeign_cpu_pct\n' > "$RES"

# ------------------------------------------------------------------ process helpers
STARTED=()   # PIDs started by this script (each is its own session/process group)
declare -A PID=()

alive() { # pid exists and is not a zombie
  local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }; [ "${s%% *}" != Z ]
}

stop_pid() { # TERM, wait up to 5 s, then KILL its process group
  local p=$1 i
  [ -n "$p" ] || return 0
  if alive "$p"; then
    kill -TERM "$p" 2>/dev/null
    for i in $(seq 50); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then log "pid $p ignored TERM for 5 s: KILL"; kill -KILL "$p" 2>/dev/null; fi
  fi
  wait "$p" 2>/dev/null
  # leftovers of that process group (e.g. nginx workers if the master was killed)
  if pgrep -g "$p" >/dev/null 2>&1; then
    sleep 0.5
    pgrep -g "$p" >/dev/null 2>&1 && { log "process group $p still has members: KILL"; kill -KILL -- "-$p" 2>/dev/null; }
  fi
}

# load generators run in the background and are waited for, so that a signal
# interrupts the script at once; CHILD is the one running now.
CHILD=""
bg_wait() { local rc; "$@" & CHILD=$!; wait "$CHILD"; rc=$?; CHILD=""; return $rc; }
descendants() { local c; for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }
kill_tree() { local all; all="$1 $(descendants "$1")"; kill -TERM $all 2>/dev/null; }

CLEANED=0
cleanup() {
  [ "$CLEANED" = 1 ] && return; CLEANED=1
  local i
  if [ -n "$CHILD" ]; then kill_tree "$CHILD"; wait "$CHILD" 2>/dev/null; fi
  for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do stop_pid "${STARTED[$i]}"; done
  [ "$KEEP" = 1 ] || rm -f "$D/www/big"
  log "workdir: $D"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

start_proc() { # name cmd... -> sets START_PID
  local name=$1; shift
  setsid "$@" > "$D/$name.log" 2>&1 < /dev/null 9>&- &
  START_PID=$!
  STARTED+=("$START_PID")
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port pid: up to 10 s
  local i
  for i in $(seq 100); do
    port_open "$1" && return 0
    alive "$2" || return 1
    sleep 0.1
  done
  return 1
}

cpu_ticks() { # utime+stime(+cutime+cstime) of one process, all its threads
  local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s   # $1 = state (field 3) ... $12 utime $13 stime $14 cutime $15 cstime
  echo $(( ${12} + ${13} + ${14} + ${15} ))
}

# CPU used on the whole machine by processes that are not ours (other users of
# a shared box): system busy time - our servers - our reaped children (wrk, curl)
sys_busy_ticks() { local a; read -r -a a < /proc/stat; echo $(( a[1] + a[2] + a[3] + a[6] + a[7] )); }
group_ticks() { # all processes of one process group (a server we started with setsid)
  local sum=0 p
  for p in $(pgrep -g "$1" 2>/dev/null); do sum=$(( sum + $(cpu_ticks "$p") )); done
  echo $sum
}
our_ticks() {
  local sum=0 g
  for g in "${STARTED[@]+"${STARTED[@]}"}"; do sum=$(( sum + $(group_ticks "$g") )); done
  echo $sum
}
child_secs() { # user+sys of reaped children of this shell, in seconds
  # (times must run in this shell, not in a $(...) subshell: write to a file)
  times > "$D/tmp/times"
  awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, x, "m"); sub(/s$/, "", x[2]); t += x[1] * 60 + x[2] } printf "%.3f", t }' "$D/tmp/times"
}

now_us() { local t=$EPOCHREALTIME; echo $(( 10#${t%.*} * 1000000 + 10#${t#*.} )); }

# ------------------------------------------------------------------ configs
truncate -s "${BULK_MB}M" "$D/www/big" || die "cannot create $D/www/big"
BIG_BYTES=$(( BULK_MB * 1024 * 1024 ))

# the TLS binds' certificate (self-signed, certificate then key in one PEM)
if [ "$WANT_TLS" = 1 ]; then
  if [ "$TLS_KEY" = rsa ]; then kopt=(-newkey rsa:2048); else kopt=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
  openssl req -x509 "${kopt[@]}" -nodes -days 2 -subj /CN=bench.test -addext subjectAltName=DNS:bench.test \
    -keyout "$D/tmp/bench.key" -out "$D/tmp/bench.crt" 2> "$D/tmp/openssl.err" || { cat "$D/tmp/openssl.err" >&2; die "openssl could not make the certificate"; }
  cat "$D/tmp/bench.crt" "$D/tmp/bench.key" > "$D/bench.pem"
fi

{
  cat <<EOF
worker_processes 1;
daemon off;
master_process on;
pid $D/upstreams.pid;
error_log $D/upstreams.err warn;
EOF
  [ "$(id -u)" = 0 ] && echo "user root;"   # workers must read $D (mode 700)
  cat <<EOF
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $D/tmp/cb; proxy_temp_path $D/tmp/px;
  fastcgi_temp_path $D/tmp/fc; uwsgi_temp_path $D/tmp/uw; scgi_temp_path $D/tmp/sc;
  default_type text/plain;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
EOF
  n=0
  for p in $UP_PORTS; do
    n=$((n + 1))
    echo "  server { listen 127.0.0.1:$p backlog=4096; root $D/www; location = /big { } location / { add_header X-Upstream b$n; return 200 \"ok\\n\"; } }"
  done
  echo "}"
} > "$D/upstreams.conf"

{
  cat <<EOF
global
    nbthread 2
    maxconn 4000
    # No session cache: tls-close's bind (no-tls-tickets) then makes a
    # full handshake per connection, as fulcrum's does; tickets (tls-ka,
    # tls-resume) need no cache.
    tune.ssl.cachesize 0

defaults
    timeout connect 5s
    timeout client 60s
    timeout server 60s

frontend fe_http
    mode http
    bind 127.0.0.1:$HAP_HTTP
    default_backend be_http

frontend fe_tcp
    mode tcp
    bind 127.0.0.1:$HAP_TCP
    default_backend be_tcp

EOF
  [ "$WANT_TLS" = 1 ] && cat <<EOF
frontend fe_tls
    mode http
    bind 127.0.0.1:$HAP_TLS ssl crt $D/bench.pem alpn http/1.1
    default_backend be_http

frontend fe_tlst
    mode tcp
    bind 127.0.0.1:$HAP_TLST ssl crt $D/bench.pem
    default_backend be_tcp

frontend fe_tlsf
    mode http
    bind 127.0.0.1:$HAP_TLSF ssl crt $D/bench.pem alpn http/1.1 no-tls-tickets
    default_backend be_http

frontend fe_h2s
    mode http
    bind 127.0.0.1:$HAP_H2S ssl crt $D/bench.pem alpn h2,http/1.1
    default_backend be_http

EOF
  [ "$WANT_H2" = 1 ] && cat <<EOF
frontend fe_h2
    mode http
    bind 127.0.0.1:$HAP_H2 proto h2
    default_backend be_http

EOF
  cat <<EOF
backend be_http
    mode http
    balance roundrobin
    http-reuse always
EOF
  n=0; for p in $UP_PORTS; do n=$((n + 1)); echo "    server b$n 127.0.0.1:$p"; done
  cat <<EOF

backend be_tcp
    mode tcp
    balance roundrobin
EOF
  [ "$HAP_SPLICE" = 1 ] && printf '    option splice-request\n    option splice-response\n'
  n=0; for p in $UP_PORTS; do n=$((n + 1)); echo "    server b$n 127.0.0.1:$p"; done
  cat <<EOF

frontend fe_q
    mode http
    bind 127.0.0.1:$HAP_Q
    default_backend be_q

backend be_q
    mode http
    balance roundrobin
    http-reuse always
    timeout queue 30s
EOF
  n=0; for p in $UP_PORTS; do n=$((n + 1)); echo "    server b$n 127.0.0.1:$p maxconn $QMAXCONN"; done
  cat <<EOF

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
} > "$D/haproxy.cfg"
"$HAPROXY" -c -q -L hap -f "$D/haproxy.cfg" || die "haproxy rejected $D/haproxy.cfg"
# the peers mode's sink: the same table, learning what the measured instance sends
cat > "$D/haproxy-sink.cfg" <<EOF
global
    stats socket $D/haproxy-sink.sock level admin

peers mesh
    peer hap 127.0.0.1:$((PEER_BASE + 2))
    peer hapsink 127.0.0.1:$((PEER_BASE + 3))

backend fe_p
    stick-table type integer size 100k expire 1m store http_req_cnt,http_req_rate(10s) peers mesh
EOF
"$HAPROXY" -c -q -L hapsink -f "$D/haproxy-sink.cfg" || die "haproxy rejected $D/haproxy-sink.cfg"

servers_toml() {
  local n=0 p
  for p in $UP_PORTS; do
    n=$((n + 1))
    printf '[[backend.server]]\nname = "b%d"\naddress = "127.0.0.1:%s"\n' "$n" "$p"
  done
}
{
  cat <<EOF
# written by bench/run.sh; log_level "error" is assumed to turn access logs off
[global]
log_level = "error"

[defaults]
timeout_connect = "5s"
timeout_client = "60s"
timeout_server = "60s"

[[frontend]]
name = "fe_http"
bind = ["127.0.0.1:$FUL_HTTP"]
mode = "http"
default_backend = "be_http"

[[frontend]]
name = "fe_tcp"
bind = ["127.0.0.1:$FUL_TCP"]
mode = "tcp"
default_backend = "be_tcp"

EOF
  [ "$WANT_TLS" = 1 ] && cat <<EOF
[[frontend]]
name = "fe_tls"
bind = ["127.0.0.1:$FUL_TLS ssl crt $D/bench.pem alpn http/1.1"]
mode = "http"
default_backend = "be_http"

[[frontend]]
name = "fe_tlst"
bind = ["127.0.0.1:$FUL_TLST ssl crt $D/bench.pem"]
mode = "tcp"
default_backend = "be_tcp"

[[frontend]]
name = "fe_tlsf"
bind = ["127.0.0.1:$FUL_TLSF ssl crt $D/bench.pem alpn http/1.1 no-tls-tickets"]
mode = "http"
default_backend = "be_http"

[[frontend]]
name = "fe_h2s"
bind = ["127.0.0.1:$FUL_H2S ssl crt $D/bench.pem alpn h2,http/1.1"]
mode = "http"
default_backend = "be_http"

EOF
  [ "$WANT_H2" = 1 ] && cat <<EOF
[[frontend]]
name = "fe_h2"
bind = ["127.0.0.1:$FUL_H2 proto h2"]
mode = "http"
default_backend = "be_http"

EOF
  cat <<EOF
[[backend]]
name = "be_http"
mode = "http"
balance = "roundrobin"
http_reuse = "always"
EOF
  servers_toml
  cat <<EOF

[[backend]]
name = "be_tcp"
mode = "tcp"
balance = "roundrobin"
EOF
  servers_toml
  cat <<EOF

[[frontend]]
name = "fe_q"
bind = ["127.0.0.1:$FUL_Q"]
mode = "http"
default_backend = "be_q"

[[backend]]
name = "be_q"
mode = "http"
balance = "roundrobin"
http_reuse = "always"
timeout_queue = "30s"
EOF
  servers_toml | sed "s/^address = .*/&\nmaxconn = $QMAXCONN/"
  cat <<EOF

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
} > "$D/fulcrum.toml"
cat > "$D/fulcrum-sink.toml" <<EOF
# written by bench/run.sh: the peers mode's sink (the same table, learning)
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

# fulcrum wants a frontend: one on a port the kernel picks, never used
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
ports_needed="$UP_PORTS"
want_t() { case " $TARGETS " in *" $1 "*) return 0;; esac; return 1; }
want_t haproxy && ports_needed="$ports_needed $HAP_HTTP $HAP_TCP $HAP_Q $HAP_P $HAP_T $((PEER_BASE + 2)) $((PEER_BASE + 3))"
want_t fulcrum && ports_needed="$ports_needed $FUL_HTTP $FUL_TCP $FUL_Q $FUL_P $FUL_T $PEER_BASE $((PEER_BASE + 1))"
if [ "$WANT_TLS" = 1 ]; then
  want_t haproxy && ports_needed="$ports_needed $HAP_TLS $HAP_TLST $HAP_TLSF"
  want_t fulcrum && ports_needed="$ports_needed $FUL_TLS $FUL_TLST $FUL_TLSF $FUL_H2S"
  want_t haproxy && ports_needed="$ports_needed $HAP_H2S"
fi
if [ "$WANT_H2" = 1 ]; then
  want_t haproxy && ports_needed="$ports_needed $HAP_H2"
  want_t fulcrum && ports_needed="$ports_needed $FUL_H2"
fi
for p in $ports_needed; do
  port_open "$p" && die "127.0.0.1:$p is already in use (another fulcrum/haproxy/nginx?); stop it or change the *_HTTP/*_TCP knobs"
done

start_proc upstreams "$NGINX" -p "$D" -e "$D/upstreams.err" -c "$D/upstreams.conf"
UP_PID=$START_PID
for p in $UP_PORTS; do
  wait_port "$p" "$UP_PID" || { cat "$D/upstreams.log" "$D/upstreams.err" >&2 2>/dev/null; die "nginx upstreams did not start"; }
done
cat "$D/www/big" > /dev/null   # page cache (sparse anyway)

TPORT_HTTP=(); TPORT_TCP=()
declare -A HTTP_PORT=([haproxy]=$HAP_HTTP [fulcrum]=$FUL_HTTP)
declare -A TCP_PORT=([haproxy]=$HAP_TCP [fulcrum]=$FUL_TCP)
declare -A Q_PORT=([haproxy]=$HAP_Q [fulcrum]=$FUL_Q)
declare -A TLS_PORT=([haproxy]=$HAP_TLS [fulcrum]=$FUL_TLS)
declare -A TLST_PORT=([haproxy]=$HAP_TLST [fulcrum]=$FUL_TLST)
declare -A TLSF_PORT=([haproxy]=$HAP_TLSF [fulcrum]=$FUL_TLSF)
declare -A H2_PORT=([haproxy]=$HAP_H2 [fulcrum]=$FUL_H2)
declare -A H2S_PORT=([haproxy]=$HAP_H2S [fulcrum]=$FUL_H2S)
declare -A P_PORT=([haproxy]=$HAP_P [fulcrum]=$FUL_P)
declare -A T_PORT=([haproxy]=$HAP_T [fulcrum]=$FUL_T)
declare -A SINK_PORT=([haproxy]=$((PEER_BASE + 3)) [fulcrum]=$((PEER_BASE + 1)))
want_mode() { case " $MODES " in *" $1 "*) return 0;; esac; return 1; }

ok_targets=""
for t in $TARGETS; do
  if want_mode peers; then
    # the sink first, so that the measured instance's first updates have a peer
    if [ "$t" = haproxy ]; then start_proc haproxy-sink "$HAPROXY" -db -L hapsink -f "$D/haproxy-sink.cfg"
    else start_proc fulcrum-sink "$FUL_BIN" run -c "$D/fulcrum-sink.toml"; fi
    wait_port "${SINK_PORT[$t]}" "$START_PID" || { tail -n 20 "$D/$t-sink.log" >&2; die "the $t peers sink did not listen on :${SINK_PORT[$t]}"; }
  fi
  if [ "$t" = haproxy ]; then start_proc haproxy "$HAPROXY" -db -L hap -f "$D/haproxy.cfg"
  elif [ -n "$FUL_GOMAXPROCS" ]; then start_proc fulcrum env GOMAXPROCS="$FUL_GOMAXPROCS" "$FUL_BIN" run -c "$D/fulcrum.toml"
  else start_proc fulcrum "$FUL_BIN" run -c "$D/fulcrum.toml"; fi
  PID[$t]=$START_PID
  if wait_port "${HTTP_PORT[$t]}" "$START_PID" && wait_port "${TCP_PORT[$t]}" "$START_PID"; then
    ok_targets="$ok_targets $t"
  else
    log "$t did not listen on :${HTTP_PORT[$t]} and :${TCP_PORT[$t]} within 10 s; last lines of $D/$t.log:"
    tail -n 20 "$D/$t.log" >&2
    stop_pid "$START_PID"
    keep=(); for p in "${STARTED[@]}"; do [ "$p" = "$START_PID" ] || keep+=("$p"); done; STARTED=("${keep[@]}")
    log "skipping $t"
  fi
done
TARGETS=${ok_targets# }
[ -n "$TARGETS" ] || die "no target started"

# sanity: each frontend answers "ok" and spreads requests over the upstreams
for t in $TARGETS; do
  for p in "${HTTP_PORT[$t]}" "${TCP_PORT[$t]}"; do
    seen=""; bad=0
    for k in 1 2 3 4 5 6; do
      # a new connection per request so the tcp frontend balances too
      h=$(curl -s -m 3 -D - -o "$D/tmp/sanity.body" "http://127.0.0.1:$p/" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-upstream"{print $2}')
      [ "$(cat "$D/tmp/sanity.body" 2>/dev/null)" = ok ] || bad=$((bad + 1))
      seen="$seen $h"
    done
    spread=$(echo "$seen" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
    log "sanity $t :$p upstreams seen: ${spread:-none}$([ $bad -gt 0 ] && echo " ($bad/6 bad answers)")"
  done
  big=$(curl -s -m 30 -o /dev/null -w '%{size_download}' "http://127.0.0.1:${TCP_PORT[$t]}/big")
  [ "$big" = "$BIG_BYTES" ] || log "warning: $t tcp /big returned $big bytes, expected $BIG_BYTES"
  if [ "$WANT_TLS" = 1 ]; then
    wait_port "${TLS_PORT[$t]}" "${PID[$t]}" && wait_port "${TLST_PORT[$t]}" "${PID[$t]}" || log "warning: $t does not listen on its TLS ports"
    for p in "${TLS_PORT[$t]}" "${TLST_PORT[$t]}"; do
      b=$(curl -s -m 3 --cacert "$D/tmp/bench.crt" --resolve "bench.test:$p:127.0.0.1" "https://bench.test:$p/")
      log "sanity $t https :$p answered: ${b:-nothing}"
    done
  fi
done

# ------------------------------------------------------------------ measurement
to_ms() { # wrk time (123.45us / 1.23ms / 1.02s / 1.5m) -> ms
  awk -v v="$1" 'BEGIN{
    if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
    else if (v ~ /s$/)  { sub(/s$/, "", v);  printf "%.3f", v * 1000 }
    else if (v ~ /m$/)  { sub(/m$/, "", v);  printf "%.3f", v * 60000 }
    else print "nan" }'
}

bulk_run() { # port seconds outfile [scheme] -> "MB/s bytes fetches short"
  local port=$1 secs=$2 out=$3 scheme=${4:-http} t0 t1 end s total=0 n=0 short=0
  t0=$(now_us); end=$(( t0 + secs * 1000000 ))
  : > "$out"
  while [ "$(now_us)" -lt "$end" ]; do
    s=$(curl -s -k -o /dev/null --max-time $((secs + 30)) -w '%{size_download} %{time_total}' "$scheme://127.0.0.1:$port/big")
    echo "$s" >> "$out"
    s=${s%% *}; s=${s:-0}
    total=$(( total + s )); n=$((n + 1))
    [ "$s" = "$BIG_BYTES" ] || short=$((short + 1))
    [ "$s" -gt 0 ] || break   # nothing came back: do not spin
  done
  t1=$(now_us)
  awk -v b="$total" -v us="$(( t1 - t0 ))" -v n="$n" -v sh="$short" \
    'BEGIN{ printf "%.1f %.0f %d %d %.2f\n", (us > 0 ? b / (us / 1e6) / 1e6 : 0), b, n, sh, us / 1e6 }'
}

resume_run() { # port seconds outfile -> "conn/s connections wall_s"
  local port=$1 secs=$2 out=$3 t0 t1
  t0=$(now_us)
  timeout $((secs + 30)) openssl s_time -connect "127.0.0.1:$port" -reuse -www / -time "$secs" > "$out" 2>&1
  t1=$(now_us)
  # "N connections in T real seconds, ..." (the reuse run)
  awk -v us="$(( t1 - t0 ))" '/connections in .* real seconds/{n = $1; s = $4}
    END{ if (s > 0) printf "%.1f %d %.2f\n", n / s, n, us / 1e6; else printf "nan 0 %.2f\n", us / 1e6 }' "$out"
}

measure() { # mode round slot target
  local mode=$1 r=$2 slot=$3 t=$4 pid=${PID[$4]} port hdr=() out c0 c1 cpu scheme=http
  local value unit p50=nan p99=nan err=0 count wall _n short
  case $mode in
    http-ka)    port=${HTTP_PORT[$t]} ;;
    http-close) port=${HTTP_PORT[$t]}; hdr=(-H "Connection: close") ;;
    tcp-ka|tcp-bulk) port=${TCP_PORT[$t]} ;;
    queue)      port=${Q_PORT[$t]} ;;
    peers)      port=${P_PORT[$t]} ;;
    track)      port=${T_PORT[$t]} ;;
    tls-ka|tls-resume) port=${TLS_PORT[$t]}; scheme=https ;;
    tls-close)  port=${TLSF_PORT[$t]}; scheme=https; hdr=(-H "Connection: close") ;;
    tls-bulk)   port=${TLST_PORT[$t]}; scheme=https ;;
    h2c)        port=${H2_PORT[$t]} ;;
    h2tls)      port=${H2S_PORT[$t]}; scheme=https ;;
  esac
  local conns=$CONNS
  [ "$mode" = queue ] && conns=$QCONNS
  out=$D/raw/$mode.r$r.$t.txt
  if ! alive "$pid"; then log "$mode r$r $t: process $pid is gone, skipped"; return; fi
  case $mode in *-bulk|tls-resume) ;;
  h2c|h2tls)
    if [ "$WARM" -gt 0 ]; then
      bg_wait timeout $((WARM + 15)) h2load -c"$H2_CONNS" -m"$H2_STREAMS" -D"$WARM" "$scheme://127.0.0.1:$port/" > /dev/null 2>&1
    fi ;;
  *)
    if [ "$WARM" -gt 0 ]; then
      bg_wait timeout $((WARM + 15)) wrk -t"$THREADS" -c"$conns" -d"${WARM}s" "${hdr[@]+"${hdr[@]}"}" "$scheme://127.0.0.1:$port/" > /dev/null 2>&1
    fi ;;
  esac
  local s0 o0 k0 s1 o1 k1 i0 i1 other
  child_secs > "$D/tmp/k0"; s0=$(sys_busy_ticks); i0=$(now_us); o0=$(our_ticks); read -r k0 < "$D/tmp/k0"
  c0=$(group_ticks "$pid")
  if [ "$mode" = tcp-bulk ] || [ "$mode" = tls-bulk ]; then
    bg_wait bulk_run "$port" "$BULK_DUR" "$out" "$scheme" > "$out.sum"
    read -r value count _n short wall < "$out.sum"
    unit=MB/s; err=$short
  elif [ "$mode" = h2c ] || [ "$mode" = h2tls ]; then
    local w0 w1
    w0=$(now_us)
    bg_wait timeout $((DUR + 30)) h2load -c"$H2_CONNS" -m"$H2_STREAMS" -D"$DUR" "$scheme://127.0.0.1:$port/" > "$out" 2>&1
    w1=$(now_us)
    wall=$(awk -v us=$(( w1 - w0 )) 'BEGIN{printf "%.2f", us / 1e6}')
    unit=req/s
    # "finished in 10.00s, 12345.60 req/s, ..." and "requests: N total, N started, N done, N succeeded, N failed, N errored, ..."
    value=$(awk '/^finished in/{gsub(/,/, ""); print $4}' "$out")
    count=$(awk '/^requests:/{gsub(/,/, ""); print $8}' "$out")
    err=$(awk '/^requests:/{gsub(/,/, ""); print $10 + $12}' "$out")
    p50=$(awk '/^time for request:/{v = $6; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) sub(/ms$/, "", v); else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.3f", v}' "$out")
  elif [ "$mode" = tls-resume ]; then
    bg_wait resume_run "$port" "$DUR" "$out" > "$out.sum"
    read -r value count wall < "$out.sum"
    unit=conn/s
  else
    local w0 w1
    w0=$(now_us)
    bg_wait timeout $((DUR + 30)) wrk -t"$THREADS" -c"$conns" -d"${DUR}s" --latency "${hdr[@]+"${hdr[@]}"}" "$scheme://127.0.0.1:$port/" > "$out" 2>&1
    w1=$(now_us)
    wall=$(awk -v us=$(( w1 - w0 )) 'BEGIN{printf "%.2f", us / 1e6}')
    unit=req/s
    value=$(awk '/^Requests\/sec:/{print $2}' "$out")
    count=$(awk '/requests in/{print $1}' "$out")
    p50=$(to_ms "$(awk '$1=="50%"{print $2}' "$out")")
    p99=$(to_ms "$(awk '$1=="99%"{print $2}' "$out")")
    err=$(awk '/Socket errors/{gsub(/,/, ""); s += $4 + $6 + $8 + $10} /Non-2xx/{s += $NF} END{print s + 0}' "$out")
  fi
  c1=$(group_ticks "$pid")
  child_secs > "$D/tmp/k1"; s1=$(sys_busy_ticks); i1=$(now_us); o1=$(our_ticks); read -r k1 < "$D/tmp/k1"
  # foreign CPU in % of one CPU over the sampled interval
  other=$(awk -v s=$(( s1 - s0 )) -v o=$(( o1 - o0 )) -v k0="$k0" -v k1="$k1" -v hz="$HZ" -v us=$(( i1 - i0 )) \
    'BEGIN{ v = (s - o) / hz - (k1 - k0); if (v < 0) v = 0; printf "%.0f", (us > 0 ? 100 * v / (us / 1e6) : 0) }')
  cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b - a) / hz}')
  alive "$pid" || { log "$mode r$r $t: process died during the run (see $D/$t.log)"; err=$((err + 1)); }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$mode" "$r" "$slot" "$t" "${value:-nan}" "$unit" "$p50" "$p99" "$cpu" "$err" "${count:-0}" "${wall:-nan}" "$other" >> "$RES"
  if [ "$unit" = MB/s ]; then
    log "$mode r$r $t: ${value:-nan} MB/s  cpu=${cpu}s  short=$err  foreign_cpu=${other}%"
  else
    log "$mode r$r $t: ${value:-nan} $unit  p50=${p50}ms p99=${p99}ms  cpu=${cpu}s  errors=$err  foreign_cpu=${other}%"
  fi
}

n_t=$(echo "$TARGETS" | wc -w)
per_run=$(( DUR + WARM + 1 ))
est=0
for m in $MODES; do
  if [ "$m" = tcp-bulk ] || [ "$m" = tls-bulk ]; then est=$(( est + ROUNDS * n_t * (BULK_DUR + 1) )); else est=$(( est + ROUNDS * n_t * per_run )); fi
done
log "machine: nproc=$(nproc) $(uname -r); haproxy $HAP_VER; targets: $TARGETS; modes: $MODES"
log "rounds=$ROUNDS dur=${DUR}s conns=$CONNS threads=$THREADS warm=${WARM}s bulk=${BULK_MB}MB x ${BULK_DUR}s; about $(( est / 60 ))m$(( est % 60 ))s; workdir $D"

for mode in $MODES; do
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="haproxy fulcrum"; else order="fulcrum haproxy"; fi
    slot=0
    for t in $order; do
      want_t "$t" || continue
      slot=$((slot + 1))
      measure "$mode" "$r" "$slot" "$t"
    done
  done
done

# the peers mode's proof that replication ran: the sinks hold the entries
if want_mode peers && command -v socat >/dev/null 2>&1; then
  for t in $TARGETS; do
    n=$(echo "show table fe_p" | socat -t 5 stdio "UNIX-CONNECT:$D/$t-sink.sock" 2>/dev/null | awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^used:/) { sub(/used:/, "", $i); print $i } }')
    log "peers: the $t sink holds ${n:-?} entries of table fe_p (learned over the peers protocol)"
  done
fi

# ------------------------------------------------------------------ summary
median() { # values on stdin (nan ignored) -> median or nan
  grep -v -e '^nan$' -e '^$' | sort -g | awk '{a[NR] = $1} END{
    if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
col() { # mode target column -> values
  awk -F'\t' -v m="$1" -v t="$2" -v c="$3" 'NR > 1 && $1 == m && $4 == t {print $c}' "$RES"
}
ratios() { # mode column -> per-round fulcrum/haproxy
  awk -F'\t' -v m="$1" -v c="$2" 'NR > 1 && $1 == m { v[$4 "," $2] = $c; r[$2] = 1 }
    END{ for (k in r) { h = v["haproxy," k]; f = v["fulcrum," k];
      if (h != "" && f != "" && h != "nan" && f != "nan" && h + 0 > 0) printf "%.4f\n", f / h } }' "$RES"
}
fmt() { # value decimals [suffix]
  awk -v v="$1" -v d="$2" -v s="${3:-}" 'BEGIN{ if (v == "nan" || v == "") print "-"; else printf "%.*f%s\n", d, v, s }'
}

{
  echo
  echo "fulcrum vs haproxy $HAP_VER on $(nproc) CPUs ($(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo))"
  want_t fulcrum && echo "fulcrum: $FUL_BIN ($(date -r "$FUL_BIN" '+%F %T'), GOMAXPROCS=${FUL_GOMAXPROCS:-default})"
  echo "haproxy: nbthread 2, tcp splice $([ "$HAP_SPLICE" = 1 ] && echo on || echo off)"
  echo "wrk -t$THREADS -c$CONNS -d${DUR}s (+${WARM}s warm-up), bulk: curl GET ${BULK_MB}MB /big back to back for ${BULK_DUR}s (MB = 1e6 bytes)"
  echo "$ROUNDS round(s), order alternating; values are medians over rounds; ratio = median of per-round fulcrum/haproxy"
  [ "$WANT_H2" = 1 ] && echo "h2c/h2tls: h2load -c$H2_CONNS -m$H2_STREAMS -D${DUR}s to HTTP/1.1 upstreams; their p50 column is h2load's mean time for request"
  echo "cpu_s = utime+stime of the proxy (all its processes and threads) during the measured run; work/cpu_s = requests (or MB) per proxy CPU second"
  echo
  printf '%-11s %-8s %12s %9s %9s %7s %6s %11s %6s\n' mode target "req/s|MB/s" p50 p99 cpu_s ratio "work/cpu_s" errors
  for mode in $MODES; do
    for t in haproxy fulcrum; do
      want_t "$t" || continue
      [ -n "$(col "$mode" "$t" 5)" ] || continue
      v=$(col "$mode" "$t" 5 | median)
      p50=$(col "$mode" "$t" 7 | median); p99=$(col "$mode" "$t" 8 | median)
      cpu=$(col "$mode" "$t" 9 | median)
      errs=$(col "$mode" "$t" 10 | awk '{s += $1} END{print s + 0}')
      eff=$(awk -F'\t' -v m="$mode" -v t="$t" 'NR > 1 && $1 == m && $4 == t {
              w = ($6 == "MB/s") ? $11 / 1e6 : $11; print ($9 > 0 ? w / $9 : "nan") }' "$RES" | median)
      if [ "$t" = haproxy ]; then ratio=1.00
      else ratio=$(ratios "$mode" 5 | median); ratio=$(fmt "$ratio" 2); fi
      want_t haproxy || ratio=-
      case $mode in *-bulk) vv=$(fmt "$v" 1);; *) vv=$(fmt "$v" 0);; esac
      printf '%-11s %-8s %12s %9s %9s %7s %6s %11s %6s\n' "$mode" "$t" "$vv" \
        "$(fmt "$p50" 2 ms)" "$(fmt "$p99" 2 ms)" "$(fmt "$cpu" 2)" "$ratio" "$(fmt "$eff" 0)" "$errs"
    done
  done
  noisy=$(awk -F'\t' 'NR > 1 && $13 > 20 { printf " %s/r%s/%s(%d%%)", $1, $2, $4, $13 }' "$RES")
  if [ -n "$noisy" ]; then
    echo
    echo "warning: processes outside this benchmark used >20% of a CPU during:$noisy"
    echo "         (foreign_cpu_pct in results.tsv); those numbers are disturbed - rerun on a quiet machine or with more ROUNDS"
  fi
  echo
  echo "raw results: $RES   (wrk/curl output in $D/raw/, configs and proxy logs in $D/)"
} | tee "$D/summary.txt"

if want_t fulcrum; then
  sz=$(stat -c %s "$D/fulcrum.log" 2>/dev/null || echo 0)
  [ "$sz" -gt 100000 ] && log "warning: fulcrum wrote $sz bytes of log during the run - access logging may not be off (see $D/fulcrum.log)"
fi
exit 0
