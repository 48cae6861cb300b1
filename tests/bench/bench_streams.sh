#!/usr/bin/env bash
# bench_streams.sh: 10 000 concurrent SSE streams at one event per 100 ms on one loop, for each
# binary: the server pinned to CPU 0 (--threads 1), the client (sse_load.c: one thread, epoll,
# plain sockets) on CPU 1. It reports the per-event lateness p50/p99 from the server's /stats
# (stream_event_late_ms, counted from a POST /reset once every stream is open) and from the
# client's view (the events' sent_us - intended_us, and their arrival against the plan), the
# events per second, and RSS per stream (the server's RSS with the streams open, less its RSS
# before them, over the streams open), and the server's CPU while they run.
#
# Beside them, as the throughput floor, nginx (one worker, pinned alike) serves a static body of
# about an event's size to N kept-alive connections that each ask once per 100 ms
# (sse_load's poll mode): the same messages per second as requests and answers, with the time
# of each answer and nginx's CPU. nginx cannot pace a stream, so this is a floor of the cost of
# that many small writes, not a peer's SSE; go-httpbin (whose /sse would be one) is not in
# Debian 12.
#
#   tests/bench/bench_streams.sh [BUILD_DIR]        # default build/; about 1 min 30 s
#   N=2000 RAMP=5 MEASURE=10 tests/bench/bench_streams.sh build-test
#
# Results go to tests/bench/results/<date>/streams.txt (git-ignored) and to stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
N=${N:-10000}
RAMP=${RAMP:-10}
MEASURE=${MEASURE:-20}
STREAM=${STREAM:-sse,gap=100ms,size=16}
QUIET_WAIT=${QUIET_WAIT:-20}
QUIET_MAX=${QUIET_MAX:-30}
CLK_TCK=$(getconf CLK_TCK)
declare -A live=()
# shellcheck source=tests/bench/lib.sh
. tests/bench/lib.sh

ulimit -n 20000
tmp=$(mktemp -d)
out=tests/bench/results/$(date +%Y-%m-%d)
mkdir -p "$out"
cleanup() {
    for p in "${!live[@]}"; do stop_pid "$p" "${live[$p]}"; done
    rm -rf "$tmp"
}
trap cleanup EXIT

gcc -std=gnu11 -O2 -Wall -Wextra -o "$tmp/sse_load" tests/bench/sse_load.c

# stat FILE PATH: a number from /stats JSON, by dotted path.
stat() {
    python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"
}

# cpu_ticks PID...: user + system ticks of the processes so far.
cpu_ticks() {
    local p t=0 f
    for p; do
        read -ra f <"/proc/$p/stat" || continue
        t=$((t + f[13] + f[14]))
    done
    echo "$t"
}

run_one() { # binary
    local bin=$1 name port cport pid rss0 rss1 open
    name=$(basename "$bin")
    taskset -c 0 "$bin" --port 0 --threads 1 --delay 0 --max-delay 600s --control 0 \
        --max-connections 19000 2>"$tmp/$name.err" &
    pid=$!
    live[$pid]=$name
    for _ in $(seq 50); do grep -qs "listening on" "$tmp/$name.err" && break; sleep 0.1; done
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$tmp/$name.err" | sed 's/.*://')
    cport=$(grep -o 'control=http://127.0.0.1:[0-9]*' "$tmp/$name.err" | sed 's/.*://')
    wait_quiet
    rss0=$(rss_kib "$pid")
    log "$name: $N streams of $STREAM over ${RAMP}s, measured for ${MEASURE}s"
    taskset -c 1 "$tmp/sse_load" "$port" "$N" "$RAMP" "$MEASURE" "/echo?stream=$STREAM" \
        >"$tmp/$name.client" &
    local client=$!
    sleep "$RAMP"
    sleep 1
    curl -s -X POST "http://127.0.0.1:$cport/reset" >/dev/null
    sys_busy; local b0=$SYS_BUSY c0
    c0=$(cpu_ticks "$pid")
    sleep $((MEASURE / 2))
    rss1=$(rss_kib "$pid")
    curl -s "http://127.0.0.1:$port/stats" >"$tmp/$name.mid.json"
    wait "$client" || log "$name: the client saw failures or early closes"
    curl -s "http://127.0.0.1:$port/stats" >"$tmp/$name.stats.json"
    sys_busy
    local c1
    c1=$(cpu_ticks "$pid")
    open=$(stat "$tmp/$name.mid.json" routes./echo.streams.open)
    stop_pid "$pid" "$name"
    local late="routes./echo.stream_event_late_ms"
    printf '%s %s server_stats_p50_ms=%s server_stats_p99_ms=%s server_stats_count=%s open=%s rss_idle_kib=%s rss_open_kib=%s rss_per_stream_kib=%s server_cpu_pct=%s busy_pct_of_a_cpu=%s\n' \
        "$name" "$(cat "$tmp/$name.client")" \
        "$(stat "$tmp/$name.stats.json" "$late.p50")" "$(stat "$tmp/$name.stats.json" "$late.p99")" \
        "$(stat "$tmp/$name.stats.json" "$late.count")" "$open" "$rss0" "$rss1" \
        "$(python3 -c "print(round(($rss1 - $rss0) / max($open, 1), 2))")" \
        "$(((c1 - c0) * 100 / CLK_TCK / MEASURE))" \
        "$(((SYS_BUSY - b0) * 100 / CLK_TCK / MEASURE))" |
        tee -a "$out/streams.txt"
}

run_nginx() {
    local d=$tmp/nginx port pid c0 c1 rss0 rss1 w
    mkdir -p "$d/logs" "$d/tmp" "$d/www"
    # An event's size: "id: N", "event: tick", the times' comment, 16 bytes of data.
    head -c 90 /dev/zero | tr '\0' 'a' >"$d/www/event"
    port=$(free_port)
    cat >"$d/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 20000;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    server {
        listen 127.0.0.1:$port backlog=4096;
        root $d/www;
    }
}
EOF
    taskset -c 0 nginx -p "$d/" -e "$d/logs/error.log" -c "$d/nginx.conf" -g 'daemon off;' \
        2>"$d/stderr" &
    pid=$!
    live[$pid]=nginx
    for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/event" >/dev/null && break; sleep 0.1; done
    w=$(cat "/proc/$pid/task/$pid/children")
    wait_quiet
    rss0=$(rss_kib "$pid" $w)
    log "nginx: $N connections asking for a 90-byte body every 100 ms, measured for ${MEASURE}s"
    taskset -c 1 "$tmp/sse_load" "$port" "$N" "$RAMP" "$MEASURE" /event poll 100 >"$tmp/nginx.client" &
    local client=$!
    sleep $((RAMP + 1))
    c0=$(cpu_ticks "$pid" $w)
    sleep $((MEASURE / 2))
    rss1=$(rss_kib "$pid" $w)
    wait "$client" || log "nginx: the client saw failures or early closes"
    c1=$(cpu_ticks "$pid" $w)
    stop_pid "$pid" nginx
    printf 'nginx %s rss_idle_kib=%s rss_open_kib=%s rss_per_connection_kib=%s server_cpu_pct=%s\n' \
        "$(cat "$tmp/nginx.client")" "$rss0" "$rss1" \
        "$(python3 -c "print(round(($rss1 - $rss0) / $N, 2))")" \
        "$(((c1 - c0) * 100 / CLK_TCK / MEASURE))" | tee -a "$out/streams.txt"
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git rev-parse --short HEAD) N=$N RAMP=$RAMP MEASURE=$MEASURE STREAM=$STREAM" |
    tee -a "$out/streams.txt"
for b in slowsrv slowsrv-h2o; do
    run_one "$BUILD/$b"
done
if command -v nginx >/dev/null; then run_nginx; else log "nginx is not installed: no floor (apt-get install nginx)"; fi
