#!/usr/bin/env bash
# bench/dns.sh - wrk keep-alive throughput through fulcrum while DNS
# discovery changes its backend every CHANGE_MS (100 ms), against a steady
# run of the same setup (issue 19: within 5%).
#
# Starts one nginx (1 worker) answering "ok" on 127.0.0.1, .2, .3 and .4,
# port UP_PORT; dnsmasq on 127.0.0.1:DNS_PORT with web.test -> 127.0.0.1,
# .2, .3 (hosts file); fulcrum (GOMAXPROCS=2) whose backend is a
# server_template of 4 slots for web.test:UP_PORT resolved every 100 ms
# with hold_obsolete 0s. Each round runs wrk twice, DUR seconds each, in
# alternating order: "steady" (the hosts file does not change) and
# "changing" (a loop swaps 127.0.0.3 and 127.0.0.4 in the hosts file and
# SIGHUPs dnsmasq every CHANGE_MS: each swap empties one slot and fills
# another, so that one server changes address and its idle connections are
# closed). It prints req/s and fulcrum's CPU time per request of every run
# (utime+stime from /proc, less sensitive to other work on a shared
# machine than req/s), the address changes fulcrum logged during each
# changing run, and the ratios of the medians.
#
# Environment knobs (defaults): ROUNDS=3 DUR=10 CONNS=64 THREADS=1
#   CHANGE_MS=100 FULCRUM=./bin/fulcrum BUILD=0 FUL_PORT=8380 UP_PORT=9301
#   DNS_PORT=15399 WORKDIR=$(mktemp -d)
# Everything listens on loopback only; every process is started by this
# script and stopped by its PID at exit; every run is time-bounded.
# Needs: nginx, wrk, dnsmasq (apt-get install -y nginx wrk dnsmasq).

set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)

ROUNDS=${ROUNDS:-3}
DUR=${DUR:-10}
CONNS=${CONNS:-64}
THREADS=${THREADS:-1}
CHANGE_MS=${CHANGE_MS:-100}
FULCRUM=${FULCRUM:-./bin/fulcrum}
BUILD=${BUILD:-0}
FUL_PORT=${FUL_PORT:-8380}
UP_PORT=${UP_PORT:-9301}
DNS_PORT=${DNS_PORT:-15399}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

for v in ROUNDS DUR CONNS THREADS CHANGE_MS FUL_PORT UP_PORT DNS_PORT; do
  case ${!v} in ''|*[!0-9]*) die "$v must be a non-negative integer (got '${!v}')";; esac
done
[ "$ROUNDS" -ge 1 ] && [ "$DUR" -ge 1 ] && [ "$CHANGE_MS" -ge 10 ] || die "ROUNDS, DUR >= 1 and CHANGE_MS >= 10"
for t in nginx wrk dnsmasq timeout setsid; do
  command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || die "missing $t (apt-get install -y nginx wrk dnsmasq)"
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
if [ "$BUILD" = 1 ]; then timeout 600 make build >&2 || die "make build failed"; fi
case $FULCRUM in /*) FUL_BIN=$FULCRUM;; *) FUL_BIN=$ROOT/${FULCRUM#./};; esac
[ -x "$FUL_BIN" ] || die "fulcrum binary $FUL_BIN not found: run 'make build' (or BUILD=1)"

if [ -n "${WORKDIR:-}" ]; then mkdir -p "$WORKDIR" || exit 2; D=$WORKDIR
else D=$(mktemp -d -t fulcrum-dns-bench.XXXXXX) || exit 2; fi
D=$(cd "$D" && pwd)

STARTED=()
CHANGER=""
cleanup() {
  local i
  [ -n "$CHANGER" ] && kill "$CHANGER" 2>/dev/null && wait "$CHANGER" 2>/dev/null
  for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
    kill -TERM "${STARTED[$i]}" 2>/dev/null
    timeout 5 tail --pid="${STARTED[$i]}" -f /dev/null 2>/dev/null || kill -KILL "${STARTED[$i]}" 2>/dev/null
  done
  log "workdir: $D"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP
start_proc() { local name=$1; shift; setsid "$@" > "$D/$name.log" 2>&1 < /dev/null & STARTED+=("$!"); PID_LAST=$!; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { local i; for i in $(seq 100); do port_open "$1" "$2" && return 0; sleep 0.1; done; return 1; }

# ---------------------------------------------------------------- upstreams
mkdir -p "$D/nginx"
cat > "$D/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $D/nginx/nginx.pid;
error_log $D/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $D/nginx; proxy_temp_path $D/nginx; fastcgi_temp_path $D/nginx;
  uwsgi_temp_path $D/nginx; scgi_temp_path $D/nginx;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$UP_PORT; listen 127.0.0.2:$UP_PORT; listen 127.0.0.3:$UP_PORT; listen 127.0.0.4:$UP_PORT;
    location / { return 200 "ok\n"; }
  }
}
EOF
start_proc nginx "$NGINX" -c "$D/nginx.conf"
for ip in 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4; do wait_port "$ip" "$UP_PORT" || die "nginx did not listen on $ip:$UP_PORT (see $D/nginx.log)"; done

# ---------------------------------------------------------------- dnsmasq
# Builtins only (printf, kill, read -t): the change loop forks nothing, so
# that its own CPU does not weigh on the measurement.
hosts_a() { printf '127.0.0.1 web.test\n127.0.0.2 web.test\n127.0.0.3 web.test\n' > "$D/hosts"; }
hosts_b() { printf '127.0.0.1 web.test\n127.0.0.2 web.test\n127.0.0.4 web.test\n' > "$D/hosts"; }
hosts_a
cat > "$D/dnsmasq.conf" <<EOF
no-resolv
no-hosts
addn-hosts=$D/hosts
local=/test/
listen-address=127.0.0.1
bind-interfaces
port=$DNS_PORT
local-ttl=1
EOF
USER_ARG=""; [ "$(id -u)" = 0 ] && USER_ARG=--user=root
start_proc dnsmasq "$DNSMASQ" --no-daemon --conf-file="$D/dnsmasq.conf" --pid-file= $USER_ARG
DNSMASQ_PID=$PID_LAST
sleep 0.3
kill -0 "$DNSMASQ_PID" 2>/dev/null || die "dnsmasq did not start (see $D/dnsmasq.log)"

# ---------------------------------------------------------------- fulcrum
cat > "$D/fulcrum.toml" <<EOF
[global]
log_level = "warn"

[defaults]
timeout_connect = "5s"
timeout_client = "60s"
timeout_server = "60s"

[[resolvers]]
name = "dns"
nameserver = ["127.0.0.1:$DNS_PORT"]
timeout_resolve = "100ms"
timeout_retry = "200ms"
hold_obsolete = "0s"

[[frontend]]
name = "www"
bind = ["127.0.0.1:$FUL_PORT"]
default_backend = "web"

[[backend]]
name = "web"
balance = "roundrobin"
http_reuse = "always"
[[backend.server_template]]
prefix = "web"
count = 4
fqdn = "web.test"
port = $UP_PORT
resolvers = "dns"
resolve_prefer = "ipv4"
init_addr = "none"
EOF
GOMAXPROCS=2 start_proc fulcrum "$FUL_BIN" run -c "$D/fulcrum.toml"
FUL_PID=$PID_LAST
wait_port 127.0.0.1 "$FUL_PORT" || die "fulcrum did not listen (see $D/fulcrum.log)"
for i in $(seq 50); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FUL_PORT/")" = 200 ] && break
  sleep 0.1
done
[ "$(curl -s "http://127.0.0.1:$FUL_PORT/")" = ok ] || die "fulcrum does not answer through DNS discovery (see $D/fulcrum.log)"

changes() { grep -c 'changed its IP' "$D/fulcrum.log"; }
changer() { # swaps the third address every CHANGE_MS until killed
  local n=0 fd pause
  pause=$(printf '%d.%03d' $((CHANGE_MS / 1000)) $((CHANGE_MS % 1000)))
  exec {fd}<> <(:) # a pipe nobody writes: read -t sleeps without a fork
  while :; do
    if [ $((n % 2)) = 0 ]; then hosts_b; else hosts_a; fi
    kill -HUP "$DNSMASQ_PID" 2>/dev/null || exit 0
    n=$((n + 1))
    read -r -t "$pause" -u "$fd"
  done
}

HZ=$(getconf CLK_TCK)
cpu_ticks() { # utime+stime of one process, all its threads
  local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s # $12 utime $13 stime
  echo $(( ${12} + ${13} ))
}
run_wrk() { # label -> "req/s cpu_us_per_request"
  local out rps n t0 t1
  t0=$(cpu_ticks "$FUL_PID")
  out=$(timeout $((DUR + 30)) wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" "http://127.0.0.1:$FUL_PORT/" 2>&1)
  t1=$(cpu_ticks "$FUL_PID")
  echo "$out" > "$D/wrk-$1.txt"
  rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  if echo "$out" | grep -q 'Non-2xx\|Socket errors'; then log "$1: $(echo "$out" | grep 'Non-2xx\|Socket errors')"; fi
  awk -v r="${rps:-0}" -v n="${n:-0}" -v t=$((t1 - t0)) -v hz="$HZ" 'BEGIN { printf "%s %.1f\n", r, (n > 0) ? 1e6 * t / hz / n : 0 }'
}

log "warm-up"; timeout 10 wrk -t1 -c"$CONNS" -d2s "http://127.0.0.1:$FUL_PORT/" > /dev/null 2>&1
STEADY=(); CHANGING=(); STEADY_CPU=(); CHANGING_CPU=()
for r in $(seq "$ROUNDS"); do
  for mode in $( [ $((r % 2)) = 1 ] && echo "steady changing" || echo "changing steady" ); do
    hosts_a; kill -HUP "$DNSMASQ_PID"; sleep 0.5
    if [ "$mode" = changing ]; then
      before=$(changes)
      changer & CHANGER=$!
      set -- $(run_wrk "changing-$r")
      kill "$CHANGER" 2>/dev/null; wait "$CHANGER" 2>/dev/null; CHANGER=""
      n=$(( $(changes) - before ))
      CHANGING+=("$1"); CHANGING_CPU+=("$2")
      log "round $r changing: $1 req/s, fulcrum CPU $2 us/request, $n address changes applied"
    else
      set -- $(run_wrk "steady-$r")
      STEADY+=("$1"); STEADY_CPU+=("$2")
      log "round $r steady:   $1 req/s, fulcrum CPU $2 us/request"
    fi
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ms=$(median "${STEADY[@]}"); mc=$(median "${CHANGING[@]}")
ratio=$(awk -v s="$ms" -v c="$mc" 'BEGIN { printf "%.1f", (s > 0) ? 100 * c / s : 0 }')
cs=$(median "${STEADY_CPU[@]}"); cc=$(median "${CHANGING_CPU[@]}")
cratio=$(awk -v s="$cs" -v c="$cc" 'BEGIN { printf "%.1f", (s > 0) ? 100 * c / s : 0 }')
echo "steady median:   $ms req/s (${STEADY[*]}), fulcrum CPU $cs us/request (${STEADY_CPU[*]})"
echo "changing median: $mc req/s (${CHANGING[*]}) = ${ratio}% of steady; fulcrum CPU $cc us/request (${CHANGING_CPU[*]}) = ${cratio}% of steady"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (the machine's other work weighs on req/s; CPU per request does not depend on it as much)"
