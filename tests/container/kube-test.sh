#!/usr/bin/env bash
# Plays the Kubernetes manifests of config/k8s/ with `podman kube play` and checks them:
#  - sidecar-pod.yaml: the slowsrv sidecar (configured by env) answers /healthz and /test from a
#    curl container in the same pod, the pod's app container reaches it on 127.0.0.1, podman
#    applied the limits and security context, and stopping the pod drains slowsrv (exit 0);
#  - deployment.yaml: one pod per replica, each answering /healthz and /test (1 s delay).
# Then `podman kube down`. Pods run with --network none (loopback only), so nothing is
# published on the host. What podman 4.3 leaves out (the Service, probes, readiness) is in the
# README, "Container". Needs the images of build-image.sh (and the base image, the app's).
# Usage: tests/container/kube-test.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ct_setup

k8s=$ct_root/config/k8s
played=()
log=$(mktemp)
cleanup() {
    for f in ${played[@]+"${played[@]}"}; do
        podman kube down "$f" >/dev/null 2>&1 || true
    done
    rm -f "$log"
}
trap cleanup EXIT

# podman 4.3 logs an error per container when it cannot schedule healthchecks without systemd;
# keep podman's output in $log and show it only when a step fails.
play() {
    played+=("$1")
    podman kube play --network none --replace --quiet "$1" >"$log" 2>&1 ||
        { cat "$log" >&2; ct_die "podman kube play $1 failed"; }
}
down() {
    podman kube down "$1" >"$log" 2>&1 || { cat "$log" >&2; ct_die "podman kube down $1 failed"; }
}
client() { # POD PROBE-ARGS...
    local pod=$1
    shift
    podman run --rm --pod "$pod" --name "$pod-ct-$$-cli" "$CT_CLIENT_IMAGE" "$@"
}
field() { podman inspect --format "$2" "$1"; }
expect() { # WHAT GOT WANT
    [ "$2" = "$3" ] || ct_die "$1: got '$2', want '$3'"
}

# --- the sidecar pod (names: metadata.name, and <pod>-<container> for its containers)
start=$(ct_now)
pod=slowsrv-sidecar
play "$k8s/sidecar-pod.yaml"
client "$pod" ready 8080
client "$pod" test 8080 200 900
srv=$pod-slowsrv
expect "$srv memory limit" "$(field "$srv" '{{.HostConfig.Memory}}')" $((64 << 20))
expect "$srv CPU quota" "$(field "$srv" '{{.HostConfig.CpuQuota}}')" 100000
expect "$srv read-only root" "$(field "$srv" '{{.HostConfig.ReadonlyRootfs}}')" true
expect "$srv user" "$(field "$srv" '{{.Config.User}}')" 10001:10001
expect "$srv no-new-privileges" "$(field "$srv" '{{.HostConfig.SecurityOpt}}')" '[no-new-privileges]'
# The app container's own requests, answered by the sidecar.
# (Logs are read whole before grep: with pipefail, `podman logs | grep -q` fails whenever grep
# quits before podman has written everything.)
for _ in $(seq 50); do
    app_log=$(podman logs "$pod-app" 2>/dev/null || true)
    grep -q '^HTTP/1.1 200 OK' <<<"$app_log" && break
    sleep 0.1
done
grep -q '^HTTP/1.1 200 OK' <<<"$app_log" ||
    { printf '%s\n' "$app_log" >&2; ct_die "the app container got no 200 from the sidecar"; }
ct_log "sidecar pod: the app container's log says: $(grep -m1 '^HTTP' <<<"$app_log" | tr -d '\r')"
t=$(ct_now)
podman pod stop "$pod" >"$log" 2>&1 || { cat "$log" >&2; ct_die "podman pod stop $pod failed"; }
ct_log "sidecar pod: podman pod stop took $(ct_elapsed "$t") s"
expect "$srv exit status after SIGTERM" "$(field "$srv" '{{.State.ExitCode}}')" 0
srv_log=$(podman logs "$srv" 2>&1)
grep -q '^slowsrv: info: Terminated: draining' <<<"$srv_log" ||
    { printf '%s\n' "$srv_log" >&2; ct_die "$srv: no drain line in its log"; }
down "$k8s/sidecar-pod.yaml"
ct_log "sidecar-pod.yaml: passed in $(ct_elapsed "$start") s"

# --- the Deployment: podman makes pods <deployment>-pod-0 .. -N-1
start=$(ct_now)
replicas=$(sed -n 's/^  replicas: *\([0-9]*\).*/\1/p' "$k8s/deployment.yaml")
[ -n "$replicas" ] || ct_die "no replicas: in deployment.yaml"
play "$k8s/deployment.yaml"
pods=$(podman pod ps --filter name='^slowsrv-pod-[0-9]+$' --format '{{.Name}}' | sort)
ct_log "deployment: replicas $replicas, pods: $(echo "$pods" | tr '\n' ' ')"
expect "pods of the Deployment" "$(echo "$pods" | wc -l)" "$replicas"
for p in $pods; do
    client "$p" ready 8080
    client "$p" test 8080 1000 1900
done
expect "memory limit" "$(field slowsrv-pod-0-slowsrv '{{.HostConfig.Memory}}')" $((128 << 20))
down "$k8s/deployment.yaml"
left=$(podman pod ps --filter name='^slowsrv-pod-[0-9]+$' --format '{{.Name}}')
[ -z "$left" ] || ct_die "podman kube down left pods: $left"
ct_log "deployment.yaml: passed in $(ct_elapsed "$start") s"
