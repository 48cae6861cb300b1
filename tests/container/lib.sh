# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Sourced by the scripts in tests/container/ (bash). Points podman at a storage and a
# configuration of its own, so that these tests neither see nor touch anybody else's
# containers, pods or images, and gives them a few helpers.
#
# SLOWSRV_CT_DIR   podman storage and configuration (default /var/tmp/slowsrv-container-test);
#                  kept between runs, so the base image is made once (run.sh --purge)
# SLOWSRV_CT_RUN   podman's run-time state (default /run/slowsrv-container-test, a tmpfs)
# Needs root (CI runs as root); rootless podman is not what these scripts set up.

ct_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ct_dir=${SLOWSRV_CT_DIR:-/var/tmp/slowsrv-container-test}
ct_run=${SLOWSRV_CT_RUN:-/run/slowsrv-container-test}

# Image names. The manifests in config/k8s/ name localhost/slowsrv:latest, which is what
# `podman build -t slowsrv .` makes; in this private storage the tests may own that name.
CT_BASE_IMAGE=docker.io/library/debian:bookworm-slim
CT_IMAGE=localhost/slowsrv:latest
CT_CLIENT_IMAGE=localhost/slowsrv-client:test

ct_log() { printf '%s [%s] %s\n' "$(date +%T)" "${0##*/}" "$*" >&2; }
ct_die() {
    ct_log "FAIL: $*"
    exit 1
}

# Writes the configuration: runc (crun fails on these machines), ulimits, file logs. Also
# turns SIGINT and SIGTERM into an exit, so that the scripts' EXIT traps clean up.
ct_setup() {
    trap 'exit 130' INT
    trap 'exit 143' TERM
    mkdir -p "$ct_dir/networks" "$ct_run"
    cat >"$ct_dir/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$ct_dir/storage"
runroot = "$ct_run/storage"
EOF
    cat >"$ct_dir/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
tmp_dir = "$ct_run/libpod"
events_logger = "file"

[network]
network_config_dir = "$ct_dir/networks"
EOF
    export CONTAINERS_CONF=$ct_dir/containers.conf
    export CONTAINERS_STORAGE_CONF=$ct_dir/storage.conf
}

# One run at a time per storage (names and tags below are fixed).
ct_lock() {
    exec 9>"$ct_dir/lock"
    flock -n 9 || ct_die "another run holds $ct_dir/lock"
}

ct_image_exists() { podman image exists "$1"; }

# Seconds since the epoch with milliseconds, for timings.
ct_now() { date +%s.%3N; }
ct_elapsed() { awk -v a="$1" -v b="$(ct_now)" 'BEGIN { printf "%.1f", b - a }'; }
