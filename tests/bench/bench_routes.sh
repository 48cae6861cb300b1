#!/usr/bin/env bash
# bench_routes.sh: a server with many config routes, end to end, for each binary and for exact
# paths ("/r/00000", ...) and templates ("/t/00000/{id}", asked with a fresh id each time by
# wrk): requests/s of GET on the last route (wrk, one thread, 50 connections, DUR), the server's
# CPU per request over that run (/proc/PID/stat, user + system), with 10, 1 000 and 10 000
# routes; the server's RSS after the start, after one request to every route (each route's
# counters and prebuilt answer are made at its first request) and after /stats and /metrics; the
# sizes of /stats and /metrics. Then, per binary and kind, the CPU per request at each size
# divided by that at 10 routes. The server runs on CPU 0, wrk and curl on CPU 1 (taskset). A flat
# CPU column is a lookup independent of the count.
#
#   tests/bench/bench_routes.sh [BUILD_DIR]     # default build/; about 2 min
#   KINDS="template" SIZES="10 10000" DUR=5s tests/bench/bench_routes.sh build
#
# Traffic goes to 127.0.0.1 only; each server is stopped by its PID.
set -euo pipefail
build=${1:-build}
KINDS=${KINDS:-exact template}
SIZES=${SIZES:-10 1000 10000}
DUR=${DUR:-5s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clk=$(getconf CLK_TCK)

routes_json() { # kind n: a config of n routes answering "answer i"
    python3 -c '
import json, sys
kind, n = sys.argv[1], int(sys.argv[2])
fmt = "/r/%05d" if kind == "exact" else "/t/%05d/{id}"
print(json.dumps({"delay": "0", "routes": [{"path": fmt % i, "body": "answer %d" % i}
                                           for i in range(n)]}))' "$1" "$2"
}

# The path of route i as a request asks it: a template with an id.
asked() { # kind i
    if [[ $1 == exact ]]; then printf '/r/%05d' "$2"; else printf '/t/%05d/%d' "$2" $((7919 * $2 + 1)); fi
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# wrk's script for templates: a new id on every request, so no two ask the same path.
cat >"$tmp/ids.lua" <<'LUA'
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", wrk.path .. n)
end
LUA

printf '%-12s %-8s %7s %10s %9s %10s %11s %11s %9s %10s\n' binary kind routes 'req/s' 'cpu us/req' \
    'rss KiB' 'rss all' 'rss report' 'stats B' 'metrics B' >"$tmp/table"
cat "$tmp/table"
for bin in slowsrv slowsrv-h2o; do
    for kind in $KINDS; do
        for n in $SIZES; do
            cfg=$tmp/routes-$kind-$n.json
            routes_json "$kind" "$n" >"$cfg"
            taskset -c 0 "$build/$bin" --port 0 --threads 1 --config "$cfg" --log-level warn \
                >"$tmp/out" 2>"$tmp/err" &
            pid=$!
            port=
            for _ in $(seq 100); do
                port=$(sed -n 's/.* listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/err")
                [[ -n $port ]] && break
                sleep 0.1
            done
            [[ -n $port ]] || { echo "$bin did not start" >&2; kill "$pid"; exit 1; }
            rss0=$(rss_kib "$pid")
            if [[ $kind == exact ]]; then
                url="http://127.0.0.1:$port$(asked exact $((n - 1)))"
                script=()
            else
                url=$(printf 'http://127.0.0.1:%s/t/%05d/' "$port" $((n - 1)))
                script=(-s "$tmp/ids.lua")
            fi
            c0=$(cpu_ticks "$pid")
            taskset -c 1 wrk -t1 -c50 -d"$DUR" "${script[@]}" "$url" >"$tmp/wrk"
            c1=$(cpu_ticks "$pid")
            rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk")
            reqs=$(awk '/requests in/ {print $1}' "$tmp/wrk")
            cpu=$(awk -v t=$((c1 - c0)) -v hz="$clk" -v r="$reqs" 'BEGIN {printf "%.2f", t / hz * 1e6 / r}')
            for ((i = 0; i < n; i++)); do
                printf 'url = "http://127.0.0.1:%s%s"\noutput = "/dev/null"\n' "$port" "$(asked "$kind" "$i")"
            done >"$tmp/urls"
            taskset -c 1 curl -s -K "$tmp/urls"
            rss1=$(rss_kib "$pid")
            stats=$(curl -s "http://127.0.0.1:$port/stats" | wc -c)
            metrics=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c)
            rss2=$(rss_kib "$pid")
            printf '%-12s %-8s %7d %10s %9s %10s %11s %11s %9s %10s\n' "$bin" "$kind" "$n" "$rps" \
                "$cpu" "$rss0" "$rss1" "$rss2" "$stats" "$metrics" | tee -a "$tmp/table"
            kill -TERM "$pid"
            wait "$pid" || true
        done
    done
done
echo
echo "CPU per request at each size / at the first size:"
awk 'NR > 1 {k = $1 " " $2; if (!(k in base)) base[k] = $5;
     printf "%-12s %-8s %7d %6.2fx\n", $1, $2, $3, $5 / base[k]}' "$tmp/table"
