#!/usr/bin/env bash
# bench_control.sh - the control API and timed scenarios (issue 17), both binaries, one run.
#
# 1. Request-path cost, control API on and idle vs off ("/echo CPU per request and the /test
#    figures at 10 000 connections within noise of today's, with the control API on and idle").
#    With --control the route table is live: each request takes a reference on the live
#    generation (atomic inc/dec on its loop's cache line) and answers carry
#    `Server-Timing: …gen;desc=N`. For BIN in slowsrv and slowsrv-h2o, and MODE off / on:
#      off: BIN --threads 1 --port 0 --delay 1s
#      on:  the same + --control PORT (a free loopback port; nothing is ever sent to it during
#           the run: afterwards GET /routes there must still show generation 1)
#    off and on alternate (off first on odd repetitions, on first on even ones), each on a
#    freshly started server; medians, on/off and the spread of each side are reported:
#      echo    wrk -t1 -c100 -d10s --timeout 5s --latency -s stats.lua …/echo (as
#              bench_delay_echo.sh / bench_versions.sh): server CPU µs per request (utime+stime
#              from /proc/PID/stat before/after ÷ requests) and its user-space part, requests/s
#      steady  h2load --h1 -t1 -c10000 --warm-up-time=15 -D 20 --log-file=… …/test (1 s; as
#              bench_h2.sh's test-h1-10k-steady): requests/s ÷ ideal (10 000/s), mean/p50/p99/
#              max over the per-request log (status 200), errors, server CPU per request
# 2. Brownout timing ("a brownout scenario run under wrk shows the phase change in the client's
#    latencies at the scheduled second, within 10 ms"). BIN --threads 1 --port 0 --config F,
#    F = {"delay": "100ms", "scenario": [{"at": "0s", "name": "normal"},
#         {"at": "10s", "name": "brownout", "routes": {"/test": {"delay": "300ms"}}},
#         {"at": "20s", "name": "recovered", "restore": true}]}
#    (no --control: a scenario makes the table live by itself; the scenario starts with the
#    server). Right after the server is up, two clients run BROWN_DUR s on /test at once:
#      wrk -t1 -c50 -d25s -s timeline.lua …/test -- FILE   the load; timeline.lua logs when
#          each answer arrived (Unix ns) and its Server-Timing dur/gen
#      timeline_client.py --rate 1000 --duration 25         open-loop sampler: a request every
#          1 ms (send instants set by the clock), logs send/receive time, latency, dur, gen
#    Then /stats gives scenario.started_at and each phase's began_at (Unix time, after the new
#    table was published). For each step (100→300 ms at started_at+10 s, 300→100 ms at +20 s),
#    relative to the scheduled instant S: the server's began_at − S; from the sampler, the last
#    request sent that was answered with the old latency and the first sent that got the new one
#    (latency nearer old or new delay; Server-Timing dur gives the same split, checked), how
#    many requests around S are out of order (old after the first new or new before the last
#    old), the first new-plan answer (sampler and wrk). A request keeps the plan it began with,
#    so the step is in send times: PASS when the last old and the first new send both lie within
#    S ± 10 ms and none is out of order.
# Servers pinned to CPU $SERVER_CPU, load tools and this script to CPU $WRK_CPU. Each run waits
# for a quiet host and is repeated when other processes took more than OTHER_MAX % of a CPU
# (lib.sh, as bench_versions.sh).
#
# Not part of the test suite. See tests/bench/README.md. Knobs (environment):
#   BUILD=dir          holds slowsrv and slowsrv-h2o (default build-bench, built when a binary
#                      is missing or has no --control)
#   REPS=3 STEADY_REPS=$REPS   repetitions of echo / steady (each off and on)
#   MEASURES="echo steady brownout"  BINARIES="slowsrv slowsrv-h2o"
#   ECHO_DUR=10s  CONNS=10000 WARMUP=15 STEADY_DUR=20
#   BROWN_CONNS=50 BROWN_DUR=25 BROWN_AT=10 BROWN_BACK=20 BROWN_FROM=100ms BROWN_TO=300ms
#   TL_RATE=1000 TL_CONNS=400  timeline_client.py's rate (requests/s) and pre-opened connections
#   SERVER_CPU=0 WRK_CPU=1  RESULTS=dir (default tests/bench/results/<date>-control/)
#   QUIET_WAIT=120 QUIET_MAX=10 OTHER_MAX=25 TRIES=3   shared-host checks (lib.sh)
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cmdline="$0${*:+ $*}"
for a in BUILD REPS STEADY_REPS MEASURES BINARIES ECHO_DUR CONNS WARMUP STEADY_DUR BROWN_CONNS BROWN_DUR BROWN_AT BROWN_BACK BROWN_FROM BROWN_TO TL_RATE TL_CONNS SERVER_CPU WRK_CPU RESULTS QUIET_WAIT QUIET_MAX OTHER_MAX TRIES; do
    [[ -n ${!a:-} ]] && cmdline="$a=\"${!a}\" $cmdline"
done

BUILD=${BUILD:-$root/build-bench}
REPS=${REPS:-3}
STEADY_REPS=${STEADY_REPS:-$REPS}
MEASURES=${MEASURES:-"echo steady brownout"}
BINARIES=${BINARIES:-"slowsrv slowsrv-h2o"}
ECHO_DUR=${ECHO_DUR:-10s}
ECHO_CONNS=100
CONNS=${CONNS:-10000}
WARMUP=${WARMUP:-15}
STEADY_DUR=${STEADY_DUR:-20}
BROWN_CONNS=${BROWN_CONNS:-50}
BROWN_DUR=${BROWN_DUR:-25}      # seconds of load from the server's start
BROWN_AT=${BROWN_AT:-10}        # seconds from the scenario's start: the brownout phase
BROWN_BACK=${BROWN_BACK:-20}    # … and the restore
BROWN_FROM=${BROWN_FROM:-100ms}
BROWN_TO=${BROWN_TO:-300ms}
TL_RATE=${TL_RATE:-1000}
TL_CONNS=${TL_CONNS:-400}
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
stamp=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$here/results/$stamp-control}
QUIET_WAIT=${QUIET_WAIT:-120}
QUIET_MAX=${QUIET_MAX:-10}
OTHER_MAX=${OTHER_MAX:-25}
TRIES=${TRIES:-3}
DELAY_S=1
START_TIMEOUT=10
NOFILE=20000

# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
die() { printf '[bench] FATAL: %s\n' "$*" >&2; exit 1; }

has() { [[ " $MEASURES " == *" $1 "* ]]; }
for m in $MEASURES; do
    [[ $m == echo || $m == steady || $m == brownout ]] || die "unknown measurement '$m' in MEASURES (echo steady brownout)"
done
for b in $BINARIES; do
    [[ $b == slowsrv || $b == slowsrv-h2o ]] || die "unknown binary '$b' in BINARIES (slowsrv slowsrv-h2o)"
done
((BROWN_AT >= 2 && BROWN_BACK > BROWN_AT + 1 && BROWN_DUR > BROWN_BACK + 1)) ||
    die "need 2 <= BROWN_AT < BROWN_BACK - 1 < BROWN_DUR - 2 (seconds)"

# ---------------------------------------------------------------- prerequisites
need_pkgs=()
command -v wrk >/dev/null 2>&1 || need_pkgs+=(wrk)
command -v h2load >/dev/null 2>&1 || need_pkgs+=(nghttp2-client)
command -v taskset >/dev/null 2>&1 || need_pkgs+=(util-linux)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
if ((${#need_pkgs[@]})); then
    log "installing missing packages: ${need_pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_pkgs[@]}" ||
        die "apt-get install ${need_pkgs[*]} failed"
fi
command -v python3 >/dev/null 2>&1 || die "python3 is required (timeline client, summary)"

usable() { # dir: all BINARIES there, with --control
    local b
    for b in $BINARIES; do
        [[ -x $1/$b ]] && "$1/$b" --help 2>&1 | grep -q -- '--control' || return 1
    done
}
if ! usable "$BUILD"; then
    [[ $(cd "$BUILD" 2>/dev/null && pwd) == "$root/build-bench" || $BUILD == "$root/build-bench" ]] ||
        die "BUILD=$BUILD lacks $BINARIES with --control (only the default, $root/build-bench, is built here)"
    log "building slowsrv into $root/build-bench (missing, or built before --control)"
    (cd "$root" && cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSLOWSRV_TESTS=OFF >/dev/null &&
        cmake --build build-bench -j2 >/dev/null) || die "slowsrv build failed"
    usable "$BUILD" || die "$BUILD: still no $BINARIES with --control after building"
fi

ncpu=$(nproc)
((ncpu > SERVER_CPU && ncpu > WRK_CPU)) || die "need CPUs $SERVER_CPU and $WRK_CPU, nproc=$ncpu"
if ! ulimit -n "$NOFILE" 2>/dev/null; then
    log "cannot raise fd limit to $NOFILE (hard limit $(ulimit -Hn)); using it"
    ulimit -n "$(ulimit -Hn)"
fi
if has steady; then
    (($(ulimit -n) > CONNS + 100)) || die "fd limit $(ulimit -n) too low for $CONNS connections"
fi

taskset -p -c "$WRK_CPU" $$ >/dev/null   # this script, its helpers and the load tools

CLK_TCK=$(getconf CLK_TCK)
mkdir -p "$RESULTS"
if [[ $RESULTS == "$here/results/"* ]]; then
    [[ -f $here/results/.gitignore ]] || printf '*\n' >"$here/results/.gitignore"
fi
tmp=$(mktemp -d /tmp/slowsrv-bench-control.XXXXXX)
tsv=$RESULTS/results.tsv
printf 'rep\tmode\tbinary\tscenario\tconns\trequests\tduration_us\tp50_us\tp99_us\tmax_us\tmean_us\terr_connect\terr_read\terr_write\terr_timeout\tnon2xx\tcpu_ticks\tuser_ticks\tclk_tck\ttool_cpu_us\tother_cpu_pct\ttry\n' >"$tsv"

# ---------------------------------------------------------------- process bookkeeping
# Only PIDs this script started are ever signalled.
declare -A live=()   # pid -> name

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${!live[@]}"; do
        if [[ ${live[$pid]} == load:* ]]; then
            kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
        else
            stop_pid "$pid" "${live[$pid]}"
        fi
    done
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'printf "[bench] FATAL: line %s: %s failed\n" "$LINENO" "$BASH_COMMAND" >&2' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

http_ok() { # url expected-body
    local body
    body=$(curl -s --max-time 3 "$1" 2>/dev/null) || return 1
    [[ $body == "$2" ]]
}

control_gen() { # control-port -> the generation GET /routes shows
    curl -s --max-time 3 "http://127.0.0.1:$1/routes" 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["generation"])' 2>/dev/null || echo "?"
}

cpu_ticks() { # utime+stime of one pid (all threads)
    local line rest f
    read -r line <"/proc/$1/stat" 2>/dev/null || { echo 0; return 0; }
    rest=${line##*) }
    read -ra f <<<"$rest"
    echo $((f[11] + f[12]))
}
user_ticks() {
    local line rest f
    read -r line <"/proc/$1/stat" 2>/dev/null || { echo 0; return 0; }
    rest=${line##*) }
    read -ra f <<<"$rest"
    echo "${f[11]}"
}
CHILD_US=0

# ---------------------------------------------------------------- servers
SRV_PID="" SRV_PORT="" CTL_PORT=""
declare -A BANNER=() SRV_CMD=()

start_server() { # binary mode(off|on|brownout) tag -> SRV_PID, SRV_PORT, CTL_PORT
    local bin=$1 mode=$2 err=$tmp/$1.$2.$3.err i args
    CTL_PORT=""
    case $mode in
    off) args=(--threads 1 --port 0 --delay "${DELAY_S}s") ;;
    on) CTL_PORT=$(free_port); args=(--threads 1 --port 0 --delay "${DELAY_S}s" --control "$CTL_PORT") ;;
    brownout) args=(--threads 1 --port 0 --config "$RESULTS/brownout.json") ;;
    esac
    SRV_CMD[$mode]="BIN ${args[*]}"
    [[ $mode == on ]] && SRV_CMD[$mode]="BIN ${args[*]/%$CTL_PORT/PORT}"
    [[ $mode == brownout ]] && SRV_CMD[$mode]="BIN --threads 1 --port 0 --config RESULTS/brownout.json"
    taskset -c "$SERVER_CPU" "$BUILD/$bin" "${args[@]}" 2>"$err" &
    SRV_PID=$!; live[$SRV_PID]="$bin $mode"
    SRV_PORT=""
    for ((i = 0; i < START_TIMEOUT * 100; i++)); do
        if ! kill -0 "$SRV_PID" 2>/dev/null; then
            cat "$err" >&2; die "$bin ($mode) exited during startup"
        fi
        SRV_PORT=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$err" 2>/dev/null | head -1) || true
        [[ -n $SRV_PORT ]] && break
        sleep 0.01
    done
    [[ -n $SRV_PORT ]] || { cat "$err" >&2; die "$bin ($mode) printed no listening line within ${START_TIMEOUT}s"; }
    [[ -n ${BANNER[$bin.$mode]:-} ]] || BANNER[$bin.$mode]=$(grep -m1 'listening on' "$err")
    return 0
}

# ---------------------------------------------------------------- load-tool scripts
cat >"$tmp/stats.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKSTATS requests=%.0f duration_us=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f mean_us=%.0f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
EOF

parse_run() { # out rep mode binary scenario conns ticks uticks tool_us other% try
    python3 - "$@" <<'PY'
import os, re, sys
out, rep, mode, binary, scen, conns, ticks, uticks, tool, other, tr = sys.argv[1:]
text = open(out, errors="replace").read()
nan = float("nan")
if scen == "steady":
    lat = []
    for line in open(out + ".log", errors="replace"):
        f = line.split()
        if len(f) >= 3 and f[1] == "200":
            lat.append(float(f[2]))
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p / 100))] if lat else nan
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text)
    done = [float(x) for x in m.groups()] if m else [0.0] * 5
    d = {"requests": float(len(lat)), "duration_us": float(os.environ["STEADY_DUR_S"]) * 1e6,
         "p50_us": pct(50), "p99_us": pct(99), "max_us": lat[-1] if lat else nan,
         "mean_us": sum(lat) / len(lat) if lat else nan, "connect": 0.0, "read": done[3],
         "write": 0.0, "timeout": done[4], "status": done[0] - done[1]}
else:
    m = re.search(r"^WRKSTATS (.*)$", text, re.M)
    if not m:
        sys.exit("no WRKSTATS line in " + out)
    d = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
cols = [rep, mode, binary, scen, conns] + ["%.0f" % d[k] if d[k] == d[k] else "nan" for k in
        ("requests", "duration_us", "p50_us", "p99_us", "max_us", "mean_us", "connect", "read",
         "write", "timeout", "status")] + [ticks, uticks, os.environ["CLK"], tool, other, tr]
print("\t".join(cols))
PY
}

# ---------------------------------------------------------------- part 1: one measured run
declare -A TOOL_CMDS=()
run() { # rep mode binary scenario
    local rep=$1 mode=$2 bin=$3 scen=$4 try out cmd conns gen
    local c0 c1 u0 u1 w0 w1 b0 b1 t0 t1 other
    out=$RESULTS/$scen.$bin.$mode.rep$rep.txt
    for ((try = 1; ; try++)); do
        wait_quiet
        start_server "$bin" "$mode" "$rep.$scen.$try"
        case $scen in
        echo)
            conns=$ECHO_CONNS
            cmd=(taskset -c "$WRK_CPU" wrk -t1 -c "$conns" -d "$ECHO_DUR" --timeout 5s --latency
                -s "$tmp/stats.lua" "http://127.0.0.1:$SRV_PORT/echo") ;;
        steady)
            conns=$CONNS
            cmd=(taskset -c "$WRK_CPU" h2load --h1 -t1 -c "$conns" --warm-up-time="$WARMUP"
                -D "$STEADY_DUR" --log-file="$out.log" "http://127.0.0.1:$SRV_PORT/test") ;;
        esac
        [[ -n ${TOOL_CMDS[$scen]:-} ]] ||
            TOOL_CMDS[$scen]=$(printf '%s ' "${cmd[@]:3}" | sed "s#$tmp/##g; s#$RESULTS/#RESULTS/#g; s#127.0.0.1:$SRV_PORT#127.0.0.1:PORT#")
        sleep 1
        log "rep $rep $bin control=$mode $scen$( ((try > 1)) && echo " (try $try)"): ${cmd[*]:3}"
        child_cpu_us; w0=$CHILD_US
        c0=$(cpu_ticks "$SRV_PID"); u0=$(user_ticks "$SRV_PID")
        sys_busy; b0=$SYS_BUSY; t0=$(date +%s%N)
        "${cmd[@]}" >"$out" 2>&1 || log "${cmd[3]} exited non-zero ($bin $mode $scen), see $out"
        sys_busy; b1=$SYS_BUSY; t1=$(date +%s%N)
        c1=$(cpu_ticks "$SRV_PID"); u1=$(user_ticks "$SRV_PID")
        child_cpu_us; w1=$CHILD_US
        kill -0 "$SRV_PID" 2>/dev/null || die "$bin ($mode) died during $scen (see $out)"
        http_ok "http://127.0.0.1:$SRV_PORT/echo" OK || die "$bin ($mode): /echo wrong or silent after $scen"
        gen=-
        if [[ $mode == on ]]; then
            gen=$(control_gen "$CTL_PORT")
            [[ $gen == 1 ]] || die "$bin: control API not idle or not answering after $scen (generation $gen)"
        fi
        stop_pid "$SRV_PID" "$bin $mode"
        other=$(( ((b1 - b0) - (c1 - c0) - (w1 - w0) * CLK_TCK / 1000000) * 100 * 1000000000 / CLK_TCK / (t1 - t0) ))
        echo "# mode=$mode binary=$BUILD/$bin pid=$SRV_PID control_generation_after=$gen cpu_ticks=$((c1 - c0)) user_ticks=$((u1 - u0)) clk_tck=$CLK_TCK tool_cpu_us=$((w1 - w0)) other_cpu_pct=$other try=$try" >>"$out"
        if ((other > OTHER_MAX && try < TRIES)); then
            log "other processes used $other % of a CPU during this run (> $OTHER_MAX): repeating it"
            mv "$out" "$out.noisy$try"
            [[ $scen == steady ]] && rm -f "$out.log"
            sleep 2
            continue
        fi
        CLK=$CLK_TCK STEADY_DUR_S=$STEADY_DUR parse_run "$out" "$rep" "$mode" "$bin" "$scen" "$conns" \
            "$((c1 - c0))" "$((u1 - u0))" "$((w1 - w0))" "$other" "$try" >>"$tsv"
        [[ $scen == steady ]] && { gzip -f "$out.log" || true; }
        break
    done
    if [[ $scen == steady ]]; then sleep 2; else sleep 1; fi
}

# ---------------------------------------------------------------- part 2: brownout run
BROWN_CMDS=()
RETRY=0
brownout() { # binary try
    local bin=$1 out=$RESULTS/brownout.$1 wpid tpid wcmd tcmd b0 b1 t0 t1 c0 c1 w0 w1 other
    wait_quiet
    start_server "$bin" brownout "brownout"
    child_cpu_us; w0=$CHILD_US
    c0=$(cpu_ticks "$SRV_PID"); sys_busy; b0=$SYS_BUSY; t0=$(date +%s%N)
    wcmd=(taskset -c "$WRK_CPU" wrk -t1 -c "$BROWN_CONNS" -d "${BROWN_DUR}s" --timeout 5s --latency
        -s "$here/timeline.lua" "http://127.0.0.1:$SRV_PORT/test" -- "$out.wrk.tsv")
    tcmd=(taskset -c "$WRK_CPU" python3 "$here/timeline_client.py" --port "$SRV_PORT" --path /test
        --rate "$TL_RATE" --conns "$TL_CONNS" --duration "$BROWN_DUR" --out "$out.timeline.tsv")
    "${wcmd[@]}" >"$out.wrk.txt" 2>&1 &
    wpid=$!; live[$wpid]="load:wrk"
    "${tcmd[@]}" >"$out.timeline.txt" 2>&1 &
    tpid=$!; live[$tpid]="load:timeline"
    if ((${#BROWN_CMDS[@]} == 0)); then
        BROWN_CMDS+=("$(printf '%s ' "${wcmd[@]:3}" | sed "s#$RESULTS/#RESULTS/#g; s#$here/##g; s#127.0.0.1:$SRV_PORT#127.0.0.1:PORT#")")
        BROWN_CMDS+=("$(printf '%s ' "${tcmd[@]:3}" | sed "s#$RESULTS/#RESULTS/#g; s#$here/##g; s#--port $SRV_PORT#--port PORT#")")
    fi
    log "brownout $bin: wrk -c$BROWN_CONNS and timeline_client.py (${TL_RATE}/s) for ${BROWN_DUR}s; phases at ${BROWN_AT}s and ${BROWN_BACK}s"
    wait "$wpid" || log "wrk exited non-zero (brownout $bin), see $out.wrk.txt"
    unset "live[$wpid]"
    wait "$tpid" || die "timeline_client.py failed (brownout $bin): $(tail -3 "$out.timeline.txt")"
    unset "live[$tpid]"
    sys_busy; b1=$SYS_BUSY; t1=$(date +%s%N); c1=$(cpu_ticks "$SRV_PID")
    child_cpu_us; w1=$CHILD_US
    kill -0 "$SRV_PID" 2>/dev/null || die "$bin died during the brownout run"
    curl -s --max-time 5 "http://127.0.0.1:$SRV_PORT/stats" >"$out.stats.json" || die "$bin: GET /stats failed"
    stop_pid "$SRV_PID" "$bin brownout"
    cp "$tmp/$bin.brownout.brownout.err" "$out.server.log"
    # other processes' CPU: all busy - server - the two load tools (reaped children), % of a CPU
    other=$(( ((b1 - b0) - (c1 - c0) - (w1 - w0) * CLK_TCK / 1000000) * 100 * 1000000000 / CLK_TCK / (t1 - t0) ))
    RETRY=0
    if ((other > OTHER_MAX && $2 < TRIES)); then
        log "other processes used $other % of a CPU during this run (> $OTHER_MAX): repeating it"
        local f
        for f in "$out".*; do mv "$f" "$f.noisy$2"; done
        RETRY=1
    else
        echo "$bin	$other	$((c1 - c0))	$((w1 - w0))	$2" >>"$RESULTS/brownout.cpu.tsv"
    fi
    sleep 1
}

# ---------------------------------------------------------------- preflight
log "results: $RESULTS"
log "binaries: $BUILD"
for bin in $BINARIES; do
    for mode in off on; do
        start_server "$bin" "$mode" pre
        http_ok "http://127.0.0.1:$SRV_PORT/echo" OK || die "$bin ($mode): GET /echo did not answer OK"
        t0=$(date +%s%N)
        hdr=$(curl -s -D - -o "$tmp/body" --max-time 5 "http://127.0.0.1:$SRV_PORT/test") || die "$bin ($mode): GET /test failed"
        ms=$((($(date +%s%N) - t0) / 1000000))
        [[ $(cat "$tmp/body") == ok ]] || die "$bin ($mode): GET /test did not answer ok"
        ((ms >= DELAY_S * 1000 - 5 && ms < DELAY_S * 1000 + 500)) || die "$bin ($mode): GET /test took ${ms} ms"
        timing=$(printf '%s\n' "$hdr" | sed -n 's/^[Ss]erver-[Tt]iming: *//p' | tr -d '\r')
        if [[ $mode == on ]]; then
            [[ $timing == *"gen;desc=1"* ]] || die "$bin --control: /test's Server-Timing is '$timing', no gen;desc=1 (table not live?)"
            [[ $(control_gen "$CTL_PORT") == 1 ]] || die "$bin --control: GET /routes on the control port did not answer generation 1"
        else
            [[ $timing != *gen* ]] || die "$bin without --control: Server-Timing '$timing' names a generation"
        fi
        stop_pid "$SRV_PID" "$bin $mode"
        log "preflight $bin control=$mode: /echo OK, /test ok in ${ms} ms, Server-Timing: $timing"
    done
done

# ---------------------------------------------------------------- runs
for scen in echo steady; do
    has "$scen" || continue
    n=$REPS; [[ $scen == steady ]] && n=$STEADY_REPS
    for ((rep = 1; rep <= n; rep++)); do
        if ((rep % 2)); then order=(off on); else order=(on off); fi
        for bin in $BINARIES; do
            for mode in "${order[@]}"; do run "$rep" "$mode" "$bin" "$scen"; done
        done
    done
done

if has brownout; then
    cat >"$RESULTS/brownout.json" <<EOF
{
  "delay": "$BROWN_FROM",
  "scenario": [
    {"at": "0s", "name": "normal"},
    {"at": "${BROWN_AT}s", "name": "brownout", "routes": {"/test": {"delay": "$BROWN_TO"}}},
    {"at": "${BROWN_BACK}s", "name": "recovered", "restore": true}
  ]
}
EOF
    : >"$RESULTS/brownout.cpu.tsv"
    for bin in $BINARIES; do
        for ((try = 1; ; try++)); do
            brownout "$bin" "$try"
            ((RETRY)) || break
        done
    done
fi

# ---------------------------------------------------------------- summary
wrk_v=$( (wrk --version 2>&1 || true) | head -1 | sed 's/ *Copyright.*//')
h2load_v=$(h2load --version 2>&1 | head -1)
describe() {
    local top rev dirty
    top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null) || { echo "not in a git tree"; return 0; }
    rev=$(git -C "$top" log -1 --format='%h %s' 2>/dev/null | cut -c1-72)
    dirty=$(git -C "$top" status --porcelain -- servers common CMakeLists.txt 2>/dev/null | wc -l)
    echo "git $rev$( ((dirty)) && echo " + $dirty uncommitted source change(s)")"
}
{
    echo "## Control API (issue 17): request-path cost with --control on and idle vs off; brownout timing"
    echo
    echo "- command: \`$cmdline\` (in $root)"
    echo "- date: $(date -Is)"
    echo "- host: nproc=$ncpu, $(uname -srm), fd limit $(ulimit -n); load average before the summary: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- tools: $wrk_v; $h2load_v; $(python3 --version 2>&1)"
    echo "- binaries: \`$BUILD\` (its source tree now: $(describe "$BUILD"))"
    for b in $BINARIES; do
        echo "  - $b: $("$BUILD/$b" --version 2>&1 | head -1), built $(date -r "$BUILD/$b" -Is), sha256 $(sha256sum "$BUILD/$b" | cut -c1-12)"
    done
    for k in off on brownout; do
        [[ -n ${SRV_CMD[$k]:-} ]] && echo "- server ($k): \`${SRV_CMD[$k]}\`"
    done
    for k in echo steady; do [[ -n ${TOOL_CMDS[$k]:-} ]] && echo "- load ($k): \`${TOOL_CMDS[$k]% }\`"; done
    for c in "${BROWN_CMDS[@]}"; do echo "- brownout load (both at once): \`${c% }\`"; done
    if has brownout; then
        echo "- brownout config (RESULTS/brownout.json): \`$(tr -s ' \n' ' ' <"$RESULTS/brownout.json")\`"
    fi
    reps=""
    has echo && reps+="echo: $REPS repetitions, "
    has steady && reps+="steady: $STEADY_REPS repetitions, "
    [[ -n $reps ]] && reps+="control off first on odd ones, on first on even ones; medians; "
    has brownout && reps+="brownout: one run per binary"
    echo "- servers on CPU $SERVER_CPU, load tools on CPU $WRK_CPU; fresh server per run; ${reps%; }"
    echo "- raw outputs: $RESULTS"
    echo
    if has echo || has steady; then
    python3 - "$tsv" "$DELAY_S" "$BINARIES" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
delay = float(sys.argv[2])
binaries = sys.argv[3].split()
def num(r, k):
    try: return float(r[k])
    except ValueError: return float("nan")
def vals(mode, binary, scen, f):
    v = [f(r) for r in rows if r["mode"] == mode and r["binary"] == binary and r["scenario"] == scen]
    return [x for x in v if x == x]
def med(v): return statistics.median(v) if v else float("nan")
def rps(r): return num(r, "requests") / (num(r, "duration_us") / 1e6) if num(r, "duration_us") else 0.0
def errs(r): return sum(num(r, k) for k in ("err_connect", "err_read", "err_write", "err_timeout")) + num(r, "non2xx")
def per_req(r, k):
    n = num(r, "requests")
    return num(r, k) / num(r, "clk_tck") * 1e6 / n if n else float("nan")
def cpu_us(r): return per_req(r, "cpu_ticks")
def user_us(r): return per_req(r, "user_ticks")
def busy(r): return num(r, "cpu_ticks") / num(r, "clk_tck") / (num(r, "duration_us") / 1e6) * 100
def tool_us(r):
    n = num(r, "requests")
    return num(r, "tool_cpu_us") / n if n else float("nan")
def fmt(x, nd=0): return "n/a" if x != x else f"{x:,.{nd}f}"
def ratio(a, b): return "n/a" if (a != a or b != b or b == 0) else f"{a / b:.3f}"
def spread(v):
    m = med(v)
    if len(v) < 2 or m != m or m == 0: return "—"
    return f"{(max(v) - min(v)) / abs(m) * 100:.0f} %"
print("| figure | control off | control on (idle) | on/off | spread off / on |")
print("| --- | ---: | ---: | ---: | ---: |")
def row(name, binary, scen, f, nd=0, ratios=True):
    o, n = vals("off", binary, scen, f), vals("on", binary, scen, f)
    if not o and not n: return
    a, b = med(o), med(n)
    print(f"| {name} | {fmt(a, nd)} | {fmt(b, nd)} | {ratio(b, a) if ratios else ''} | "
          f"{spread(o) + ' / ' + spread(n) if ratios else ''} |")
scens = {r["scenario"] for r in rows}
for binary in binaries:
    if "echo" in scens:
        p = f"{binary} /echo (wrk c=100):"
        row(f"{p} server CPU µs/request", binary, "echo", cpu_us, 2)
        row(f"{p} … of which user space µs/request", binary, "echo", user_us, 2)
        row(f"{p} requests/s", binary, "echo", rps)
        row(f"{p} server CPU busy %", binary, "echo", busy)
        row(f"{p} wrk CPU µs/request", binary, "echo", tool_us, 2)
        row(f"{p} errors + non-2xx", binary, "echo", errs, ratios=False)
        row(f"{p} other processes' CPU %", binary, "echo", lambda r: num(r, "other_cpu_pct"), ratios=False)
for binary in binaries:
    if "steady" not in scens: break
    conns = next(r["conns"] for r in rows if r["scenario"] == "steady")
    ideal = int(conns) / delay
    p = f"{binary} /test 1 s c={int(conns):,} steady (h2load --h1):"
    row(f"{p} requests/s ÷ ideal ({ideal:,.0f}/s)", binary, "steady", lambda r: rps(r) / ideal, 3)
    row(f"{p} mean latency ms", binary, "steady", lambda r: num(r, "mean_us") / 1e3, 1)
    row(f"{p} p50 latency ms", binary, "steady", lambda r: num(r, "p50_us") / 1e3, 1)
    row(f"{p} p99 latency ms", binary, "steady", lambda r: num(r, "p99_us") / 1e3, 1)
    row(f"{p} max latency ms", binary, "steady", lambda r: num(r, "max_us") / 1e3, 1)
    row(f"{p} server CPU µs/request", binary, "steady", cpu_us, 1)
    row(f"{p} errors and non-2xx", binary, "steady", errs, ratios=False)
    row(f"{p} other processes' CPU %", binary, "steady", lambda r: num(r, "other_cpu_pct"), ratios=False)
print()
print("Medians of the repetitions (each figure separately); on/off < 1 is better for CPU and "
      "latency, > 1 for requests/s. Spread: (max − min) ÷ median of a side's repetitions — an "
      "on/off ratio closer to 1 than the spread is noise. \"on (idle)\": --control PORT, no "
      "request ever sent to the control port during the run (generation still 1 after it); "
      "answers then carry Server-Timing …gen;desc=1 (also /echo: `Server-Timing: gen;desc=1`). "
      "Server CPU: utime+stime of the server from /proc/PID/stat ÷ requests (tick 10 ms); busy % "
      "= that ÷ run time. Steady: h2load's -D run after its warm-up, latencies over its "
      "per-request log (status 200); CPU per request is over warm-up and run, so it reads high; "
      "requests still waiting when -D ends are not counted. Other processes' CPU: all CPUs' busy "
      "time (/proc/stat, incl. softirq) minus server and load tool, % of one CPU; runs above "
      "OTHER_MAX were repeated (*.noisyN).")
print()
PY
    fi
    if has brownout; then
    python3 - "$RESULTS" "$BINARIES" "$BROWN_FROM" "$BROWN_TO" <<'PY'
import json, re, statistics, sys
res, binaries, d_from, d_to = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4]
def ms(spec):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)?", spec)
    return float(m.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3, None: 1}[m.group(2)]
old0, new0 = ms(d_from), ms(d_to)
other = {l.split()[0]: l.split()[1] for l in open(f"{res}/brownout.cpu.tsv") if l.strip()}
print("Brownout: `/test` " + f"{d_from} → {d_to} → {d_from}" + " by the config's scenario, wrk -c"
      " load plus a 1 request/ms sampler. Times in ms from the scheduled instant S "
      "(scenario.started_at + at). \"Sent\": when the sampler wrote the request; a request keeps "
      "the plan it began with.")
print()
print("| binary | step (at) | server applied (began_at − S) | last old-latency request sent | "
      "first new-latency request sent | out of order | first new-plan answer | wrk: last old / "
      "first new (answer − delay) | p50 latency before → after | within 10 ms |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
notes = []
for b in binaries:
    try:
        st = json.load(open(f"{res}/brownout.{b}.stats.json"))["scenario"]
    except (OSError, ValueError, KeyError, TypeError):
        print(f"| {b} | no /stats scenario | | | | | | | | FAIL |"); continue
    t0 = st["started_at"]
    tl = []
    for line in open(f"{res}/brownout.{b}.timeline.tsv"):
        f = line.rstrip("\n").split("\t")
        if not f[0].isdigit(): 
            if line.startswith("#"): notes.append(f"{b} sampler: {line[2:].strip()}")
            continue
        if f[4] != "200": continue
        tl.append((int(f[1]) / 1e9, int(f[2]) / 1e9, int(f[3]) / 1e3, f[5]))
    wk = []
    for line in open(f"{res}/brownout.{b}.wrk.tsv"):
        f = line.split("\t")
        if len(f) >= 3 and f[1] == "200": wk.append((int(f[0]) / 1e9, f[2].strip()))
    m = re.search(r"^WRKSTATS (.*)$", open(f"{res}/brownout.{b}.wrk.txt").read(), re.M)
    if m:
        w = dict(kv.split("=") for kv in m.group(1).split())
        e = sum(float(w[k]) for k in ("connect", "read", "write", "timeout", "status"))
        notes.append(f"{b} wrk: {float(w['requests']):.0f} requests, {e:.0f} errors + non-2xx, "
                     f"p50 {float(w['p50_us'])/1e3:.1f} ms, max {float(w['max_us'])/1e3:.1f} ms; "
                     f"other processes' CPU during the run {other.get(b, '?')} % of a CPU")
    phases = st["phases"]
    steps = [(i, p) for i, p in enumerate(phases) if i > 0]
    for i, p in steps:
        S = t0 + p["at_s"]
        old, new = (old0, new0) if not p.get("restore") else (new0, old0)
        gap = min(2.0, (p["at_s"] - phases[i - 1]["at_s"]) / 2,
                  ((phases[i + 1]["at_s"] - p["at_s"]) / 2) if i + 1 < len(phases) else 2.0)
        win = [r for r in tl if S - gap <= r[0] < S + gap]
        name = f"{p.get('name', i)} ({p['at_s']:g} s)"
        if p.get("began_at") is None or not win:
            print(f"| {b} | {name} | not begun / no samples | | | | | | | FAIL |"); continue
        applied = (p["began_at"] - S) * 1e3
        is_old = lambda lat: abs(lat - old) < abs(lat - new)
        o = [r for r in win if is_old(r[2])]
        n = [r for r in win if not is_old(r[2])]
        last_old = max(r[0] for r in o) if o else float("nan")
        first_new = min(r[0] for r in n) if n else float("nan")
        ooo = sum(1 for r in o if r[0] > first_new) + sum(1 for r in n if r[0] < last_old)
        # the same split by the plan that answered (Server-Timing dur)
        po = [r for r in win if r[3] != "-" and abs(float(r[3]) - old) < 0.5]
        pn = [r for r in win if r[3] != "-" and abs(float(r[3]) - new) < 0.5]
        if po and pn and (max(r[0] for r in po) != last_old or min(r[0] for r in pn) != first_new):
            notes.append(f"{b} {name}: Server-Timing split differs from the latency split "
                         f"(plan: last old sent {(max(r[0] for r in po) - S) * 1e3:+.2f}, first "
                         f"new {(min(r[0] for r in pn) - S) * 1e3:+.2f} ms)")
        fa = min((r[1] for r in n), default=float("nan"))
        # wrk: no send times; answer time − the delay of the plan that answered (Server-Timing)
        # is about when the request reached the server
        wo = [t - old / 1e3 for t, dur in wk if dur != "-" and abs(float(dur) - old) < 0.5]
        wn = [t - new / 1e3 for t, dur in wk if dur != "-" and abs(float(dur) - new) < 0.5]
        wlo = max((t for t in wo if S - gap <= t < S + gap), default=float("nan"))
        wfn = min((t for t in wn if S - gap <= t < S + gap), default=float("nan"))
        p50o = statistics.median([r[2] for r in o if r[0] < S]) if any(r[0] < S for r in o) else float("nan")
        p50n = statistics.median([r[2] for r in n if r[0] >= S]) if any(r[0] >= S for r in n) else float("nan")
        lo, fn = (last_old - S) * 1e3, (first_new - S) * 1e3
        ok = lo >= -10 and fn <= 10 and ooo == 0
        print(f"| {b} | {name} | {applied:+.2f} | {lo:+.2f} | {fn:+.2f} | {ooo} | "
              f"{(fa - S) * 1e3:+.1f} | {(wlo - S) * 1e3:+.1f} / {(wfn - S) * 1e3:+.1f} | {p50o:.1f} → {p50n:.1f} | "
              f"{'PASS' if ok else 'FAIL'} |")
print()
for n in notes: print(f"- {n}")
print()
print("Old/new latency: a sampled request counts as old when its latency is nearer the old "
      "delay than the new one (the split by Server-Timing's delay;dur is checked to agree). "
      "Out of order: old-latency requests sent after the first new one plus new ones sent "
      "before the last old one, within ±2 s of S. First new-plan answer: when the sampler had "
      "read the first answer with the new delay. wrk (the load, closed loop, its connections "
      "in waves): its answers' arrival (timeline.lua's response() hook) minus the delay of the "
      "plan that answered, i.e. about when the request reached the server; wrk sends in "
      "bursts, so its bracket is wide — the sampler's is the measure. p50 latency: the "
      "sampler's old-latency requests sent in the 2 s before S, new-latency ones after. "
      "PASS: last old and first new send both within S ± 10 ms, none out of order. Timestamps: "
      "CLOCK_REALTIME in the server (/stats), the sampler (Python time.time_ns) and wrk "
      "(timeline.lua, LuaJIT ffi clock_gettime).")
PY
    fi
} >"$RESULTS/summary.md"
cat "$RESULTS/summary.md"
log "raw outputs and summary: $RESULTS"
