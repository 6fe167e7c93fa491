#!/usr/bin/env bash
# bench/soak.sh - fulcrum's latency during reloads, and its resource use over
# a long steady load (issue 11's soak figures).
#
# Starts three nginx upstreams (127.0.0.1:9001-9003) and fulcrum (HTTP on
# 127.0.0.1:$FUL_HTTP, an admin socket in WORKDIR), then:
#   1. baseline  wrk -c$CONNS -d$DUR --latency, no reload       -> req/s, p50, p99
#   2. reloads   the same wrk while fulcrum gets SIGHUP every
#                $EVERY seconds                                 -> req/s, p50, p99, reloads
#   3. soak      wrk for $SOAK seconds; `show activity` sampled at the
#                start and every $SAMPLE seconds (goroutines, heap_alloc_kb,
#                sys_kb, RSS), then right after the load and 12 s later,
#                when the goroutines must be back to the idle figure
# The three phases run in this order; PHASES selects some of them.
#
# Knobs (defaults): DUR=20 CONNS=32 EVERY=1 SOAK=600 SAMPLE=60
#   PHASES="baseline reloads soak" FULCRUM=./bin/fulcrum FUL_GOMAXPROCS=2
#   FUL_HTTP=8090 WORKDIR=$(mktemp -d)
# Needs: nginx wrk socat (apt-get install -y nginx wrk socat).
# Everything listens on 127.0.0.1; every process is stopped at exit; every
# load run is bounded by `timeout`.
set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)

DUR=${DUR:-20}
CONNS=${CONNS:-32}
EVERY=${EVERY:-1}
SOAK=${SOAK:-600}
SAMPLE=${SAMPLE:-60}
PHASES=${PHASES:-"baseline reloads soak"}
FULCRUM=${FULCRUM:-./bin/fulcrum}
FUL_GOMAXPROCS=${FUL_GOMAXPROCS-2}
FUL_HTTP=${FUL_HTTP:-8090}
UP_PORTS="9001 9002 9003"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

for t in nginx wrk socat; do command -v "$t" >/dev/null || die "missing $t: apt-get install -y nginx wrk socat"; done
case $FULCRUM in /*) BIN=$FULCRUM;; *) BIN=$ROOT/${FULCRUM#./};; esac
[ -x "$BIN" ] || die "$BIN not found: run 'make build'"
for p in DUR CONNS SOAK SAMPLE; do case ${!p} in ''|*[!0-9]*) die "$p must be an integer";; esac; done

if [ -n "${WORKDIR:-}" ]; then mkdir -p "$WORKDIR" && D=$WORKDIR; else D=$(mktemp -d -t fulcrum-soak.XXXXXX); fi
D=$(cd "$D" && pwd)
mkdir -p "$D/tmp"
SOCK=$D/admin.sock
PIDS=()
cleanup() {
  local p
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
for p in $UP_PORTS $FUL_HTTP; do port_open "$p" && die "127.0.0.1:$p is in use"; done

{
  echo "worker_processes 1; daemon off; pid $D/nginx.pid; error_log $D/nginx.err warn;"
  [ "$(id -u)" = 0 ] && echo "user root;"
  echo "events { worker_connections 8192; }"
  echo "http { access_log off; client_body_temp_path $D/tmp/cb; proxy_temp_path $D/tmp/px;"
  echo "  fastcgi_temp_path $D/tmp/fc; uwsgi_temp_path $D/tmp/uw; scgi_temp_path $D/tmp/sc;"
  echo "  keepalive_requests 100000000; keepalive_timeout 300s;"
  for p in $UP_PORTS; do echo "  server { listen 127.0.0.1:$p backlog=4096; location / { return 200 \"ok\\n\"; } }"; done
  echo "}"
} > "$D/nginx.conf"

{
  cat <<EOF
[global]
log_level = "error"
[[global.stats_socket]]
path = "$SOCK"
level = "admin"

[defaults]
timeout_connect = "5s"
timeout_client = "60s"
timeout_server = "60s"

[[frontend]]
name = "fe"
bind = ["127.0.0.1:$FUL_HTTP"]
mode = "http"
default_backend = "be"

[[backend]]
name = "be"
mode = "http"
balance = "roundrobin"
http_reuse = "always"
EOF
  n=0
  for p in $UP_PORTS; do
    n=$((n + 1))
    printf '[[backend.server]]\nname = "b%d"\naddress = "127.0.0.1:%s"\ncheck = true\n' "$n" "$p"
  done
} > "$D/fulcrum.toml"
"$BIN" check -c "$D/fulcrum.toml" >/dev/null || die "fulcrum check rejected $D/fulcrum.toml"

setsid nginx -p "$D" -e "$D/nginx.err" -c "$D/nginx.conf" >"$D/nginx.log" 2>&1 </dev/null &
PIDS+=($!)
for p in $UP_PORTS; do wait_port "$p" || die "nginx did not start"; done
if [ -n "$FUL_GOMAXPROCS" ]; then
  setsid env GOMAXPROCS="$FUL_GOMAXPROCS" "$BIN" run -c "$D/fulcrum.toml" >"$D/fulcrum.log" 2>&1 </dev/null &
else
  setsid "$BIN" run -c "$D/fulcrum.toml" >"$D/fulcrum.log" 2>&1 </dev/null &
fi
FPID=$!
PIDS+=("$FPID")
wait_port "$FUL_HTTP" || die "fulcrum did not start (see $D/fulcrum.log)"
URL=http://127.0.0.1:$FUL_HTTP/

cli() { echo "$1" | socat -t 5 stdio "unix-connect:$SOCK"; }
field() { awk -F': ' -v k="$1" '$1 == k { print $2 }'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$FPID/status"; }
sample() { # label -> one line of figures
  local a; a=$(cli "show activity")
  printf '%-10s goroutines=%s heap_alloc_kb=%s sys_kb=%s rss_kb=%s gc_cycles=%s\n' "$1" \
    "$(echo "$a" | field goroutines)" "$(echo "$a" | field heap_alloc_kb)" \
    "$(echo "$a" | field sys_kb)" "$(rss_kb)" "$(echo "$a" | field gc_cycles)"
}
# wrk_summary FILE -> "req/s p50_ms p99_ms errors"
wrk_summary() {
  awk '
    function ms(v) { if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 } if (v ~ /ms$/) { sub(/ms$/, "", v); return v } if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000 } return v }
    /Requests\/sec:/ { rps = $2 }
    $1 == "50%" { p50 = ms($2) } $1 == "99%" { p99 = ms($2) }
    /Socket errors:/ { gsub(/,/, ""); err += $4 + $6 + $8 + $10 }
    /Non-2xx or 3xx responses:/ { err += $5 }
    END { printf "%s %.2f %.2f %d\n", rps, p50, p99, err }' "$1"
}
run_wrk() { # seconds outfile
  timeout $(( $1 + 30 )) wrk -t1 -c"$CONNS" -d"$1"s --latency "$URL" > "$2" 2>&1
}

SUMMARY=$D/summary.txt
: > "$SUMMARY"
out() { echo "$*" | tee -a "$SUMMARY"; }
out "# bench/soak.sh $(date -u +%FT%TZ) conns=$CONNS dur=${DUR}s every=${EVERY}s soak=${SOAK}s GOMAXPROCS=${FUL_GOMAXPROCS:-default}"

timeout 40 wrk -t1 -c"$CONNS" -d3s "$URL" >/dev/null 2>&1   # warm-up

want() { case " $PHASES " in *" $1 "*) return 0;; esac; return 1; }
if want baseline; then
  log "baseline: ${DUR}s, no reload"
  run_wrk "$DUR" "$D/baseline.txt"
  out "baseline   req/s p50_ms p99_ms errors: $(wrk_summary "$D/baseline.txt")"
fi
if want reloads; then
  log "reloads: ${DUR}s, SIGHUP every ${EVERY}s"
  run_wrk "$DUR" "$D/reloads.txt" &
  W=$!
  n=0
  sleep 1
  while kill -0 "$W" 2>/dev/null; do
    kill -HUP "$FPID" && n=$((n + 1))
    sleep "$EVERY"
  done
  wait "$W"
  out "reloads    req/s p50_ms p99_ms errors: $(wrk_summary "$D/reloads.txt") (SIGHUPs sent: $n)"
  kill -0 "$FPID" || die "fulcrum died during the reloads"
fi
if want soak; then
  log "soak: ${SOAK}s at steady load, sampling every ${SAMPLE}s"
  out "$(sample idle)"
  run_wrk "$SOAK" "$D/soak.txt" &
  W=$!
  sleep 5
  out "$(sample start)"
  t=5
  while kill -0 "$W" 2>/dev/null; do
    sleep 1; t=$((t + 1))
    if [ $((t % SAMPLE)) = 0 ] && kill -0 "$W" 2>/dev/null; then out "$(sample "t=${t}s")"; fi
  done
  wait "$W"
  out "$(sample after)"
  sleep 12   # idle connection goroutines wait 10 s for a new connection (proxy/workers.go)
  out "$(sample after+12s)"
  out "soak       req/s p50_ms p99_ms errors: $(wrk_summary "$D/soak.txt")"
fi
