#!/usr/bin/env bash
# measure_clients.sh - the worked example of doc/measuring.md: the same slowsrv target
# (GET /test?delay=DELAY) loaded by wrk, h2load (HTTP/1.1 and h2c) and Apache HttpClient 5, and
# each client's latency set beside the server's own figures for the same requests.
#
# For each client: POST /reset on the control port, run the client (the first second left out
# where the tool allows: h2load --warm-up-time, HttpClient's own warm-up; wrk has none), then
# GET /stats. One row per client: its p50 and p99 as it measured them, the server's (the fixed
# delay plus /stats' delay_overshoot_ms p50 and p99), and their differences: what the client and
# the loopback add. HttpClient 5 also reads Server-Timing's wait;dur on every answer
# (tests/bench/measuring/ServerShare.java) and reports the per-request difference itself.
#
# Not part of the test suite. Server pinned to CPU $SERVER_CPU, clients to CPU $CLIENT_CPU.
# Knobs (environment): BIN=build/slowsrv-h2o  DELAY=50ms  CONNS=50  DUR=10
#   SERVER_CPU=0 CLIENT_CPU=1  RESULTS=dir (default tests/bench/results/<date>-clients/)
# Needs: wrk, nghttp2-client (h2load), curl, python3, default-jdk-headless, libhttpclient5-java.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=${BIN:-$root/build/slowsrv-h2o}
DELAY=${DELAY:-50ms}
CONNS=${CONNS:-50}
DUR=${DUR:-10}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
RESULTS=${RESULTS:-$root/tests/bench/results/$(date +%Y%m%d-%H%M%S)-clients}
# shellcheck source=tests/bench/lib.sh
source "$here/lib.sh"

for tool in wrk h2load curl python3 java taskset; do
    command -v "$tool" >/dev/null || { echo "measure_clients.sh: $tool is missing (apt-get install -y wrk nghttp2-client curl python3 default-jdk-headless libhttpclient5-java)" >&2; exit 2; }
done
cp=/usr/share/java/httpclient5.jar:/usr/share/java/httpcore5.jar:/usr/share/java/httpcore5-h2.jar:/usr/share/java/slf4j-api.jar
[[ -r /usr/share/java/httpclient5.jar ]] || { echo "measure_clients.sh: HttpClient 5 is missing (apt-get install -y libhttpclient5-java)" >&2; exit 2; }
[[ -x $BIN ]] || { echo "measure_clients.sh: $BIN is not built (cmake -S . -B build -DSLOWSRV_TESTS=OFF && cmake --build build, or BIN=path)" >&2; exit 2; }

mkdir -p "$RESULTS"
tmp=$(mktemp -d)
port=$(free_port)
ctl=$(free_port)
taskset -c "$SERVER_CPU" "$BIN" --threads 1 --port "$port" --control "$ctl" --delay "$DELAY" \
    2>"$RESULTS/server.err" &
srv=$!
trap 'kill -TERM $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/echo" >/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port/test?delay=$DELAY"
log "server: $(head -1 "$RESULTS/server.err")"

# Requests/latency of a client's run → "p50 p99" in ms, from its own output.
run() { # name command...
    local name=$1; shift
    curl -sf -X POST "http://127.0.0.1:$ctl/reset" >/dev/null
    log "$name: $*"
    taskset -c "$CLIENT_CPU" "$@" >"$RESULTS/$name.out" 2>&1
    curl -sf "http://127.0.0.1:$port/stats" >"$RESULTS/$name.stats.json"
}
run wrk wrk -t1 -c "$CONNS" -d "${DUR}s" --latency "$url"
run h2load-h1 h2load --h1 -t1 -c "$CONNS" --warm-up-time=1 -D "$((DUR - 1))" --log-file="$tmp/h1.log" "$url"
cp "$tmp/h1.log" "$RESULTS/h2load-h1.log"
run h2load-h2c h2load -t1 -c 5 -m "$((CONNS / 5))" --warm-up-time=1 -D "$((DUR - 1))" --log-file="$tmp/h2c.log" "$url"
cp "$tmp/h2c.log" "$RESULTS/h2load-h2c.log"
run httpclient5 java -cp "$cp" "$here/measuring/ServerShare.java" "$url" "$CONNS" "$DUR"

python3 - "$RESULTS" "$DELAY" <<'PY' | tee "$RESULTS/summary.md"
import json, re, sys
d = sys.argv[1]

def wrk(name):
    text = open(f"{d}/{name}.out").read()
    def ms(p):
        m = re.search(rf"^\s*{p}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        v, u = float(m.group(1)), m.group(2)
        return v / 1000 if u == "us" else v * 1000 if u == "s" else v
    n = int(re.search(r"(\d+) requests in", text).group(1))
    return n, ms(50), ms(99)

def h2load(name):
    # --log-file: start (µs since epoch) status duration (µs), one request a line
    durs = sorted(int(f[2]) / 1000 for f in (l.split() for l in open(f"{d}/{name}.log")) if f[1] == "200")
    rank = lambda p: durs[max(0, min(len(durs) - 1, -(-len(durs) * p // 100) - 1))]
    return len(durs), rank(50), rank(99)

def httpclient(name):
    line = open(f"{d}/{name}.out").read().strip().splitlines()[-1]
    f = dict(kv.split("=") for kv in line.split())
    return int(f["n"]), float(f["client_p50"]), float(f["client_p99"]), f

# The delay is fixed, so the server's share of a request is the delay plus its overshoot; the
# overshoot histogram reads a fraction of a millisecond to 1 %, where service_ms' 1 % of 50 ms
# (half a millisecond) is as large as what the client adds.
m = re.fullmatch(r"([\d.]+)(us|ms|s)", sys.argv[2])
delay_ms = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
print("| client | answers | client p50 ms | client p99 ms | server p50 ms (delay + overshoot) | server p99 ms | the client's share at p50 ms | at p99 ms |")
print("|---|---|---|---|---|---|---|---|")
hc = None
for name, read in (("wrk", wrk), ("h2load-h1", h2load), ("h2load-h2c", h2load), ("httpclient5", httpclient)):
    got = read(name)
    if name == "httpclient5":
        hc = got[3]
    ov = json.load(open(f"{d}/{name}.stats.json"))["routes"]["/test"]["delay_overshoot_ms"]
    s50, s99 = delay_ms + ov["p50"], delay_ms + ov["p99"]
    print(f"| {name} | {got[0]} | {got[1]:.3f} | {got[2]:.3f} | {s50:.3f} | {s99:.3f} | "
          f"{got[1] - s50:.3f} | {got[2] - s99:.3f} |")
print()
print(f"HttpClient 5, per request (Server-Timing wait;dur): wait p50 {float(hc['wait_p50']):.3f} ms, "
      f"p99 {float(hc['wait_p99']):.3f} ms; the client's own share (latency − wait) p50 "
      f"{float(hc['own_p50']):.3f} ms, p99 {float(hc['own_p99']):.3f} ms, max {float(hc['own_max']):.3f} ms; "
      f"{hc['failed']} failed.")
PY
