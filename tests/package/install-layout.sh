#!/usr/bin/env bash
# ctest: `cmake --install` of this build into a scratch prefix puts in place what
# doc/operations.md §Install promises: both binaries (they run), the four systemd units, every
# example config (each passes --check-config with the installed binary) and the man pages.
set -euo pipefail
src=$1 build=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null

failed=0
want() { # want PATH: the installed file must exist
    if [ ! -f "$prefix/$1" ]; then
        echo "install-layout: $1 is not installed"
        failed=1
    fi
}
for b in slowsrv slowsrv-h2o; do
    want "bin/$b"
    if ! "$prefix/bin/$b" --version | grep -q "^$b 0.1.0 (engine "; then
        echo "install-layout: the installed $b does not answer --version"
        failed=1
    fi
    want "share/man/man1/$b.1"
done
for unit in slowsrv.service slowsrv-h2o.service slowsrv@.service slowsrv.socket; do
    want "lib/systemd/system/$unit"
done
n=0
for cfg in "$src"/config/*.json; do
    name=$(basename "$cfg")
    want "share/slowsrv/config/$name"
    if ! "$prefix/bin/slowsrv" --check-config "$prefix/share/slowsrv/config/$name" >/dev/null; then
        echo "install-layout: the installed $name does not pass --check-config"
        failed=1
    fi
    n=$((n + 1))
done
if [ "$n" -eq 0 ]; then
    echo "install-layout: no example config in $src/config"
    failed=1
fi
[ "$failed" -eq 0 ] && echo "install-layout: 2 binaries, 4 units, $n configs, 2 man pages"
exit "$failed"
