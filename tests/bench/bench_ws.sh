#!/usr/bin/env bash
# bench_ws.sh: N WebSocket connections (default 10 000) to a route "websocket": "echo", each
# sending one 16-byte message a second for DUR seconds (bench_ws.c: one thread, epoll), for each
# binary: the round trip's p50, p99, p99.9 and max (client's clock, send to echo), the server's
# RSS per open socket (RSS with every socket open, less RSS before, divided by N) and the
# server's CPU per message. The server runs on CPU 0, the client on CPU 1 (taskset).
#
#   tests/bench/bench_ws.sh [BUILD_DIR]            # default build/; about 1 min a binary
#   N=2000 DUR=10 tests/bench/bench_ws.sh build-test
#
# Traffic goes to 127.0.0.1 only; each server is stopped by its PID.
set -euo pipefail
build=${1:-build}
N=${N:-10000}
DUR=${DUR:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clk=$(getconf CLK_TCK)
ulimit -n 20000
cc -O2 -o "$tmp/bench_ws" "$root/tests/bench/bench_ws.c"
echo '{"routes": [{"path": "/ws", "websocket": "echo"}]}' >"$tmp/ws.json"

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

printf '%-12s %7s %7s %9s %9s %9s %9s %10s %12s\n' binary sockets failed p50_ms p99_ms \
    p99.9_ms max_ms rss_kib/ws cpu_us/msg
for bin in slowsrv slowsrv-h2o; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    taskset -c 0 "$build/$bin" --port "$port" --threads 1 --max-connections $((N + 100)) \
        --config "$tmp/ws.json" >"$tmp/$bin.log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    rss0=$(rss_kib $pid)
    rm -f "$tmp/open"
    taskset -c 1 "$tmp/bench_ws" "$port" /ws "$N" "$DUR" "$tmp/open" >"$tmp/out" &
    client=$!
    while [[ ! -s $tmp/open ]] && kill -0 $client 2>/dev/null; do sleep 0.2; done
    rss1=$(rss_kib $pid)
    cpu0=$(cpu_ticks $pid)
    wait $client || true
    cpu1=$(cpu_ticks $pid)
    read -r _ n _ opened _ failed _ msgs _ _ p50 _ p99 _ p999 _ max <"$tmp/out"
    kill -TERM $pid
    wait $pid || true
    awk -v b="$bin" -v o="$opened" -v f="$failed" -v p50="$p50" -v p99="$p99" -v p999="$p999" \
        -v max="$max" -v r0="$rss0" -v r1="$rss1" -v c0="$cpu0" -v c1="$cpu1" -v clk="$clk" \
        -v msgs="$msgs" 'BEGIN {
        printf "%-12s %7d %7d %9.2f %9.2f %9.2f %9.2f %10.2f %12.2f\n", b, o, f, p50 / 1000,
            p99 / 1000, p999 / 1000, max / 1000, o ? (r1 - r0) / o : 0,
            msgs ? (c1 - c0) / clk * 1e6 / msgs : 0 }'
done
