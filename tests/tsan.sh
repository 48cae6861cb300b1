#!/usr/bin/env bash
# ThreadSanitizer over what threads share by design: the live route table handed between the
# control API, the scenario thread, a config reload and the loops, the counters, the worker
# pools.
# Builds both binaries with -fsanitize=thread in build-tsan/ and runs the control cases, the
# worker-pool cases, the WebSocket cases (a socket handed from an engine's thread to the core's
# socket loop, its counters read by /stats), event streams' access-log lines and plans, and the
# unit tests of the modules involved; any data race fails them
# (halt_on_error). libmicrohttpd and libh2o are not instrumented: their own memory is not
# checked, their locks and threads are (TSan intercepts pthread).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-tsan
cmake -S . -B "$dir" -DSLOWSRV_WERROR=ON -DSLOWSRV_TSAN=ON >/dev/null
cmake --build "$dir" -j"$(nproc)"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# One test at a time, and no case that times waves to the tens of milliseconds: instrumented
# code runs several times slower.
cd "$dir" && ctest --output-on-failure -j1 \
    -R '^unit\.(control|scenario|service|stats|pool)$|control_api|control_token|changes_under_load|scenario_changes|drips_and_queued|reset_starts|waiting_and_queued_per_route|reload_by_sighup|reload_follows|websocket_(echo_ping|push_and|keeps_its_plan|handshake)|stream_access_log|begun_stream'
