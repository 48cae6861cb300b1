#!/usr/bin/python3
"""Event streams read by real clients: Python's aiohttp (SSE and NDJSON) and the curl binary
with -N, against one binary started on 127.0.0.1 port 0.

    sse_clients.py BINARY aiohttp|curl

Checks the events' ids (1 to N, and on from Last-Event-ID), their count, their intended gaps
exactly and their arrival gaps coarsely (as the client saw them), and that curl -N hands each
event over as it comes, not at the end. Exit 0 when every check passed.
"""
import asyncio
import re
import signal
import subprocess
import sys
import time

FAILS = []


def check(ok, what):
    if not ok:
        FAILS.append(what)
        print("FAIL: " + what, file=sys.stderr)


def start(binary):
    """The server on port 0: (process, port), read from its startup line."""
    proc = subprocess.Popen(
        [binary, "--port", "0", "--delay", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    line = proc.stdout.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        sys.exit("sse_clients: %s did not start: %r" % (binary, line))
    return proc, int(m.group(1))


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -1
    check(rc == 0, "the server exited %d, want 0" % rc)


def sse_blocks(text):
    """The SSE events of text, each a dict of its fields (the comment as "comment")."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        ev = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                ev["comment"] = line[1:].strip()
            else:
                k, _, v = line.partition(": ")
                ev[k] = v
        events.append(ev)
    return events


def intended_us(ev):
    m = re.search(r"intended_us=(\d+)", ev.get("comment", ""))
    return int(m.group(1)) if m else -1


def check_arrivals(what, arrivals, gap_s):
    """Each event came about gap_s after the one before: coarse bounds only a real bug
    crosses (all at once at the end, or a gap doubled)."""
    for i in range(1, len(arrivals)):
        d = arrivals[i] - arrivals[i - 1]
        check(
            gap_s * 0.5 <= d <= gap_s + 0.15,
            "%s: event %d came %.3f s after the one before, want about %.3f s"
            % (what, i + 1, d, gap_s),
        )


async def aiohttp_cases(port):
    import aiohttp

    base = "http://127.0.0.1:%d" % port
    async with aiohttp.ClientSession() as session:
        # SSE: five events 100 ms apart, read as they come.
        url = base + "/echo?stream=sse,count=5,size=8,retry=1500,event=tok,gap=100ms"
        t0 = time.monotonic()
        async with session.get(url) as resp:
            check(resp.status == 200, "sse: status %d" % resp.status)
            ctype = resp.headers.get("Content-Type")
            check(ctype == "text/event-stream", "sse: Content-Type %r" % ctype)
            buf, arrivals, events = "", [], []
            async for chunk in resp.content.iter_any():
                buf += chunk.decode()
                while "\n\n" in buf:
                    block, buf = buf.split("\n\n", 1)
                    arrivals.append(time.monotonic() - t0)
                    events.extend(sse_blocks(block + "\n\n"))
        took = time.monotonic() - t0
        ids = [e.get("id") for e in events]
        check(ids == ["1", "2", "3", "4", "5"], "sse: ids %r" % ids)
        times = [intended_us(e) for e in events]
        check(times == [0, 100000, 200000, 300000, 400000], "sse: intended %r" % times)
        check(
            all(e.get("event") == "tok" and e.get("data") == "abcdefgh" for e in events),
            "sse: event names or data",
        )
        check(events and events[0].get("retry") == "1500", "sse: retry on the first event")
        check(0.4 <= took <= 0.4 + 0.3, "sse: took %.3f s, want 0.4 s" % took)
        check_arrivals("sse", arrivals, 0.1)

        # Last-Event-ID: the sequence goes on after the client's last event.
        url = base + "/echo?stream=sse,count=5,gap=20ms"
        async with session.get(url, headers={"Last-Event-ID": "3"}) as resp:
            events = sse_blocks(await resp.text())
        ids = [e.get("id") for e in events]
        check(ids == ["4", "5"], "resumed: ids %r" % ids)

        # NDJSON: one JSON object a line.
        import json

        async with session.get(base + "/echo?stream=ndjson,count=3,size=4,gap=50ms") as resp:
            ctype = resp.headers.get("Content-Type")
            check(ctype == "application/x-ndjson", "ndjson: Content-Type %r" % ctype)
            lines = [json.loads(line) async for line in resp.content if line.strip()]
        ids = [o.get("id") for o in lines]
        check(ids == [1, 2, 3], "ndjson: ids %r" % ids)
        check([o["intended_us"] for o in lines] == [0, 50000, 100000], "ndjson: intended")
        check(
            all(o["sent_us"] >= o["intended_us"] and o["data"] == "abcd" for o in lines),
            "ndjson: sent_us or data",
        )

        # The server counted them all.
        async with session.get(base + "/stats") as resp:
            stats = await resp.json()
        streams = stats["routes"]["/echo"]["streams"]
        check(
            streams["begun"] == 3 and streams["events"] == 10 and streams["open"] == 0,
            "stats: %r" % streams,
        )


def curl_case(port):
    """curl -N prints each event as it comes: the first well before the end of the stream."""
    url = "http://127.0.0.1:%d/echo?stream=sse,count=4,gap=150ms" % port
    t0 = time.monotonic()
    p = subprocess.Popen(["curl", "-sN", url], stdout=subprocess.PIPE, text=True)
    arrivals, lines = [], []
    for line in p.stdout:
        lines.append(line)
        if line.startswith("id: "):
            arrivals.append(time.monotonic() - t0)
    rc = p.wait(10)
    took = time.monotonic() - t0
    events = sse_blocks("".join(lines))
    check(rc == 0, "curl exited %d" % rc)
    ids = [e.get("id") for e in events]
    check(ids == ["1", "2", "3", "4"], "curl: ids %r" % ids)
    check([intended_us(e) for e in events] == [0, 150000, 300000, 450000], "curl: intended")
    check(
        len(arrivals) == 4 and arrivals[0] < 0.2,
        "curl: the first event came at %r s, want at once" % arrivals[:1],
    )
    check(0.45 <= took <= 0.45 + 0.3, "curl: took %.3f s, want 0.45 s" % took)
    check_arrivals("curl", arrivals, 0.15)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("aiohttp", "curl"):
        sys.exit(__doc__)
    proc, port = start(sys.argv[1])
    try:
        if sys.argv[2] == "aiohttp":
            asyncio.run(aiohttp_cases(port))
        else:
            curl_case(port)
    finally:
        stop(proc)
    print("sse_clients %s: %d failed" % (sys.argv[2], len(FAILS)))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
