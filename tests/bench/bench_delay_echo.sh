#!/usr/bin/env bash
# bench_delay_echo.sh - slowsrv next to nginx (+ echo module), same run, same machine.
#
# Measures, for both servers, REPS times (medians reported):
#   1. GET /test (1 s delay) at 1 000 and 10 000 connections (wrk -t1 --latency --timeout 5s):
#      requests/s as a fraction of ideal (N conns / 1 s), p50/p99/max latency, socket errors,
#      server RSS while the connections wait (max of /proc/PID/status VmRSS samples) and RSS per
#      waiting connection ((RSS under load - idle RSS) / N).
#      At 5 000+ connections (here and in 2.) also slowsrv with --max-request-line 1K
#      --max-header-size 1K ("slowsrv-1k": libmicrohttpd's per-connection pool shrinks with the
#      limits).
#   2. The same /test at the largest connection count in steady state: h2load --h1 -t1 with a
#      WARMUP-second warm-up (the opening burst of connects and first requests excluded), then
#      STEADY_DUR seconds; p50/p99/max from h2load's per-request log (wrk cannot leave out a
#      warm-up, and its whole-run figures above include the opening burst).
#   3. GET /echo at 100 connections: requests/s and server CPU time per request
#      (utime+stime from /proc/PID/stat, before/after, / requests completed).
# Each server (one event-loop thread / one worker) is pinned to CPU $SERVER_CPU, wrk and this
# script to CPU $WRK_CPU. Every measurement uses freshly started servers, so idle RSS is a real
# baseline and no memory retained from an earlier run skews RSS per connection.
#
# Not part of the test suite. See tests/bench/README.md. Knobs (environment):
#   SLOWSRV=path     slowsrv binary (default: build-bench/slowsrv, built if missing)
#   REPS=3           repetitions per measurement (medians are reported)
#   CONNS="1000 10000"   connection counts for /test
#   SERVER_CPU=0 WRK_CPU=1
#   RESULTS=dir      where raw outputs go (default tests/bench/results/<date>/, git-ignored)
#   TEST_DUR=10s BIG_DUR=12s   wrk -d for /test (BIG_DUR at 5 000+ connections)
#   SLOWSRV_EXTRA="" extra slowsrv options (e.g. "--model poll")
#   WARMUP=15 STEADY_DUR=20  h2load --warm-up-time and -D for the steady-state /test run
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cmdline="$0${*:+ $*}"
for a in REPS CONNS TEST_DUR BIG_DUR WARMUP STEADY_DUR SERVER_CPU WRK_CPU SLOWSRV SLOWSRV_EXTRA RESULTS; do
    [[ -n ${!a:-} ]] && cmdline="$a=\"${!a}\" $cmdline"
done

REPS=${REPS:-3}
CONNS=${CONNS:-"1000 10000"}
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
SLOWSRV=${SLOWSRV:-$root/build-bench/slowsrv}
SLOWSRV_EXTRA=${SLOWSRV_EXTRA:-}
stamp=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$here/results/$stamp}
TEST_DUR=${TEST_DUR:-10s}   # wrk -d for /test below 5 000 connections
BIG_DUR=${BIG_DUR:-12s}     # wrk -d for /test at 5 000+ connections (connect phase)
# h2load --warm-up-time and -D for the steady-state /test run, seconds. At 10 000 HTTP/1.1
# connections the waves take 10-15 s to settle (p99 per 5 s window, both servers: ~1150 ms in
# the first, ~1025 in the second, 1004-1016 from the third on), so the warm-up is 15 s.
WARMUP=${WARMUP:-15}
STEADY_DUR=${STEADY_DUR:-20}
SMALL_LIMITS="--max-request-line 1K --max-header-size 1K"   # slowsrv-1k
DELAY_S=1            # /test delay on both servers, seconds
ECHO_CONNS=100
ECHO_DUR=10s
BACKLOG=4096         # slowsrv's listen backlog (servers/mhd/server.c); nginx defaults to 511
START_TIMEOUT=10     # seconds a server may take to start
NOFILE=20000

# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
die() { printf '[bench] FATAL: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- prerequisites
need_pkgs=()
command -v nginx >/dev/null 2>&1 || need_pkgs+=(nginx)
[[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ]] || need_pkgs+=(libnginx-mod-http-echo)
command -v wrk >/dev/null 2>&1 || need_pkgs+=(wrk)
command -v h2load >/dev/null 2>&1 || need_pkgs+=(nghttp2-client)
command -v taskset >/dev/null 2>&1 || need_pkgs+=(util-linux)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
if ((${#need_pkgs[@]})); then
    log "installing missing packages: ${need_pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_pkgs[@]}" ||
        die "apt-get install ${need_pkgs[*]} failed"
fi
command -v python3 >/dev/null 2>&1 || die "python3 is required (free port, summary table)"
NGINX=$(command -v nginx)
ECHO_MOD=/usr/lib/nginx/modules/ngx_http_echo_module.so

if [[ ! -x $SLOWSRV ]]; then
    log "building slowsrv into $root/build-bench"
    (cd "$root" && cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSLOWSRV_TESTS=OFF >/dev/null &&
        cmake --build build-bench -j2 >/dev/null) || die "slowsrv build failed"
fi
[[ -x $SLOWSRV ]] || die "no slowsrv binary at $SLOWSRV"

ncpu=$(nproc)
((ncpu > SERVER_CPU && ncpu > WRK_CPU)) || die "need CPUs $SERVER_CPU and $WRK_CPU, nproc=$ncpu"

if ! ulimit -n "$NOFILE" 2>/dev/null; then
    hard=$(ulimit -Hn)
    log "cannot raise fd limit to $NOFILE (hard limit $hard); using $hard"
    ulimit -n "$hard"
fi
for n in $CONNS; do
    (($(ulimit -n) > n + 100)) || die "fd limit $(ulimit -n) too low for $n connections"
done

# keep this script, its samplers and wrk off the server CPU
taskset -p -c "$WRK_CPU" $$ >/dev/null

CLK_TCK=$(getconf CLK_TCK)
mkdir -p "$RESULTS"
# never commit results
if [[ $RESULTS == "$here/results/"* ]]; then
    [[ -f $here/results/.gitignore ]] || printf '*\n' >"$here/results/.gitignore"
fi
tmp=$(mktemp -d /tmp/slowsrv-bench.XXXXXX)
tsv=$RESULTS/results.tsv
printf 'rep\tserver\tscenario\tconns\trequests\tduration_us\tp50_us\tp99_us\tmax_us\terr_connect\terr_read\terr_write\terr_timeout\tnon2xx\trss_idle_kib\trss_load_kib\trss_after_kib\tcpu_ticks\tclk_tck\n' >"$tsv"

# ---------------------------------------------------------------- process bookkeeping
# Only PIDs this script started are ever signalled.
declare -A live=()   # pid -> name
sampler_pid=""


cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    [[ -n $sampler_pid ]] && kill "$sampler_pid" 2>/dev/null || true
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

# ---------------------------------------------------------------- servers
SS_PID="" SS_PORT="" S1_PID="" S1_PORT="" NG_PID="" NG_PORT=""

start_slowsrv() { # tag [extra options]
    local err=$tmp/slowsrv.$1.err i
    shift
    # shellcheck disable=SC2086
    taskset -c "$SERVER_CPU" "$SLOWSRV" --threads 1 --port 0 --delay "${DELAY_S}s" $SLOWSRV_EXTRA "$@" 2>"$err" &
    SS_PID=$!; live[$SS_PID]=slowsrv
    SS_PORT=""
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        if ! kill -0 "$SS_PID" 2>/dev/null; then
            cat "$err" >&2; die "slowsrv exited during startup"
        fi
        SS_PORT=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$err" | head -1)
        [[ -n $SS_PORT ]] && break
        sleep 0.1
    done
    [[ -n $SS_PORT ]] || { cat "$err" >&2; die "slowsrv printed no listening line within ${START_TIMEOUT}s"; }
    http_ok "http://127.0.0.1:$SS_PORT/echo" OK || die "slowsrv: GET /echo did not answer OK"
    [[ -z ${SS_BANNER:-} ]] && SS_BANNER=$(grep -m1 'listening on' "$err")
    return 0
}

start_slowsrv_1k() { # slowsrv with the small header limits, as S1_PID/S1_PORT
    local pid=$SS_PID port=$SS_PORT
    # shellcheck disable=SC2086
    start_slowsrv "$1.1k" $SMALL_LIMITS
    S1_PID=$SS_PID S1_PORT=$SS_PORT SS_PID=$pid SS_PORT=$port
}

server_of() { # name -> "pid port"
    case $1 in
    slowsrv) echo "$SS_PID $SS_PORT" ;;
    slowsrv-1k) echo "$S1_PID $S1_PORT" ;;
    *) echo "$NG_PID $NG_PORT" ;;
    esac
}

start_nginx() {
    local d=$tmp/nginx.$1 i
    mkdir -p "$d/logs" "$d/tmp"
    NG_PORT=$(free_port)
    cat >"$d/nginx.conf" <<EOF
load_module $ECHO_MOD;
worker_processes 1;
worker_rlimit_nofile $NOFILE;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections $NOFILE; }
http {
    access_log off;
    default_type text/plain;
    keepalive_requests 100000000;  # default 1000 would make nginx (not slowsrv) reconnect
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    server {
        listen 127.0.0.1:$NG_PORT backlog=$BACKLOG;
        location = /test { echo_sleep $DELAY_S; echo -n ok; }
        location = /echo { return 200 "OK"; }
    }
}
EOF
    taskset -c "$SERVER_CPU" "$NGINX" -p "$d/" -e "$d/logs/error.log" -c "$d/nginx.conf" \
        -g 'daemon off;' 2>"$d/stderr" &
    NG_PID=$!; live[$NG_PID]=nginx
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        if ! kill -0 "$NG_PID" 2>/dev/null; then
            cat "$d/stderr" "$d/logs/error.log" >&2 2>/dev/null; die "nginx exited during startup"
        fi
        http_ok "http://127.0.0.1:$NG_PORT/echo" OK && return 0
        sleep 0.1
    done
    cat "$d/stderr" "$d/logs/error.log" >&2 2>/dev/null
    die "nginx did not answer on port $NG_PORT within ${START_TIMEOUT}s"
}

pids_of() { # server-pid -> the pid and its children (nginx: master + worker)
    local p=$1 c
    printf '%s\n' "$p"
    if [[ -r /proc/$p/task/$p/children ]]; then
        for c in $(cat "/proc/$p/task/$p/children"); do printf '%s\n' "$c"; done
    else
        pgrep -P "$p" || true
    fi
}

cpu_ticks() { # sum of utime+stime over pids
    local p line rest f s=0
    for p; do
        read -r line <"/proc/$p/stat" 2>/dev/null || continue
        rest=${line##*) }
        read -ra f <<<"$rest"
        s=$((s + f[11] + f[12]))   # fields 14 (utime) and 15 (stime)
    done
    echo "$s"
}

cat >"$tmp/stats.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKSTATS requests=%.0f duration_us=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
EOF

WRK_SEEN_CMDS=()
# measure rep server scenario conns path duration
measure() {
    local rep=$1 srv=$2 scen=$3 conns=$4 path=$5 dur=$6 pid port out pids idle load after c0 c1 stop
    read -r pid port < <(server_of "$srv")
    mapfile -t pids < <(pids_of "$pid")
    out=$RESULTS/wrk.$scen.$srv.rep$rep.txt
    local wrk_cmd=(taskset -c "$WRK_CPU" wrk -t1 -c "$conns" -d "$dur" --timeout 5s --latency
        -s "$tmp/stats.lua" "http://127.0.0.1:$port$path")
    local steady=0
    if [[ $scen == steady* ]]; then
        # h2load, one thread, HTTP/1.1, the warm-up left out; its log has one line per request
        steady=1
        out=$RESULTS/h2load.$scen.$srv.rep$rep.txt
        wrk_cmd=(taskset -c "$WRK_CPU" h2load --h1 -t1 -c "$conns" --warm-up-time="$WARMUP"
            -D "$dur" --log-file="$out.log" "http://127.0.0.1:$port$path")
    fi
    ((rep == 1)) && [[ $srv == slowsrv ]] && WRK_SEEN_CMDS+=("${wrk_cmd[*]/$tmp\/stats.lua/stats.lua}")
    sleep 1
    idle=$(rss_kib "${pids[@]}")
    stop=$tmp/sampling; : >"$stop"; echo "$idle" >"$tmp/rss.max"
    sampler "$tmp/rss.max" "$stop" "${pids[@]}" &
    sampler_pid=$!
    c0=$(cpu_ticks "${pids[@]}")
    log "rep $rep $srv $scen: ${wrk_cmd[*]:3}"
    "${wrk_cmd[@]}" >"$out" 2>&1 || log "${wrk_cmd[3]} exited non-zero ($srv $scen), see $out"
    c1=$(cpu_ticks "${pids[@]}")
    rm -f "$stop"; wait "$sampler_pid" 2>/dev/null || true; sampler_pid=""
    load=$(cat "$tmp/rss.max")
    after=$(rss_kib "${pids[@]}")
    kill -0 "$pid" 2>/dev/null || die "$srv died during $scen (see $out)"
    {
        echo "# server=$srv pids=${pids[*]} rss_idle_kib=$idle rss_load_max_kib=$load rss_after_kib=$after cpu_ticks=$((c1 - c0)) clk_tck=$CLK_TCK"
    } >>"$out"
    # parse: the Lua line gives exact microseconds; fall back to wrk's text report
    python3 - "$out" "$rep" "$srv" "$scen" "$conns" "$idle" "$load" "$after" "$((c1 - c0))" "$CLK_TCK" "$steady" "$dur" >>"$tsv" <<'PY'
import re, sys
out, rep, srv, scen, conns, idle, load, after, ticks, clk, steady, dur = sys.argv[1:]
text = open(out, errors="replace").read()
unit = {"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}
def t(v):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", v.strip())
    return float(m.group(1)) * unit[m.group(2)] if m else float("nan")
d = {}
m = re.search(r"^WRKSTATS (.*)$", text, re.M)
if steady == "1":
    # h2load: counts from its report, times from its per-request log (status 200 only; a
    # request still waiting when -D ends is not in it)
    lat = []
    for line in open(out + ".log", errors="replace"):
        f = line.split()
        if len(f) >= 3 and f[1] == "200":
            lat.append(float(f[2]))
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p / 100))] if lat else float("nan")
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text)
    done = [float(x) for x in m.groups()] if m else [0.0] * 5
    d = {"requests": float(len(lat)), "duration_us": float(dur) * 1e6, "p50_us": pct(50),
         "p99_us": pct(99), "max_us": lat[-1] if lat else float("nan"), "connect": 0.0,
         "read": done[3], "write": 0.0, "timeout": done[4], "status": done[0] - done[1]}
elif m:
    d = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
else:
    m = re.search(r"(\d+) requests in ([0-9.]+\w+)", text)
    d["requests"] = float(m.group(1)) if m else 0.0
    d["duration_us"] = t(m.group(2)) if m else float("nan")
    m = re.search(r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
    d["max_us"] = t(m.group(3)) if m else float("nan")
    for p, k in (("50", "p50_us"), ("99", "p99_us")):
        m = re.search(r"^\s*%s%%\s+(\S+)" % p, text, re.M)
        d[k] = t(m.group(1)) if m else float("nan")
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    for i, k in enumerate(("connect", "read", "write", "timeout")):
        d[k] = float(m.group(i + 1)) if m else 0.0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    d["status"] = float(m.group(1)) if m else 0.0
cols = [rep, srv, scen, conns] + ["%.0f" % d[k] for k in
        ("requests", "duration_us", "p50_us", "p99_us", "max_us", "connect", "read", "write",
         "timeout", "status")] + [idle, load, after, ticks, clk]
print("\t".join(cols))
PY
    ((steady)) && { gzip -f "$out.log" || true; }   # per-request logs are large
    return 0
}

# ---------------------------------------------------------------- preflight
log "results: $RESULTS"
start_slowsrv pre; start_nginx pre
for s in "slowsrv $SS_PORT" "nginx $NG_PORT"; do
    set -- $s
    t0=$(date +%s%N)
    http_ok "http://127.0.0.1:$2/test" ok || die "$1: GET /test did not answer ok"
    ms=$((($(date +%s%N) - t0) / 1000000))
    ((ms >= DELAY_S * 1000 - 5 && ms < DELAY_S * 1000 + 500)) || die "$1: GET /test took ${ms} ms"
    log "preflight $1: /test ok in ${ms} ms, /echo OK"
done
stop_pid "$SS_PID" slowsrv; stop_pid "$NG_PID" nginx

# ---------------------------------------------------------------- runs
scenarios=()
for n in $CONNS; do scenarios+=("test$n"); done
big=0
for n in $CONNS; do ((n > big)) && big=$n; done
scenarios+=("steady$big" echo)
for ((rep = 1; rep <= REPS; rep++)); do
    if ((rep % 2)); then order=(slowsrv nginx); else order=(nginx slowsrv); fi
    for scen in "${scenarios[@]}"; do
        start_slowsrv "$rep.$scen"; start_nginx "$rep.$scen"
        srvs=("${order[@]}")
        n=${scen#test}; n=${n#steady}
        if [[ $scen != echo ]] && ((n >= 5000)); then
            start_slowsrv_1k "$rep.$scen"
            srvs+=(slowsrv-1k)
        fi
        for srv in "${srvs[@]}"; do
            case $scen in
            echo) measure "$rep" "$srv" echo "$ECHO_CONNS" /echo "$ECHO_DUR" ;;
            steady*) measure "$rep" "$srv" "$scen" "${scen#steady}" /test "$STEADY_DUR" ;;
            *)
                n=${scen#test}
                dur=$TEST_DUR; ((n >= 5000)) && dur=$BIG_DUR
                measure "$rep" "$srv" "$scen" "$n" /test "$dur"
                ;;
            esac
            sleep 1
        done
        stop_pid "$SS_PID" slowsrv; stop_pid "$NG_PID" nginx
        [[ -n $S1_PID ]] && { stop_pid "$S1_PID" slowsrv-1k; S1_PID=""; }
        sleep 2   # let TIME_WAIT/closing sockets of the big runs settle
    done
done

# ---------------------------------------------------------------- summary
nginx_v=$("$NGINX" -v 2>&1)
wrk_v=$( (wrk --version 2>&1 || true) | head -1 | sed 's/ *Copyright.*//')   # exits 1
git_rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
    echo "## slowsrv vs nginx: /test (${DELAY_S} s delay) and /echo"
    echo
    echo "- command: \`$cmdline\` (in $root)"
    echo "- date: $(date -Is)"
    echo "- host: nproc=$ncpu, $(uname -srm), fd limit $(ulimit -n)"
    echo "- versions: $nginx_v; $wrk_v; ${SS_BANNER%% listening*} (git $git_rev, binary $SLOWSRV built $(date -r "$SLOWSRV" -Is))"
    echo "- slowsrv: \`$SLOWSRV --threads 1 --port 0 --delay ${DELAY_S}s${SLOWSRV_EXTRA:+ $SLOWSRV_EXTRA}\`, $SS_BANNER; slowsrv-1k: the same with \`$SMALL_LIMITS\`"
    echo "- nginx: 1 worker + master, echo module, worker_connections $NOFILE, listen backlog $BACKLOG (= slowsrv's), keepalive_requests unlimited, access_log off"
    echo "- servers on CPU $SERVER_CPU, wrk on CPU $WRK_CPU; fresh servers per measurement; $REPS repetitions, medians"
    for c in "${WRK_SEEN_CMDS[@]}"; do echo "- load: \`$c\`"; done
    echo "- raw outputs: $RESULTS"
    echo
    python3 - "$tsv" "$DELAY_S" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
delay = float(sys.argv[2])
def med(srv, scen, f):
    v = [f(r) for r in rows if r["server"] == srv and r["scenario"] == scen]
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float("nan")
def rps(r): return float(r["requests"]) / (float(r["duration_us"]) / 1e6) if float(r["duration_us"]) else 0.0
def errs(r): return sum(float(r[k]) for k in ("err_connect", "err_read", "err_write", "err_timeout"))
def rss_per(r): return (float(r["rss_load_kib"]) - float(r["rss_idle_kib"])) / float(r["conns"])
def cpu_us(r):
    n = float(r["requests"])
    return float(r["cpu_ticks"]) / float(r["clk_tck"]) * 1e6 / n if n else float("nan")
def fmt(x, nd=0):
    if x != x: return "n/a"
    return f"{x:,.{nd}f}"
def ratio(a, b):
    return "n/a" if (a != a or b != b or b == 0) else f"{a / b:.2f}"
print("| figure | slowsrv | nginx | slowsrv/nginx | target | result | slowsrv, 1K header limits |")
print("| --- | ---: | ---: | ---: | --- | --- | ---: |")
def row(name, scen, f, nd=0, target="", check=None):
    a, b = med("slowsrv", scen, f), med("nginx", scen, f)
    c = med("slowsrv-1k", scen, f)
    res = ""
    if check:
        res = "PASS" if check(a, b) else "FAIL"
        if c == c:
            res += " (1K: %s)" % ("PASS" if check(c, b) else "FAIL")
    print(f"| {name} | {fmt(a, nd)} | {fmt(b, nd)} | {ratio(a, b)} | {target} | {res} | "
          f"{fmt(c, nd) if c == c else '—'} |")
scens = sorted({r["scenario"] for r in rows if r["scenario"].startswith("test")},
               key=lambda s: int(s[4:]))
for scen in scens:
    n = int(scen[4:])
    ideal = n / delay
    big = n >= 10000
    p = f"/test c={n:,}:"
    row(f"{p} requests/s", scen, rps, 0)
    row(f"{p} requests/s ÷ ideal ({ideal:,.0f}/s)", scen, lambda r: rps(r) / ideal, 3)
    row(f"{p} p50 latency ms", scen, lambda r: float(r["p50_us"]) / 1e3, 1)
    row(f"{p} p99 latency ms", scen, lambda r: float(r["p99_us"]) / 1e3, 1,
        "slowsrv ≤ 1010" if big else "",
        (lambda a, b: a <= 1010) if big else None)
    row(f"{p} max latency ms", scen, lambda r: float(r["max_us"]) / 1e3, 1)
    row(f"{p} socket errors (conn+read+write+timeout)", scen, errs, 0)
    row(f"{p} non-2xx answers", scen, lambda r: float(r["non2xx"]), 0)
    row(f"{p} idle RSS KiB", scen, lambda r: float(r["rss_idle_kib"]), 0)
    row(f"{p} RSS while waiting KiB (max)", scen, lambda r: float(r["rss_load_kib"]), 0)
    row(f"{p} RSS per waiting connection KiB", scen, rss_per, 2,
        "slowsrv ≤ 4" if big else "", (lambda a, b: a <= 4) if big else None)
    row(f"{p} server CPU µs/request", scen, cpu_us, 1)
for scen in sorted({r["scenario"] for r in rows if r["scenario"].startswith("steady")}):
    n = int(scen[6:])
    ideal = n / delay
    p = f"/test c={n:,} steady state (h2load --h1, warm-up left out):"
    row(f"{p} requests/s ÷ ideal ({ideal:,.0f}/s)", scen, lambda r: rps(r) / ideal, 3)
    row(f"{p} p50 latency ms", scen, lambda r: float(r["p50_us"]) / 1e3, 1)
    row(f"{p} p99 latency ms", scen, lambda r: float(r["p99_us"]) / 1e3, 1, "slowsrv ≤ 1010",
        lambda a, b: a <= 1010)
    row(f"{p} max latency ms", scen, lambda r: float(r["max_us"]) / 1e3, 1)
    row(f"{p} errors and non-2xx", scen, lambda r: errs(r) + float(r["non2xx"]), 0)
    row(f"{p} server CPU µs/request", scen, cpu_us, 1)
row("/echo c=100: requests/s", "echo", rps, 0)
row("/echo c=100: server CPU µs/request", "echo", cpu_us, 2, "slowsrv ≤ nginx",
    lambda a, b: a <= b)
row("/echo c=100: socket errors", "echo", errs, 0)
print()
print("Requests/s ÷ ideal: wrk counts only requests completed before it stops, so a perfect "
      "server scores about (d−1)/d with a 1 s delay and a d-second run (0.90 at 10 s, "
      "0.92 at 12 s); compare the two servers. RSS figures for nginx are master + worker. "
      "CPU: utime+stime of the server process(es) over the run ÷ requests wrk completed "
      "(steady state: over warm-up and run ÷ requests after the warm-up, so it reads high). "
      "Steady state: h2load's -D run after its warm-up, percentiles over its per-request log.")
PY
} >"$RESULTS/summary.md"
cat "$RESULTS/summary.md"
log "raw outputs and summary: $RESULTS"
