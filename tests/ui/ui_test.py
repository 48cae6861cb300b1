#!/usr/bin/env python3
"""The /ui page in a real browser: Debian's chromium, headless, driven over the DevTools
protocol (python3-websocket).

    ui_test.py SERVER_BINARY SCREENSHOT.png

1. A server with the control API and a token; a load generator drives /test and three SSE
   streams on /echo. The page must show the route /test with a non-zero rate, the streams open
   and their events per second, fill its charts, and raise no script error or CSP violation. A
   screenshot is saved (a CI artifact).
2. From the page: the form changes /test's delay through the control API (CORS, token); /stats
   must then show the new delay.
3. A server without the control API: the page says it is read-only and shows no form.
4. A route whose path and body are HTML: the page shows them as text, never as markup.
Exit 0 when every check passed; each failure is printed on one line.
"""
import base64
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import websocket  # python3-websocket

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what, flush=True)
    return cond


def start_server(binary, args):
    p = subprocess.Popen([binary, "--port", "0"] + args, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise SystemExit("server did not start: " + line)
    c = re.search(r"control=http://127\.0\.0\.1:(\d+)", line)
    # Drain its log so that a line per change never blocks it.
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, int(m.group(1)), int(c.group(1)) if c else None


def stop_server(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(15)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "server did not stop within 15 s of SIGTERM")


def get_json(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
        return json.load(r)


class Load:
    """Keep-alive GET /test loops on a few connections until stopped."""

    def __init__(self, port, conns=8):
        self.stop = False
        self.done = 0
        self.threads = [threading.Thread(target=self.run, args=(port,), daemon=True)
                        for _ in range(conns)]
        for t in self.threads:
            t.start()

    def run(self, port):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while not self.stop:
            c.request("GET", "/test")
            c.getresponse().read()
            self.done += 1

    def end(self):
        self.stop = True
        for t in self.threads:
            t.join(15)


class StreamLoad:
    """SSE streams on /echo, one after another on a few connections, until stopped: each
    sends 10 events a second."""

    def __init__(self, port, conns=3):
        self.stop = False
        self.threads = [threading.Thread(target=self.run, args=(port,), daemon=True)
                        for _ in range(conns)]
        for t in self.threads:
            t.start()

    def run(self, port):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while not self.stop:
            c.request("GET", "/echo?stream=sse,count=10,gap=100ms")
            c.getresponse().read()

    def end(self):
        self.stop = True
        for t in self.threads:
            t.join(15)


class SocketLoad:
    """WebSocket sockets on /ws (an echo route), each sending a message every 100 ms and reading
    its echo, until stopped: about 20 messages a second each way and socket."""

    def __init__(self, port, conns=2):
        self.stop = False
        self.threads = [threading.Thread(target=self.run, args=(port,), daemon=True)
                        for _ in range(conns)]
        for t in self.threads:
            t.start()

    def run(self, port):
        s = websocket.create_connection("ws://127.0.0.1:%d/ws" % port, timeout=10)
        while not self.stop:
            s.send("ping me")
            s.recv()
            time.sleep(0.1)
        s.close()

    def end(self):
        self.stop = True
        for t in self.threads:
            t.join(15)


class Browser:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="slowsrv-ui-")
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise SystemExit("chromium is not installed: ./dev deps installs it")
        self.p = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0",
             "--user-data-dir=" + self.dir, "--window-size=1280,1400", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        ws = None
        while time.time() < deadline and not ws:
            line = self.p.stderr.readline()
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            ws = m.group(1) if m else None
        if not ws:
            raise SystemExit("chromium did not start its DevTools endpoint")
        threading.Thread(target=lambda: [None for _ in self.p.stderr], daemon=True).start()
        port = int(re.search(r":(\d+)/", ws).group(1))
        pages = []
        while time.time() < deadline and not pages:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
                pages = [t for t in json.load(r) if t["type"] == "page"]
            time.sleep(0.1)
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0
        self.events = []
        self.origin = None
        self.gone = set()
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        return r.get("result", {}).get("value")

    def wait_for(self, expr, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.25)
        return None

    def errors(self):
        """Script exceptions, console errors and CSP violations seen so far."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("text", "") + " " +
                           json.dumps(p["exceptionDetails"].get("exception", {}).get("description", "")))
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                src = re.match(r"[a-z]+://[^/]+", p["entry"].get("url", "") or "")
                if src and src.group(0) in self.gone and src.group(0) != self.origin:
                    continue
                out.append(p["entry"]["text"])
            elif m == "Runtime.consoleAPICalled" and p["type"] == "error":
                out.append(json.dumps(p["args"]))
        return out

    def goto(self, url):
        # What a page left behind logs (a poll cut by the navigation) is not the next page's.
        if self.origin:
            self.gone.add(self.origin)
        self.origin = re.match(r"[a-z]+://[^/]+", url).group(0) if "://" in url else None
        self.events = []
        self.call("Page.navigate", url=url)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.ws.close()
        finally:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
            shutil.rmtree(self.dir, ignore_errors=True)


RATE = ("(() => { const td = document.querySelector('#routes tbody tr[data-route=\"/test\"] td.rate');"
        " const v = td ? parseFloat(td.textContent.replace(/,/g, '')) : 0; return v > 0 ? v : 0; })()")


def live_page(b, binary, shot):
    tmp = tempfile.mkdtemp(prefix="slowsrv-ui-")
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("ui-t0ken\n")
    cfg = os.path.join(tmp, "ws.json")
    with open(cfg, "w") as f:
        f.write('{"routes": [{"path": "/ws", "websocket": "echo"}]}')
    srv, port, cport = start_server(binary, ["--delay", "20ms", "--control", "0",
                                             "--control-token", token, "--seed", "7",
                                             "--config", cfg])
    load = Load(port)
    streams = StreamLoad(port)
    sockets = SocketLoad(port)
    try:
        b.goto("http://127.0.0.1:%d/ui" % port)
        rate = b.wait_for(RATE)
        check(rate, "the page never showed a non-zero rate for /test")
        check(b.eval("document.querySelector('#routes tbody tr[data-route=\"/test\"] td.path').textContent")
              == "/test", "the routes table lacks /test")
        # Three streams of 10 events a second each, from /stats: open streams and events/s,
        # in the totals and on /echo's row.
        card = ("(() => { const c = document.querySelector('#summary [data-card=\"%s\"] .v');"
                " return c ? Number(c.textContent.replace(/,/g, '')) : 0; })()")
        opened = b.wait_for("(%s) >= 1 ? %s : 0" % (card % "streams", card % "streams"), 10)
        check(opened and 1 <= opened <= 3, "the page shows %s streams open, want 1 to 3" % opened)
        evs = b.wait_for("(%s) > 0 ? %s : 0" % (card % "events", card % "events"), 10)
        check(evs and 10 <= evs <= 45, "the page shows %s events/s, want about 30" % evs)
        # Two sockets echoing a message every 100 ms each: sockets open and messages/s.
        socks = b.wait_for("(%s) >= 2 ? %s : 0" % (card % "sockets", card % "sockets"), 10)
        check(socks == 2, "the page shows %s sockets open, want 2" % socks)
        msgs = b.wait_for("(%s) > 0 ? %s : 0" % (card % "messages", card % "messages"), 10)
        check(msgs and 20 <= msgs <= 90, "the page shows %s messages/s, want about 40" % msgs)
        check(b.wait_for("[...document.querySelectorAll('#config tbody td.websocket')]"
                         ".some(t => t.textContent.startsWith('echo'))", 5),
              "the configuration table does not show /ws's websocket")
        row = b.wait_for("(() => { const td = document.querySelector("
                         "'#routes tbody tr[data-route=\"/echo\"] td.events');"
                         " return td && Number(td.textContent) > 0 ? td.textContent : ''; })()", 10)
        check(row, "the routes table shows no events/s for /echo")
        check(b.wait_for("document.querySelectorAll('#cdf polyline').length >= 2"),
              "the CDF of intended delay and service time was not drawn")
        check(b.wait_for("document.querySelectorAll('#overshoot polyline').length >= 1", 10),
              "the overshoot line chart was not drawn")
        check(b.eval("document.getElementById('readonly').hidden && !document.getElementById('change').hidden"),
              "with the control API the form is not shown")
        check(b.eval("document.querySelector('#config tbody td.path').textContent") == "/test",
              "the configuration table lacks /test")
        check("seed 7" in (b.eval("document.getElementById('cfgline').textContent") or ""),
              "the configuration does not show the seed")
        time.sleep(2.5)  # a few more polls: the charts fill
        b.screenshot(shot)
        check(os.path.getsize(shot) > 10000, "the screenshot is empty")

        # The form changes /test's delay through the control API, from the page's origin.
        b.eval("document.getElementById('c-route').value = '/test';"
               "document.getElementById('c-delay').value = '75ms';"
               "document.getElementById('c-rate').value = '1M,burst=64K';"
               "document.getElementById('c-token').value = 'ui-t0ken';"
               "document.getElementById('c-apply').click(); true")
        said = b.wait_for("(() => { const t = document.getElementById('c-result').textContent;"
                          " return t.length ? t : ''; })()", 10)
        check(said and said.startswith("generation 2"), "the form's change was not made: " + str(said))
        st = get_json(port, "/stats")
        test = [r for r in st["config"]["routes"] if r["path"] == "/test"]
        check(test and test[0]["delay"] == "75ms", "/stats does not show the new delay: " + json.dumps(test))
        check(test and test[0].get("rate") == "1M,burst=64K", "/stats does not show the new rate: " + json.dumps(test))
        shown = b.wait_for("(() => { const td = document.querySelector('#config tbody td.pace');"
                           " return td && td.textContent.includes('rate') ? td.textContent : ''; })()", 5)
        check(shown == "rate 1M,burst=64K", "the configuration table shows the rate as: " + str(shown))
        check(st["control"]["changes"] == 1, "/stats counts %s changes, want 1" % st["control"]["changes"])
        errs = b.errors()
        check(not errs, "the page raised errors: " + "; ".join(errs)[:500])
        # A wrong token from the page changes nothing and says why (the browser logs the 401).
        b.eval("document.getElementById('c-delay').value = '5s';"
               "document.getElementById('c-rate').value = '';"
               "document.getElementById('c-token').value = 'nope';"
               "document.getElementById('c-result').textContent = '';"
               "document.getElementById('c-apply').click(); true")
        said = b.wait_for("document.getElementById('c-result').textContent", 10)
        check(said and said.startswith("401"), "a wrong token was not refused on the page: " + str(said))
        check(get_json(port, "/stats")["control"]["changes"] == 1, "a wrong token changed a route")
    finally:
        # Leave the page before its server goes: its next poll would fail in the next check.
        b.goto("about:blank")
        time.sleep(0.5)
        sockets.end()
        streams.end()
        load.end()
        stop_server(srv)
        shutil.rmtree(tmp, ignore_errors=True)
    return load.done


def read_only_and_escaped(b, binary):
    tmp = tempfile.mkdtemp(prefix="slowsrv-ui-")
    cfg = os.path.join(tmp, "cfg.json")
    evil = "/<img_src=x_onerror=alert(1)><b>bold</b>"
    with open(cfg, "w") as f:
        json.dump({"routes": [{"path": evil, "body": "<script>alert(2)</script>", "delay": "5ms"}]}, f)
    srv, port, _ = start_server(binary, ["--config", cfg, "--delay", "5ms"])
    try:
        get = urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, urllib.request.quote(evil)), timeout=5)
        get.read()
        b.goto("http://127.0.0.1:%d/ui" % port)
        check(b.wait_for("document.querySelectorAll('#config tbody tr').length >= 2"),
              "the read-only page did not show the configuration")
        check(b.eval("!document.getElementById('readonly').hidden && document.getElementById('change').hidden"),
              "without the control API the page does not say it is read-only")
        check(b.eval("document.querySelectorAll('main img, main b, main script').length") == 0,
              "a route's path was rendered as markup")
        shown = b.eval("[...document.querySelectorAll('td.path')].map(t => t.textContent)")
        check(evil in (shown or []), "the route's path is not shown as text: " + json.dumps(shown))
        errs = b.errors()
        check(not errs, "the read-only page raised errors: " + "; ".join(errs)[:500])
    finally:
        b.goto("about:blank")
        time.sleep(0.5)
        stop_server(srv)
        shutil.rmtree(tmp, ignore_errors=True)


def frozen_clock_and_no_token(b, binary):
    """A browser whose clock stands still (a headless one in virtual time) still shows rates: the
    page takes them from the server's own clock. Without --control-token the token field is not
    shown (the hidden attribute wins over the label's style)."""
    srv, port, _ = start_server(binary, ["--delay", "20ms", "--control", "0"])
    load = Load(port)
    script = b.call("Page.addScriptToEvaluateOnNewDocument",
                    source="performance.now = () => 1000; Date.now = () => 0;")["identifier"]
    try:
        b.goto("http://127.0.0.1:%d/ui" % port)
        check(b.wait_for(RATE), "with the browser's clock stopped the page shows no rate for /test")
        check(b.wait_for("!document.getElementById('change').hidden"),
              "the change form is not shown beside the control API")
        check(b.eval("getComputedStyle(document.getElementById('c-token-label')).display") == "none",
              "the token field is shown though the control API asks for no token")
        # The service p50 of a 20 ms delay as the server reads it (within 1 %, a few hundred
        # microseconds of overshoot on top), not a bucket's bound (25 ms); the p99 beside it
        # takes the host's noise, a headless browser included.
        cell = "document.querySelector('#routes tbody tr[data-route=\"/test\"] td.service').textContent"
        check(b.wait_for("/ms \\/ /.test(%s)" % cell), "no service p50 / p99 for /test")
        text = b.eval(cell)
        got = [float(v) for v in re.findall(r"([\d.]+) ms", text)]
        check(len(got) == 2 and 19.8 <= got[0] <= 21.5 and got[0] <= got[1] < 100,
              "/test's service p50 / p99 read '%s', want a p50 of about 20 ms" % text)
    finally:
        b.call("Page.removeScriptToEvaluateOnNewDocument", identifier=script)
        b.goto("about:blank")
        time.sleep(0.5)
        load.end()
        stop_server(srv)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    binary, shot = sys.argv[1], sys.argv[2]
    b = Browser()
    try:
        done = live_page(b, binary, shot)
        read_only_and_escaped(b, binary)
        frozen_clock_and_no_token(b, binary)
    finally:
        b.close()
    print("%s: %d checks failed; load sent %d requests; screenshot %s" %
          (os.path.basename(binary), len(FAILS), done, shot), flush=True)
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
