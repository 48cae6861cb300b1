#!/usr/bin/env bash
# The pod sidecar test: slowsrv (then slowsrv-h2o) runs in a podman pod configured only by
# SLOWSRV_* environment variables, and a second container of the same pod, the curl client,
# reaches it on 127.0.0.1: /healthz is 200 and /test answers ok after the configured delay.
# The server container is limited with --cpus 1 and runs one loop without SLOWSRV_THREADS.
# Then `podman stop` sends SIGTERM while a request waits: that request still gets its answer,
# the server exits 0 well within its 5 s grace and its log shows the startup line and the drain.
# The pods have no network but their loopback (--network none): nothing is published on the
# host. Needs the images of build-image.sh. Removes the pods it made, by name, also on failure.
# Usage: tests/container/pod-test.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ct_setup

pods=()
cleanup() {
    for p in ${pods[@]+"${pods[@]}"}; do
        podman pod rm -f "$p" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

client() { # POD NAME PROBE-ARGS...: run probe.sh in a container of POD
    local pod=$1 name=$2
    shift 2
    podman run --rm --pod "$pod" --name "$pod-$name" "$CT_CLIENT_IMAGE" "$@"
}

# stop_and_check POD CONTAINER PORT PROGRAM: SIGTERM while a request waits; exit 0, fast, logged.
stop_and_check() {
    local pod=$1 ctr=$2 port=$3 program=$4 start secs status log
    podman run -d --pod "$pod" --name "$pod-inflight" "$CT_CLIENT_IMAGE" \
        test "$port" 1500 4000 -H 'X-Slowsrv-Delay: 1500ms' >/dev/null
    podman exec "$pod-inflight" probe waiting "$port"
    start=$(ct_now)
    podman stop --time 10 "$ctr" >/dev/null
    secs=$(ct_elapsed "$start")
    status=$(podman inspect --format '{{.State.ExitCode}}' "$ctr")
    ct_log "$program: podman stop took $secs s, exit status $status"
    [ "$status" = 0 ] || ct_die "$program exited $status after SIGTERM, want 0"
    awk -v s="$secs" 'BEGIN { exit !(s < 5) }' || ct_die "$program took $secs s to stop (grace 5 s)"
    [ "$(podman wait "$pod-inflight")" = 0 ] || {
        podman logs "$pod-inflight" >&2
        ct_die "the request in flight during the drain did not get its answer"
    }
    podman logs "$pod-inflight"
    log=$(podman logs "$ctr" 2>&1)
    printf '%s\n' "$log" | sed "s/^/    $ctr: /"
    grep -q "^$program 0\.1\.0 listening on http://127\.0\.0\.1:$port (" <<<"$log" ||
        ct_die "$program: no startup line for 127.0.0.1:$port in its log"
    grep -q "^$program: info: Terminated: draining for up to 5000 ms" <<<"$log" ||
        ct_die "$program: no drain line in its log"
    grep -q "^$program: info: stopped" <<<"$log" || ct_die "$program: no 'stopped' line in its log"
}

# sidecar NAME PROGRAM PORT: one pod, the server configured by environment only.
sidecar() {
    local name=$1 program=$2 port=$3 pod start out logs
    pod=slowsrv-ct-$$-$name
    start=$(ct_now)
    podman pod create --name "$pod" --network none >/dev/null
    pods+=("$pod")
    # Limited to one CPU and given no SLOWSRV_THREADS: the server runs one loop by itself.
    podman run -d --pod "$pod" --name "$pod-srv" --entrypoint "$program" --cpus 1 \
        -e SLOWSRV_PORT="$port" -e SLOWSRV_DELAY=200ms -e SLOWSRV_BIND=127.0.0.1 \
        "$CT_IMAGE" >/dev/null
    client "$pod" ready ready "$port"
    # 200 ms from SLOWSRV_DELAY (the built-in default is 1 s).
    client "$pod" test1 test "$port" 200 900
    if [ "$program" = slowsrv-h2o ]; then
        out=$(client "$pod" h2c test "$port" 200 900 --http2-prior-knowledge)
        printf '%s\n' "$out"
        grep -q 'HTTP/2 ' <<<"$out" || ct_die "slowsrv-h2o: /test over h2c was not HTTP/2"
    fi
    stop_and_check "$pod" "$pod-srv" "$port" "$program"
    # Read whole before grep: with pipefail, `podman logs | grep -q` fails when grep exits first.
    logs=$(podman logs "$pod-srv" 2>&1)
    grep -Eq " threads=1 \(cpu\.(max|cfs_quota_us) 100000/100000\)\)$" <<<"$logs" ||
        ct_die "$program: --cpus 1 without SLOWSRV_THREADS did not give threads=1 (cpu.max ...)"

    if [ "$program" = slowsrv ]; then
        # The image's ENTRYPOINT takes flags as arguments too: `podman run IMAGE --delay 300ms`.
        podman run -d --pod "$pod" --name "$pod-args" "$CT_IMAGE" --port 8090 --delay 300ms >/dev/null
        client "$pod" ready2 ready 8090
        client "$pod" test2 test 8090 300 900
        podman stop --time 10 "$pod-args" >/dev/null
        [ "$(podman inspect --format '{{.State.ExitCode}}' "$pod-args")" = 0 ] ||
            ct_die "slowsrv with arguments did not exit 0"
    fi
    podman pod rm -f "$pod" >/dev/null
    ct_log "$program sidecar: passed in $(ct_elapsed "$start") s"
}

sidecar mhd slowsrv 8081
sidecar h2o slowsrv-h2o 8082
