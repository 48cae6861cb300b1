#!/usr/bin/env bash
# The container test, all of it: installs podman, runc and debootstrap when missing, makes the
# Debian base image once (base-image.sh), builds the image of the Containerfile and a curl
# client (build-image.sh), runs the pod sidecar test with both binaries (pod-test.sh) and plays
# the Kubernetes manifests of config/k8s/ (kube-test.sh) and the fleet of config/k8s/fleet/,
# changed together through its ConfigMap (fleet-test.sh). Exits non-zero on any failure.
# Everything lives in a podman storage of its own (SLOWSRV_CT_DIR, see lib.sh), which keeps the
# base image between runs; at the end, also on failure, the pods and containers of the tests
# are removed (by each script), and so are the two images built here and the build's unnamed
# intermediate images (SLOWSRV_CT_KEEP_CACHE=1 keeps those, for a faster next build).
# Needs root (CI runs it as root on a fresh Debian 12) and the Debian archive.
# Usage: tests/container/run.sh            the whole test, about 1.5 min from nothing
#        tests/container/run.sh --purge    remove the tests' storage (base image, cache) and exit
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive

[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (podman's storage, debootstrap)" >&2; exit 2; }
missing=()
for p in podman runc debootstrap; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "run.sh: installing ${missing[*]}" >&2
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
ct_setup
ct_lock

if [ "${1:-}" = --purge ]; then
    # Our own configuration: this resets the storage, run state and networks of SLOWSRV_CT_DIR
    # and SLOWSRV_CT_RUN only, never the machine's default podman storage.
    podman system reset --force >/dev/null 2>&1
    rm -rf "$ct_dir" "$ct_run"
    echo "run.sh: removed $ct_dir and $ct_run"
    exit 0
fi

cleanup() {
    podman rmi "$CT_IMAGE" "$CT_CLIENT_IMAGE" >/dev/null 2>&1 || true
    # The build's intermediate images (all unnamed, all made in this storage by these tests),
    # unless SLOWSRV_CT_KEEP_CACHE=1 keeps them for a faster next run.
    [ "${SLOWSRV_CT_KEEP_CACHE:-0}" = 1 ] || podman image prune --force >/dev/null 2>&1 || true
}
trap cleanup EXIT

total=$(ct_now)
passed=0 failed=0 times=()
step() { # NAME SCRIPT
    local t rc=0
    t=$(ct_now)
    echo "== container: $1"
    "$here/$2" || rc=$?
    times+=("$1 $(ct_elapsed "$t") s")
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "== container: $1 FAILED" >&2
    fi
    return $rc
}
# Each step needs the one before it: stop at the first failure.
for s in "base image:base-image.sh" "build images:build-image.sh" \
    "pod sidecar, slowsrv and slowsrv-h2o:pod-test.sh" "podman kube play config/k8s:kube-test.sh" \
    "podman kube play config/k8s/fleet:fleet-test.sh"; do
    step "${s%%:*}" "${s#*:}" || break
done

echo "== container: timings"
printf '   %s\n' "${times[@]}" "total $(ct_elapsed "$total") s"
echo "container: $passed passed, $failed failed"
[ $failed = 0 ] && [ $passed = 5 ]
