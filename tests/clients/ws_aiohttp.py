#!/usr/bin/python3
"""A WebSocket route driven by a real client: Python's aiohttp (Debian's python3-aiohttp).

    ws_aiohttp.py BINARY

Starts BINARY with a config of two WebSocket routes, then with aiohttp's ws_connect:
  - /ws (echo,delay=100ms): a text and a binary message come back as sent, each after 100 ms
    (within 100..250 ms); ping() gets its pong; close() ends with 1000 (aiohttp's close code);
  - /push (push=3,size=8,every=50ms,close=4000,after=3): three text messages of 8 bytes, then
    the server's close with 4000;
  - a message over limit=1024 gets the server's close 1009.
Checks /stats counts them, and the server exits 0 on SIGTERM.
Exit status 0 if all hold, 1 if not, 2 if the server could not be run.
"""
import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import run_h1  # noqa: E402

try:
    import aiohttp
except ImportError:
    sys.exit("ws_aiohttp: needs python3-aiohttp: apt-get install -y python3-aiohttp")

CONFIG = {
    "routes": [
        {"path": "/ws", "websocket": "echo,delay=100ms,limit=1024"},
        {"path": "/push", "websocket": "echo,push=3,size=8,every=50ms,close=4000,after=3"},
    ]
}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


async def run(port):
    base = "http://127.0.0.1:%d" % port
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(base + "/ws", autoping=False) as ws:
            t0 = time.monotonic()
            await ws.send_str("héllo")
            msg = await ws.receive(timeout=3)
            took = time.monotonic() - t0
            check(msg.type == aiohttp.WSMsgType.TEXT and msg.data == "héllo", "text echo: %r" % (msg,))
            check(0.1 <= took <= 0.25, "text echo after delay=100ms took %.3f s" % took)
            await ws.send_bytes(bytes(range(256)))
            msg = await ws.receive(timeout=3)
            check(msg.type == aiohttp.WSMsgType.BINARY and msg.data == bytes(range(256)),
                  "binary echo: %r" % (msg.type,))
            await ws.ping(b"are you there")
            msg = await ws.receive(timeout=3)
            check(msg.type == aiohttp.WSMsgType.PONG and msg.data == b"are you there",
                  "pong: %r" % (msg,))
            await ws.close()
            check(ws.close_code == 1000, "close code %r, want 1000" % ws.close_code)
        async with session.ws_connect(base + "/push") as ws:
            got = []
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    got.append(msg.data)
            check(got == ["abcdefgh"] * 3, "pushes: %r" % got)
            check(ws.close_code == 4000, "push close code %r, want 4000" % ws.close_code)
        async with session.ws_connect(base + "/ws") as ws:
            await ws.send_str("x" * 2000)
            msg = await ws.receive(timeout=3)
            check(msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), "oversized: %r" % (msg,))
            check(ws.close_code == 1009, "oversized close code %r, want 1009" % ws.close_code)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(CONFIG, cfg)
    cfg.close()
    proc, port = run_h1.start(sys.argv[1], None, ["--config", cfg.name])
    try:
        asyncio.run(run(port))
        deadline = time.time() + 3
        while True:
            st = json.load(urllib.request.urlopen("http://127.0.0.1:%d/stats" % port))
            ws = st.get("websocket", {})
            if ws.get("open") == 0 or time.time() > deadline:
                break
            time.sleep(0.05)
        check(ws.get("opened") == 3, "opened %r, want 3" % ws.get("opened"))
        check(ws.get("closes", {}).get("1009") == 1, "closes %r" % ws.get("closes"))
        check(ws.get("messages_out", 0) >= 5, "messages_out %r" % ws.get("messages_out"))
    finally:
        check(run_h1.stop(proc) == 0, "the server did not exit 0")
        os.unlink(cfg.name)
    print("ws_aiohttp: %s" % ("ok" if not failures else "%d failed" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
