#!/bin/sh
# Builds the libFuzzer targets with clang in build-fuzz/ and fuzzes each TARGET named (default:
# all of them: multipart delay config route), one after the other, for FUZZ_SECONDS each
# (default 60). New inputs go to build-fuzz/fuzz-<target>/corpus (kept between runs); the
# checked-in seeds in tests/fuzz/corpus/<target> are only read. Every target runs even if an
# earlier one found something; the exit status is non-zero if any did, and each finding's input
# is written to build-fuzz/fuzz-<target>/crash-* (or leak-*, timeout-*, oom-*).
# FUZZ_ARGS adds libFuzzer flags (e.g. FUZZ_ARGS=-max_len=512).
# Needs clang and libclang-rt-<version>-dev (apt-get install -y clang libclang-rt-14-dev).
# Usage: tests/fuzz/run.sh [TARGET...]
#        FUZZ_SECONDS=60 tests/fuzz/run.sh multipart
#        FUZZ_SECONDS=30 tests/fuzz/run.sh delay config route
set -eu

all="multipart delay config route"
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}

# shellcheck disable=SC2086
[ $# -gt 0 ] || set -- $all
for t in "$@"; do
    case " $all " in
    *" $t "*) ;;
    *) echo "run.sh: unknown target '$t' (one of: $all)" >&2; exit 2 ;;
    esac
done

command -v clang >/dev/null || { echo "run.sh: clang not found: apt-get install -y clang" >&2; exit 2; }
CC=clang cmake -S "$root" -B "$build" -DSLOWSRV_TESTS=ON >/dev/null
targets=
for t in "$@"; do targets="$targets --target fuzz_$t"; done
# shellcheck disable=SC2086
cmake --build "$build" $targets

failed=
for t in "$@"; do
    work=$build/fuzz-$t
    mkdir -p "$work/corpus"
    echo "run.sh: fuzz_$t for ${seconds}s" >&2
    # shellcheck disable=SC2086
    if ! (cd "$work" && "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" \
            -print_final_stats=1 -artifact_prefix="$work/" ${FUZZ_ARGS:-} \
            "$work/corpus" "$root/tests/fuzz/corpus/$t"); then
        echo "run.sh: fuzz_$t: FINDING, see $work/" >&2
        failed="$failed $t"
    fi
done
if [ -n "$failed" ]; then
    echo "run.sh: findings in:$failed" >&2
    exit 1
fi
