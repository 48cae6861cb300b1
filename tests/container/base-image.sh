#!/usr/bin/env bash
# Makes the base image docker.io/library/debian:bookworm-slim in the tests' podman storage, if it
# is not there yet: no registry is reachable from these machines, so a minbase bookworm is
# bootstrapped from the Debian mirror this machine's apt already uses, slimmed like the official
# -slim image, and imported. Takes about a minute; the image is kept for later runs.
# Needs root and debootstrap (tests/container/run.sh installs it).
# Usage: tests/container/base-image.sh
#        DEBIAN_MIRROR=http://... tests/container/base-image.sh   (instead of apt's own)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ct_setup

if ct_image_exists "$CT_BASE_IMAGE"; then
    ct_log "base image $CT_BASE_IMAGE present"
    exit 0
fi

# The mirror is read from this machine's apt sources at run time, never written down here.
repo_uri() { # LABEL: the first bookworm repository with that Release label
    # shellcheck disable=SC2016 # $(REPO_URI) is apt's placeholder, not the shell's
    apt-get indextargets --format '$(REPO_URI)' 'Identifier: Packages' 'Codename: bookworm' \
        "Label: $1" 2>/dev/null | head -n1
}
mirror=${DEBIAN_MIRROR:-$(repo_uri Debian)}
if [ -z "$mirror" ]; then
    apt-get update -qq
    mirror=$(repo_uri Debian)
fi
[ -n "$mirror" ] || ct_die "no bookworm repository in apt's sources; set DEBIAN_MIRROR"
security=${DEBIAN_SECURITY_MIRROR:-$(repo_uri Debian-Security)}

start=$(ct_now)
rootfs=$(mktemp -d /var/tmp/slowsrv-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
ct_log "debootstrap --variant=minbase bookworm from the mirror in apt's sources"
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
    { tail -n 20 "$rootfs.log" >&2; rm -f "$rootfs.log"; ct_die "debootstrap failed"; }
rm -f "$rootfs.log"

# Sources like the official image's: the release, its updates and, if apt has it, security.
rm -f "$rootfs/etc/apt/sources.list"
{
    printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\n' "$mirror"
    printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
    if [ -n "$security" ]; then
        printf '\nTypes: deb\nURIs: %s\nSuites: bookworm-security\nComponents: main\n' "$security"
        printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
    fi
} >"$rootfs/etc/apt/sources.list.d/debian.sources"

# Slim: no documentation, manuals or translations now, and none from later installs either.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
cat >"$rootfs/etc/apt/apt.conf.d/slim" <<'EOF'
APT::Install-Recommends "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
EOF
find "$rootfs/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
    "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/tmp/*
mkdir -p "$rootfs/var/lib/apt/lists/partial" "$rootfs/var/cache/apt/archives/partial"

tar --numeric-owner -C "$rootfs" -c . |
    podman import --quiet --change 'CMD ["bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - "$CT_BASE_IMAGE" >/dev/null
ct_log "base image $CT_BASE_IMAGE made in $(ct_elapsed "$start") s," \
    "$(podman image inspect --format '{{.Size}}' "$CT_BASE_IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
