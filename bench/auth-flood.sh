#!/usr/bin/env bash
# bench/auth-flood.sh - proxied req/s while clients guess the stats page's
# password (issue 16 point 9).
#
# Starts one nginx upstream and fulcrum (an http frontend, and a stats
# frontend whose password is a bcrypt hash of cost 10), then, for ROUNDS
# rounds, measures the proxied traffic with wrk for DUR seconds:
#   quiet   the traffic alone
#   flood   the same, while GUESSERS keep-alive connections (wrk) send GET
#           /stats with a wrong password as fast as they are answered
# and prints, per run, the proxied req/s, the guesses answered (all non-2xx)
# and fulcrum's CPU seconds; then the medians. Odd rounds run quiet first,
# even rounds flood first; each measured run follows a WARM-second warm-up.
#
# Environment knobs (defaults):
#   ROUNDS=3 DUR=10 CONNS=32 GUESSERS=8 WARM=1
#   FULCRUM=./bin/fulcrum      binary, relative to the repo root (or absolute)
#   FUL_GOMAXPROCS=2           GOMAXPROCS for fulcrum
#   FUL_HTTP=8095 FUL_STATS=8495 UP_PORT=9021   listen ports (127.0.0.1)
#   WORKDIR=$(mktemp -d)       configs, logs, raw wrk output
#
# Everything listens on 127.0.0.1 only; every process is started by this
# script and stopped by its PID at exit; every load run is time-bounded.
# Needs: nginx, wrk, curl (apt-get install -y nginx wrk curl).

set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2

ROUNDS=${ROUNDS:-3}
DUR=${DUR:-10}
CONNS=${CONNS:-32}
GUESSERS=${GUESSERS:-8}
WARM=${WARM:-1}
FULCRUM=${FULCRUM:-./bin/fulcrum}
FUL_GOMAXPROCS=${FUL_GOMAXPROCS:-2}
FUL_HTTP=${FUL_HTTP:-8095}
FUL_STATS=${FUL_STATS:-8495}
UP_PORT=${UP_PORT:-9021}
WORKDIR=${WORKDIR:-$(mktemp -d /tmp/fulcrum-authflood.XXXXXX)}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

for v in ROUNDS DUR CONNS GUESSERS WARM FUL_GOMAXPROCS FUL_HTTP FUL_STATS UP_PORT; do
  case ${!v} in ''|*[!0-9]*) die "$v must be a non-negative integer (got '${!v}')";; esac
done
[ "$ROUNDS" -ge 1 ] && [ "$DUR" -ge 1 ] && [ "$CONNS" -ge 1 ] || die "ROUNDS, DUR and CONNS must be >= 1"
for t in nginx wrk curl; do
  command -v "$t" >/dev/null || die "$t not found: apt-get install -y nginx wrk curl"
done
[ -x "$FULCRUM" ] || die "$FULCRUM not found: run make build (or set FULCRUM)"
for p in $FUL_HTTP $FUL_STATS $UP_PORT; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then die "port $p is in use (set FUL_HTTP, FUL_STATS, UP_PORT)"; fi
done
mkdir -p "$WORKDIR/raw"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# The password is "change-me"; the guessers send "admin:wrong".
HASH='$2a$10$UOuPwDDaciYhlolrWBdWQe7o1rKREyT1wIcl8hf0TxFLPPAJPDECS'
GUESS_AUTH="Basic $(printf 'admin:wrong' | base64)"

cat >"$WORKDIR/upstream.conf" <<EOF
worker_processes 1;
pid $WORKDIR/nginx.pid;
error_log $WORKDIR/nginx.err;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP_PORT backlog=4096; location / { return 200 "ok\n"; } }
}
EOF
cat >"$WORKDIR/fulcrum.toml" <<EOF
[global]
log_level = "error"
[defaults]
mode = "http"
[[frontend]]
name = "www"
bind = ["127.0.0.1:$FUL_HTTP"]
default_backend = "web"
[[frontend]]
name = "stats"
bind = ["127.0.0.1:$FUL_STATS"]
[frontend.stats]
enable = true
uri = "/stats"
auth = ["admin:$HASH"]
[[backend]]
name = "web"
http_reuse = "always"
[[backend.server]]
name = "s1"
address = "127.0.0.1:$UP_PORT"
EOF

nginx -c "$WORKDIR/upstream.conf" -p "$WORKDIR" -g 'daemon off;' 2>>"$WORKDIR/nginx.err" &
PIDS+=($!)
GOMAXPROCS=$FUL_GOMAXPROCS "$FULCRUM" run -c "$WORKDIR/fulcrum.toml" 2>"$WORKDIR/fulcrum.log" &
FPID=$!
PIDS+=($FPID)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$FUL_HTTP/" >/dev/null && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$FUL_HTTP/" >/dev/null || die "fulcrum does not serve (see $WORKDIR/fulcrum.log)"
code=$(curl -s -o /dev/null -w '%{http_code}' -u admin:change-me "http://127.0.0.1:$FUL_STATS/stats;csv")
[ "$code" = 200 ] || die "the stats page with the right password answered $code"

cpu_s() { # utime+stime of fulcrum, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$FPID/stat"
}
rps() { awk '/^Requests\/sec:/ { printf "%d", $2 }' "$1"; }
total() { awk '/requests in/ { print $1 }' "$1"; }
non2xx() { awk '/Non-2xx or 3xx responses:/ { print $5 }' "$1"; }

printf 'round\tload\tproxied_req_s\tguesses\tguesses_non2xx\tfulcrum_cpu_s\n' | tee "$WORKDIR/results.tsv"
for r in $(seq "$ROUNDS"); do
  order="quiet flood"
  [ $((r % 2)) = 0 ] && order="flood quiet"
  for load in $order; do
    gpid=
    if [ "$load" = flood ]; then
      wrk -t1 -c"$GUESSERS" -d"$((WARM + DUR + 1))" -H "Authorization: $GUESS_AUTH" \
        "http://127.0.0.1:$FUL_STATS/stats;csv" >"$WORKDIR/raw/guess-$r.txt" 2>&1 &
      gpid=$!
      sleep 0.5
    fi
    [ "$WARM" -gt 0 ] && wrk -t1 -c"$CONNS" -d"$WARM" "http://127.0.0.1:$FUL_HTTP/" >/dev/null 2>&1
    c0=$(cpu_s)
    wrk -t1 -c"$CONNS" -d"$DUR" "http://127.0.0.1:$FUL_HTTP/" >"$WORKDIR/raw/$load-$r.txt" 2>&1
    c1=$(cpu_s)
    guesses=- bad=-
    if [ -n "$gpid" ]; then
      wait "$gpid"
      guesses=$(total "$WORKDIR/raw/guess-$r.txt")
      bad=$(non2xx "$WORKDIR/raw/guess-$r.txt")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%.1f\n' "$r" "$load" "$(rps "$WORKDIR/raw/$load-$r.txt")" \
      "${guesses:-0}" "${bad:-0}" "$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" | tee -a "$WORKDIR/results.tsv"
  done
done
for load in quiet flood; do
  med=$(awk -F'\t' -v l="$load" '$2 == l { print $3 }' "$WORKDIR/results.tsv" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  printf 'median proxied req/s, %s: %s\n' "$load" "$med"
done
log "raw output in $WORKDIR"
