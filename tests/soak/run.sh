#!/bin/sh
# The soak of issue #7, for a long run: a mixed load on each binary (short delays, /echo,
# uploads of varied sizes, clients that leave mid-delay and mid-upload) for SOAK_SECONDS
# (default 600), then the checks of the suite's mhd.soak / h2o.soak cases: no error for the
# honest clients, requests = answered + cancels, nothing in flight, sockets back to the
# baseline, RSS within 10 % of its post-warm-up value. The suite itself (ctest, and so CI on the
# sanitizer build) runs the same case for 20 s.
# Usage: tests/soak/run.sh [BUILD_DIR]        (default build-test, made by ./dev test)
#        SOAK_SECONDS=3600 tests/soak/run.sh build-sanitize
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/build-test}
[ -x "$dir/tests/integration/itest" ] || {
    echo "soak: $dir/tests/integration/itest not built; run ./dev test (or ./dev test --sanitize) first" >&2
    exit 2
}
export SOAK_SECONDS="${SOAK_SECONDS:-600}"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
status=0
for bin in slowsrv slowsrv-h2o; do
    echo "soak: $bin for ${SOAK_SECONDS}s" >&2
    "$dir/tests/integration/itest" "$dir/$bin" soak || status=1
done
exit $status
