#!/bin/sh
# HTTP checks run inside the client container (Containerfile.client), next to the server in
# its pod, so every request goes to 127.0.0.1. Prints what it saw; exits 1 on a mismatch.
# Usage: probe ready PORT [SECONDS]     /healthz answers 200 within SECONDS (default 10)
#        probe test PORT MIN_MS MAX_MS [CURL_ARG...]
#                                      GET /test: 200, body ok, in MIN_MS to MAX_MS
#        probe waiting PORT [SECONDS]   /stats shows a request waiting on its delay
set -eu
cmd=$1 port=$2
shift 2
base=http://127.0.0.1:$port

case $cmd in
ready)
    tries=$((${1:-10} * 10))
    i=0
    while [ $i -lt "$tries" ]; do
        code=$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz" || true)
        if [ "$code" = 200 ]; then
            echo "probe: /healthz 200 after $i tries"
            exit 0
        fi
        i=$((i + 1))
        sleep 0.1
    done
    echo "probe: /healthz not 200 (last: $code)" >&2
    exit 1
    ;;
test)
    min_ms=$1 max_ms=$2
    shift 2
    out=$(curl -sS -w '\n%{http_code} %{time_total} HTTP/%{http_version}' "$@" "$base/test") || {
        echo "probe: GET /test failed" >&2
        exit 1
    }
    body=$(printf '%s\n' "$out" | head -n1)
    code=$(printf '%s\n' "$out" | tail -n1 | cut -d' ' -f1)
    secs=$(printf '%s\n' "$out" | tail -n1 | cut -d' ' -f2)
    proto=$(printf '%s\n' "$out" | tail -n1 | cut -d' ' -f3)
    echo "probe: GET /test $proto -> $code '$body' in $secs s"
    if [ "$code" != 200 ] || [ "$body" != ok ] ||
        ! awk -v t="$secs" -v a="$min_ms" -v b="$max_ms" \
            'BEGIN { exit !(t * 1000 >= a && t * 1000 <= b) }'; then
        echo "probe: want 200 'ok' in $min_ms to $max_ms ms" >&2
        exit 1
    fi
    ;;
waiting)
    tries=$((${1:-5} * 10))
    i=0
    while [ $i -lt "$tries" ]; do
        if curl -s "$base/stats" | grep -q '"waiting":[1-9]'; then
            echo "probe: a request is waiting"
            exit 0
        fi
        i=$((i + 1))
        sleep 0.1
    done
    echo "probe: no request waiting" >&2
    exit 1
    ;;
*)
    sed -n '2,9p' "$0" >&2
    exit 2
    ;;
esac
