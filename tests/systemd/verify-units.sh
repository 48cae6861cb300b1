#!/usr/bin/env bash
# ctest: systemd-analyze verify on every unit in systemd/, with ExecStart pointed at the
# binaries of this build (the installed units are verified again by tests/package/check-deb.sh,
# man pages included).
set -euo pipefail
src=$1 bindir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Their contents, as doc/operations.md §systemd and the man page (SYSTEMD) describe them: each
# line exactly (verify checks syntax only, not what a unit does).
missing=0
want_lines() {
    local unit=$1 line
    shift
    for line in "$@"; do
        if ! grep -qxF -- "$line" "$src/systemd/$unit"; then
            echo "$unit: no line '$line'"
            missing=1
        fi
    done
}
service_lines=(Type=notify LimitNOFILE=1048576 DynamicUser=yes ProtectSystem=strict PrivateTmp=yes
    NoNewPrivileges=yes ProtectHome=yes PrivateDevices=yes CapabilityBoundingSet=
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' WantedBy=multi-user.target)
for unit in slowsrv.service slowsrv-h2o.service slowsrv@.service; do
    want_lines "$unit" "${service_lines[@]}"
done
want_lines slowsrv.service 'ExecStart=/usr/bin/slowsrv'
want_lines slowsrv-h2o.service 'ExecStart=/usr/bin/slowsrv-h2o'
# The template reads /etc/slowsrv/NAME.json for slowsrv@NAME.
want_lines slowsrv@.service 'ExecStart=/usr/bin/slowsrv --config /etc/slowsrv/%i.json'
# The socket listens where the server would and starts slowsrv.service: the one of its own name
# (no Service= line), one server for every connection (no Accept=yes, which would start an
# instance of slowsrv@.service per connection).
want_lines slowsrv.socket '[Socket]' 'ListenStream=127.0.0.1:8080' WantedBy=sockets.target
if grep -qE '^(Service|Accept)=' "$src/systemd/slowsrv.socket" &&
    ! grep -qxF 'Service=slowsrv.service' "$src/systemd/slowsrv.socket"; then
    echo "slowsrv.socket: $(grep -E '^(Service|Accept)=' "$src/systemd/slowsrv.socket")"
    missing=1
fi
if [ "$missing" != 0 ]; then
    exit 1
fi
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
