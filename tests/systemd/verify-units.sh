#!/usr/bin/env bash
# ctest: systemd-analyze verify on every unit in systemd/, with ExecStart pointed at the
# binaries of this build (the installed units are verified again by tests/package/check-deb.sh,
# man pages included).
set -euo pipefail
src=$1 bindir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for unit in "$src"/systemd/*.service "$src"/systemd/*.socket; do
    sed "s|/usr/bin/|$bindir/|g" "$unit" > "$tmp/$(basename "$unit")"
done
# A template is verified through an instance of it.
cp "$tmp/slowsrv@.service" "$tmp/slowsrv@spring.service"
rm "$tmp/slowsrv@.service"
cd "$tmp"
# verify exits 0 on settings it ignores ("Failed to parse ..., ignoring"): any output fails.
out=$(systemd-analyze verify --man=no ./*.service ./*.socket 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then
    echo "$out"
    exit 1
fi
echo "verified: $(ls | tr '\n' ' ')"
