#!/usr/bin/python3
"""The HTTP/1.1 conformance corpus: sends every request of tests/conformance/h1/*.req to one
binary in one thread model, and compares what came back with expected.txt.

    run_h1.py BINARY [--model MODEL] [--tls | --tls-first] [--only CASE...] [--print]

Each case is sent on a new connection, followed in the same write by a sentinel request
(GET /echo with Connection: close) unless the case says otherwise, then read until the server
closes the connection or is silent for 3 s. The result is one line:

    CASE ANSWERS... close|open in_flight=N

ANSWERS are the status codes of the answers in the order they came, framed as a client frames
them (Content-Length, chunked, or no body for 1xx, 204, 304 and HEAD); a bodiless answer that
carries Content-Length is written STATUS!len, and bytes that are no answer at all are
"garbage". `close` means the server closed the connection; in_flight is the server's in-flight
count once it settles (GET /stats). A sentinel answered means the connection was kept open
after the case's own answers, and read on.

A case file holds the request with C escapes (\\r \\n \\t \\0 \\xHH \\\\); line breaks in the
file are not part of it. Lines starting with '#' are comments; '% then shutdown' shuts the
sending side down after the request instead of sending the sentinel, '% then nothing' sends
no sentinel; '% repeat N' sends the next line N times; "Content-Length: {}" in the head
stands for the length of what follows it. expected.txt has one line per case; a line "CASE@ENGINE ..." holds an engine's
own answer where its library decides before slowsrv can (each with its reason in a comment).
With --tls the server serves HTTPS (a self-signed certificate made with openssl) and every
case is sent over TLS (ALPN http/1.1) once the handshake is done; with --tls-first the case
goes in the same write as the client's last handshake flight, so that the server decrypts it
with the handshake (slowsrv-h2o's libh2o then hands it to its HTTP/1 parser at once). The
answers must be the cleartext ones; a '% then shutdown' case shuts the TCP connection's sending
side without a TLS close_notify.
Exit status: 0 if every case matched, 1 if not, 2 if the server could not be run.
"""

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SENTINEL = b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
SILENCE = 3.0


def unescape(text):
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "x":
                out.append(int(text[i + 2 : i + 4], 16))
                i += 4
                continue
            out += {"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\0", "\\": b"\\"}[n]
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out)


def load_case(path):
    then = "sentinel"
    parts = []
    repeat = 1
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                continue
            if line.startswith("% then "):
                then = line[len("% then ") :].strip()
                continue
            if line.startswith("% repeat "):
                repeat = int(line[len("% repeat ") :])
                continue
            parts.append(line * repeat)
            repeat = 1
    data = unescape("".join(parts))
    # "Content-Length: {}" stands for the length of what follows the head.
    head, sep, body = data.partition(b"\r\n\r\n")
    if sep and b"Content-Length: {}" in head:
        data = head.replace(b"Content-Length: {}", b"Content-Length: %d" % len(body)) + sep + body
    return data, then


def frame(buf, head_request):
    """Splits buf into answers the way a client would; returns the tokens."""
    tokens = []
    pos = 0
    while pos < len(buf):
        end = buf.find(b"\r\n\r\n", pos)
        m = re.match(rb"HTTP/1\.[01] (\d{3})[^\r\n]*\r\n", buf[pos:])
        if not m or end < 0:
            tokens.append("garbage")
            break
        status = int(m.group(1))
        head = buf[pos:end].decode("latin-1").lower()
        headers = {}
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers.setdefault(name.strip(), value.strip())
        pos = end + 4
        bodiless = status < 200 or status in (204, 304)
        token = str(status)
        if bodiless and "content-length" in headers:
            token += "!len"
        tokens.append(token)
        if bodiless or (head_request and not tokens[:-1]):
            continue
        if "chunked" in headers.get("transfer-encoding", ""):
            while True:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    return tokens + ["garbage"]
                try:
                    size = int(buf[pos:eol].split(b";")[0], 16)
                except ValueError:
                    return tokens + ["garbage"]
                pos = eol + 2 + size + 2
                if size == 0:
                    break
        elif "content-length" in headers:
            pos += int(headers["content-length"])
        else:
            break  # read to the end
    return tokens


class Conn:
    """A connection to the server: plain TCP, or TLS driven through memory BIOs over it, so that
    the first bytes can go in the same write as the handshake's last flight (tls == "first")."""

    def __init__(self, port, tls=None):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(SILENCE)
        self.tls = tls
        if not tls:
            return
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["http/1.1"])
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_hostname="127.0.0.1")
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(self.out.read())
                d = self.sock.recv(65536)
                if not d:
                    raise OSError("closed in the handshake")
                self.inc.write(d)
        if tls != "first":
            self.sock.sendall(self.out.read())

    def sendall(self, data):
        if not self.tls:
            self.sock.sendall(data)
            return
        self.obj.write(data)
        self.sock.sendall(self.out.read())

    def recv(self):
        """Bytes that came, or b"" at the end of the stream."""
        if not self.tls:
            return self.sock.recv(65536)
        while True:
            try:
                return self.obj.read(65536)
            except ssl.SSLWantReadError:
                d = self.sock.recv(65536)
                if not d:
                    return b""
                self.inc.write(d)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""
            except ssl.SSLError as e:
                raise OSError(str(e))


def exchange(port, data, then, tls=None):
    try:
        s = Conn(port, tls)
    except OSError:
        return b"", True
    try:
        s.sendall(data + (SENTINEL if then == "sentinel" else b""))
        if then == "shutdown":
            s.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    buf = b""
    closed = False
    try:
        while True:
            d = s.recv()
            if not d:
                closed = True
                break
            buf += d
    except socket.timeout:
        pass
    except OSError:  # a reset is a close too
        closed = True
    s.sock.close()
    return buf, closed


def in_flight(port, tls=None):
    """The server's in-flight count once nothing is in flight any more (at most 3 s)."""
    deadline = time.time() + 3
    while True:
        s = Conn(port, tls and "after")
        s.sendall(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        buf = b""
        while True:
            d = s.recv()
            if not d:
                break
            buf += d
        s.sock.close()
        n = json.loads(buf.split(b"\r\n\r\n", 1)[1])["in_flight"]
        if n == 0 or time.time() > deadline:
            return n
        time.sleep(0.05)


def rss_kb(pid):
    """The resident memory of process pid, in KiB (VmRSS), or -1."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(binary, model, extra=()):
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--idle-timeout", "30s"]
    args += list(extra)
    if model:
        args += ["--model", model]
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    proc.err = err
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    proc.kill()
    err.seek(0)
    sys.exit("run_h1: %s did not start: %s" % (binary, err.read().decode()))


def stop(proc):
    """SIGTERM, then the exit status (-1 if it took over 15 s); prints stderr if not 0."""
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -1
    if rc != 0:
        proc.err.seek(0)
        print("the server exited %d: %s" % (rc, proc.err.read().decode(errors="replace")[-2000:]))
    return rc


def engine_of(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"\(engine (\w+)", out)
    return m.group(1) if m else "?"


def expected(engine):
    want = {}
    with open(os.path.join(HERE, "h1", "expected.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, rest = line.partition(" ")
            case, _, only = name.partition("@")
            if only and only != engine:
                continue
            if only or case not in want:
                want[case] = rest.strip()
    return want


def main():
    argv = sys.argv[1:]
    if not argv:
        sys.exit(__doc__)
    binary = argv.pop(0)
    model = None
    tls = None
    only = []
    show = False
    while argv:
        a = argv.pop(0)
        if a == "--model":
            model = argv.pop(0)
        elif a == "--only":
            only += argv
            argv = []
        elif a == "--print":
            show = True
        elif a in ("--tls", "--tls-first"):
            tls = "first" if a == "--tls-first" else "after"
    engine = engine_of(binary)
    want = expected(engine)
    cases = sorted(f[:-4] for f in os.listdir(os.path.join(HERE, "h1")) if f.endswith(".req"))
    extra = []
    tmp = tempfile.TemporaryDirectory()
    if tls:
        cert, key = os.path.join(tmp.name, "cert.pem"), os.path.join(tmp.name, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1"],
                       check=True, capture_output=True)
        extra = ["--tls-cert", cert, "--tls-key", key]
    proc, port = start(binary, model, extra)
    failed = 0
    try:
        for case in cases:
            if only and case not in only:
                continue
            data, then = load_case(os.path.join(HERE, "h1", case + ".req"))
            buf, closed = exchange(port, data, then, tls)
            tokens = frame(buf, data.startswith(b"HEAD "))
            if proc.poll() is not None:
                print("%s: the server exited (%d)" % (case, proc.returncode))
                return 1
            got = "%s %s in_flight=%d" % (
                " ".join(tokens) if tokens else "none",
                "close" if closed else "open",
                in_flight(port, tls),
            )
            if show:
                print("%s %s" % (case, got))
            elif want.get(case) != got:
                failed += 1
                print("FAIL %s: got '%s', want '%s'" % (case, got, want.get(case)))
                print("     sent %r" % data[:200])
                print("     read %r" % buf[:300])
    finally:
        rc = stop(proc)
    if rc != 0:
        failed += 1
    n = len([c for c in cases if not only or c in only])
    print("%s%s%s: %d cases, %d failed" % (engine, "." + model if model else "",
                                          " over TLS" if tls else "", n, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
