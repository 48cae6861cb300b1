#!/usr/bin/env bash
# Builds the .deb with CPack, installs it with dpkg -i, checks what it installed, removes it.
# Needs root (dpkg). Used by .ci/run; by hand: tests/package/check-deb.sh [BUILD_DIR].
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-package}

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSLOWSRV_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/slowsrv_*.deb)
echo "package: $deb"
dpkg-deb --field "$deb" Package Version Depends

# Install it, check the binaries, every example config and the units, then remove it again.
dpkg -i "$deb" >/dev/null
trap 'dpkg -r slowsrv >/dev/null' EXIT
slowsrv --version
slowsrv-h2o --version
for cfg in /usr/share/slowsrv/config/*.json; do
    slowsrv --check-config "$cfg"
    slowsrv-h2o --check-config "$cfg"
done
ls /usr/share/man/man1/slowsrv.1* /usr/share/man/man1/slowsrv-h2o.1*
out=$(systemd-analyze verify /usr/lib/systemd/system/slowsrv.service \
    /usr/lib/systemd/system/slowsrv-h2o.service /usr/lib/systemd/system/slowsrv.socket 2>&1)
if [ -n "$out" ]; then
    echo "$out"
    exit 1
fi
echo "installed units verified"
