#!/usr/bin/env bash
# bench_h2.sh - OK echo over HTTP/1.1 and h2c, 1 s-delay /test over h2c at 10 000 streams, and
# scale up to a million waiting requests: slowsrv-h2o next to slowsrv, nginx and Debian's h2o,
# same run, same machine. Method and results: doc/benchmarks.md, "Scale, HTTP/2 and /echo".
#
# Servers, one worker / event-loop thread each, pinned to CPU $SERVER_CPU (load tools and this
# script on CPU $WRK_CPU), started fresh for every measurement:
#   slowsrv-h2o --threads 1 --port 0 --delay 1s     (libh2o engine: HTTP/1.1 and h2c)
#   slowsrv     --threads 1 --port 0 --delay 1s     (libmicrohttpd engine: HTTP/1.1 only)
#               (--delay 10s at a million; more options per scenario in scen_setup)
#   nginx       worker_processes 1, generated config in a temp dir: `return 200 "OK"` on /echo,
#               `echo_sleep 1; echo -n ok` on /test (echo module); one HTTP/1.1 port and one
#               `listen … http2` cleartext port (h2c by prior knowledge)
#   h2o         Debian's h2o server, `h2o -c <generated yaml>` in the foreground, num-threads 1,
#               file.dir serving a static file `echo` holding `OK`, no access log
# Scenarios, REPS times each (medians):
#   echo-h1   wrk -t1 -c100 -d10s /echo                 all four servers
#   echo-h2c  h2load -c100 -m10 -D 10 http://…/echo     slowsrv-h2o, nginx, h2o
#   test-h2c  h2load -c100 -m100 -D 10 --log-file …/test   slowsrv-h2o --delay 1s, nginx echo_sleep 1
#   test-h2c-steady  the same after a WARMUP-second h2load --warm-up-time (the opening burst of
#             10 000 streams left out): steady-state p50/p99/max
# Scale, each in steady state (h2load --warm-up-time; the -D run after it counts):
#   test-h1-10k-steady   h2load --h1 -t1 -c10000 --warm-up-time=15 -D 20 /test (1 s)
#                        slowsrv-h2o, slowsrv, nginx
#   test-h1-18k-steady   the same at 18 000 connections with --warm-up-time=25 (h2load's one
#                        thread takes about 16 s to open them; --max-connections 20000, nginx
#                        worker_connections 20000): slowsrv-h2o, slowsrv, nginx
#   wait-h2c-100k-steady h2load -c1000 -m100 --warm-up-time=5 -D 15 /test (1 s): 100 000 streams
#                        waiting at once; slowsrv-h2o, nginx
#   wait-h2c-1m-steady   --delay 10s, h2load -c10000 -m100 --warm-up-time=12 -D 20: 1 000 000
#                        streams waiting at once on one loop; slowsrv-h2o (nginx with NGINX_1M=1:
#                        it needs about 10 GiB there)
#   wait-h2c-1m-settled  the same with --warm-up-time=32: three 10 s cycles left out, so that
#                        the opening million (h2load stamps them within about a second, faster
#                        than it can turn them over) is not what is judged; slowsrv-h2o (nginx
#                        with NGINX_1M=1)
#   wait-h2c-1m-even     the same million with its connections opened evenly over one delay:
#                        h2load -c10000 -m100 -r11 --rate-period=10ms -n5000000 (11 connections
#                        every 10 ms, all open after 9.1 s; five 10 s cycles each). The opening
#                        must end within one delay: one connection a millisecond
#                        ("-r1 --rate-period=1ms") runs 4-10 % slow on h2load's 1 ms timer, so
#                        its last 0.4 s overlaps its own first renewal and leaves a second
#                        1.3-1.4x as dense at the same phase of every cycle. With all of them
#                        opened at once the load keeps the opening's shape for ever (a closed
#                        loop with one fixed delay): a wave of ~180 000 requests/s for 5.5 s of
#                        every 10, peaks of 360 000/s, more than h2load or any server turns over
#                        on one core (doc/benchmarks.md, "Judging rules"). Judged over the requests
#                        sent 20-40 s into the run (the opening and its first renewal left out,
#                        every connection open): p50/p99/max of those, rate = their number ÷
#                        20 s; CPU per request over the whole run; slowsrv-h2o (nginx with
#                        NGINX_1M=1)
#   Extra figures: requests/s ÷ ideal (streams ÷ delay), RSS of the server while they wait and
#   per waiting request ((max RSS − idle RSS) ÷ streams); for slowsrv in the wait-h2c rows, its
#   own overshoot over the judged window (GET /stats at the window's start and end: how late
#   each answer started after its delay was due). The million's p99 target is judged on that
#   clock (doc/benchmarks.md, "Judging rules"); h2load's p99 is reported beside it.
# Figures: requests/s, server CPU time per request (utime+stime of the server process(es),
# nginx master+worker, h2o and its helper child, from /proc/PID/stat before/after ÷ requests
# done), failures; for test-h2c p50/p99/max request time from h2load's per-request log.
#
# Not part of the test suite. See tests/bench/README.md. Knobs (environment):
#   SLOWSRV=path SLOWSRV_H2O=path  REPS=3  DUR=10  SERVER_CPU=0 WRK_CPU=1
#   SCENARIOS="echo-h1 echo-h2c test-h2c test-h2c-steady test-h1-10k-steady test-h1-18k-steady
#              wait-h2c-100k-steady wait-h2c-1m-steady wait-h2c-1m-settled wait-h2c-1m-even"
#   WARMUP=5
#   NGINX_1M=0  STEAL_MAX=5 (% of the server's CPU the hypervisor may take; a run above it is
#   repeated like one above OTHER_MAX, up to TRIES)
#   RESULTS=dir (default tests/bench/results/<date>-h2/)
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cmdline="$0${*:+ $*}"
for a in NGINX_1M STEAL_MAX REPS DUR WARMUP SERVER_CPU WRK_CPU SLOWSRV SLOWSRV_H2O SCENARIOS RESULTS QUIET_WAIT QUIET_MAX OTHER_MAX TRIES; do
    [[ -n ${!a:-} ]] && cmdline="$a=\"${!a}\" $cmdline"
done

REPS=${REPS:-3}
DUR=${DUR:-10}                 # seconds, wrk -d and h2load -D
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
SLOWSRV=${SLOWSRV:-$root/build-bench/slowsrv}
SLOWSRV_H2O=${SLOWSRV_H2O:-$root/build-bench/slowsrv-h2o}
SCENARIOS=${SCENARIOS:-"echo-h1 echo-h2c test-h2c test-h2c-steady test-h1-10k-steady test-h1-18k-steady wait-h2c-100k-steady wait-h2c-1m-steady wait-h2c-1m-settled wait-h2c-1m-even"}
NGINX_1M=${NGINX_1M:-0}
WARMUP=${WARMUP:-5}            # seconds, h2load --warm-up-time for test-h2c-steady
stamp=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$here/results/$stamp-h2}
DELAY_S=1                      # the servers' delay; 10 for the million (scen_setup)
SRV_EXTRA=()                   # more slowsrv options for a scenario (scen_setup)
ECHO_CONNS=100
H2_ECHO_STREAMS=10             # h2load -m for /echo
H2_TEST_STREAMS=100            # h2load -m for /test: 100 x 100 = 10 000 concurrent streams
BACKLOG=4096
START_TIMEOUT=10
QUIET_WAIT=${QUIET_WAIT:-120}   # s to wait for an idle host before each run
QUIET_MAX=${QUIET_MAX:-10}     # idle: < this % of one CPU busy
OTHER_MAX=${OTHER_MAX:-25}     # max % of one CPU used by others during a run
STEAL_MAX=${STEAL_MAX:-5}      # max % of the server's CPU stolen by the hypervisor during a run
TRIES=${TRIES:-3}
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
installed_h2o=0
command -v h2o >/dev/null 2>&1 || { need_pkgs+=(h2o); installed_h2o=1; }
if ((${#need_pkgs[@]})); then
    log "installing missing packages: ${need_pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_pkgs[@]}" ||
        die "apt-get install ${need_pkgs[*]} failed"
fi
if ((installed_h2o)); then
    # The package enables a system service (port 80, /etc/h2o). We installed it, so make sure
    # it is not left running; its config is never touched.
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet h2o 2>/dev/null; then
        log "stopping the h2o system service that apt-get started"
        systemctl stop h2o || true
    elif [[ -x /etc/init.d/h2o ]] && /etc/init.d/h2o status >/dev/null 2>&1; then
        log "stopping the h2o system service that apt-get started"
        /etc/init.d/h2o stop || true
    fi
fi
command -v python3 >/dev/null 2>&1 || die "python3 is required (free port, summary table)"
NGINX=$(command -v nginx)
H2O=$(command -v h2o)
ECHO_MOD=/usr/lib/nginx/modules/ngx_http_echo_module.so

if [[ ! -x $SLOWSRV || ! -x $SLOWSRV_H2O ]]; then
    log "building slowsrv into $root/build-bench"
    (cd "$root" && cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSLOWSRV_TESTS=OFF >/dev/null &&
        cmake --build build-bench -j2 >/dev/null) || die "slowsrv build failed"
fi
[[ -x $SLOWSRV ]] || die "no slowsrv binary at $SLOWSRV"
[[ -x $SLOWSRV_H2O ]] || die "no slowsrv-h2o binary at $SLOWSRV_H2O"

ncpu=$(nproc)
((ncpu > SERVER_CPU && ncpu > WRK_CPU)) || die "need CPUs $SERVER_CPU and $WRK_CPU, nproc=$ncpu"
if ! ulimit -n "$NOFILE" 2>/dev/null; then
    log "cannot raise fd limit to $NOFILE (hard limit $(ulimit -Hn)); using it"
    ulimit -n "$(ulimit -Hn)"
fi

taskset -p -c "$WRK_CPU" $$ >/dev/null

CLK_TCK=$(getconf CLK_TCK)
mkdir -p "$RESULTS"
if [[ $RESULTS == "$here/results/"* ]]; then
    [[ -f $here/results/.gitignore ]] || printf '*\n' >"$here/results/.gitignore"
fi
tmp=$(mktemp -d /tmp/slowsrv-bench-h2.XXXXXX)
chmod 755 "$tmp"   # h2o's file.dir below it
tsv=$RESULTS/results.tsv
printf 'rep\tserver\tscenario\tconns\tstreams\trequests\tduration_us\tp50_us\tp99_us\tmax_us\tmean_us\tfailed\terrored\ttimeout\tnon2xx\tsocket_errors\tcpu_ticks\tclk_tck\ttool_cpu_us\tother_cpu_pct\tuser_ticks\tdelay_s\trss_idle_kib\trss_max_kib\tcpu_requests\tsteal_srv_pct\tsteal_tool_pct\trun_us\tsrv_over_n\tsrv_over_p50_ms\tsrv_over_p99_ms\n' >"$tsv"

# ---------------------------------------------------------------- interference from other work

# ---------------------------------------------------------------- process bookkeeping
declare -A live=()   # pid -> name; only these are ever signalled


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


get_ok() { # url expected-body [curl options]: the body must match exactly
    local url=$1 want=$2 body
    shift 2
    body=$(curl -s --max-time 5 "$@" "$url" 2>/dev/null) || return 1
    [[ $body == "$want" ]]
}

stats_window() { # port lo hi t0-ns prefix: GET /stats lo and hi s after t0 into prefix.stats0/1
    # (slowsrv's own account of how late its answers started, over the window the row judges)
    local port=$1 t0=$4 o=$5 i at now
    for i in 0 1; do
        at=$((t0 + (i ? $3 : $2) * 1000000000))
        now=$(date +%s%N)
        ((at > now)) && sleep "$(((at - now) / 1000000000)).$(printf '%03d' $((((at - now) / 1000000) % 1000)))"
        taskset -c "$WRK_CPU" curl -s --max-time 5 "http://127.0.0.1:$port/stats" >"$o.stats$i" || :
    done
}

pids_of() { # server-pid -> the pid and its children (nginx: master + worker; h2o: + helper)
    local p=$1 c
    printf '%s\n' "$p"
    if [[ -r /proc/$p/task/$p/children ]]; then
        for c in $(cat "/proc/$p/task/$p/children"); do printf '%s\n' "$c"; done
    else
        pgrep -P "$p" || true
    fi
}

user_ticks() { # sum of utime over pids (user-space part of cpu_ticks)
    local p line rest f s=0
    for p; do
        read -r line <"/proc/$p/stat" 2>/dev/null || continue
        rest=${line##*) }
        read -ra f <<<"$rest"
        s=$((s + f[11]))
    done
    echo "$s"
}

cpu_ticks() { # sum of utime+stime over pids (whole processes, all threads)
    local p line rest f s=0
    for p; do
        read -r line <"/proc/$p/stat" 2>/dev/null || continue
        rest=${line##*) }
        read -ra f <<<"$rest"
        s=$((s + f[11] + f[12]))   # fields 14 (utime) and 15 (stime)
    done
    echo "$s"
}

CHILD_US=0

# ---------------------------------------------------------------- servers
# Every start_* sets SRV_PID, H1_PORT (HTTP/1.1, "" if none) and H2_PORT (h2c, "" if none).
SRV_PID="" H1_PORT="" H2_PORT=""
declare -A BANNER=() SRV_CMD=()

wait_banner() { # name errfile -> port from "listening on http://…:PORT"
    local name=$1 err=$2 i port=""
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        kill -0 "$SRV_PID" 2>/dev/null || { cat "$err" >&2; die "$name exited during startup"; }
        # the background job may not have created $err yet
        port=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$err" 2>/dev/null | head -1) || true
        [[ -n $port ]] && { echo "$port"; return 0; }
        sleep 0.1
    done
    cat "$err" >&2; die "$name printed no listening line within ${START_TIMEOUT}s"
}

start_slowsrv_h2o() { # tag
    local err=$tmp/slowsrv-h2o.$1.err args=(--threads 1 --port 0 --delay "${DELAY_S}s" ${SRV_EXTRA[@]+"${SRV_EXTRA[@]}"})
    taskset -c "$SERVER_CPU" "$SLOWSRV_H2O" "${args[@]}" 2>"$err" &
    SRV_PID=$!; live[$SRV_PID]=slowsrv-h2o
    H1_PORT=$(wait_banner slowsrv-h2o "$err"); H2_PORT=$H1_PORT
    [[ -n ${SRV_CMD[slowsrv-h2o]:-} ]] || SRV_CMD[slowsrv-h2o]="$SLOWSRV_H2O ${args[*]}"
    [[ -n ${BANNER[slowsrv-h2o]:-} ]] || BANNER[slowsrv-h2o]=$(grep -m1 'listening on' "$err")
}

start_slowsrv() { # tag
    local err=$tmp/slowsrv.$1.err args=(--threads 1 --port 0 --delay "${DELAY_S}s" ${SRV_EXTRA[@]+"${SRV_EXTRA[@]}"})
    taskset -c "$SERVER_CPU" "$SLOWSRV" "${args[@]}" 2>"$err" &
    SRV_PID=$!; live[$SRV_PID]=slowsrv
    H1_PORT=$(wait_banner slowsrv "$err"); H2_PORT=""
    [[ -n ${SRV_CMD[slowsrv]:-} ]] || SRV_CMD[slowsrv]="$SLOWSRV ${args[*]}"
    [[ -n ${BANNER[slowsrv]:-} ]] || BANNER[slowsrv]=$(grep -m1 'listening on' "$err")
}

start_nginx() { # tag
    local d=$tmp/nginx.$1 i
    mkdir -p "$d/logs" "$d/tmp"
    H1_PORT=$(free_port); H2_PORT=$(free_port)
    while [[ $H2_PORT == "$H1_PORT" ]]; do H2_PORT=$(free_port); done
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
    keepalive_requests 100000000;  # default 1000 would make nginx (not slowsrv) reconnect; also h2
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    server {
        listen 127.0.0.1:$H1_PORT backlog=$BACKLOG;
        listen 127.0.0.1:$H2_PORT http2 backlog=$BACKLOG;   # h2c, prior knowledge only
        location = /test { echo_sleep $DELAY_S; echo -n ok; }
        location = /echo { return 200 "OK"; }
    }
}
EOF
    cp "$d/nginx.conf" "$RESULTS/nginx.conf"
    taskset -c "$SERVER_CPU" "$NGINX" -p "$d/" -e "$d/logs/error.log" -c "$d/nginx.conf" \
        -g 'daemon off;' 2>"$d/stderr" &
    SRV_PID=$!; live[$SRV_PID]=nginx
    SRV_CMD[nginx]="$NGINX -p DIR/ -e DIR/logs/error.log -c DIR/nginx.conf -g 'daemon off;'"
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        if ! kill -0 "$SRV_PID" 2>/dev/null; then
            cat "$d/stderr" "$d/logs/error.log" >&2 2>/dev/null; die "nginx exited during startup"
        fi
        get_ok "http://127.0.0.1:$H1_PORT/echo" OK && return 0
        sleep 0.1
    done
    cat "$d/stderr" "$d/logs/error.log" >&2 2>/dev/null
    die "nginx did not answer on port $H1_PORT within ${START_TIMEOUT}s"
}

start_h2o() { # tag
    local d=$tmp/h2o.$1 i
    mkdir -p "$d/www"
    chmod 755 "$d" "$d/www"
    printf OK >"$d/www/echo"
    chmod 644 "$d/www/echo"
    H1_PORT=$(free_port); H2_PORT=$H1_PORT
    # no access-log directive: h2o writes no access log then
    cat >"$d/h2o.yaml" <<EOF
num-threads: 1
user: $(id -un)
pid-file: $d/h2o.pid
error-log: $d/error.log
listen:
  host: 127.0.0.1
  port: $H1_PORT
hosts:
  default:
    paths:
      /:
        file.dir: $d/www
EOF
    cp "$d/h2o.yaml" "$RESULTS/h2o.yaml"
    taskset -c "$SERVER_CPU" "$H2O" -c "$d/h2o.yaml" 2>"$d/stderr" &
    SRV_PID=$!; live[$SRV_PID]=h2o
    SRV_CMD[h2o]="$H2O -c DIR/h2o.yaml"
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        if ! kill -0 "$SRV_PID" 2>/dev/null; then
            cat "$d/stderr" "$d/error.log" >&2 2>/dev/null; die "h2o exited during startup"
        fi
        get_ok "http://127.0.0.1:$H1_PORT/echo" OK && return 0
        sleep 0.1
    done
    cat "$d/stderr" "$d/error.log" >&2 2>/dev/null
    die "h2o did not answer on port $H1_PORT within ${START_TIMEOUT}s"
}

start_server() { # name tag
    case $1 in
    slowsrv-h2o) start_slowsrv_h2o "$2" ;;
    slowsrv) start_slowsrv "$2" ;;
    nginx) start_nginx "$2" ;;
    h2o) start_h2o "$2" ;;
    *) die "unknown server $1" ;;
    esac
}

cat >"$tmp/stats.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKSTATS requests=%.0f duration_us=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f mean_us=%.0f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
EOF

# parse rep server scenario conns streams out logfile ticks -> tsv line
parse_run() {
    python3 - "$@" <<'PY'
import os, re, sys
rep, srv, scen, conns, streams, out, logf, ticks, clk, tool, other, uticks, delay, idle, rmax, steal_srv, steal_tool = sys.argv[1:]
text = open(out, errors="replace").read()
nan = float("nan")
d = dict(requests=0, duration_us=nan, p50_us=nan, p99_us=nan, max_us=nan, mean_us=nan,
         failed=0, errored=0, timeout=0, non2xx=0, socket_errors=0)
unit = {"us": 1, "ms": 1e3, "s": 1e6}
def t(v):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", v)
    return float(m.group(1)) * unit[m.group(2)] if m else nan
m = re.search(r"^WRKSTATS (.*)$", text, re.M)
if m:   # wrk
    w = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    d.update(requests=w["requests"], duration_us=w["duration_us"], p50_us=w["p50_us"],
             p99_us=w["p99_us"], max_us=w["max_us"], mean_us=w["mean_us"],
             non2xx=w["status"], socket_errors=w["connect"] + w["read"] + w["write"] + w["timeout"])
else:   # h2load
    m = re.search(r"finished in ([0-9.]+)(us|ms|s),", text)
    if m: d["duration_us"] = d["run_us"] = t(m.group(1) + m.group(2))
    if scen.endswith(("-steady", "-settled")):   # "finished in" counts the warm-up, "succeeded" does not
        d["duration_us"] = float(os.environ["STEADY_DUR_S"]) * 1e6
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
    if m:
        d.update(requests=float(m.group(4)), failed=float(m.group(5)), errored=float(m.group(6)),
                 timeout=float(m.group(7)))
    d["cpu_requests"] = d["requests"]
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if m: d["non2xx"] = sum(float(m.group(i)) for i in (2, 3, 4))
    m = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text)
    if m: d.update(max_us=t(m.group(2)), mean_us=t(m.group(3)))
    if logf != "-":
        # WINDOW_S="lo hi": only the requests sent lo..hi s after the first one count, and the
        # rate is their number over hi - lo seconds (a run without a warm-up of its own)
        win = [float(x) for x in os.environ.get("WINDOW_S", "").split()]
        sent = []
        for line in open(logf):
            f = line.split("\t")
            if len(f) >= 3 and f[1] == "200":
                sent.append((int(f[0]), int(f[2])))
        if win and sent:
            t0 = min(s for s, _ in sent)
            sent = [(s, u) for s, u in sent if win[0] * 1e6 <= s - t0 < win[1] * 1e6]
            d.update(requests=float(len(sent)), duration_us=(win[1] - win[0]) * 1e6)
        durs = sorted(u for _, u in sent)
        if durs:
            def pct(p):   # nearest rank
                k = max(0, min(len(durs) - 1, int(-(-p * len(durs) // 100)) - 1))
                return float(durs[k])
            d.update(p50_us=pct(50), p99_us=pct(99), max_us=float(durs[-1]))
d.setdefault("cpu_requests", d["requests"])
d.setdefault("run_us", d["duration_us"])
# slowsrv's own overshoot (due to answer started) over the row's window: the difference of the
# /test route's histogram between two reads of /stats (its "dist": [lowest ms, count] per
# non-empty bucket); a percentile is the middle of its bucket, within 1 % as /stats' own are
over = ["nan", "nan", "nan"]
try:
    import json
    def dist(x):
        return {lo: c for lo, c in x["routes"]["/test"]["delay_overshoot_ms"]["dist"]}
    a, b = (dist(json.load(open(out + ".stats%d" % i))) for i in (0, 1))
    diff = sorted((lo, c - a.get(lo, 0)) for lo, c in b.items())
    n = sum(c for _, c in diff)
    def mid(lo_ms):
        us = round(lo_ms * 1000)
        w = 1 if us < 128 else 1 << (us.bit_length() - 7)
        return (us + (w - 1) / 2) / 1000
    def pct(p):
        acc = 0
        for lo, c in diff:
            acc += c
            if acc * 100 >= p * n:
                return mid(lo)
    if n > 0:
        over = ["%d" % n, "%.3f" % pct(50), "%.3f" % pct(99)]
except (OSError, ValueError, KeyError):
    pass
cols = [rep, srv, scen, conns, streams] + ["%.0f" % d[k] if d[k] == d[k] else "nan" for k in
        ("requests", "duration_us", "p50_us", "p99_us", "max_us", "mean_us", "failed", "errored",
         "timeout", "non2xx", "socket_errors")] + [ticks, clk, tool, other, uticks, delay, idle, rmax,
        "%.0f" % d["cpu_requests"], steal_srv, steal_tool,
        "%.0f" % d["run_us"] if d["run_us"] == d["run_us"] else "nan"] + over
print("\t".join(cols))
PY
}

declare -A TOOL_CMDS=()
# measure rep server scenario
RETRY=0
measure() { # rep server scenario try; sets RETRY=1 when other processes disturbed the run
    local rep=$1 srv=$2 scen=$3 try=$4 pid=$SRV_PID out logf=- c0 c1 u0 u1 w0 w1 b0 b1 t0 t1 other pids cmd conns streams
    local dur=$DUR warm idle rmax stop window="" s0 s1 l0 l1 steal_srv steal_tool
    local statsw="" spid wpid=""   # statsw "lo hi": slowsrv's /stats read lo and hi s into the load
    RETRY=0
    mapfile -t pids < <(pids_of "$pid")
    out=$RESULTS/$scen.$srv.rep$rep.txt
    case $scen in
    echo-h1)
        conns=$ECHO_CONNS streams=1
        cmd=(taskset -c "$WRK_CPU" wrk -t1 -c "$conns" -d "${DUR}s" -s "$tmp/stats.lua"
            "http://127.0.0.1:$H1_PORT/echo") ;;
    echo-h2c)
        conns=$ECHO_CONNS streams=$H2_ECHO_STREAMS
        cmd=(taskset -c "$WRK_CPU" h2load -c "$conns" -m "$streams" -D "$DUR"
            "http://127.0.0.1:$H2_PORT/echo") ;;
    test-h2c | test-h2c-steady)
        conns=$ECHO_CONNS streams=$H2_TEST_STREAMS
        logf=$RESULTS/$scen.$srv.rep$rep.log
        cmd=(taskset -c "$WRK_CPU" h2load -c "$conns" -m "$streams" -D "$DUR"
            "--log-file=$logf" "http://127.0.0.1:$H2_PORT/test")
        [[ $scen == test-h2c-steady ]] && cmd+=("--warm-up-time=$WARMUP") ;;
    test-h1-10k-steady | test-h1-18k-steady)
        conns=${scen#test-h1-}; conns=${conns%k-steady}000 streams=1 dur=20 warm=15
        # h2load opens 18 000 connections in about 16 s (75 % of its core): a 15 s warm-up
        # would end inside the opening and measure it (doc/benchmarks.md, "Judging rules")
        [[ $scen == test-h1-18k-steady ]] && warm=25
        logf=$RESULTS/$scen.$srv.rep$rep.log
        cmd=(taskset -c "$WRK_CPU" h2load --h1 -t1 -c "$conns" "--warm-up-time=$warm" -D "$dur"
            "--log-file=$logf" "http://127.0.0.1:$H1_PORT/test") ;;
    wait-h2c-100k-steady)
        conns=1000 streams=100 dur=15
        logf=$RESULTS/$scen.$srv.rep$rep.log
        statsw="5 20"
        cmd=(taskset -c "$WRK_CPU" h2load -c "$conns" -m "$streams" --warm-up-time=5 -D "$dur"
            "--log-file=$logf" "http://127.0.0.1:$H2_PORT/test") ;;
    wait-h2c-1m-steady | wait-h2c-1m-settled)
        conns=10000 streams=100 dur=20 warm=12
        [[ $scen == wait-h2c-1m-settled ]] && warm=32
        statsw="$warm $((warm + dur))"
        logf=$RESULTS/$scen.$srv.rep$rep.log
        cmd=(taskset -c "$WRK_CPU" h2load -c "$conns" -m "$streams" "--warm-up-time=$warm" -D "$dur"
            "--log-file=$logf" "http://127.0.0.1:$H2_PORT/test") ;;
    wait-h2c-1m-even)
        conns=10000 streams=100 window="20 40"
        statsw="30 50"   # the answers to the requests sent 20-40 s, due 10 s after
        logf=$RESULTS/$scen.$srv.rep$rep.log
        cmd=(taskset -c "$WRK_CPU" h2load -c "$conns" -m "$streams" -r 11 --rate-period=10ms
            -n $((conns * streams * 5)) "--log-file=$logf" "http://127.0.0.1:$H2_PORT/test") ;;
    esac
    [[ -n ${TOOL_CMDS[$scen]:-} ]] || TOOL_CMDS[$scen]=$(printf '%s ' "${cmd[@]}" | sed "s#$tmp/##g; s#$RESULTS/#RESULTS/#g")
    sleep 1
    idle=$(rss_kib "${pids[@]}")
    stop=$tmp/sampling; : >"$stop"; echo "$idle" >"$tmp/rss.max"
    sampler "$tmp/rss.max" "$stop" "${pids[@]}" &
    spid=$!
    rm -f "$out.stats0" "$out.stats1"
    log "rep $rep $srv $scen$( ((try > 1)) && echo " (try $try)"): ${cmd[*]:3}"
    child_cpu_us; w0=$CHILD_US
    c0=$(cpu_ticks "${pids[@]}"); u0=$(user_ticks "${pids[@]}")
    cpu_steal "$SERVER_CPU"; s0=$STEAL; cpu_steal "$WRK_CPU"; l0=$STEAL
    sys_busy; b0=$SYS_BUSY; t0=$(date +%s%N)
    if [[ -n $statsw && $srv == slowsrv* ]]; then
        stats_window "$H1_PORT" $statsw "$t0" "$out" &
        wpid=$!
    fi
    "${cmd[@]}" >"$out" 2>&1 || log "load tool exited non-zero ($srv $scen), see $out"
    sys_busy; b1=$SYS_BUSY; t1=$(date +%s%N)
    cpu_steal "$SERVER_CPU"; s1=$STEAL; cpu_steal "$WRK_CPU"; l1=$STEAL
    c1=$(cpu_ticks "${pids[@]}"); u1=$(user_ticks "${pids[@]}")
    child_cpu_us; w1=$CHILD_US
    rm -f "$stop"; wait "$spid" 2>/dev/null || true
    [[ -n $wpid ]] && { wait "$wpid" 2>/dev/null || true; }
    rmax=$(cat "$tmp/rss.max")
    kill -0 "$pid" 2>/dev/null || die "$srv died during $scen (see $out)"
    # CPU used by anything but this server and the load tool, % of one CPU
    other=$(( ((b1 - b0) - (c1 - c0) - (w1 - w0) * CLK_TCK / 1000000) * 100 * 1000000000 / CLK_TCK / (t1 - t0) ))
    # time the hypervisor took from the server's and the load tool's CPU, % of the run
    steal_srv=$(( (s1 - s0) * 100 * 1000000000 / CLK_TCK / (t1 - t0) ))
    steal_tool=$(( (l1 - l0) * 100 * 1000000000 / CLK_TCK / (t1 - t0) ))
    echo "# server=$srv pids=${pids[*]} cpu_ticks=$((c1 - c0)) user_ticks=$((u1 - u0)) clk_tck=$CLK_TCK tool_cpu_us=$((w1 - w0)) other_cpu_pct=$other steal_server_cpu_pct=$steal_srv steal_tool_cpu_pct=$steal_tool try=$try" >>"$out"
    if (((other > OTHER_MAX || steal_srv > STEAL_MAX) && try < TRIES)); then
        if ((other > OTHER_MAX)); then
            log "other processes used $other % of a CPU during this run (> $OTHER_MAX): repeating it"
        else
            log "the hypervisor took $steal_srv % of the server's CPU during this run (> $STEAL_MAX): repeating it"
        fi
        mv "$out" "$out.noisy$try"
        rm -f "$out.stats0" "$out.stats1"
        [[ $logf != - ]] && rm -f "$logf"
        RETRY=1
        return 0
    fi
    STEADY_DUR_S=$dur WINDOW_S=$window parse_run "$rep" "$srv" "$scen" "$conns" "$streams" "$out" "$logf" "$((c1 - c0))" "$CLK_TCK" "$((w1 - w0))" "$other" "$((u1 - u0))" "$DELAY_S" "$idle" "$rmax" "$steal_srv" "$steal_tool" >>"$tsv"
    # a server that stalled or broke under load fails the next plain request
    case $scen in
    echo-h1) get_ok "http://127.0.0.1:$H1_PORT/echo" OK || die "$srv: /echo wrong or silent after $scen" ;;
    echo-h2c) get_ok "http://127.0.0.1:$H2_PORT/echo" OK --http2-prior-knowledge || die "$srv: h2c /echo wrong or silent after $scen" ;;
    test-h2c*) get_ok "http://127.0.0.1:$H2_PORT/test" ok --http2-prior-knowledge || die "$srv: h2c /test wrong or silent after $scen" ;;
    test-h1-*) get_ok "http://127.0.0.1:$H1_PORT/test" ok || die "$srv: /test wrong or silent after $scen" ;;
    wait-h2c-*)
        # A server may take a while to drop the streams h2load left waiting (nginx: ~1 000 000).
        local i
        for ((i = 0; i < 12; i++)); do
            get_ok "http://127.0.0.1:$H2_PORT/echo" OK --http2-prior-knowledge && break
        done
        ((i < 12)) || die "$srv: h2c /echo wrong or silent for a minute after $scen" ;;
    esac
    [[ $logf != - ]] && { gzip -f "$logf" || true; }   # per-request logs are large
    return 0
}

servers_for() { # scenario -> servers
    case $1 in
    echo-h1) echo "slowsrv-h2o slowsrv nginx h2o" ;;
    echo-h2c) echo "slowsrv-h2o nginx h2o" ;;
    test-h2c | test-h2c-steady) echo "slowsrv-h2o nginx" ;;
    test-h1-10k-steady | test-h1-18k-steady) echo "slowsrv-h2o slowsrv nginx" ;;
    wait-h2c-100k-steady) echo "slowsrv-h2o nginx" ;;
    wait-h2c-1m-steady | wait-h2c-1m-settled | wait-h2c-1m-even) if ((NGINX_1M)); then echo "slowsrv-h2o nginx"; else echo "slowsrv-h2o"; fi ;;
    *) die "unknown scenario $1" ;;
    esac
}

scen_setup() { # scenario: the servers' delay and extra options for it
    DELAY_S=1 SRV_EXTRA=()
    case $1 in
    test-h1-18k-steady) SRV_EXTRA=(--max-connections 20000) ;;
    # (10 100 connections: /stats is read beside h2load's 10 000 during the run)
    wait-h2c-1m-steady | wait-h2c-1m-settled | wait-h2c-1m-even) DELAY_S=10 SRV_EXTRA=(--max-connections 10100) ;;
    esac
}

# ---------------------------------------------------------------- preflight
log "results: $RESULTS"
for srv in slowsrv-h2o slowsrv nginx h2o; do
    start_server "$srv" pre
    get_ok "http://127.0.0.1:$H1_PORT/echo" OK || die "$srv: HTTP/1.1 /echo did not answer OK"
    msg="HTTP/1.1 /echo OK"
    if [[ -n $H2_PORT ]]; then
        v=$(curl -s --max-time 5 --http2-prior-knowledge -o /dev/null -w '%{http_version}' "http://127.0.0.1:$H2_PORT/echo") || true
        [[ $v == 2 ]] || die "$srv: h2c (prior knowledge) /echo answered over HTTP/$v"
        get_ok "http://127.0.0.1:$H2_PORT/echo" OK --http2-prior-knowledge || die "$srv: h2c /echo did not answer OK"
        msg+=", h2c /echo OK"
    fi
    if [[ $srv != h2o ]]; then
        opt=(); port=$H1_PORT
        [[ -n $H2_PORT ]] && { opt=(--http2-prior-knowledge); port=$H2_PORT; }
        t0=$(date +%s%N)
        get_ok "http://127.0.0.1:$port/test" ok ${opt[@]+"${opt[@]}"} || die "$srv: /test did not answer ok"
        ms=$((($(date +%s%N) - t0) / 1000000))
        ((ms >= DELAY_S * 1000 - 5 && ms < DELAY_S * 1000 + 500)) || die "$srv: /test took ${ms} ms"
        msg+=", /test ok in $ms ms${opt:+ (h2c)}"
    fi
    log "preflight $srv: $msg"
    stop_pid "$SRV_PID" "$srv"
done

# ---------------------------------------------------------------- runs
for ((rep = 1; rep <= REPS; rep++)); do
    for scen in $SCENARIOS; do
        scen_setup "$scen"
        read -ra srvs <<<"$(servers_for "$scen")"
        # rotate the order so no server always goes first
        k=$(((rep - 1) % ${#srvs[@]}))
        for srv in "${srvs[@]:k}" "${srvs[@]:0:k}"; do
            for ((try = 1; ; try++)); do
                wait_quiet
                start_server "$srv" "$rep.$scen.$try"
                measure "$rep" "$srv" "$scen" "$try"
                stop_pid "$SRV_PID" "$srv"
                sleep 1
                ((RETRY)) || break
            done
        done
    done
done

# ---------------------------------------------------------------- summary
nginx_v=$("$NGINX" -v 2>&1)
h2o_v=$("$H2O" --version 2>&1 | head -1)
h2o_pkg=$(dpkg-query -W -f '${Version}' h2o 2>/dev/null || echo "?")
wrk_v=$( (wrk --version 2>&1 || true) | head -1 | sed 's/ *Copyright.*//')
h2load_v=$(h2load --version 2>&1 | head -1)
git_rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git_dirty=$(git -C "$root" status --porcelain -- servers common CMakeLists.txt 2>/dev/null | wc -l)
{
    echo "## OK echo over HTTP/1.1 and h2c, /test (1 s; 10 s at a million) at 10 000 to 1 000 000 waiting requests"
    echo
    echo "- command: \`$cmdline\` (in $root)"
    echo "- date: $(date -Is)"
    echo "- host: nproc=$ncpu, $(uname -srm), fd limit $(ulimit -n); load average before the summary: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- versions: $nginx_v; $h2o_v (Debian h2o $h2o_pkg); $wrk_v; $h2load_v; slowsrv git $git_rev$( ((git_dirty)) && echo " + $git_dirty uncommitted source change(s)"), binaries built $(date -r "$SLOWSRV_H2O" -Is)"
    for s in slowsrv-h2o slowsrv nginx h2o; do
        [[ -n ${SRV_CMD[$s]:-} ]] && echo "- $s: \`${SRV_CMD[$s]}\`${BANNER[$s]:+ — ${BANNER[$s]}}"
    done
    echo "- nginx: 1 worker + master, \`return 200 \"OK\"\` on /echo, echo module \`echo_sleep 1; echo -n ok\` on /test (10 at a million), one HTTP/1.1 port and one \`listen … http2\` (h2c) port, backlog $BACKLOG, keepalive_requests unlimited, access_log off (config: nginx.conf here)"
    echo "- h2o: num-threads 1, file.dir with a static file \`echo\` = \`OK\` (2 bytes), no access log (config: h2o.yaml here); its CPU includes its helper child process"
    echo "- servers on CPU $SERVER_CPU, load tools on CPU $WRK_CPU; fresh server per run; $REPS repetitions, medians"
    for s in $SCENARIOS; do [[ -n ${TOOL_CMDS[$s]:-} ]] && echo "- $s: \`${TOOL_CMDS[$s]% }\`"; done
    echo "- raw outputs: $RESULTS"
    echo
    python3 - "$tsv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
servers = ["slowsrv-h2o", "slowsrv", "nginx", "h2o"]
def of_reps(srv, scen, f, pick):
    v = [f(r) for r in rows if r["server"] == srv and r["scenario"] == scen]
    v = [x for x in v if x == x]
    return pick(v) if v else float("nan")
def med(srv, scen, f):
    return of_reps(srv, scen, f, statistics.median)
def num(r, k):
    try: return float(r[k])
    except ValueError: return float("nan")
def rps(r): return num(r, "requests") / (num(r, "duration_us") / 1e6) if num(r, "duration_us") else 0.0
def cpu_us(r):
    n = num(r, "cpu_requests")
    return num(r, "cpu_ticks") / num(r, "clk_tck") * 1e6 / n if n else float("nan")
def busy(r): return num(r, "cpu_ticks") / num(r, "clk_tck") / (num(r, "run_us") / 1e6) * 100
def tool_us(r):
    n = num(r, "cpu_requests")
    return num(r, "tool_cpu_us") / n if n else float("nan")
def user_us(r):
    n = num(r, "cpu_requests")
    return num(r, "user_ticks") / num(r, "clk_tck") * 1e6 / n if n else float("nan")
def sys_us(r): return cpu_us(r) - user_us(r)
def bad(r): return sum(num(r, k) for k in ("failed", "errored", "timeout", "non2xx", "socket_errors"))
def fmt(x, nd=0):
    if x != x: return "—"
    return f"{x:,.{nd}f}"
def ratio(a, b):
    return "—" if (a != a or b != b or b == 0) else f"{a / b:.2f}"
print("| figure | slowsrv-h2o | slowsrv | nginx | h2o (static) | slowsrv-h2o/nginx | slowsrv-h2o/h2o | target | result |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
def row(name, scen, f, nd=0, target="", check=None, ratios=True):
    v = {s: med(s, scen, f) for s in servers}
    res = ""
    if check:
        ok = check(v)
        res = "n/a" if ok is None else ("PASS" if ok else "FAIL")
    print(f"| {name} | " + " | ".join(fmt(v[s], nd) for s in servers) +
          (f" | {ratio(v['slowsrv-h2o'], v['nginx'])} | {ratio(v['slowsrv-h2o'], v['h2o'])}" if ratios else " |  | ") +
          f" | {target} | {res} |")
def le(a, b, k=1.0):
    return None if (a != a or b != b) else a <= k * b
scens = {r["scenario"] for r in rows}
if "echo-h1" in scens:
    p = "/echo HTTP/1.1 (wrk c=100):"
    row(f"{p} requests/s", "echo-h1", rps)
    # Parity with nginx is the kernel's floor here, so the target is "within noise":
    # slowsrv-h2o's fastest repetition no slower than nginx's slowest (the ranges overlap).
    row(f"{p} server CPU µs/request", "echo-h1", cpu_us, 2,
        "slowsrv-h2o within noise of nginx (ranges overlap)",
        lambda v: le(of_reps("slowsrv-h2o", "echo-h1", cpu_us, min),
                     of_reps("nginx", "echo-h1", cpu_us, max)))
    row(f"{p} … of which user space µs/request", "echo-h1", user_us, 2)
    row(f"{p} … of which kernel µs/request", "echo-h1", sys_us, 2)
    row(f"{p} server CPU busy %", "echo-h1", busy)
    row(f"{p} wrk CPU µs/request", "echo-h1", tool_us, 2)
    row(f"{p} errors + non-2xx", "echo-h1", bad, ratios=False)
    row(f"{p} other processes' CPU %", "echo-h1", lambda r: num(r, "other_cpu_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the server's CPU", "echo-h1", lambda r: num(r, "steal_srv_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the load tool's CPU", "echo-h1", lambda r: num(r, "steal_tool_pct"), ratios=False)
if "echo-h2c" in scens:
    p = "/echo h2c (h2load c=100 m=10):"
    row(f"{p} requests/s", "echo-h2c", rps)
    row(f"{p} server CPU µs/request", "echo-h2c", cpu_us, 2, "slowsrv-h2o ≤ h2o static",
        lambda v: le(v["slowsrv-h2o"], v["h2o"]))
    row(f"{p} … of which user space µs/request", "echo-h2c", user_us, 2)
    row(f"{p} … of which kernel µs/request", "echo-h2c", sys_us, 2)
    row(f"{p} server CPU busy %", "echo-h2c", busy)
    row(f"{p} h2load CPU µs/request", "echo-h2c", tool_us, 2)
    row(f"{p} failed + errored + timeout + non-2xx", "echo-h2c", bad, ratios=False)
    row(f"{p} other processes' CPU %", "echo-h2c", lambda r: num(r, "other_cpu_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the server's CPU", "echo-h2c", lambda r: num(r, "steal_srv_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the load tool's CPU", "echo-h2c", lambda r: num(r, "steal_tool_pct"), ratios=False)
for scen, what in (("test-h2c", "whole run"), ("test-h2c-steady", "steady state, warm-up left out")):
    if scen not in scens:
        continue
    p = f"/test 1 s h2c (h2load c=100 m=100, 10 000 streams, {what}):"
    row(f"{p} requests/s", scen, rps)
    row(f"{p} p50 ms", scen, lambda r: num(r, "p50_us") / 1e3, 1)
    row(f"{p} p99 ms", scen, lambda r: num(r, "p99_us") / 1e3, 1, "slowsrv-h2o ≤ 1010",
        lambda v: le(v["slowsrv-h2o"], 1010))
    row(f"{p} max ms", scen, lambda r: num(r, "max_us") / 1e3, 1)
    row(f"{p} server CPU µs/request", scen, cpu_us, 1)
    row(f"{p} h2load CPU µs/request", scen, tool_us, 1)
    row(f"{p} failed + errored + timeout + non-2xx", scen, bad, ratios=False)
    row(f"{p} other processes' CPU %", scen, lambda r: num(r, "other_cpu_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the server's CPU", scen, lambda r: num(r, "steal_srv_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the load tool's CPU", scen, lambda r: num(r, "steal_tool_pct"), ratios=False)
def ideal(r): return num(r, "conns") * num(r, "streams") / num(r, "delay_s")
def of_ideal(r): return rps(r) / ideal(r) if ideal(r) else float("nan")
def rss_per(r):
    return (num(r, "rss_max_kib") - num(r, "rss_idle_kib")) / (num(r, "conns") * num(r, "streams"))
def ge(a, b): return None if (a != a or b != b) else a >= b
scale = (
    ("test-h1-10k-steady", "/test 1 s HTTP/1.1, 10 000 connections (h2load --h1 -c10000), steady state",
     1010, 0.995, "nginx"),
    ("test-h1-18k-steady", "/test 1 s HTTP/1.1, 18 000 connections (h2load --h1 -c18000), steady state",
     1010, 0.995, None),
    ("wait-h2c-100k-steady", "/test 1 s h2c, 100 000 waiting streams (h2load -c1000 -m100), steady state",
     1010, 0.995, "2"),
    ("wait-h2c-1m-steady", "/test 10 s h2c, 1 000 000 waiting streams (h2load -c10000 -m100), steady state",
     10010, 0.99, "2048MiB"),
    ("wait-h2c-1m-settled", "/test 10 s h2c, 1 000 000 waiting streams, settled (--warm-up-time=32)",
     10010, 0.99, "2048MiB"),
    ("wait-h2c-1m-even", "/test 10 s h2c, 1 000 000 waiting streams, connections opened over one delay "
     "(-r11 --rate-period=10ms), requests sent 20-40 s", 10010, 0.99, "2048MiB"),
)
for scen, what, p99max, rate_min, mem in scale:
    if scen not in scens:
        continue
    p = what + ":"
    row(f"{p} requests/s", scen, rps)
    row(f"{p} requests/s ÷ ideal", scen, of_ideal, 3, f"slowsrv-h2o ≥ {rate_min}",
        lambda v, m=rate_min: ge(v["slowsrv-h2o"], m))
    row(f"{p} p50 ms", scen, lambda r: num(r, "p50_us") / 1e3, 1)
    row(f"{p} p99 ms", scen, lambda r: num(r, "p99_us") / 1e3, 1, f"slowsrv-h2o ≤ {p99max}",
        lambda v, m=p99max: le(v["slowsrv-h2o"], m))
    if mem == "nginx":
        row(f"{p} max ms", scen, lambda r: num(r, "max_us") / 1e3, 1, "slowsrv-h2o ≤ nginx",
            lambda v: le(v["slowsrv-h2o"], v["nginx"]))
    else:
        row(f"{p} max ms", scen, lambda r: num(r, "max_us") / 1e3, 1)
    if scen.startswith("wait-h2c"):
        # slowsrv's own clock: how late each answer started after its delay was due (/stats,
        # the answers within the window), to within 1 %. The
        # million's p99 is judged here: the client's p99 above adds h2load's own lateness and
        # the host's steal on both CPUs (doc/benchmarks.md, "Judging rules").
        q = f"{p} the server's own overshoot over the window (/stats, within 1 %):"
        row(f"{q} p50 ms", scen, lambda r: num(r, "srv_over_p50_ms"), 1, ratios=False)
        if scen == "wait-h2c-1m-even":
            row(f"{q} p99 ms", scen, lambda r: num(r, "srv_over_p99_ms"), 1,
                "slowsrv-h2o ≤ 10 (the million's p99 target, on the server's clock)",
                lambda v: le(v["slowsrv-h2o"], 10), ratios=False)
        else:
            row(f"{q} p99 ms", scen, lambda r: num(r, "srv_over_p99_ms"), 1, ratios=False)
    row(f"{p} server CPU busy %", scen, busy)
    row(f"{p} server CPU µs/request", scen, cpu_us, 1)
    if mem == "nginx":
        row(f"{p} RSS per waiting connection KiB", scen, rss_per, 2, "slowsrv-h2o ≤ nginx",
            lambda v: le(v["slowsrv-h2o"], v["nginx"]))
    elif mem == "2":
        row(f"{p} RSS per waiting stream KiB", scen, rss_per, 2, "slowsrv-h2o ≤ 2",
            lambda v: le(v["slowsrv-h2o"], 2))
    else:
        row(f"{p} RSS per waiting request KiB", scen, rss_per, 2)
    if mem == "2048MiB":
        row(f"{p} peak RSS MiB", scen, lambda r: num(r, "rss_max_kib") / 1024, 0,
            "slowsrv-h2o ≤ 2048", lambda v: le(v["slowsrv-h2o"], 2048))
    else:
        row(f"{p} peak RSS MiB", scen, lambda r: num(r, "rss_max_kib") / 1024, 0)
    row(f"{p} failed + errored + timeout + non-2xx", scen, bad, ratios=False)
    row(f"{p} other processes' CPU %", scen, lambda r: num(r, "other_cpu_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the server's CPU", scen, lambda r: num(r, "steal_srv_pct"), ratios=False)
    row(f"{p} hypervisor steal, % of the load tool's CPU", scen, lambda r: num(r, "steal_tool_pct"), ratios=False)
print()
print("— = not measured (slowsrv: HTTP/1.1 only; h2o: static /echo only). Medians of the "
      "repetitions, each figure separately. Requests/s: requests completed ÷ run time "
      "(h2load: \"succeeded\" ÷ \"finished in\"; requests still waiting when -D ends are not "
      "counted, so a perfect 1 s server scores about (d−1)/d × 10 000/s). CPU: utime+stime of "
      "the server process(es) over the run ÷ requests completed (tick 10 ms); it is the figure "
      "to compare when the load tool, not the server, saturates; user space / kernel = utime / "
      "stime; busy % = that time ÷ the load tool's whole run, warm-up included "
      "(100 % = the server's core is saturated); load-tool CPU = user+sys of wrk/h2load (bash "
      "`times`) ÷ requests. Loopback TCP work done in softirq is charged to whichever process "
      "is running. Other processes' CPU: all CPUs' busy time (/proc/stat, incl. softirq) minus "
      "server and load tool, % of one CPU; runs above OTHER_MAX were repeated (*.noisyN). Hypervisor "
      "steal: /proc/stat's steal ticks of the server's and of the load tool's CPU, % of the run; "
      "this host is a virtual machine, and a stolen CPU stops whatever runs on it for 10 ms or "
      "more, which shows in the tail; runs above STEAL_MAX on the server's CPU were repeated. /test percentiles: nearest "
      "rank over the per-request times of h2load --log-file (status 200 only); steady state: "
      "h2load --warm-up-time, the -D run after it only (CPU per request is over warm-up and "
      "run, so it reads high there). Ideal: streams ÷ delay per second. RSS: VmRSS of the "
      "server process(es) sampled every 0.1 s; per waiting request = (max − idle) ÷ streams. "
      "18 000 connections: slowsrv and slowsrv-h2o with --max-connections 20000; 1 000 000: "
      "--delay 10s (nginx echo_sleep 10) and --max-connections 10100 (so that /stats gets in beside "
      "h2load's 10 000). The server's own overshoot (slowsrv, wait-h2c rows): /stats read at the start "
      "and end of the judged window (5-20 s at 100 000; the warm-up's end and the run's end in the million's steady and settled rows; "
      "30-50 s for the million opened over one delay, when the requests sent 20-40 s are "
      "answered), the difference of the /test route's delay_overshoot_ms histogram: how late each "
      "answer started after its delay was due, on the server's clock; percentiles within 1 % "
      "(the middle of a log-linear bucket, 64 to each power of two). Opened over one delay: the requests sent 20-40 s into "
      "the run (h2load -n has no warm-up): percentiles over them, requests/s = their number ÷ 20 s, "
      "CPU per request = the whole run's ÷ all requests.")
PY
} >"$RESULTS/summary.md"
cat "$RESULTS/summary.md"
log "raw outputs and summary: $RESULTS"
