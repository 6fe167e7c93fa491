#!/usr/bin/env bash
# bench/gomaxprocs.sh - fulcrum with several GOMAXPROCS values against the
# same HAProxy, to choose fulcrum's default (issue 21, point 2). For each value
# in PROCS it runs bench/run.sh (req/s, p99, work per CPU second, ratio to
# HAProxy; HAProxy is measured again in every run, alternating as run.sh
# does) and, with COUNTS=1, bench/syscalls.sh (kernel crossings per request),
# then prints one table of all of them. Run it on a quiet machine: req/s and
# CPU figures taken while other jobs run say little.
#
# Knobs (defaults): PROCS="1 2 default" ("default": GOMAXPROCS unset, Go's
#   own choice: the CPUs the process may use, which is what fulcrum runs
#   with when nbthread is 0 or absent); COUNTS=0; WORKDIR=$(mktemp -d);
#   anything run.sh and syscalls.sh read (MODES, ROUNDS, DUR, CONNS,
#   FULCRUM, BUILD, ports...). Needs what run.sh needs (and syscalls.sh's
#   perf with COUNTS=1).
#
#   make build
#   MODES="http-ka http-close tcp-ka" ROUNDS=3 DUR=10 bench/gomaxprocs.sh
#   PROCS="1 2 4 default" COUNTS=1 bench/gomaxprocs.sh
set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
PROCS=${PROCS:-"1 2 default"}
COUNTS=${COUNTS:-0}
if [ -n "${WORKDIR:-}" ]; then mkdir -p "$WORKDIR" || exit 2; BASE=$WORKDIR
else BASE=$(mktemp -d -t fulcrum-gomaxprocs.XXXXXX) || exit 2; fi
unset WORKDIR
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

for p in $PROCS; do
  v=$p; [ "$p" = default ] && v=""
  case $v in ""|[1-9]|[1-9][0-9]|[1-9][0-9][0-9]) ;; *) log "PROCS: $p is neither a number nor default"; exit 2;; esac
  log "GOMAXPROCS=$p: bench/run.sh"
  FUL_GOMAXPROCS=$v WORKDIR=$BASE/run.$p bench/run.sh >"$BASE/run.$p.out" 2>"$BASE/run.$p.err" ||
    { log "run.sh failed with GOMAXPROCS=$p (see $BASE/run.$p.err)"; exit 1; }
  if [ "$COUNTS" = 1 ]; then
    log "GOMAXPROCS=$p: bench/syscalls.sh"
    FUL_GOMAXPROCS=$v WORKDIR=$BASE/sys.$p bench/syscalls.sh >"$BASE/sys.$p.out" 2>"$BASE/sys.$p.err" ||
      { log "syscalls.sh failed with GOMAXPROCS=$p (see $BASE/sys.$p.err)"; exit 1; }
  fi
done

{
  echo
  echo "fulcrum by GOMAXPROCS (run.sh medians; HAProxy measured again in each run; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  printf '%-10s %-11s %-8s %12s %9s %9s %7s %6s %11s %6s\n' GOMAXPROCS mode target "req/s|MB/s" p50 p99 cpu_s ratio "work/cpu_s" errors
  for p in $PROCS; do
    awk -v p="$p" '$1 ~ /^(http|tcp|tls|h2|queue|peers|track)/ && ($2 == "haproxy" || $2 == "fulcrum") {
      printf "%-10s %-11s %-8s %12s %9s %9s %7s %6s %11s %6s\n", p, $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$BASE/run.$p.out"
  done
  if [ "$COUNTS" = 1 ]; then
    echo
    echo "kernel crossings per request (syscalls.sh) by GOMAXPROCS:"
    printf '%-10s %-10s %-7s %8s %8s %8s %6s %6s %6s %7s\n' GOMAXPROCS mode target requests syscalls EAGAIN cs mig runs cpu_us
    for p in $PROCS; do
      awk -v p="$p" '$1 ~ /^(http|tcp)-/ && ($2 == "haproxy" || $2 == "fulcrum") && $3 ~ /^[0-9]+$/ {
        printf "%-10s %-10s %-7s %8s %8s %8s %6s %6s %6s %7s\n", p, $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$BASE/sys.$p.out"
    done
  fi
  echo
  echo "raw: $BASE/run.*/ and $BASE/sys.*/"
} | tee "$BASE/summary.txt"
