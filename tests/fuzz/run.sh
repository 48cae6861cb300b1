#!/bin/sh
# Builds the libFuzzer targets with clang in build-fuzz/ and fuzzes each TARGET named (default:
# all of them: multipart multipart_oracle delay config route head h1frame ws), one after the other, for
# FUZZ_SECONDS each (default 60). Before fuzzing a target, its past findings
# (tests/fuzz/findings/<target>-*) are run once: one that fails again counts as a finding and
# that target is not fuzzed. New inputs go to build-fuzz/fuzz-<target>/corpus (kept between
# runs); the checked-in seeds in tests/fuzz/corpus/<target> are only read. Every target runs
# even if an earlier one found something; the exit status is non-zero if any did, and each
# finding's input is written to build-fuzz/fuzz-<target>/crash-* (or leak-*, timeout-*, oom-*).
# FUZZ_ARGS adds libFuzzer flags (e.g. FUZZ_ARGS=-max_len=512).
# Needs clang and libclang-rt-<version>-dev (apt-get install -y clang libclang-rt-14-dev).
# Usage: tests/fuzz/run.sh [TARGET...]
#        FUZZ_SECONDS=60 tests/fuzz/run.sh multipart
#        FUZZ_SECONDS=30 tests/fuzz/run.sh delay config route head
set -eu

all="multipart multipart_oracle delay config route head h1frame ws"
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

# replay_findings TARGET BINARY WORKDIR: runs BINARY once on tests/fuzz/findings/TARGET-*, if
# any; non-zero if one fails.
replay_findings() {
    rf_target=$1 rf_bin=$2 rf_work=$3
    shift 3
    for rf_file in "$root/tests/fuzz/findings/$rf_target"-*; do
        [ -f "$rf_file" ] && set -- "$@" "$rf_file"
    done
    [ $# -gt 0 ] || return 0
    echo "run.sh: fuzz_$rf_target: replaying $# past finding(s)" >&2
    (cd "$rf_work" && "$rf_bin" "$@")
}

failed=
for t in "$@"; do
    work=$build/fuzz-$t
    mkdir -p "$work/corpus"
    bin=$build/tests/fuzz/fuzz_$t
    # The findings first: a regression shows at once, with the input that proves it.
    if ! replay_findings "$t" "$bin" "$work"; then
        echo "run.sh: fuzz_$t: a past finding FAILS again (see above); not fuzzed" >&2
        failed="$failed $t"
        continue
    fi
    echo "run.sh: fuzz_$t for ${seconds}s" >&2
    # shellcheck disable=SC2086
    if ! (cd "$work" && "$bin" -max_total_time="$seconds" \
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
