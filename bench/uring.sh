#!/usr/bin/env bash
# bench/uring.sh - the io_uring relay prototype (proxy/netio/uring) beside
# fulcrum's relay on the epoll layer, same workload (issue 21 point 3).
#
# Per round and mode: an echo server process, a relay process started under
# perf stat (its threads, those started later too: io_uring's workers would
# be counted) and a client process: CONNS connections doing N round trips of
# SIZE bytes in all through the relay to the echo server. The relay ends by
# itself once every pair has closed; the table divides its counts by the
# round trips. Modes (MODES): uring (one loop on its own thread: multishot
# receive into provided buffers, one io_uring_enter per turn), epoll
# (netio.Relay, two goroutines per pair, on one epoll-layer poller: what
# fulcrum's tcp mode runs by default), go (netio.Relay on Go's net.Conns),
# uring-peek (uring whose turns first peek without blocking: PeekFirst),
# uring-raw (uring waiting through a raw system call of at most $RAWWAIT,
# then yielding: RawWait), uring-past (uring waiting past the completions
# of the sends it just made: WaitPastSends).
# The relay runs with GOMAXPROCS=$RELAY_GOMAXPROCS (default 1: fulcrum's
# default on 2 CPUs).
#
# Knobs (defaults): ROUNDS=3 N=200000 CONNS=64 SIZE=64 MODES="uring epoll"
#   RELAY_GOMAXPROCS=1 RAWWAIT=1ms WORKDIR=$(mktemp -d)
# Needs: go, linux-perf, haproxy (haproxy mode) (perf_event_paranoid <= 1 or root). Listens on
# 127.0.0.1:0 only; every process it starts is stopped at exit.
set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2

ROUNDS=${ROUNDS:-3}
N=${N:-200000}
CONNS=${CONNS:-64}
SIZE=${SIZE:-64}
MODES=${MODES:-uring epoll}
RELAY_GOMAXPROCS=${RELAY_GOMAXPROCS:-1}
RAWWAIT=${RAWWAIT:-1ms}
WORKDIR=${WORKDIR:-$(mktemp -d)}
BIN=$WORKDIR/uringrelay
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT INT TERM

command -v perf >/dev/null || { echo "uring.sh: perf missing (Debian linux-perf)" >&2; exit 2; }
go build -o "$BIN" ./bench/uringrelay || exit 2

# waitfile F: wait up to 10 s for a process to write its address to F.
waitfile() {
	for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
	echo "uring.sh: no address in $1" >&2
	exit 1
}

EVENTS=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, kernel $(uname -r)"
echo "# N=$N CONNS=$CONNS SIZE=$SIZE RELAY_GOMAXPROCS=$RELAY_GOMAXPROCS; per round trip (CPU in µs):"
printf '%-10s %5s %8s %7s %7s %7s %8s %7s %7s %7s %7s %7s %7s %7s %7s\n' \
	mode round rps relay user sys syscalls enter read write epoll futex nanosl ctxsw echo+cl
for r in $(seq "$ROUNDS"); do
	for m in $MODES; do
		out=$WORKDIR/$m.$r
		rm -f "$out.addr" "$out.echo.addr"
		# A fresh echo server per run, so that its CPU time is this run's.
		"$BIN" echo -addrfile "$out.echo.addr" -hold 10m 2>"$out.echo" &
		ep=$!
		PIDS+=($ep)
		waitfile "$out.echo.addr"
		peek=0 raw= past=0 rm=$m
		[ "$m" = uring-peek ] && peek=1 rm=uring
		[ "$m" = uring-past ] && past=1 rm=uring
		[ "$m" = uring-raw ] && raw=$RAWWAIT rm=uring
		if [ "$m" = haproxy ]; then
			printf 'global\n\tnbthread %s\ndefaults\n\tmode tcp\n\ttimeout connect 5s\n\ttimeout client 10m\n\ttimeout server 10m\nfrontend f\n\tbind fd@100\n\tdefault_backend b\nbackend b\n\tserver s1 %s\n' \
				"$RELAY_GOMAXPROCS" "$(cat "$out.echo.addr")" >"$out.cfg"
			perf stat -x, -o "$out.perf" -e "$EVENTS" -- \
				"$BIN" execfd -addrfile "$out.addr" -fd 100 -- haproxy -db -f "$out.cfg" 2>"$out.relay" &
		else
			URING_PEEK=$peek URING_RAWWAIT=$raw URING_PAST=$past GOMAXPROCS=$RELAY_GOMAXPROCS perf stat -x, -o "$out.perf" -e "$EVENTS" -- \
				"$BIN" relay -mode "$rm" -upstream "$(cat "$out.echo.addr")" -addrfile "$out.addr" -pairs "$CONNS" -hold 10m \
				2>"$out.relay" &
		fi
		rp=$!
		PIDS+=($rp)
		waitfile "$out.addr"
		if ! "$BIN" client -addr "$(cat "$out.addr")" -conns "$CONNS" -size "$SIZE" -n "$N" >"$out.client" 2>"$out.clientcpu"; then
			echo "uring.sh: client failed ($m round $r)" >&2
			exit 1
		fi
		# HAProxy does not end by itself: a soft stop (SIGUSR1) ends it
		# once its connections are gone.
		[ "$m" = haproxy ] && pkill -USR1 -P "$rp"
		wait "$rp"
		kill "$ep"
		wait "$ep"
		rt=$(awk '{print $2}' "$out.client")
		rps=$(awk '{print $6}' "$out.client")
		cpu() { awk '$1 == "rusage:" { print $3 + $5 }' "$1"; }
		others=$(( $(cpu "$out.echo") + $(cpu "$out.clientcpu") ))
		awk -F, -v rt="$rt" -v m="$m" -v r="$r" -v rps="$rps" -v relay="$out.relay" -v others="$others" '
			$3 != "" { v[$3] = $1 }
			END {
				while ((getline line < relay) > 0) {
					split(line, f, " ")
					if (f[1] == "rusage:") { user = f[3]; sys = f[5] }
				}
				if (user == "") { user = "-"; sys = "-" } else { user = sprintf("%.2f", user / rt); sys = sprintf("%.2f", sys / rt) }
				printf "%-10s %5d %8d %7.2f %7s %7s %8.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.2f\n",
					m, r, rps, v["task-clock"] * 1000 / rt, user, sys,
					v["raw_syscalls:sys_enter"] / rt, v["syscalls:sys_enter_io_uring_enter"] / rt,
					(v["syscalls:sys_enter_read"] + v["syscalls:sys_enter_recvfrom"]) / rt,
					(v["syscalls:sys_enter_write"] + v["syscalls:sys_enter_sendto"]) / rt,
					(v["syscalls:sys_enter_epoll_pwait"] + v["syscalls:sys_enter_epoll_wait"]) / rt,
					v["syscalls:sys_enter_futex"] / rt,
					v["syscalls:sys_enter_nanosleep"] / rt, v["context-switches"] / rt, others / rt
			}' "$out.perf"
	done
done
echo "# relay: its task-clock; user, sys: its rusage; read: read+recvfrom, write: write+sendto, epoll: epoll_pwait+epoll_wait;"
echo "# echo+cl: the echo server's and the client's CPU (rusage)"
echo "# raw files in $WORKDIR"
