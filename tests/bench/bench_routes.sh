#!/usr/bin/env bash
# bench_routes.sh: a server with many config routes, end to end, for each binary: requests/s of
# GET on the last route (wrk, one thread, 50 connections, 5 s) with 10, 1 000 and 10 000 routes,
# and the server's RSS after the start, after one request to every route (each route's counters
# and prebuilt answer are made at its first request) and after /stats and /metrics; with the
# sizes of /stats and /metrics. A flat requests/s column is a lookup independent of the count.
#
#   tests/bench/bench_routes.sh [BUILD_DIR]     # default build/; about 1 min
#
# Traffic goes to 127.0.0.1 only; each server is stopped by its PID.
set -euo pipefail
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

routes_json() { # n: a config of n routes /r/00000... answering "answer i"
    python3 -c '
import json, sys
n = int(sys.argv[1])
print(json.dumps({"delay": "0", "routes": [{"path": "/r/%05d" % i, "body": "answer %d" % i}
                                           for i in range(n)]}))' "$1"
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

printf '%-12s %7s %10s %10s %11s %11s %9s %10s\n' binary routes 'req/s' 'rss KiB' \
    'rss all' 'rss report' 'stats B' 'metrics B'
for bin in slowsrv slowsrv-h2o; do
    for n in 10 1000 10000; do
        cfg=$tmp/routes-$n.json
        routes_json "$n" >"$cfg"
        "$build/$bin" --port 0 --config "$cfg" --log-level warn >"$tmp/out" 2>"$tmp/err" &
        pid=$!
        port=
        for _ in $(seq 100); do
            port=$(sed -n 's/.* listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/err")
            [[ -n $port ]] && break
            sleep 0.1
        done
        [[ -n $port ]] || { echo "$bin did not start" >&2; kill "$pid"; exit 1; }
        last=$(printf '/r/%05d' $((n - 1)))
        rss0=$(rss_kib "$pid")
        rps=$(wrk -t1 -c50 -d5s "http://127.0.0.1:$port$last" | awk '/Requests\/sec/ {print $2}')
        for ((i = 0; i < n; i++)); do
            printf 'url = "http://127.0.0.1:%s/r/%05d"\noutput = "/dev/null"\n' "$port" "$i"
        done >"$tmp/urls"
        curl -s -K "$tmp/urls"
        rss1=$(rss_kib "$pid")
        stats=$(curl -s "http://127.0.0.1:$port/stats" | wc -c)
        metrics=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c)
        rss2=$(rss_kib "$pid")
        printf '%-12s %7d %10s %10s %11s %11s %9s %10s\n' "$bin" "$n" "$rps" "$rss0" "$rss1" \
            "$rss2" "$stats" "$metrics"
        kill -TERM "$pid"
        wait "$pid" || true
    done
done
