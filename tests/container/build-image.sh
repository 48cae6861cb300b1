#!/usr/bin/env bash
# Builds the image of the repository's Containerfile (localhost/slowsrv:latest) and the tests'
# curl client (localhost/slowsrv-client:test) in the tests' podman storage, offline but for the
# Debian archive (--pull=never: the base image comes from base-image.sh), then checks what the
# runtime image holds: a non-root user, no compiler and no -dev package, no apt lists, the
# ENTRYPOINT taking arguments and both binaries.
# Usage: tests/container/build-image.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ct_setup

# Host networking for RUN apt-get: no bridge or firewall rules needed on the build machine.
build() { podman build --pull=never --network=host --build-arg JOBS=2 "$@"; }

start=$(ct_now)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
build -t "$CT_IMAGE" -f "$ct_root/Containerfile" "$ct_root" >"$log" 2>&1 ||
    { tail -n 40 "$log" >&2; ct_die "podman build of Containerfile failed"; }
ct_log "built $CT_IMAGE in $(ct_elapsed "$start") s"
start=$(ct_now)
build -t "$CT_CLIENT_IMAGE" -f "$ct_root/tests/container/Containerfile.client" \
    "$ct_root/tests/container" >"$log" 2>&1 ||
    { tail -n 40 "$log" >&2; ct_die "podman build of Containerfile.client failed"; }
ct_log "built $CT_CLIENT_IMAGE in $(ct_elapsed "$start") s"

# What the runtime image is made of.
cfg=$(podman image inspect --format \
    '{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.ExposedPorts}}|{{json .Config.Env}}' \
    "$CT_IMAGE")
ct_log "image config: $cfg"
IFS='|' read -r user entry ports env <<<"$cfg"
[ "$user" = 10001:10001 ] || ct_die "image user is '$user', want 10001:10001 (non-root)"
[ "$entry" = '["slowsrv"]' ] || ct_die "entrypoint is $entry"
[[ $ports == *'"8080/tcp"'* ]] || ct_die "port 8080 not exposed: $ports"
[[ $env == *'"SLOWSRV_BIND=0.0.0.0"'* ]] || ct_die "SLOWSRV_BIND=0.0.0.0 not set: $env"

# shellcheck disable=SC2016 # expanded inside the container
inside=$(podman run --rm --network none --entrypoint sh "$CT_IMAGE" -c '
    id -u
    for c in cc gcc g++ clang ld make cmake pkg-config; do command -v "$c" || true; done
    dpkg-query -W -f="\${Package}\n" | grep -E -- "-dev(:|\$)" || true
    ls /var/lib/apt/lists | grep -v -e "^partial\$" -e "^lock\$" || true
    command -v slowsrv && command -v slowsrv-h2o')
expect=$'10001\n/usr/bin/slowsrv\n/usr/bin/slowsrv-h2o'
[ "$inside" = "$expect" ] ||
    ct_die "runtime image: want uid 10001, no compiler, no -dev package, no apt lists; got: $inside"
podman run --rm --network none "$CT_IMAGE" --version
podman run --rm --network none --entrypoint slowsrv-h2o "$CT_IMAGE" --version
size=$(podman image inspect --format '{{.Size}}' "$CT_IMAGE")
ct_log "runtime image checked: non-root, no toolchain, no apt lists;" \
    "$(awk -v s="$size" 'BEGIN { printf "%.0f MB", s / 1e6 }')" \
    "(base $(podman image inspect --format '{{.Size}}' "$CT_BASE_IMAGE" |
        awk '{ printf "%.0f MB", $1 / 1e6 }'))"
