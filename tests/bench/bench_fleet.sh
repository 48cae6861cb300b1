#!/usr/bin/env bash
# bench_fleet.sh: a fleet of three slowsrv replicas on this machine, each serving a 1 s /test to
# its own load tool's CONNS connections (3 x 3 000 by default), read the way doc/fleet.md reads
# a fleet: per replica and added up. The replicas share CPU 0, the three wrk CPU 1 (taskset).
# For each replica: wrk's requests/s and p99 over the whole run, and the server's own figures in
# the steady state, from two scrapes of /metrics (at WARM s and at DURATION - 5 s) as
# Prometheus' rate() and histogram_quantile() over the summed buckets would read them: the
# rate, the rate / ideal (CONNS connections / 1 s), and the p99 of the overshoot (how late the
# answers started after their delay was due; its buckets are 10 us apart up to 100 us, then
# 1-2.5-5 per decade to 1 s, where the service time's jump from 1 s to 2.5 s). The fleet row adds the
# rates and sums the buckets before taking the quantile (config/k8s/fleet/rules.yaml).
#
#   tests/bench/bench_fleet.sh [BUILD_DIR]      # default build/; about 45 s
#   CONNS=3000 DURATION=30 WARM=5 tests/bench/bench_fleet.sh build
#
# Traffic goes to 127.0.0.1 only; each server is stopped by its PID.
set -euo pipefail
build=${1:-build}
conns=${CONNS:-3000}
duration=${DURATION:-30}
warm=${WARM:-5}
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"

ports=()
for i in 0 1 2; do
    taskset -c 0 "$build/slowsrv" --port 0 --delay 1s --threads 1 --max-connections 10000 \
        --log-level warn 2>"$tmp/err$i" &
    pids+=($!)
    port=
    for _ in $(seq 100); do
        port=$(sed -n 's/.* listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/err$i" 2>/dev/null || true)
        [[ -n $port ]] && break
        sleep 0.1
    done
    [[ -n $port ]] || { echo "replica $i did not start" >&2; exit 1; }
    ports+=("$port")
done
for i in 0 1 2; do
    taskset -c 1 wrk -t1 -c"$conns" -d"${duration}s" --timeout 10s --latency \
        "http://127.0.0.1:${ports[$i]}/test" >"$tmp/wrk$i" 2>&1 &
    wrks[i]=$!
done
sleep "$warm"
for i in 0 1 2; do curl -s "http://127.0.0.1:${ports[$i]}/metrics" >"$tmp/m0.$i"; done
t0=$(date +%s.%N)
sleep $((duration - warm - 5))
for i in 0 1 2; do curl -s "http://127.0.0.1:${ports[$i]}/metrics" >"$tmp/m1.$i"; done
t1=$(date +%s.%N)
for i in 0 1 2; do wait "${wrks[$i]}"; done

python3 - "$tmp" "$conns" "$t0" "$t1" <<'PY'
import re, sys
tmp, conns, t0, t1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
span = t1 - t0

def scrape(path):
    out = {}
    for line in open(path):
        m = re.match(r'(slowsrv_(?:requests_total|service_seconds_bucket|delay_overshoot_seconds_bucket))\{([^}]*)\} (\S+)', line)
        if m and 'route="/test"' in m.group(2):
            out[(m.group(1), m.group(2))] = float(m.group(3))
    return out

def delta(i):
    a, b = scrape(f"{tmp}/m0.{i}"), scrape(f"{tmp}/m1.{i}")
    return {k: b[k] - a.get(k, 0) for k in b}

def quantile(q, d, name):  # histogram_quantile over buckets {le: count}
    b = sorted((float(re.search(r'le="([^"]*)"', k[1]).group(1).replace('+Inf', 'inf')), v)
               for k, v in d.items() if k[0] == name)
    total = b[-1][1]
    rank, prev_le, prev_c = q * total, 0.0, 0.0
    for le, c in b:
        if c >= rank:
            if le == float('inf'):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c

def wrk(i):
    t = open(f"{tmp}/wrk{i}").read()
    rps = float(re.search(r'Requests/sec:\s+(\S+)', t).group(1))
    p99 = re.search(r'\s99%\s+(\S+)', t).group(1)
    errs = re.search(r'Socket errors: (.*)', t)
    return rps, p99, errs.group(1) if errs else "none"

rows, summed, rate_sum, wrk_sum = [], {}, 0.0, 0.0
for i in range(3):
    d = delta(i)
    n = sum(v for k, v in d.items() if k[0] == 'slowsrv_requests_total')
    rate = n / span
    rps, p99, errs = wrk(i)
    wrk_sum += rps
    rate_sum += rate
    for k, v in d.items():
        if k[0] != 'slowsrv_requests_total':
            key = (k[0], re.sub(r'^.*?(le="[^"]*").*$', r'\1', k[1]))
            summed[key] = summed.get(key, 0) + v
    rows.append((f"replica {i + 1}", f"{rps:.0f}", p99, f"{rate:.0f}", f"{rate / conns:.3f}",
                 f"{quantile(.99, d, 'slowsrv_delay_overshoot_seconds_bucket') * 1000:.2f} ms",
                 errs))
rows.append(("fleet", f"{wrk_sum:.0f}", "", f"{rate_sum:.0f}", f"{rate_sum / (3 * conns):.3f}",
             f"{quantile(.99, summed, 'slowsrv_delay_overshoot_seconds_bucket') * 1000:.2f} ms", ""))
hdr = ("", "wrk req/s", "wrk p99", "server req/s", "÷ ideal", "overshoot p99",
       "wrk socket errors")
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
for r in rows:
    print("| " + " | ".join(r) + " |")
print(f"\nsteady state: {span:.1f} s between two scrapes; {conns} connections per replica")
PY
