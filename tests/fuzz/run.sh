#!/bin/sh
# Builds the libFuzzer target with clang in build-fuzz/ and fuzzes the multipart parser for
# FUZZ_SECONDS (default 60). New inputs go to build-fuzz/fuzz-multipart/corpus (kept between
# runs); the checked-in seeds in tests/fuzz/corpus/multipart are only read. Exits non-zero on
# a finding, whose input is written to build-fuzz/fuzz-multipart/crash-* (or leak-*, timeout-*).
# Needs clang and libclang-rt-<version>-dev (apt-get install -y clang libclang-rt-14-dev).
# Usage: tests/fuzz/run.sh        FUZZ_SECONDS=600 tests/fuzz/run.sh
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}

command -v clang >/dev/null || { echo "run.sh: clang not found: apt-get install -y clang" >&2; exit 2; }
CC=clang cmake -S "$root" -B "$build" -DSLOWSRV_TESTS=ON >/dev/null
cmake --build "$build" --target fuzz_multipart

work=$build/fuzz-multipart
mkdir -p "$work/corpus"
cd "$work"
"$build/tests/fuzz/fuzz_multipart" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/corpus" "$root/tests/fuzz/corpus/multipart"
