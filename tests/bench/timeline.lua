-- timeline.lua - wrk script for bench_control.sh (issue 17): records when each answer
-- completed and which plan answered it.
--
--   wrk -t1 -c50 -d25s -s timeline.lua http://127.0.0.1:PORT/test -- OUTFILE
--
-- One line per answer in OUTFILE (tab-separated): recv_ns status dur_ms gen, where recv_ns is
-- Unix time (CLOCK_REALTIME through LuaJIT's ffi: wrk's Lua has no wall clock of its own) when
-- wrk's response() hook ran, and dur_ms / gen come from the answer's
-- `Server-Timing: delay;dur=…, gen;desc=…` ("-" if absent). wrk gives the hook no handle on the
-- request, so no per-request latency here (timeline_client.py has it); wrk's latency histogram
-- is printed by done() as bench_versions.sh's stats.lua does (exact µs).
-- Use with -t1 only (each thread would open the same file).
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } slowsrv_timeline_ts;
int clock_gettime(int clk, slowsrv_timeline_ts *ts);
]]
local ts = ffi.new("slowsrv_timeline_ts")
local out, n = nil, 0

function init(args)
  if args[1] and args[1] ~= "" then
    out = assert(io.open(args[1], "w"))
    out:setvbuf("full")
  end
end

function response(status, headers, body)
  if not out then return end
  ffi.C.clock_gettime(0, ts) -- CLOCK_REALTIME
  local st = headers["Server-Timing"] or headers["server-timing"] or ""
  local dur = st:match("delay;dur=([0-9.]+)") or "-"
  local gen = st:match("gen;desc=([0-9]+)") or "-"
  out:write(string.format("%d%09d\t%d\t%s\t%s\n", tonumber(ts.tv_sec), tonumber(ts.tv_nsec),
    status, dur, gen))
  n = n + 1
  if n % 500 == 0 then out:flush() end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKSTATS requests=%.0f duration_us=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f mean_us=%.0f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
