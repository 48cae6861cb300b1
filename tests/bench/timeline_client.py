#!/usr/bin/env python3
"""timeline_client.py - per-request timeline of a delayed route (bench_control.sh, issue 17).

Sends `GET PATH` to HOST:PORT at a fixed RATE (requests/s, open loop: the send instants are set
by the clock, not by the answers) for DURATION seconds, each request on an idle keep-alive
HTTP/1.1 connection from a pool (CONNS opened beforehand, more if all are busy). A closed loop
(each connection sending again as soon as it is answered) is not used: the answers of a delayed
route come in batches, the connections fall into step, and whole tens of milliseconds then pass
without a request being sent. At a fixed rate, any instant is bracketed by requests about
1/RATE apart. For every answer it writes one line to OUT (tab-separated):

    conn  send_ns  recv_ns  latency_us  status  dur_ms  gen

send_ns / recv_ns: Unix time (CLOCK_REALTIME, the clock of /stats' scenario.started_at and
began_at) just before the request is written and just after the whole answer is read;
dur_ms / gen: the answer's `Server-Timing: delay;dur=…, gen;desc=…` (which plan answered; "-"
if absent). The last line is a summary: "# requests=N errors=E late_sends=L max_send_lag_us=M"
(a send is late when the client's loop got to it more than 1 ms after its slot).

Python 3 standard library only. Usage:
    timeline_client.py --port P [--host 127.0.0.1] [--path /test] [--rate 1000]
                       [--conns 400] [--duration 25] --out FILE
"""
import argparse
import asyncio
import collections
import re
import sys
import time

RE_LEN = re.compile(rb"(?im)^content-length:\s*([0-9]+)")
RE_TIMING = re.compile(rb"(?im)^server-timing:\s*(.*?)\r$")
RE_CLOSE = re.compile(rb"(?im)^connection:\s*close")
RE_DUR = re.compile(rb"delay;dur=([0-9.]+)")
RE_GEN = re.compile(rb"gen;desc=([0-9]+)")


class Client:
    def __init__(self, args):
        self.args = args
        self.req = (f"GET {args.path} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\n"
                    "User-Agent: slowsrv-timeline\r\n\r\n").encode()
        self.idle = collections.deque()
        self.rows = []
        self.errors = 0
        self.nconns = 0

    async def connect(self):
        r, w = await asyncio.open_connection(self.args.host, self.args.port)
        self.nconns += 1
        return (self.nconns - 1, r, w)

    async def one(self, conn):
        i, reader, writer = conn
        try:
            t_send = time.time_ns()
            writer.write(self.req)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            m = RE_LEN.search(head)
            if m and int(m.group(1)):
                await reader.readexactly(int(m.group(1)))
            t_recv = time.time_ns()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            self.errors += 1
            writer.close()
            return
        m = RE_TIMING.search(head)
        st = m.group(1) if m else b""
        d, g = RE_DUR.search(st), RE_GEN.search(st)
        self.rows.append((i, t_send, t_recv, (t_recv - t_send) // 1000, status,
                          d.group(1).decode() if d else "-", g.group(1).decode() if g else "-"))
        if RE_CLOSE.search(head):
            writer.close()
        else:
            self.idle.append(conn)

    async def send(self):
        try:
            conn = self.idle.popleft() if self.idle else await self.connect()
        except OSError:
            self.errors += 1
            return
        await self.one(conn)

    async def run(self):
        a = self.args
        for _ in range(a.conns):
            self.idle.append(await self.connect())
        period = 1.0 / a.rate
        total = int(a.duration * a.rate)
        t0 = time.monotonic() + 0.05
        tasks, late, max_lag = set(), 0, 0.0
        k = 0
        while k < total:
            now = time.monotonic()
            slot = t0 + k * period
            if slot > now:
                await asyncio.sleep(slot - now)
                continue
            while k < total and t0 + k * period <= now:   # every slot that is due
                lag = now - (t0 + k * period)
                max_lag = max(max_lag, lag)
                late += lag > 0.001
                t = asyncio.ensure_future(self.send())
                tasks.add(t)
                t.add_done_callback(tasks.discard)
                k += 1
            await asyncio.sleep(0)
        if tasks:
            await asyncio.wait(tasks, timeout=a.drain)
        for _, _, w in self.idle:
            w.close()
        return late, max_lag


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path", default="/test")
    ap.add_argument("--rate", type=float, default=1000.0, help="requests per second")
    ap.add_argument("--conns", type=int, default=400, help="connections opened beforehand")
    ap.add_argument("--duration", type=float, default=25.0, help="seconds of sending")
    ap.add_argument("--drain", type=float, default=5.0, help="seconds to wait for the last answers")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    c = Client(args)
    late, max_lag = await c.run()
    with open(args.out, "w") as f:
        f.write("conn\tsend_ns\trecv_ns\tlatency_us\tstatus\tdur_ms\tgen\n")
        for r in sorted(c.rows, key=lambda r: r[1]):
            f.write("\t".join(map(str, r)) + "\n")
        f.write(f"# requests={len(c.rows)} errors={c.errors} late_sends={late} "
                f"max_send_lag_us={max_lag * 1e6:.0f} conns={c.nconns}\n")
    print(f"timeline: {len(c.rows)} answers, {c.errors} errors, {c.nconns} connections, "
          f"{late} sends > 1 ms late (max {max_lag * 1e3:.1f} ms)", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
