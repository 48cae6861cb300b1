#!/usr/bin/env bash
# bench_upload.sh - multipart uploads (POST /write): slowsrv and slowsrv-h2o next to the gin
# upload demo (issue #3), same run, same machine.
#
# The body is multipart/form-data with a text field `token` and a file part `data` of 5 KB
# (5120 bytes) and 500 KB (512000 bytes); every server answers the byte count of `data`
# (gin: the JSON number, same digits). For every size and server, REPS times (medians):
#   wrk -t1 -c50 -d10s --latency -s post.lua   (body built once in Lua, see post.lua below)
# and reports requests/s, MB/s of request body (requests/s x Content-Length, 1 MB = 10^6 B),
# p50/p99/max latency, socket errors, non-2xx, server CPU time per request and the server's
# peak RSS (VmHWM of /proc/PID/status at the end of the run; fresh server per run).
# Before measuring, every server must answer the right count to curl for the very body wrk
# sends, and to a short wrk run that checks every answer (Lua response() hook).
#
# Servers, one thread each, pinned to CPU $SERVER_CPU (wrk and this script on CPU $WRK_CPU):
#   slowsrv     --threads 1 --port 0 --max-body 2G           (libmicrohttpd engine)
#   slowsrv-h2o --threads 1 --port 0 --max-body 2G           (libh2o engine; buffers bodies)
#   gin         the gin upload demo (Debian's golang-github-gin-gonic-gin-dev, built offline
#               in GOPATH mode from a heredoc into a temp dir), release mode, no Logger,
#               GOMAXPROCS=1
#
# Not part of the test suite. See tests/bench/README.md. Knobs (environment):
#   SLOWSRV=path SLOWSRV_H2O=path   binaries (default build-bench/…, built if missing)
#   REPS=3  SIZES="5120 512000"  CONNS=50  DUR=10s  SERVER_CPU=0 WRK_CPU=1
#   SERVERS="slowsrv slowsrv-h2o gin"   RESULTS=dir (default tests/bench/results/<date>-upload/)
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cmdline="$0${*:+ $*}"
for a in REPS SIZES CONNS DUR SERVER_CPU WRK_CPU SLOWSRV SLOWSRV_H2O SERVERS RESULTS QUIET_WAIT QUIET_MAX OTHER_MAX TRIES; do
    [[ -n ${!a:-} ]] && cmdline="$a=\"${!a}\" $cmdline"
done

REPS=${REPS:-3}
SIZES=${SIZES:-"5120 512000"}
CONNS=${CONNS:-50}
DUR=${DUR:-10s}
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
SLOWSRV=${SLOWSRV:-$root/build-bench/slowsrv}
SLOWSRV_H2O=${SLOWSRV_H2O:-$root/build-bench/slowsrv-h2o}
SERVERS=${SERVERS:-"slowsrv slowsrv-h2o gin"}
stamp=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$here/results/$stamp-upload}
MAX_BODY=2G
CHECK_DUR=2s         # wrk run that checks every answer, per server and size
START_TIMEOUT=10
QUIET_WAIT=${QUIET_WAIT:-120}   # s to wait for an idle host before each run
QUIET_MAX=${QUIET_MAX:-10}     # idle: < this % of one CPU busy
OTHER_MAX=${OTHER_MAX:-25}     # max % of one CPU used by others during a run
TRIES=${TRIES:-3}
NOFILE=20000

# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
die() { printf '[bench] FATAL: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- prerequisites
need_pkgs=()
command -v wrk >/dev/null 2>&1 || need_pkgs+=(wrk)
command -v taskset >/dev/null 2>&1 || need_pkgs+=(util-linux)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
command -v go >/dev/null 2>&1 || need_pkgs+=(golang-go)
[[ -d /usr/share/gocode/src/github.com/gin-gonic/gin ]] || need_pkgs+=(golang-github-gin-gonic-gin-dev)
if ((${#need_pkgs[@]})); then
    log "installing missing packages: ${need_pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_pkgs[@]}" ||
        die "apt-get install ${need_pkgs[*]} failed"
fi
command -v python3 >/dev/null 2>&1 || die "python3 is required (summary table)"

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

# keep this script, its helpers and wrk off the server CPU
taskset -p -c "$WRK_CPU" $$ >/dev/null

CLK_TCK=$(getconf CLK_TCK)
mkdir -p "$RESULTS"
if [[ $RESULTS == "$here/results/"* ]]; then
    [[ -f $here/results/.gitignore ]] || printf '*\n' >"$here/results/.gitignore"
fi
tmp=$(mktemp -d /tmp/slowsrv-bench-upload.XXXXXX)
tsv=$RESULTS/results.tsv
printf 'rep\tserver\tsize\tbody_bytes\tconns\trequests\tduration_us\tp50_us\tp99_us\tmax_us\terr_connect\terr_read\terr_write\terr_timeout\tnon2xx\tvmhwm_kib\tcpu_ticks\tclk_tck\twrk_cpu_us\tother_cpu_pct\n' >"$tsv"

# ---------------------------------------------------------------- process bookkeeping
# Only PIDs this script started are ever signalled.
declare -A live=()   # pid -> name

# the gin demo has no signal handler: SIGTERM kills it (status 143), which is fine
STOP_TERM_OK=gin

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

CHILD_US=0

vmhwm_kib() { # peak RSS of one pid
    local k v _
    while read -r k v _; do
        [[ $k == VmHWM: ]] && { echo "$v"; return 0; }
    done <"/proc/$1/status" 2>/dev/null || true
    echo 0
}

# ---------------------------------------------------------------- the gin upload demo
GIN=$tmp/gin/ginupload
build_gin() {
    local d=$tmp/gin
    mkdir -p "$d/gopath/src/ginupload" "$d/cache"
    cat >"$d/gopath/src/ginupload/main.go" <<'EOF'
// The gin upload demo of issue #3: POST /write answers the size of the form file "data".
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"
)

func main() {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New() // no Logger, no Recovery
	r.POST("/write", func(c *gin.Context) {
		file, err := c.FormFile("data")
		if err != nil {
			c.JSON(400, gin.H{"error": err.Error()})
			return
		}
		c.JSON(200, file.Size)
	})
	addr := "127.0.0.1:0"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "ginupload (gin %s, %s) listening on http://%s (GOMAXPROCS=%s)\n",
		gin.Version, runtimeVersion(), ln.Addr(), os.Getenv("GOMAXPROCS"))
	// what r.Run(addr) does, on a listener whose port we know
	if err := http.Serve(ln, r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
EOF
    cat >"$d/gopath/src/ginupload/version.go" <<'EOF'
package main

import "runtime"

func runtimeVersion() string { return runtime.Version() }
EOF
    # Offline: GOPATH mode (no modules, no proxy) over Debian's sources in /usr/share/gocode.
    GIN_BUILD_CMD="GOPATH=$d/gopath:/usr/share/gocode GO111MODULE=off GOFLAGS= GOPROXY=off GOCACHE=$d/cache go build -o $GIN ginupload"
    (cd "$d" && env GOPATH="$d/gopath:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOPROXY=off \
        GOCACHE="$d/cache" go build -o "$GIN" ginupload) >"$RESULTS/gin-build.log" 2>&1 ||
        { cat "$RESULTS/gin-build.log" >&2; die "building the gin demo failed"; }
}

# ---------------------------------------------------------------- wrk script
# post.lua SIZE [DUMP]: multipart body built once in init(); DUMP writes it to a file (curl
# check). The file part holds SIZE pseudo-random bytes (fixed LCG: same bytes every run).
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
    "WRKSTATS requests=%.0f duration_us=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
EOF
# ---------------------------------------------------------------- servers
SRV_PID="" SRV_PORT=""
declare -A BANNER=()

start_server() { # name tag
    local name=$1 err=$tmp/$1.$2.err i
    case $name in
    slowsrv) taskset -c "$SERVER_CPU" "$SLOWSRV" --threads 1 --port 0 --max-body "$MAX_BODY" 2>"$err" & ;;
    slowsrv-h2o) taskset -c "$SERVER_CPU" "$SLOWSRV_H2O" --threads 1 --port 0 --max-body "$MAX_BODY" 2>"$err" & ;;
    gin) GOMAXPROCS=1 taskset -c "$SERVER_CPU" "$GIN" 127.0.0.1:0 2>"$err" & ;;
    *) die "unknown server $name" ;;
    esac
    SRV_PID=$!; live[$SRV_PID]=$name
    SRV_PORT=""
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        if ! kill -0 "$SRV_PID" 2>/dev/null; then
            cat "$err" >&2; die "$name exited during startup"
        fi
        # the background job may not have created $err yet
        SRV_PORT=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$err" 2>/dev/null | head -1) || true
        [[ -n $SRV_PORT ]] && break
        sleep 0.1
    done
    [[ -n $SRV_PORT ]] || { cat "$err" >&2; die "$name printed no listening line within ${START_TIMEOUT}s"; }
    [[ -n ${BANNER[$name]:-} ]] || BANNER[$name]=$(grep -m1 'listening on' "$err")
    return 0
}

post_ok() { # port size: curl POSTs the dumped body, expects the byte count
    local ans
    ans=$(curl -s --max-time 10 -H "Content-Type: $(cat "$tmp/body.$2.ctype")" \
        --data-binary "@$tmp/body.$2" "http://127.0.0.1:$1/write" 2>/dev/null) || return 1
    [[ $ans == "$2" ]] || { log "expected '$2', got '$ans'"; return 1; }
}

wrk_cmd() { # port size conns dur luafile -> array WRK
    WRK=(taskset -c "$WRK_CPU" wrk -t1 -c "$3" -d "$4" --latency -s "$5"
        "http://127.0.0.1:$1/write" -- "$2")
}

parse_wrk() { # out rep server size body_bytes conns vmhwm ticks clk wrk_cpu_us other% -> tsv line
    python3 - "$@" <<'PY'
import re, sys
out, rep, srv, size, body, conns, hwm, ticks, clk, wcpu, other = sys.argv[1:]
text = open(out, errors="replace").read()
m = re.search(r"^WRKSTATS (.*)$", text, re.M)
if not m:
    sys.exit("no WRKSTATS line in " + out)
d = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
cols = [rep, srv, size, body, conns] + ["%.0f" % d[k] for k in
        ("requests", "duration_us", "p50_us", "p99_us", "max_us", "connect", "read", "write",
         "timeout", "status")] + [hwm, ticks, clk, wcpu, other]
print("\t".join(cols))
PY
}

# ---------------------------------------------------------------- build, preflight
log "results: $RESULTS"
log "building the gin demo (GOPATH mode, offline)"
build_gin

WRK_SEEN_CMDS=()
for size in $SIZES; do
    # dump the exact body wrk sends (1 s, 1 connection, against slowsrv) for the curl check
    start_server slowsrv dump
    taskset -c "$WRK_CPU" wrk -t1 -c1 -d1s -s "$tmp/post.lua" "http://127.0.0.1:$SRV_PORT/write" \
        -- "$size" "$tmp/body.$size" >"$RESULTS/dump.$size.txt" 2>&1 || die "wrk dump run failed"
    stop_pid "$SRV_PID" slowsrv
    [[ -s $tmp/body.$size ]] || die "post.lua wrote no body for $size"
    cp "$tmp/body.$size.ctype" "$RESULTS/body.$size.content-type"
    log "body for $size: $(stat -c %s "$tmp/body.$size") bytes, $(cat "$tmp/body.$size.ctype")"
done

for srv in $SERVERS; do
    start_server "$srv" pre
    for size in $SIZES; do
        post_ok "$SRV_PORT" "$size" || die "$srv: POST /write of $size bytes did not answer $size"
        out=$RESULTS/check.$srv.$size.txt
        BENCH_CHECK=1 taskset -c "$WRK_CPU" wrk -t1 -c "$CONNS" -d "$CHECK_DUR" -s "$tmp/post.lua" \
            "http://127.0.0.1:$SRV_PORT/write" -- "$size" >"$out" 2>&1 || die "checked wrk run failed ($srv $size)"
        if grep -q 'BAD ANSWER' "$out"; then
            cat "$out" >&2; die "$srv: wrong answers under load ($size bytes), see $out"
        fi
        grep -q '^WRKSTATS requests=[1-9]' "$out" || { cat "$out" >&2; die "$srv: checked run completed no request"; }
        grep -q 'status=0 ' "$out" || { cat "$out" >&2; die "$srv: non-2xx answers in the checked run"; }
        log "preflight $srv $size: curl answered $size; $(sed -n 's/^WRKSTATS \(requests=[0-9]*\).*/\1/p' "$out") checked answers all $size"
    done
    kill -0 "$SRV_PID" 2>/dev/null || die "$srv died during preflight"
    stop_pid "$SRV_PID" "$srv"
done

# ---------------------------------------------------------------- runs
read -ra servers <<<"$SERVERS"
for ((rep = 1; rep <= REPS; rep++)); do
    # rotate the order so no server always goes first
    order=("${servers[@]:$(((rep - 1) % ${#servers[@]}))}" "${servers[@]:0:$(((rep - 1) % ${#servers[@]}))}")
    for size in $SIZES; do
        for srv in "${order[@]}"; do
            for ((try = 1; ; try++)); do
                wait_quiet
                start_server "$srv" "$rep.$size.$try"
                sleep 0.5
                out=$RESULTS/wrk.$size.$srv.rep$rep.txt
                wrk_cmd "$SRV_PORT" "$size" "$CONNS" "$DUR" "$tmp/post.lua"
                ((rep == 1 && try == 1)) && [[ $srv == "${servers[0]}" ]] && WRK_SEEN_CMDS+=("${WRK[*]/$tmp\//}")
                log "rep $rep $srv $size$( ((try > 1)) && echo " (try $try)"): ${WRK[*]:3}"
                child_cpu_us; w0=$CHILD_US
                c0=$(cpu_ticks "$SRV_PID")
                sys_busy; b0=$SYS_BUSY; t0=$(date +%s%N)
                "${WRK[@]}" >"$out" 2>&1 || log "wrk exited non-zero ($srv $size), see $out"
                sys_busy; b1=$SYS_BUSY; t1=$(date +%s%N)
                c1=$(cpu_ticks "$SRV_PID")
                child_cpu_us; w1=$CHILD_US
                kill -0 "$SRV_PID" 2>/dev/null || die "$srv died during the $size run (see $out)"
                hwm=$(vmhwm_kib "$SRV_PID")
                # still answering, and answering right, after the load?
                post_ok "$SRV_PORT" "$size" || die "$srv: wrong or no answer right after the $size run"
                stop_pid "$SRV_PID" "$srv"
                # CPU used by anything but this server and wrk, % of one CPU
                other=$(( ((b1 - b0) - (c1 - c0) - (w1 - w0) * CLK_TCK / 1000000) * 100 * 1000000000 / CLK_TCK / (t1 - t0) ))
                echo "# server=$srv pid=$SRV_PID vmhwm_kib=$hwm cpu_ticks=$((c1 - c0)) clk_tck=$CLK_TCK wrk_cpu_us=$((w1 - w0)) other_cpu_pct=$other try=$try" >>"$out"
                if ((other > OTHER_MAX && try < TRIES)); then
                    log "other processes used $other % of a CPU during this run (> $OTHER_MAX): repeating it"
                    mv "$out" "$out.noisy$try"
                    sleep 1
                    continue
                fi
                parse_wrk "$out" "$rep" "$srv" "$size" "$(stat -c %s "$tmp/body.$size")" "$CONNS" "$hwm" "$((c1 - c0))" "$CLK_TCK" "$((w1 - w0))" "$other" >>"$tsv"
                break
            done
            sleep 1
        done
    done
done

# ---------------------------------------------------------------- summary
wrk_v=$( (wrk --version 2>&1 || true) | head -1 | sed 's/ *Copyright.*//')   # exits 1
go_v=$(go version)
gin_v=$(sed -n 's/^const Version = "\(.*\)"/\1/p' /usr/share/gocode/src/github.com/gin-gonic/gin/version.go 2>/dev/null)
gin_pkg=$(dpkg-query -W -f '${Version}' golang-github-gin-gonic-gin-dev 2>/dev/null || echo "?")
git_rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git_dirty=$(git -C "$root" status --porcelain -- servers common CMakeLists.txt 2>/dev/null | wc -l)
{
    echo "## Uploads (POST /write, multipart): slowsrv, slowsrv-h2o and the gin demo"
    echo
    echo "- command: \`$cmdline\` (in $root)"
    echo "- date: $(date -Is)"
    echo "- host: nproc=$ncpu, $(uname -srm), fd limit $(ulimit -n); load average before the summary: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- versions: $wrk_v; $go_v; gin $gin_v (Debian golang-github-gin-gonic-gin-dev $gin_pkg); slowsrv git $git_rev$( ((git_dirty)) && echo " + $git_dirty uncommitted source change(s)"), binaries built $(date -r "$SLOWSRV" -Is)"
    for s in $SERVERS; do echo "- $s: ${BANNER[$s]:-}"; done
    echo "- slowsrv: \`$SLOWSRV --threads 1 --port 0 --max-body $MAX_BODY\`"
    echo "- slowsrv-h2o: \`$SLOWSRV_H2O --threads 1 --port 0 --max-body $MAX_BODY\`"
    echo "- gin: \`GOMAXPROCS=1 ginupload 127.0.0.1:0\` — gin.ReleaseMode, gin.New() (no Logger), \`c.FormFile(\"data\")\` → \`c.JSON(200, file.Size)\`, http.Serve; built with \`$GIN_BUILD_CMD\`"
    echo "- body: multipart/form-data, field \`token\` + file part \`data\` of N pseudo-random bytes (built once in post.lua); MB/s = requests/s × whole body (Content-Length) / 10^6"
    echo "- servers on CPU $SERVER_CPU, wrk on CPU $WRK_CPU; fresh server per run; $REPS repetitions, medians; every server answered N to curl and to a ${CHECK_DUR} checked wrk run before measuring"
    for c in "${WRK_SEEN_CMDS[@]}"; do echo "- wrk: \`$c\`"; done
    echo "- raw outputs: $RESULTS"
    echo
    python3 - "$tsv" "$SERVERS" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
servers = sys.argv[2].split()
def med(srv, size, f):
    v = [f(r) for r in rows if r["server"] == srv and r["size"] == size]
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float("nan")
def rps(r): return float(r["requests"]) / (float(r["duration_us"]) / 1e6) if float(r["duration_us"]) else 0.0
def mbps(r): return rps(r) * float(r["body_bytes"]) / 1e6
def errs(r): return sum(float(r[k]) for k in ("err_connect", "err_read", "err_write", "err_timeout"))
def cpu_us(r):
    n = float(r["requests"])
    return float(r["cpu_ticks"]) / float(r["clk_tck"]) * 1e6 / n if n else float("nan")
def busy(r): return float(r["cpu_ticks"]) / float(r["clk_tck"]) / (float(r["duration_us"]) / 1e6) * 100
def wrk_us(r):
    n = float(r["requests"])
    return float(r["wrk_cpu_us"]) / n if n else float("nan")
def fmt(x, nd=0):
    if x != x: return "n/a"
    return f"{x:,.{nd}f}"
def ratio(a, b):
    return "n/a" if (a != a or b != b or b == 0) else f"{a / b:.2f}"
others = [s for s in servers if s != "gin"]
base = "gin" if "gin" in servers else None
hdr = "| figure | " + " | ".join(servers) + " | " + \
      "".join(f"{s}/gin | " for s in others if base) + "target | result |"
print(hdr)
print("| --- | " + "---: | " * len(servers) + ("---: | " * len(others) if base else "") + "--- | --- |")
def row(name, size, f, nd=0, target="", check=None, ratios=True):
    vals = {s: med(s, size, f) for s in servers}
    cells = [fmt(vals[s], nd) for s in servers]
    if base:
        cells += [ratio(vals[s], vals[base]) if ratios else "" for s in others]
    res = ""
    if check and base and "slowsrv" in vals:
        res = "PASS" if check(vals["slowsrv"], vals[base]) else "FAIL"
    print(f"| {name} | " + " | ".join(cells) + f" | {target} | {res} |")
sizes = sorted({r["size"] for r in rows}, key=int)
for size in sizes:
    n = int(size)
    label = f"{n // 1024} KB" if n % 1024 == 0 else f"{n} B"
    p = f"{label} ({n:,} B):"
    row(f"{p} requests/s", size, rps, 0,
        "slowsrv ≥ 2× gin" if n == 5120 else "",
        (lambda a, b: a >= 2 * b) if n == 5120 else None)
    row(f"{p} MB/s of request body", size, mbps, 1,
        "slowsrv ≥ 1.5× gin" if n == 512000 else "",
        (lambda a, b: a >= 1.5 * b) if n == 512000 else None)
    row(f"{p} p50 latency ms", size, lambda r: float(r["p50_us"]) / 1e3, 2)
    row(f"{p} p99 latency ms", size, lambda r: float(r["p99_us"]) / 1e3, 2)
    row(f"{p} max latency ms", size, lambda r: float(r["max_us"]) / 1e3, 1)
    row(f"{p} server CPU µs/request", size, cpu_us, 1)
    row(f"{p} server CPU busy % (of its core)", size, busy, 0)
    row(f"{p} wrk CPU µs/request", size, wrk_us, 1)
    row(f"{p} peak RSS (VmHWM) MiB", size, lambda r: float(r["vmhwm_kib"]) / 1024, 1)
    row(f"{p} socket errors (conn+read+write+timeout)", size, errs, 0, ratios=False)
    row(f"{p} non-2xx answers", size, lambda r: float(r["non2xx"]), 0, ratios=False)
    row(f"{p} other processes' CPU % during the run", size, lambda r: float(r["other_cpu_pct"]), 0, ratios=False)
print()
print("Medians of the repetitions (each figure separately). Requests/s = requests wrk completed ÷ "
      "run time; p50/p99/max from wrk's latency histogram (exact µs via a Lua done() hook). "
      "CPU: utime+stime of the server over the run ÷ requests (tick resolution 10 ms); busy % = "
      "that CPU time ÷ run time (100 % = the server's core is saturated); wrk CPU = user+sys of "
      "the wrk process (bash `times`) ÷ requests. Loopback TCP work done in softirq is charged "
      "to whichever process is running, mostly the sender (wrk). "
      "Peak RSS: VmHWM of a server started fresh for that run, read at its end. Other "
      "processes' CPU: all CPUs' busy time (/proc/stat, incl. softirq) minus server and wrk, "
      "% of one CPU; runs above OTHER_MAX were repeated (see *.noisyN).")
PY
} >"$RESULTS/summary.md"
cat "$RESULTS/summary.md"
log "raw outputs and summary: $RESULTS"
