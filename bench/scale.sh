#!/usr/bin/env bash
# bench/scale.sh - cost as the work grows (issue 21, point 4): fulcrum and
# HAProxy 2.6 side by side on 127.0.0.1.
#
# Starts three nginx upstreams (HTTP) and a WebSocket upstream (bench/scale
# wsup), then for each target (a fresh proxy for each measure):
#   idle N    RSS (/proc/PID/status VmRSS) with N idle keep-alive client
#             connections, each having done one GET / (bench/scale idle),
#             minus the RSS of the same proxy just before they opened
#             (after a few warm-up requests): bytes per connection
#   ws        the same with WS proxied WebSocket connections (Upgrade:
#             websocket, 101 from the upstream, 8 bytes echoed through the
#             tunnel, then idle): bytes per tunnel (client and server side)
#   storm     connections per second that STORM_C workers achieve, each
#             opening a connection, sending one request with Connection:
#             close, reading the response to the end and closing
#   active C  wrk -t1 -cC -d$DUR --timeout $WRK_TIMEOUT keep-alive: req/s,
#             p50, p99, errors (socket errors, timeouts included, and non-2xx)
# The summary goes to stdout and WORKDIR/summary.txt, raw figures to
# WORKDIR/results.tsv.
#
# The descriptor limit is raised inside this script only (ulimit -n up to
# the hard limit); a measure that needs more descriptors than that is
# skipped with a message (fulcrum keeps two per client connection, issue
# 16; 50,000 connections need ulimit -Hn >= 100,400: root with
# CAP_SYS_RESOURCE, or a higher limit in limits.conf). Clients of more than
# CHUNK connections are split over several processes, and connections are
# spread over the source addresses 127.0.0.1..127.0.0.$SRCS (ports).
#
# Knobs (defaults): COUNTS="1000 5000 9000 10000 50000" WS=4000 STORM_C=64
#   STORM_DUR=5 ACTIVE="1000 5000 10000" DUR=10 WARM=1 WRK_TIMEOUT=10 SETTLE=5 SRCS=4
#   TESTS="idle ws storm active" ONLY="haproxy fulcrum" FULCRUM=./bin/fulcrum
#   FUL_GOMAXPROCS=2 FUL_NETIO= (fulcrum's tune_netio, "go" or "epoll"; empty: the
#   default) HAP_NBTHREAD=2 UP_BASE=24901 WS_PORT=24910
#   FUL_HTTP=24080 FUL_WS=24081 HAP_HTTP=24180 HAP_WS=24181 WORKDIR=$(mktemp -d)
# Needs: haproxy nginx wrk socat go (to build bench/scale).
# Everything listens on 127.0.0.1; every process is stopped at exit; every
# wait is bounded.
set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)

COUNTS=${COUNTS:-"1000 5000 9000 10000 50000"}
WS=${WS:-4000}
STORM_C=${STORM_C:-64}
STORM_DUR=${STORM_DUR:-5}
ACTIVE=${ACTIVE:-"1000 5000 10000"}
DUR=${DUR:-10}
WARM=${WARM:-1}
WRK_TIMEOUT=${WRK_TIMEOUT:-10}
SETTLE=${SETTLE:-5}
SRCS=${SRCS:-4}
TESTS=${TESTS:-"idle ws storm active"}
ONLY=${ONLY:-"haproxy fulcrum"}
FULCRUM=${FULCRUM:-./bin/fulcrum}
FUL_GOMAXPROCS=${FUL_GOMAXPROCS-2}
FUL_NETIO=${FUL_NETIO:-}
HAP_NBTHREAD=${HAP_NBTHREAD:-2}
UP_BASE=${UP_BASE:-24901}
WS_PORT=${WS_PORT:-24910}
FUL_HTTP=${FUL_HTTP:-24080}
FUL_WS=${FUL_WS:-24081}
HAP_HTTP=${HAP_HTTP:-24180}
HAP_WS=${HAP_WS:-24181}
UP_PORTS="$UP_BASE $((UP_BASE + 1)) $((UP_BASE + 2))"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

for t in haproxy nginx wrk socat go; do
  command -v "$t" >/dev/null || die "missing $t: apt-get install -y haproxy nginx wrk socat golang"
done
for v in WRK_TIMEOUT WS STORM_C STORM_DUR DUR WARM SETTLE SRCS HAP_NBTHREAD UP_BASE WS_PORT FUL_HTTP FUL_WS HAP_HTTP HAP_WS; do
  case ${!v} in ''|*[!0-9]*) die "$v must be a non-negative integer";; esac
done
for v in $COUNTS $ACTIVE; do case $v in ''|*[!0-9]*) die "COUNTS and ACTIVE take integers";; esac; done
[ "$SRCS" -ge 1 ] && [ "$SRCS" -le 250 ] || die "SRCS must be 1..250"
for m in $TESTS; do case $m in idle|ws|storm|active) ;; *) die "unknown test $m";; esac; done
case $FULCRUM in /*) BIN=$FULCRUM;; *) BIN=$ROOT/${FULCRUM#./};; esac
case " $ONLY " in *" fulcrum "*) [ -x "$BIN" ] || die "$BIN not found: run 'make build'";; esac

# The descriptor limit of this script and what it starts (never above the
# hard limit: raising that needs CAP_SYS_RESOURCE).
HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] && HARD=1048576
ulimit -n "$HARD" || die "cannot raise ulimit -n to $HARD"
FDS=$(ulimit -n)
CHUNK=$(( FDS - 200 ))   # connections per client process
# A proxy holding N client connections needs 2N descriptors in fulcrum's
# budget (its own and its server connection's, issue 16) plus its reserve.
fits() { [ $(( 2 * $1 + 300 )) -le "$FDS" ]; }
MAXCONN=$(( FDS > 1000 ? FDS : 1000 ))

if [ -n "${WORKDIR:-}" ]; then mkdir -p "$WORKDIR" && D=$WORKDIR; else D=$(mktemp -d -t fulcrum-scale.XXXXXX); fi
D=$(cd "$D" && pwd)
mkdir -p "$D/tmp" "$D/raw"
SCALE=$D/scale
log "building bench/scale"
go build -o "$SCALE" ./bench/scale || die "go build ./bench/scale failed"

PIDS=()     # servers: TERM, then KILL of their group
CLIENTS=()  # load clients: TERM
cleanup() {
  local p
  for p in "${CLIENTS[@]+"${CLIENTS[@]}"}"; do kill -TERM "$p" 2>/dev/null; done
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
for p in $UP_PORTS $WS_PORT $FUL_HTTP $FUL_WS $HAP_HTTP $HAP_WS; do port_open "$p" && die "127.0.0.1:$p is in use"; done

# ------------------------------------------------------------------ configs
# As bench/run.sh and bench/syscalls.sh (same backends, roundrobin,
# http-reuse always), with long client/server timeouts so that idle
# connections stay, maxconn as high as the descriptors allow, and a
# WebSocket frontend.
{
  echo "worker_processes 1; daemon off; pid $D/nginx.pid; error_log $D/nginx.err warn;"
  [ "$(id -u)" = 0 ] && echo "user root;"
  echo "worker_rlimit_nofile $FDS;"
  echo "events { worker_connections $(( FDS - 100 )); }"
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
    maxconn $MAXCONN
    no strict-limits
    stats socket $D/hap.sock level admin
defaults
    maxconn $MAXCONN
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout tunnel 300s
    timeout http-request 300s
    timeout http-keep-alive 300s
frontend fe_http
    mode http
    bind 127.0.0.1:$HAP_HTTP
    default_backend be_http
frontend fe_ws
    mode http
    bind 127.0.0.1:$HAP_WS
    default_backend be_ws
backend be_http
    mode http
    balance roundrobin
    http-reuse always
$(srv_hap)
backend be_ws
    mode http
    server ws 127.0.0.1:$WS_PORT
EOF

srv_ful() { local n=0 p; for p in $UP_PORTS; do n=$((n + 1)); printf '[[backend.server]]\nname = "b%d"\naddress = "127.0.0.1:%s"\n' "$n" "$p"; done; }
cat > "$D/fulcrum.toml" <<EOF
[global]
log_level = "error"
maxconn = $MAXCONN
${FUL_NETIO:+tune_netio = \"$FUL_NETIO\"}
[[global.stats_socket]]
path = "$D/ful.sock"
level = "admin"
[defaults]
timeout_connect = "5s"
timeout_client = "300s"
timeout_server = "300s"
timeout_http_request = "300s"
[[frontend]]
name = "fe_http"
bind = ["127.0.0.1:$FUL_HTTP"]
mode = "http"
default_backend = "be_http"
[[frontend]]
name = "fe_ws"
bind = ["127.0.0.1:$FUL_WS"]
mode = "http"
default_backend = "be_ws"
[[backend]]
name = "be_http"
mode = "http"
balance = "roundrobin"
http_reuse = "always"
$(srv_ful)
[[backend]]
name = "be_ws"
mode = "http"
[[backend.server]]
name = "ws"
address = "127.0.0.1:$WS_PORT"
EOF

# ------------------------------------------------------------------ processes
start() { # name cmd... -> START_PID
  local name=$1; shift
  setsid "$@" >> "$D/$name.log" 2>&1 < /dev/null &
  START_PID=$!
  PIDS+=("$START_PID")
}
stop() { # pid: TERM, up to 5 s, then KILL of its group
  local p=$1 q=()
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$p" 2>/dev/null
  wait "$p" 2>/dev/null
  for q in "${PIDS[@]}"; do [ "$q" != "$p" ] && Q+=("$q"); done
  PIDS=("${Q[@]+"${Q[@]}"}"); Q=()
}
Q=()
start nginx nginx -p "$D" -e "$D/nginx.err" -c "$D/nginx.conf"
for p in $UP_PORTS; do wait_port "$p" || die "nginx did not start (see $D/nginx.err)"; done
start wsup "$SCALE" wsup -listen "127.0.0.1:$WS_PORT"
wait_port "$WS_PORT" || die "the WebSocket upstream did not start"

declare -A HPORT WPORT
HPORT=([haproxy]=$HAP_HTTP [fulcrum]=$FUL_HTTP)
WPORT=([haproxy]=$HAP_WS [fulcrum]=$FUL_WS)
PROXY=""
start_proxy() { # target -> PROXY (the pid holding the threads)
  case $1 in
    haproxy) start haproxy haproxy -db -f "$D/haproxy.cfg" ;;
    fulcrum)
      if [ -n "$FUL_GOMAXPROCS" ]; then start fulcrum env GOMAXPROCS="$FUL_GOMAXPROCS" "$BIN" run -c "$D/fulcrum.toml"
      else start fulcrum "$BIN" run -c "$D/fulcrum.toml"; fi ;;
  esac
  PROXY=$START_PID
  wait_port "${HPORT[$1]}" && wait_port "${WPORT[$1]}" || { tail "$D/$1.log" >&2; die "$1 did not start"; }
  # warm-up: a few requests on new connections, so that the baseline has
  # the server connections and the first buffers
  timeout 20 wrk -t1 -c8 -d1s "http://127.0.0.1:${HPORT[$1]}/" > /dev/null 2>&1
  sleep 1
}
rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
curr_conns() { # target: the proxy's own count of client connections
  case $1 in
    haproxy) echo "show info" | socat -t 2 stdio "unix-connect:$D/hap.sock" 2>/dev/null | awk -F': ' '$1=="CurrConns"{print $2}' ;;
    fulcrum) echo "show activity" | socat -t 2 stdio "unix-connect:$D/ful.sock" 2>/dev/null | awk -F': ' '$1=="curr_conns"{print $2}' ;;
  esac
}
go_mem() { # fulcrum: goroutines heap_alloc_kb sys_kb
  echo "show activity" | socat -t 2 stdio "unix-connect:$D/ful.sock" 2>/dev/null |
    awk -F': ' '$1=="goroutines"{g=$2} $1=="heap_alloc_kb"{h=$2} $1=="sys_kb"{s=$2} END{printf "%s %s %s", g, h, s}'
}
src_list() { local i s=""; for i in $(seq 1 "$SRCS"); do s="$s${s:+,}127.0.0.$i"; done; echo "$s"; }

# open_clients kind port n: starts client processes holding n connections
# (CHUNK each at most), waits for each to say "ready OK ERRORS" (bounded),
# and sets OPEN_OK and OPEN_ERR.
open_clients() {
  local kind=$1 port=$2 n=$3 left=$3 i=0 part f line tag
  RUN=$(( ${RUN:-0} + 1 )); tag=$RUN.$kind.$n
  OPEN_OK=0 OPEN_ERR=0
  CLIENTS=()
  while [ "$left" -gt 0 ]; do
    part=$(( left < CHUNK ? left : CHUNK ))
    i=$((i + 1)); f=$D/raw/client.$tag.$i
    rm -f "$f.out" "$f.err"
    "$SCALE" "$kind" -addr "127.0.0.1:$port" -n "$part" -src "$(src_list)" -hold 600s > "$f.out" 2> "$f.err" < /dev/null &
    CLIENTS+=("$!")
    left=$(( left - part ))
  done
  local deadline=$(( SECONDS + 60 + n / 100 ))
  for j in $(seq 1 "$i"); do
    f=$D/raw/client.$tag.$j
    until grep -q '^ready' "$f.out" 2>/dev/null; do
      [ $SECONDS -lt $deadline ] || { log "client $j did not finish opening in time"; break; }
      kill -0 "${CLIENTS[$((j - 1))]}" 2>/dev/null || { log "client $j exited: $(cat "$f.err")"; break; }
      sleep 0.2
    done
    read -r _ ok err < <(grep '^ready' "$f.out" 2>/dev/null || echo "ready 0 0")
    OPEN_OK=$(( OPEN_OK + ok )); OPEN_ERR=$(( OPEN_ERR + err ))
    [ -s "$f.err" ] && log "client $j: $(head -c 300 "$f.err")"
  done
}
close_clients() {
  local p
  for p in "${CLIENTS[@]+"${CLIENTS[@]}"}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${CLIENTS[@]+"${CLIENTS[@]}"}"; do wait "$p" 2>/dev/null; done
  CLIENTS=()
}

RES=$D/results.tsv
printf 'test\tn\ttarget\topened\terrors\tcurr_conns\trss0_kb\trss_kb\tbytes_per_conn\tgo_goroutines\tgo_heap_kb\tgo_sys_kb\tvalue\tp50_ms\tp99_ms\n' > "$RES"
row() { local IFS=$'\t'; echo "$*" >> "$RES"; }

mem_test() { # test n target port kind
  local test=$1 n=$2 t=$3 port=$4 kind=$5 r0 r1 cc gm per
  start_proxy "$t"
  r0=$(rss_kb "$PROXY")
  open_clients "$kind" "$port" "$n"
  sleep "$SETTLE"
  r1=$(rss_kb "$PROXY"); cc=$(curr_conns "$t"); gm="- - -"
  [ "$t" = fulcrum ] && gm=$(go_mem)
  per=$(( OPEN_OK > 0 ? (r1 - r0) * 1024 / OPEN_OK : 0 ))
  row "$test" "$n" "$t" "$OPEN_OK" "$OPEN_ERR" "${cc:-?}" "$r0" "$r1" "$per" $gm - - -
  log "$test $n $t: $OPEN_OK open ($OPEN_ERR errors, proxy counts ${cc:-?}), RSS $r0 -> $r1 kB: $per bytes per connection$([ "$t" = fulcrum ] && echo " (goroutines heap_kb sys_kb: $gm)")"
  close_clients
  stop "$PROXY"
}

to_ms() { # wrk time -> ms
  awk -v s="$1" 'BEGIN{ v = s + 0; if (s ~ /us$/) v /= 1000; else if (s ~ /ms$/) v += 0; else if (s ~ /s$/) v *= 1000; if (s ~ /m$/) v *= 60000; printf "%.3f", v }'
}

# ------------------------------------------------------------------ measures
log "ulimit -n $FDS (hard $HARD), maxconn $MAXCONN, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for test in $TESTS; do
  for t in $ONLY; do
    case $test in
      idle)
        for n in $COUNTS; do
          if ! fits "$n"; then log "idle $n: skipped, needs ulimit -n >= $(( 2 * n + 300 )) (hard limit here: $HARD)"; row idle "$n" "$t" skipped; continue; fi
          mem_test idle "$n" "$t" "${HPORT[$t]}" idle
        done ;;
      ws)
        # a tunnel holds two descriptors in the proxy, and two in the upstream
        if ! fits "$WS"; then log "ws $WS: skipped, needs ulimit -n >= $(( 2 * WS + 300 ))"; continue; fi
        mem_test ws "$WS" "$t" "${WPORT[$t]}" ws ;;
      storm)
        start_proxy "$t"
        out=$D/raw/storm.$t
        timeout $(( STORM_DUR + 60 )) "$SCALE" storm -addr "127.0.0.1:${HPORT[$t]}" -c "$STORM_C" -d "${STORM_DUR}s" -src "$(src_list)" > "$out" 2> "$out.err"
        read -r rate conns errs < "$out"
        row storm "$STORM_C" "$t" "${conns:-0}" "${errs:-?}" - - - - - - - "${rate:-0}" - -
        log "storm $t: ${rate:-?} connections/s (${conns:-?} in ${STORM_DUR}s, ${errs:-?} errors)"
        stop "$PROXY" ;;
      active)
        start_proxy "$t"
        for c in $ACTIVE; do
          if [ $(( c + 300 )) -gt "$FDS" ]; then log "active $c: skipped, wrk needs ulimit -n >= $(( c + 300 ))"; continue; fi
          url="http://127.0.0.1:${HPORT[$t]}/"
          [ "$WARM" -gt 0 ] && timeout $(( WARM + 60 )) wrk -t1 -c"$c" -d"${WARM}s" "$url" > /dev/null 2>&1
          out=$D/raw/active.$c.$t
          timeout $(( DUR + 60 )) wrk -t1 -c"$c" -d"${DUR}s" --timeout "${WRK_TIMEOUT}s" --latency "$url" > "$out" 2>&1
          rps=$(awk '/^Requests\/sec/{print $2}' "$out")
          p50=$(to_ms "$(awk '$1=="50%"{print $2}' "$out")")
          p99=$(to_ms "$(awk '$1=="99%"{print $2}' "$out")")
          errs=$(awk '/Socket errors/{gsub(/,/,""); s=$4+$6+$8+$10} /Non-2xx/{s+=$NF} END{print s+0}' "$out")
          row active "$c" "$t" - "$errs" - - - - - - - "${rps:-0}" "$p50" "$p99"
          log "active $c $t: ${rps:-?} req/s, p50 $p50 ms, p99 $p99 ms, $errs errors"
        done
        stop "$PROXY" ;;
    esac
  done
done

# ------------------------------------------------------------------ report
{
  echo
  echo "cost as the work grows: fulcrum ($BIN, GOMAXPROCS=${FUL_GOMAXPROCS:-default}${FUL_NETIO:+, tune_netio $FUL_NETIO}) vs haproxy $(haproxy -v | awk 'NR==1{print $3}') (nbthread $HAP_NBTHREAD)"
  echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), ulimit -n $FDS; $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "memory: RSS growth over the proxy's RSS before the connections opened, per open connection"
  awk -F'\t' 'NR > 1 && ($1 == "idle" || $1 == "ws") {
      if ($4 == "skipped") { printf "%-5s %6s %-8s skipped (descriptor limit)\n", $1, $2, $3; next }
      printf "%-5s %6s %-8s open %6s err %4s proxy_conns %6s rss %7s -> %7s kB  %7s B/conn", $1, $2, $3, $4, $5, $6, $7, $8, $9
      if ($3 == "fulcrum") printf "  (goroutines %s, heap %s kB, sys %s kB)", $10, $11, $12
      printf "\n" }' "$RES"
  echo
  awk -F'\t' 'NR > 1 && $1 == "storm" { printf "storm -c%s %-8s %8s conn/s (%s connections, %s errors)\n", $2, $3, $13, $4, $5 }' "$RES"
  awk -F'\t' 'NR > 1 && $1 == "active" { printf "active -c%-6s %-8s %9s req/s  p50 %8s ms  p99 %8s ms  errors %s\n", $2, $3, $13, $14, $15, $5 }' "$RES"
  echo
  echo "raw: $RES"
} | tee "$D/summary.txt"
