#!/usr/bin/env bash
# bench_threads.sh - /echo with --threads 1 against --threads 2, the load tool on the same cores
# (issue #16, point 5: do the loops scale?).
#
# Unlike the other scripts nothing is pinned: the server and wrk share both CPUs, as on a
# laptop or a 2-CPU container. On a 2-core machine a second loop can only help as far as wrk
# leaves a core free, so the figure is what it is: requests/s, server CPU time per request
# (does a second loop make each request dearer?) and requests/s per CPU-second of the server.
#
# Runs, REPS times each, alternating the order, fresh server per run:
#   slowsrv-h2o --threads 1 | 2    slowsrv --threads 1 | 2        (--port 0 --delay 0)
#   wrk -t2 -c100 -d${DUR}s http://127.0.0.1:PORT/echo
# Knobs: REPS=3 DUR=10 SLOWSRV=path SLOWSRV_H2O=path RESULTS=dir
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
REPS=${REPS:-3}
DUR=${DUR:-10}
SLOWSRV=${SLOWSRV:-$root/build-bench/slowsrv}
SLOWSRV_H2O=${SLOWSRV_H2O:-$root/build-bench/slowsrv-h2o}
RESULTS=${RESULTS:-$here/results/$(date +%Y%m%d-%H%M%S)-threads}
QUIET_WAIT=${QUIET_WAIT:-60}
QUIET_MAX=${QUIET_MAX:-10}
CLK_TCK=$(getconf CLK_TCK)
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
die() { printf '[bench] FATAL: %s\n' "$*" >&2; exit 1; }

command -v wrk >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >/dev/null
if [[ ! -x $SLOWSRV || ! -x $SLOWSRV_H2O ]]; then
    (cd "$root" && cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSLOWSRV_TESTS=OFF >/dev/null &&
        cmake --build build-bench -j2 >/dev/null) || die "slowsrv build failed"
fi
mkdir -p "$RESULTS"
[[ $RESULTS == "$here/results/"* && ! -f $here/results/.gitignore ]] && printf '*\n' >"$here/results/.gitignore"
tmp=$(mktemp -d /tmp/slowsrv-bench-threads.XXXXXX)
declare -A live=()
cleanup() {
    local rc=$? pid
    trap - EXIT
    for pid in "${!live[@]}"; do stop_pid "$pid" "${live[$pid]}"; done
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT

cpu_ticks() { # utime+stime of pid, all threads
    local line rest f
    read -r line <"/proc/$1/stat"
    rest=${line##*) }
    read -ra f <<<"$rest"
    echo $((f[11] + f[12]))
}

tsv=$RESULTS/results.tsv
printf 'rep\tbinary\tthreads\trequests\tduration_us\tcpu_ticks\n' >"$tsv"
run() { # rep binary-name path threads
    local rep=$1 name=$2 bin=$3 n=$4 err=$tmp/$2.$4.err pid port c0 c1 out
    wait_quiet
    "$bin" --threads "$n" --port 0 --delay 0 2>"$err" &
    pid=$!; live[$pid]=$name
    for _ in $(seq 100); do
        port=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$err" | head -1)
        [[ -n $port ]] && break
        sleep 0.1
    done
    [[ -n $port ]] || die "$name did not start"
    grep -q " threads=$n" "$err" || die "$name: not $n loops: $(cat "$err")"
    out=$RESULTS/echo.$name.t$n.rep$rep.txt
    c0=$(cpu_ticks "$pid")
    log "rep $rep $name --threads $n: wrk -t2 -c100 -d${DUR}s /echo"
    wrk -t2 -c100 -d"${DUR}s" "http://127.0.0.1:$port/echo" >"$out" 2>&1
    c1=$(cpu_ticks "$pid")
    stop_pid "$pid" "$name"
    python3 - "$out" "$rep" "$name" "$n" "$((c1 - c0))" >>"$tsv" <<'PY'
import re, sys
out, rep, name, n, ticks = sys.argv[1:]
t = open(out).read()
m = re.search(r"(\d+) requests in ([0-9.]+)(us|ms|s)", t)
req = int(m.group(1)); d = float(m.group(2)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(3)]
print(f"{rep}\t{name}\t{n}\t{req}\t{d:.0f}\t{ticks}")
PY
}

log "results: $RESULTS"
for ((rep = 1; rep <= REPS; rep++)); do
    order=(1 2)
    ((rep % 2 == 0)) && order=(2 1)
    for name in slowsrv-h2o slowsrv; do
        bin=$SLOWSRV_H2O
        [[ $name == slowsrv ]] && bin=$SLOWSRV
        for n in "${order[@]}"; do run "$rep" "$name" "$bin" "$n"; done
    done
done

{
    echo "## /echo, --threads 1 against --threads 2, wrk -t2 -c100 on the same 2 cores"
    echo
    echo "- command: \`tests/bench/bench_threads.sh\` (REPS=$REPS DUR=$DUR), $(date -Is), nproc=$(nproc)"
    echo "- nothing pinned; fresh server per run; medians of $REPS"
    echo
    python3 - "$tsv" "$CLK_TCK" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t")); clk = float(sys.argv[2])
def med(name, n, f):
    return statistics.median(f(r) for r in rows if r["binary"] == name and r["threads"] == n)
rps = lambda r: float(r["requests"]) / (float(r["duration_us"]) / 1e6)
cpu = lambda r: float(r["cpu_ticks"]) / clk * 1e6 / float(r["requests"])
busy = lambda r: float(r["cpu_ticks"]) / clk / (float(r["duration_us"]) / 1e6) * 100
print("| binary | threads | requests/s | server CPU µs/request | server busy % of one CPU | requests per server CPU-second |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name in ("slowsrv-h2o", "slowsrv"):
    for n in ("1", "2"):
        print(f"| {name} | {n} | {med(name, n, rps):,.0f} | {med(name, n, cpu):.2f} | "
              f"{med(name, n, busy):.0f} | {1e6 / med(name, n, cpu):,.0f} |")
print()
for name in ("slowsrv-h2o", "slowsrv"):
    a, b = med(name, "1", rps), med(name, "2", rps)
    c1, c2 = med(name, "1", cpu), med(name, "2", cpu)
    print(f"- {name}: --threads 2 / --threads 1 = {b / a:.2f}× the requests/s, "
          f"{c2 / c1:.2f}× the CPU per request")
PY
} >"$RESULTS/summary.md"
cat "$RESULTS/summary.md"
