#!/usr/bin/env bash
# bench_versions.sh - two builds of slowsrv and slowsrv-h2o side by side, same run, same
# machine: an OLD build directory against a NEW one (e.g. the last release against a branch).
#
# For every measurement, REPS times (medians and the ratio new/old reported), old and new
# alternate (old first on odd repetitions, new first on even ones), each on a freshly started
# server. The load commands are those of bench_delay_echo.sh and bench_upload.sh:
#   echo    GET /echo over HTTP/1.1: wrk -t1 -c100 -d10s --timeout 5s --latency -s stats.lua;
#           server CPU time per request (utime+stime from /proc/PID/stat before/after ÷
#           requests completed) and its user-space part, requests/s
#   steady  GET /test, 1 s delay, 10 000 HTTP/1.1 connections in steady state:
#           h2load --h1 -t1 -c10000 --warm-up-time=15 -D 20 --log-file=…; requests/s ÷ ideal
#           (N / 1 s), mean/p50/p99/max over h2load's per-request log (status 200), errors,
#           server CPU per request (over warm-up and run, so it reads high)
#   h2c     GET /test, 1 s delay, 100 000 waiting h2c streams in steady state (slowsrv-h2o
#           only; bench_h2.sh's wait-h2c-100k-steady row): h2load -t1 -c1000 -m100
#           --warm-up-time=5 -D 15 --log-file=…; the same figures as steady
#   upload  POST /write multipart of 5 KB and 500 KB (bench_upload.sh's post.lua body):
#           wrk -t1 -c50 -d10s --latency -s post.lua URL -- SIZE; requests/s, MB/s, p99,
#           server CPU per request
# Servers: BIN --threads 1 --port 0 --delay 1s (echo, steady, h2c) or --max-body 2G (upload), for
# BIN in slowsrv and slowsrv-h2o of each build, pinned to CPU $SERVER_CPU; the load tools and
# this script on CPU $WRK_CPU. Before measuring, every binary of both builds must answer /echo,
# /test after 1 s, and the exact upload bodies (curl, then a short wrk run checking every
# answer). Each run waits for a quiet host first and is repeated when other processes took
# more than OTHER_MAX % of a CPU during it (lib.sh, as bench_upload.sh).
#
# Not part of the test suite. See tests/bench/README.md. Knobs (environment):
#   OLD=dir NEW=dir    build directories holding slowsrv and slowsrv-h2o (default
#                      OLD=/tmp/slowsrv-old/build, NEW=build-bench, the latter built if missing)
#   REPS=3  MEASURES="echo steady upload" (h2c on request)  BINARIES="slowsrv slowsrv-h2o"
#   ECHO_DUR=10s                 wrk -d for /echo
#   H2C_CONNS=1000 H2C_STREAMS=100 H2C_WARMUP=5 H2C_DUR=15   h2load -c, -m, --warm-up-time, -D (h2c)
#   CONNS=10000 WARMUP=15 STEADY_DUR=20   h2load -c, --warm-up-time and -D for steady /test
#   SIZES="5120 512000" UPLOAD_CONNS=50 UPLOAD_DUR=10s CHECK_DUR=2s   uploads
#   SERVER_CPU=0 WRK_CPU=1  RESULTS=dir (default tests/bench/results/<date>-versions/)
#   QUIET_WAIT=120 QUIET_MAX=10 OTHER_MAX=25 TRIES=3   shared-host checks (lib.sh)
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cmdline="$0${*:+ $*}"
for a in OLD NEW REPS MEASURES BINARIES ECHO_DUR H2C_CONNS H2C_STREAMS H2C_WARMUP H2C_DUR CONNS WARMUP STEADY_DUR SIZES UPLOAD_CONNS UPLOAD_DUR CHECK_DUR SERVER_CPU WRK_CPU RESULTS QUIET_WAIT QUIET_MAX OTHER_MAX TRIES; do
    [[ -n ${!a:-} ]] && cmdline="$a=\"${!a}\" $cmdline"
done

OLD=${OLD:-/tmp/slowsrv-old/build}
NEW=${NEW:-$root/build-bench}
REPS=${REPS:-3}
MEASURES=${MEASURES:-"echo steady upload"}
BINARIES=${BINARIES:-"slowsrv slowsrv-h2o"}
ECHO_DUR=${ECHO_DUR:-10s}        # wrk -d for /echo (bench_delay_echo.sh: 10s)
ECHO_CONNS=100
# steady /test: bench_delay_echo.sh's h2load run (see its comment on the 15 s warm-up)
CONNS=${CONNS:-10000}
WARMUP=${WARMUP:-15}
STEADY_DUR=${STEADY_DUR:-20}
SIZES=${SIZES:-"5120 512000"}
# h2c /test: bench_h2.sh's wait-h2c-100k-steady row
H2C_CONNS=${H2C_CONNS:-1000}
H2C_STREAMS=${H2C_STREAMS:-100}
H2C_WARMUP=${H2C_WARMUP:-5}
H2C_DUR=${H2C_DUR:-15}
UPLOAD_CONNS=${UPLOAD_CONNS:-50}
UPLOAD_DUR=${UPLOAD_DUR:-10s}
CHECK_DUR=${CHECK_DUR:-2s}       # wrk run that checks every upload answer, per binary and size
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
stamp=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$here/results/$stamp-versions}
QUIET_WAIT=${QUIET_WAIT:-120}   # s to wait for an idle host before each run
QUIET_MAX=${QUIET_MAX:-10}     # idle: < this % of one CPU busy
OTHER_MAX=${OTHER_MAX:-25}     # max % of one CPU used by others during a run
TRIES=${TRIES:-3}
DELAY_S=1
MAX_BODY=2G
START_TIMEOUT=10
NOFILE=20000

# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
die() { printf '[bench] FATAL: %s\n' "$*" >&2; exit 1; }

has() { [[ " $MEASURES " == *" $1 "* ]]; }
for m in $MEASURES; do
    [[ $m == echo || $m == steady || $m == h2c || $m == upload ]] || die "unknown measurement '$m' in MEASURES (echo steady h2c upload)"
done
for b in $BINARIES; do
    [[ $b == slowsrv || $b == slowsrv-h2o ]] || die "unknown binary '$b' in BINARIES (slowsrv slowsrv-h2o)"
done

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
command -v python3 >/dev/null 2>&1 || die "python3 is required (summary table)"

missing() { # dir: true if a binary of BINARIES is missing there
    local b
    for b in $BINARIES; do [[ -x $1/$b ]] || return 0; done
    return 1
}
if missing "$NEW"; then
    [[ $(cd "$NEW" 2>/dev/null && pwd) == "$root/build-bench" || $NEW == "$root/build-bench" ]] ||
        die "NEW=$NEW lacks $BINARIES (only the default NEW, $root/build-bench, is built here)"
    log "building slowsrv into $root/build-bench"
    (cd "$root" && cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSLOWSRV_TESTS=OFF >/dev/null &&
        cmake --build build-bench -j2 >/dev/null) || die "slowsrv build failed"
fi
declare -A DIR=([old]=$OLD [new]=$NEW)
for v in old new; do
    for b in $BINARIES; do
        [[ -x ${DIR[$v]}/$b ]] || die "no $b binary in ${DIR[$v]} (${v^^}=…)"
    done
done
for b in $BINARIES; do
    cmp -s "$OLD/$b" "$NEW/$b" && log "note: $OLD/$b and $NEW/$b are identical (an A/A run: ratios show the noise)"
done

ncpu=$(nproc)
((ncpu > SERVER_CPU && ncpu > WRK_CPU)) || die "need CPUs $SERVER_CPU and $WRK_CPU, nproc=$ncpu"
if ! ulimit -n "$NOFILE" 2>/dev/null; then
    log "cannot raise fd limit to $NOFILE (hard limit $(ulimit -Hn)); using it"
    ulimit -n "$(ulimit -Hn)"
fi
if has steady; then
    (($(ulimit -n) > CONNS + 100)) || die "fd limit $(ulimit -n) too low for $CONNS connections"
    ((CONNS <= 10000)) || log "note: CONNS=$CONNS is above slowsrv's --max-connections default (10000); the excess is refused"
fi

# keep this script, its helpers and the load tools off the server CPU
taskset -p -c "$WRK_CPU" $$ >/dev/null

CLK_TCK=$(getconf CLK_TCK)
mkdir -p "$RESULTS"
# never commit results
if [[ $RESULTS == "$here/results/"* ]]; then
    [[ -f $here/results/.gitignore ]] || printf '*\n' >"$here/results/.gitignore"
fi
tmp=$(mktemp -d /tmp/slowsrv-bench-versions.XXXXXX)
tsv=$RESULTS/results.tsv
printf 'rep\tversion\tbinary\tscenario\tsize\tbody_bytes\tconns\trequests\tduration_us\tp50_us\tp99_us\tmax_us\tmean_us\terr_connect\terr_read\terr_write\terr_timeout\tnon2xx\tcpu_ticks\tuser_ticks\tclk_tck\ttool_cpu_us\tother_cpu_pct\ttry\n' >"$tsv"

# ---------------------------------------------------------------- process bookkeeping
# Only PIDs this script started are ever signalled.
declare -A live=()   # pid -> name

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${!live[@]}"; do stop_pid "$pid" "${live[$pid]}"; done
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

post_ok() { # port size: curl POSTs the dumped body, expects the byte count
    local ans
    ans=$(curl -s --max-time 10 -H "Content-Type: $(cat "$tmp/body.$2.ctype")" \
        --data-binary "@$tmp/body.$2" "http://127.0.0.1:$1/write" 2>/dev/null) || return 1
    [[ $ans == "$2" ]] || { log "expected '$2', got '$ans'"; return 1; }
}

cpu_ticks() { # utime+stime of one pid (all threads)
    local line rest f
    read -r line <"/proc/$1/stat" 2>/dev/null || { echo 0; return 0; }
    rest=${line##*) }
    read -ra f <<<"$rest"
    echo $((f[11] + f[12]))   # fields 14 (utime) and 15 (stime)
}

user_ticks() { # utime of one pid (the user-space part of cpu_ticks)
    local line rest f
    read -r line <"/proc/$1/stat" 2>/dev/null || { echo 0; return 0; }
    rest=${line##*) }
    read -ra f <<<"$rest"
    echo "${f[11]}"
}

CHILD_US=0

# ---------------------------------------------------------------- servers
SRV_PID="" SRV_PORT=""
declare -A BANNER=() SRV_ARGS=()

start_server() { # version binary kind(test|upload) tag -> SRV_PID, SRV_PORT
    local ver=$1 bin=$2 kind=$3 err=$tmp/$1.$2.$4.err i args
    if [[ $kind == upload ]]; then
        args=(--threads 1 --port 0 --max-body "$MAX_BODY")
    else
        args=(--threads 1 --port 0 --delay "${DELAY_S}s")
    fi
    SRV_ARGS[$kind]="${args[*]}"
    taskset -c "$SERVER_CPU" "${DIR[$ver]}/$bin" "${args[@]}" 2>"$err" &
    SRV_PID=$!; live[$SRV_PID]="$ver $bin"
    SRV_PORT=""
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        if ! kill -0 "$SRV_PID" 2>/dev/null; then
            cat "$err" >&2; die "$ver $bin exited during startup"
        fi
        # the background job may not have created $err yet
        SRV_PORT=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$err" 2>/dev/null | head -1) || true
        [[ -n $SRV_PORT ]] && break
        sleep 0.1
    done
    [[ -n $SRV_PORT ]] || { cat "$err" >&2; die "$ver $bin printed no listening line within ${START_TIMEOUT}s"; }
    [[ -n ${BANNER[$ver.$bin]:-} ]] || BANNER[$ver.$bin]=$(grep -m1 'listening on' "$err")
    return 0
}

# ---------------------------------------------------------------- load-tool scripts
# stats.lua: bench_delay_echo.sh's done() hook (exact µs), plus the mean
cat >"$tmp/stats.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKSTATS requests=%.0f duration_us=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f mean_us=%.0f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
EOF

# post.lua SIZE [DUMP]: bench_upload.sh's body (same boundary, same LCG bytes), built once in
# init(); DUMP writes it to a file for the curl check.
cat >"$tmp/post.lua" <<'EOF'
local boundary = "------------------------slowsrvbench5f3a9c1e"
local size, body, bad, checked = 0, "", 0, 0

function init(args)
  size = tonumber(args[1] or "5120")
  local t, x = {}, 12345
  for i = 1, size do
    x = (x * 1103515245 + 12345) % 2147483648
    t[i] = string.char(math.floor(x / 65536) % 256)
  end
  local data = table.concat(t)
  assert(not data:find(boundary, 1, true))
  body = "--" .. boundary .. "\r\n" ..
         "Content-Disposition: form-data; name=\"token\"\r\n\r\n" ..
         "bench-0123456789abcdef\r\n" ..
         "--" .. boundary .. "\r\n" ..
         "Content-Disposition: form-data; name=\"data\"; filename=\"data.bin\"\r\n" ..
         "Content-Type: application/octet-stream\r\n\r\n" ..
         data .. "\r\n--" .. boundary .. "--\r\n"
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["Content-Type"] = "multipart/form-data; boundary=" .. boundary
  if args[2] and args[2] ~= "" then
    local f = assert(io.open(args[2], "wb"))
    f:write(body)
    f:close()
    f = assert(io.open(args[2] .. ".ctype", "w"))
    f:write(wrk.headers["Content-Type"])
    f:close()
  end
end

if os.getenv("BENCH_CHECK") == "1" then
  -- checked run only (slower): every answer must be the byte count of "data"
  response = function(status, headers, rbody)
    checked = checked + 1
    if status ~= 200 or rbody ~= tostring(size) then
      if bad < 5 then io.stderr:write(string.format("BAD ANSWER status=%d body=%q\n", status, rbody)) end
      bad = bad + 1
    end
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKSTATS requests=%.0f duration_us=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f mean_us=%.0f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
EOF

# parse out rep version binary scenario size body_bytes conns ticks uticks tool_us other% try
parse_run() {
    python3 - "$@" <<'PY'
import os, re, sys
out, rep, ver, binary, scen, size, body, conns, ticks, uticks, tool, other, tr = sys.argv[1:]
text = open(out, errors="replace").read()
nan = float("nan")
if scen in ("steady", "h2c"):
    # bench_delay_echo.sh's steady state: counts from h2load's report, times from its
    # per-request log (status 200 only; requests still waiting when -D ends are not in it)
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
    dur = os.environ["H2C_DUR_S" if scen == "h2c" else "STEADY_DUR_S"]
    d = {"requests": float(len(lat)), "duration_us": float(dur) * 1e6,
         "p50_us": pct(50), "p99_us": pct(99), "max_us": lat[-1] if lat else nan,
         "mean_us": sum(lat) / len(lat) if lat else nan, "connect": 0.0, "read": done[3],
         "write": 0.0, "timeout": done[4], "status": done[0] - done[1]}
else:
    m = re.search(r"^WRKSTATS (.*)$", text, re.M)
    if not m:
        sys.exit("no WRKSTATS line in " + out)
    d = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
cols = [rep, ver, binary, scen, size, body, conns] + ["%.0f" % d[k] if d[k] == d[k] else "nan" for k in
        ("requests", "duration_us", "p50_us", "p99_us", "max_us", "mean_us", "connect", "read",
         "write", "timeout", "status")] + [ticks, uticks, os.environ["CLK"], tool, other, tr]
print("\t".join(cols))
PY
}

# ---------------------------------------------------------------- one measured run
declare -A TOOL_CMDS=()
# run rep version binary scenario [size]: fresh server, load, figures into results.tsv;
# repeated (up to TRIES) when other processes disturbed it
run() {
    local rep=$1 ver=$2 bin=$3 scen=$4 size=${5:-} try kind=test out cmd key conns body=0
    local c0 c1 u0 u1 w0 w1 b0 b1 t0 t1 other
    [[ $scen == upload ]] && kind=upload
    key=$scen${size:+.$size}
    out=$RESULTS/$key.$bin.$ver.rep$rep.txt
    for ((try = 1; ; try++)); do
        wait_quiet
        start_server "$ver" "$bin" "$kind" "$rep.$key.$try"
        case $scen in
        echo)
            conns=$ECHO_CONNS
            cmd=(taskset -c "$WRK_CPU" wrk -t1 -c "$conns" -d "$ECHO_DUR" --timeout 5s --latency
                -s "$tmp/stats.lua" "http://127.0.0.1:$SRV_PORT/echo") ;;
        steady)
            # h2load, one thread, HTTP/1.1, the warm-up left out; its log has one line per request
            conns=$CONNS
            cmd=(taskset -c "$WRK_CPU" h2load --h1 -t1 -c "$conns" --warm-up-time="$WARMUP"
                -D "$STEADY_DUR" --log-file="$out.log" "http://127.0.0.1:$SRV_PORT/test") ;;
        h2c)
            # h2load, one thread, h2c: H2C_CONNS × H2C_STREAMS requests waiting at once
            conns=$((H2C_CONNS * H2C_STREAMS))
            cmd=(taskset -c "$WRK_CPU" h2load -t1 -c "$H2C_CONNS" -m "$H2C_STREAMS" --warm-up-time="$H2C_WARMUP"
                -D "$H2C_DUR" --log-file="$out.log" "http://127.0.0.1:$SRV_PORT/test") ;;
        upload)
            conns=$UPLOAD_CONNS
            body=$(stat -c %s "$tmp/body.$size")
            cmd=(taskset -c "$WRK_CPU" wrk -t1 -c "$conns" -d "$UPLOAD_DUR" --latency -s "$tmp/post.lua"
                "http://127.0.0.1:$SRV_PORT/write" -- "$size") ;;
        esac
        [[ -n ${TOOL_CMDS[$key]:-} ]] ||
            TOOL_CMDS[$key]=$(printf '%s ' "${cmd[@]:3}" | sed "s#$tmp/##g; s#$RESULTS/#RESULTS/#g; s#127.0.0.1:$SRV_PORT#127.0.0.1:PORT#")
        sleep 1
        log "rep $rep $ver $bin $key$( ((try > 1)) && echo " (try $try)"): ${cmd[*]:3}"
        child_cpu_us; w0=$CHILD_US
        c0=$(cpu_ticks "$SRV_PID"); u0=$(user_ticks "$SRV_PID")
        sys_busy; b0=$SYS_BUSY; t0=$(date +%s%N)
        "${cmd[@]}" >"$out" 2>&1 || log "${cmd[3]} exited non-zero ($ver $bin $key), see $out"
        sys_busy; b1=$SYS_BUSY; t1=$(date +%s%N)
        c1=$(cpu_ticks "$SRV_PID"); u1=$(user_ticks "$SRV_PID")
        child_cpu_us; w1=$CHILD_US
        kill -0 "$SRV_PID" 2>/dev/null || die "$ver $bin died during $key (see $out)"
        # a server that stalled or broke under load fails the next plain request
        case $scen in
        upload) post_ok "$SRV_PORT" "$size" || die "$ver $bin: wrong or no answer right after the $size upload run" ;;
        *) http_ok "http://127.0.0.1:$SRV_PORT/echo" OK || die "$ver $bin: /echo wrong or silent after $key" ;;
        esac
        stop_pid "$SRV_PID" "$ver $bin"
        # CPU used by anything but this server and the load tool, % of one CPU
        other=$(( ((b1 - b0) - (c1 - c0) - (w1 - w0) * CLK_TCK / 1000000) * 100 * 1000000000 / CLK_TCK / (t1 - t0) ))
        echo "# version=$ver binary=${DIR[$ver]}/$bin pid=$SRV_PID cpu_ticks=$((c1 - c0)) user_ticks=$((u1 - u0)) clk_tck=$CLK_TCK tool_cpu_us=$((w1 - w0)) other_cpu_pct=$other try=$try" >>"$out"
        if ((other > OTHER_MAX && try < TRIES)); then
            log "other processes used $other % of a CPU during this run (> $OTHER_MAX): repeating it"
            mv "$out" "$out.noisy$try"
            [[ $scen == steady || $scen == h2c ]] && rm -f "$out.log"
            sleep 2
            continue
        fi
        CLK=$CLK_TCK STEADY_DUR_S=$STEADY_DUR H2C_DUR_S=$H2C_DUR parse_run "$out" "$rep" "$ver" "$bin" "$scen" "${size:--}" "$body" "$conns" \
            "$((c1 - c0))" "$((u1 - u0))" "$((w1 - w0))" "$other" "$try" >>"$tsv"
        [[ $scen == steady || $scen == h2c ]] && { gzip -f "$out.log" || true; }   # per-request logs are large
        break
    done
    # let TIME_WAIT/closing sockets of the big runs settle
    if [[ $scen == steady || $scen == h2c ]]; then sleep 2; else sleep 1; fi
}

# ---------------------------------------------------------------- preflight
log "results: $RESULTS"
log "old: $OLD; new: $NEW"
if has upload; then
    # dump the exact body wrk sends (1 s, 1 connection) for the curl checks
    first=${BINARIES%% *}
    for size in $SIZES; do
        start_server new "$first" upload dump
        taskset -c "$WRK_CPU" wrk -t1 -c1 -d1s -s "$tmp/post.lua" "http://127.0.0.1:$SRV_PORT/write" \
            -- "$size" "$tmp/body.$size" >"$RESULTS/dump.$size.txt" 2>&1 || die "wrk dump run failed"
        stop_pid "$SRV_PID" "new $first"
        [[ -s $tmp/body.$size ]] || die "post.lua wrote no body for $size"
        cp "$tmp/body.$size.ctype" "$RESULTS/body.$size.content-type"
        log "body for $size: $(stat -c %s "$tmp/body.$size") bytes, $(cat "$tmp/body.$size.ctype")"
    done
fi
for ver in old new; do
    for bin in $BINARIES; do
        start_server "$ver" "$bin" test pre
        http_ok "http://127.0.0.1:$SRV_PORT/echo" OK || die "$ver $bin: GET /echo did not answer OK"
        t0=$(date +%s%N)
        http_ok "http://127.0.0.1:$SRV_PORT/test" ok || die "$ver $bin: GET /test did not answer ok"
        ms=$((($(date +%s%N) - t0) / 1000000))
        ((ms >= DELAY_S * 1000 - 5 && ms < DELAY_S * 1000 + 500)) || die "$ver $bin: GET /test took ${ms} ms"
        stop_pid "$SRV_PID" "$ver $bin"
        log "preflight $ver $bin: /echo OK, /test ok in ${ms} ms"
        has upload || continue
        start_server "$ver" "$bin" upload pre
        for size in $SIZES; do
            post_ok "$SRV_PORT" "$size" || die "$ver $bin: POST /write of $size bytes did not answer $size"
            out=$RESULTS/check.$bin.$ver.$size.txt
            BENCH_CHECK=1 taskset -c "$WRK_CPU" wrk -t1 -c "$UPLOAD_CONNS" -d "$CHECK_DUR" -s "$tmp/post.lua" \
                "http://127.0.0.1:$SRV_PORT/write" -- "$size" >"$out" 2>&1 || die "checked wrk run failed ($ver $bin $size)"
            if grep -q 'BAD ANSWER' "$out"; then
                cat "$out" >&2; die "$ver $bin: wrong answers under load ($size bytes), see $out"
            fi
            grep -q '^WRKSTATS requests=[1-9]' "$out" || { cat "$out" >&2; die "$ver $bin: checked run completed no request"; }
            grep -q 'status=0 ' "$out" || { cat "$out" >&2; die "$ver $bin: non-2xx answers in the checked run"; }
            log "preflight $ver $bin $size: curl answered $size; $(sed -n 's/^WRKSTATS \(requests=[0-9]*\).*/\1/p' "$out") checked answers all $size"
        done
        kill -0 "$SRV_PID" 2>/dev/null || die "$ver $bin died during preflight"
        stop_pid "$SRV_PID" "$ver $bin"
    done
done

# ---------------------------------------------------------------- runs
for ((rep = 1; rep <= REPS; rep++)); do
    if ((rep % 2)); then order=(old new); else order=(new old); fi
    for scen in $MEASURES; do
        for bin in $BINARIES; do
            if [[ $scen == upload ]]; then
                for size in $SIZES; do
                    for ver in "${order[@]}"; do run "$rep" "$ver" "$bin" upload "$size"; done
                done
            elif [[ $scen == h2c && $bin != slowsrv-h2o ]]; then
                continue   # slowsrv speaks no HTTP/2
            else
                for ver in "${order[@]}"; do run "$rep" "$ver" "$bin" "$scen"; done
            fi
        done
    done
done

# ---------------------------------------------------------------- summary
wrk_v=$( (wrk --version 2>&1 || true) | head -1 | sed 's/ *Copyright.*//')   # exits 1
h2load_v=$(h2load --version 2>&1 | head -1)
describe() { # dir -> "git REV (+ N uncommitted source changes)" of the tree holding dir
    local top rev dirty
    top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null) || { echo "not in a git tree"; return 0; }
    rev=$(git -C "$top" log -1 --format='%h %s' 2>/dev/null | cut -c1-72)
    dirty=$(git -C "$top" status --porcelain -- servers common CMakeLists.txt 2>/dev/null | wc -l)
    echo "git $rev$( ((dirty)) && echo " + $dirty uncommitted source change(s)")"
}
{
    echo "## slowsrv versions: OLD vs NEW build, side by side"
    echo
    echo "- command: \`$cmdline\` (in $root)"
    echo "- date: $(date -Is)"
    echo "- host: nproc=$ncpu, $(uname -srm), fd limit $(ulimit -n); load average before the summary: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- tools: $wrk_v; $h2load_v"
    for v in old new; do
        echo "- ${v}: \`${DIR[$v]}\` (its source tree now, not necessarily at build time: $(describe "${DIR[$v]}"))"
        for b in $BINARIES; do
            echo "  - $b: $("${DIR[$v]}/$b" --version 2>&1 | head -1), built $(date -r "${DIR[$v]}/$b" -Is), sha256 $(sha256sum "${DIR[$v]}/$b" | cut -c1-12); ${BANNER[$v.$b]:-}"
        done
    done
    for k in test upload; do
        [[ -n ${SRV_ARGS[$k]:-} ]] && echo "- servers ($k): \`BIN ${SRV_ARGS[$k]}\`"
    done
    for k in "${!TOOL_CMDS[@]}"; do echo "- load ($k): \`${TOOL_CMDS[$k]}\`"; done | sort
    echo "- servers on CPU $SERVER_CPU, load tools on CPU $WRK_CPU; fresh server per run; $REPS repetitions, old first on odd ones, new first on even ones; medians"
    echo "- raw outputs: $RESULTS"
    echo
    python3 - "$tsv" "$DELAY_S" "$BINARIES" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
delay = float(sys.argv[2])
binaries = sys.argv[3].split()
def num(r, k):
    try: return float(r[k])
    except ValueError: return float("nan")
def vals(ver, binary, scen, size, f):
    v = [f(r) for r in rows if r["version"] == ver and r["binary"] == binary
         and r["scenario"] == scen and r["size"] == size]
    return [x for x in v if x == x]
def med(v): return statistics.median(v) if v else float("nan")
def rps(r): return num(r, "requests") / (num(r, "duration_us") / 1e6) if num(r, "duration_us") else 0.0
def mbps(r): return rps(r) * num(r, "body_bytes") / 1e6
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
def fmt(x, nd=0):
    if x != x: return "n/a"
    return f"{x:,.{nd}f}"
def ratio(a, b):
    return "n/a" if (a != a or b != b or b == 0) else f"{a / b:.3f}"
def spread(v):
    m = med(v)
    if len(v) < 2 or m != m or m == 0: return "—"
    return f"{(max(v) - min(v)) / abs(m) * 100:.0f} %"
print("| figure | old | new | new/old | spread old / new |")
print("| --- | ---: | ---: | ---: | ---: |")
def row(name, binary, scen, size, f, nd=0, ratios=True):
    o, n = vals("old", binary, scen, size, f), vals("new", binary, scen, size, f)
    if not o and not n: return
    a, b = med(o), med(n)
    sp = f"{spread(o)} / {spread(n)}" if ratios else ""
    print(f"| {name} | {fmt(a, nd)} | {fmt(b, nd)} | {ratio(b, a) if ratios else ''} | {sp} |")
scens = {r["scenario"] for r in rows}
for binary in binaries:
    if "echo" in scens:
        p = f"{binary} /echo (wrk c=100):"
        row(f"{p} server CPU µs/request", binary, "echo", "-", cpu_us, 2)
        row(f"{p} … of which user space µs/request", binary, "echo", "-", user_us, 2)
        row(f"{p} requests/s", binary, "echo", "-", rps)
        row(f"{p} server CPU busy %", binary, "echo", "-", busy)
        row(f"{p} wrk CPU µs/request", binary, "echo", "-", tool_us, 2)
        row(f"{p} errors + non-2xx", binary, "echo", "-", errs, ratios=False)
        row(f"{p} other processes' CPU %", binary, "echo", "-", lambda r: num(r, "other_cpu_pct"), ratios=False)
def latency_rows(p, binary, scen, cpu_nd):
    row(f"{p} p50 latency ms", binary, scen, "-", lambda r: num(r, "p50_us") / 1e3, 1)
    row(f"{p} p99 latency ms", binary, scen, "-", lambda r: num(r, "p99_us") / 1e3, 1)
    row(f"{p} max latency ms", binary, scen, "-", lambda r: num(r, "max_us") / 1e3, 1)
    row(f"{p} server CPU µs/request", binary, scen, "-", cpu_us, cpu_nd)
    row(f"{p} errors and non-2xx", binary, scen, "-", errs, ratios=False)
    row(f"{p} other processes' CPU %", binary, scen, "-", lambda r: num(r, "other_cpu_pct"), ratios=False)
for binary in binaries:
    for conns in sorted({r["conns"] for r in rows if r["scenario"] == "steady"}, key=int):
        ideal = int(conns) / delay
        sub = [r for r in rows if r["scenario"] == "steady" and r["conns"] == conns]
        if not any(r["binary"] == binary for r in sub): continue
        p = f"{binary} /test 1 s c={int(conns):,} steady (h2load --h1):"
        row(f"{p} requests/s ÷ ideal ({ideal:,.0f}/s)", binary, "steady", "-", lambda r: rps(r) / ideal, 3)
        row(f"{p} mean latency ms", binary, "steady", "-", lambda r: num(r, "mean_us") / 1e3, 1)
        latency_rows(p, binary, "steady", 1)
for binary in binaries:
    sub = [r for r in rows if r["scenario"] == "h2c" and r["binary"] == binary]
    if not sub: continue
    streams = int(sub[0]["conns"])
    ideal = streams / delay
    p = f"{binary} /test 1 s h2c, {streams:,} waiting streams, steady:"
    row(f"{p} requests/s ÷ ideal ({ideal:,.0f}/s)", binary, "h2c", "-", lambda r: rps(r) / ideal, 3)
    latency_rows(p, binary, "h2c", 2)
sizes = sorted({r["size"] for r in rows if r["scenario"] == "upload"}, key=int)
for binary in binaries:
    for size in sizes:
        n = int(size)
        label = f"{n // 1024} KB" if n % 1024 == 0 else f"{n} B"
        c = next((r["conns"] for r in rows if r["scenario"] == "upload"), "?")
        p = f"{binary} POST /write {label} (wrk c={c}):"
        row(f"{p} requests/s", binary, "upload", size, rps)
        row(f"{p} MB/s of request body", binary, "upload", size, mbps, 1)
        row(f"{p} server CPU µs/request", binary, "upload", size, cpu_us, 1)
        row(f"{p} server CPU busy %", binary, "upload", size, busy)
        row(f"{p} p99 latency ms", binary, "upload", size, lambda r: num(r, "p99_us") / 1e3, 2)
        row(f"{p} errors + non-2xx", binary, "upload", size, errs, ratios=False)
        row(f"{p} other processes' CPU %", binary, "upload", size, lambda r: num(r, "other_cpu_pct"), ratios=False)
print()
print("Medians of the repetitions (each figure separately); new/old < 1 is better for CPU and "
      "latency, > 1 for requests/s. Spread: (max − min) ÷ median of the repetitions — a "
      "new/old ratio closer to 1 than the spread is noise. Server CPU: utime+stime of the "
      "server process from /proc/PID/stat over the run ÷ requests completed (tick resolution "
      "10 ms); busy % = that ÷ run time (100 % = its core is saturated, so requests/s is the "
      "server's capacity, otherwise compare CPU per request). Steady state: h2load's -D run "
      "after its warm-up, latencies over its per-request log (status 200); its CPU per request "
      "is over warm-up and run ÷ requests after the warm-up, so it reads high; a perfect 1 s "
      "server's requests/s ÷ ideal is below 1 because requests still waiting when -D ends are "
      "not counted. Other processes' CPU: all CPUs' busy time (/proc/stat, incl. softirq) "
      "minus server and load tool, % of one CPU; runs above OTHER_MAX were repeated "
      "(see *.noisyN).")
PY
} >"$RESULTS/summary.md"
cat "$RESULTS/summary.md"
log "raw outputs and summary: $RESULTS"
