#!/usr/bin/env python3
"""Makes doc/ui.png again: the /ui page of a shipped config under a small load.

    tests/ui/doc_screenshot.py BINARY [OUT.png] [CONFIG]

Starts BINARY (build/slowsrv) with CONFIG (config/realistic-api.json) on a free port with the
control API on, sends a few keep-alive requests a second to each of the config's routes for
ten seconds, and takes a screenshot of /ui in Debian's chromium, headless (OUT.png, doc/ui.png
by default). Nothing but what the config and the load put on the page is shown.
"""
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ui_test  # noqa: E402  (the browser and the server helpers of the UI test)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(port, routes, stop):
    """One keep-alive connection per route, one request after another, until stop is set."""
    def run(method, path):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while not stop.is_set():
            c.request(method, path, body="{}" if method == "POST" else None)
            c.getresponse().read()
            time.sleep(0.05)  # a few requests a second, not as many as the loopback takes
    threads = [threading.Thread(target=run, args=r, daemon=True) for r in routes]
    for t in threads:
        t.start()
    return threads


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    binary = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "doc", "ui.png")
    cfg = sys.argv[3] if len(sys.argv) > 3 else os.path.join(ROOT, "config", "realistic-api.json")
    with open(cfg) as f:
        routes = [(r.get("method") or "GET", r["path"]) for r in json.load(f).get("routes", [])]
    routes.append(("GET", "/test"))
    srv, port, _ = ui_test.start_server(binary, ["--config", cfg, "--control", "0"])
    stop = threading.Event()
    b = ui_test.Browser()
    try:
        threads = load(port, routes, stop)
        b.goto("http://127.0.0.1:%d/ui" % port)
        time.sleep(10)
        b.wait_for("document.querySelectorAll('#cdf polyline').length >= 2")
        b.screenshot(out)
        stop.set()
        for t in threads:
            t.join(15)
    finally:
        b.close()
        ui_test.stop_server(srv)
    print("wrote", out)


if __name__ == "__main__":
    main()
