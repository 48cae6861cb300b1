#!/usr/bin/python3
"""The HTTP/2 part of the conformance corpus, for slowsrv-h2o over h2c (prior knowledge).

    run_h2.py BINARY [--only CASE...]

Starts BINARY with --idle-timeout 2s and runs each case on its own connection:

  ping-flood-read       20 000 PINGs, read as they come: every one is acknowledged, and a
                        request on the same connection is answered after them.
  ping-flood-unread     PINGs sent for 4 s by a client that reads nothing (CVE-2019-9512).
  settings-flood-unread SETTINGS frames the same way (CVE-2019-9515).
  continuation-flood    a HEADERS frame without END_HEADERS, then CONTINUATION frames without
                        end (CVE-2024-27316 and its kin): the server must cut the connection
                        before 16 MiB of them.
  rapid-reset           10 000 streams opened on /test?delay=5s and reset at once
                        (CVE-2023-44487): every request ends (in flight back to 0 within 3 s).
  zero-window           SETTINGS_INITIAL_WINDOW_SIZE 0: no DATA while the window is shut; the
                        whole body once a WINDOW_UPDATE opens it.
  malformed-fields      requests RFC 9113 sections 8.2 and 8.3 call malformed, each on its own
                        connection: an empty or relative :path, connection-specific fields,
                        a value with whitespace around it, 101 or 500 fields, a %00 in the
                        path, CONNECT with a :path, an empty field name. Each gets one clear
                        answer: the core's JSON 400 (431 past 100 fields), or libh2o's stream
                        reset or GOAWAY where it refuses the request before slowsrv sees it.
  status-1xx            ?status=101 is refused with 400 (an informational status is never a
                        final answer: no :status 1xx then DATA); ?status=204 has no
                        content-length and no DATA.

For the floods: the server's resident memory grows by less than 64 MiB, a client that reads
nothing is dropped within --idle-timeout plus 3 s of its last write, and after each case the
server answers GET /echo on a new connection with nothing left in flight. Exit status 0 if
every case passed, 1 if not.
"""
import os
import socket
import struct
import sys
import time

import hpack
import h2.config
import h2.connection
import h2.events
import h2.settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_h1  # noqa: E402

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
IDLE = 2.0
GROWTH_MIB = 64


def raw_frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def hpack_get(path):
    """A request's header block: :method GET, :scheme http (static table), :path, :authority."""
    p = path.encode()
    return b"\x82\x86\x04" + bytes([len(p)]) + p + b"\x01\x01x"




def connect(port, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    return s


def client(settings=None):
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    if settings:
        c.update_settings(settings)
    return c


def get(c, sid, path):
    c.send_headers(sid, [(":method", "GET"), (":path", path), (":scheme", "http"),
                         (":authority", "x")], end_stream=True)


def pump(s, c, until, timeout=5.0):
    """Reads and feeds events to the client until until(events so far) or the timeout."""
    events = []
    s.settimeout(0.2)
    deadline = time.time() + timeout
    while time.time() < deadline and not until(events):
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        if not d:
            break
        events += c.receive_data(d)
        out = c.data_to_send()
        if out:
            s.sendall(out)
    return events


def closed_within(s, seconds):
    """1 if the server ends the connection within `seconds` (reading what it sends)."""
    s.settimeout(0.2)
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if not s.recv(65536):
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def flood_unread(port, pid, blob, fail):
    s = connect(port, 4096)
    s.sendall(PREFACE + raw_frame(4, 0, 0))
    before = run_h1.rss_kb(pid)
    s.settimeout(0.5)
    sent = 0
    t0 = time.time()
    try:
        while time.time() - t0 < 4:
            s.sendall(blob)
            sent += len(blob)
    except (socket.timeout, OSError):
        pass
    grown = (run_h1.rss_kb(pid) - before) // 1024
    if grown >= GROWTH_MIB:
        fail("memory grew by %d MiB under the flood (want < %d)" % (grown, GROWTH_MIB))
    if not closed_within(s, IDLE + 3):
        fail("the flooding client was not dropped within --idle-timeout + 3 s")
    s.close()
    return sent


def case_ping_flood_read(port, pid, fail):
    s = connect(port)
    c = client()
    s.sendall(c.data_to_send())
    n = 20000
    for i in range(n):
        c.ping(struct.pack(">Q", i))
    get(c, 1, "/echo")
    s.sendall(c.data_to_send())
    acks = [0]
    done = [False]

    def until(events):
        acks[0] = sum(isinstance(e, h2.events.PingAckReceived) for e in events)
        done[0] = any(isinstance(e, h2.events.StreamEnded) and e.stream_id == 1 for e in events)
        return acks[0] == n and done[0]

    pump(s, c, until, 20)
    if acks[0] != n or not done[0]:
        fail("%d of %d PINGs acknowledged, request answered: %s" % (acks[0], n, done[0]))
    s.close()


def case_ping_flood_unread(port, pid, fail):
    flood_unread(port, pid, raw_frame(6, 0, 0, b"12345678") * 1000, fail)


def case_settings_flood_unread(port, pid, fail):
    flood_unread(port, pid, raw_frame(4, 0, 0, b"\x00\x03\x00\x00\x00\x64") * 1000, fail)


def case_continuation_flood(port, pid, fail):
    s = connect(port)
    s.sendall(PREFACE + raw_frame(4, 0, 0) + raw_frame(1, 0, 1, hpack_get("/echo")))
    before = run_h1.rss_kb(pid)
    block = raw_frame(9, 0, 1, b"\x40\x01a\x01b" * 2000)
    sent = 0
    s.settimeout(2)
    try:
        while sent < 16 << 20:
            s.sendall(block)
            sent += len(block)
    except (socket.timeout, OSError):
        pass
    grown = (run_h1.rss_kb(pid) - before) // 1024
    if sent >= 16 << 20:
        fail("16 MiB of CONTINUATION frames were taken in")
    if grown >= GROWTH_MIB:
        fail("memory grew by %d MiB (want < %d)" % (grown, GROWTH_MIB))
    if not closed_within(s, IDLE + 3):
        fail("the connection was not closed")
    s.close()


def case_rapid_reset(port, pid, fail):
    s = connect(port)
    s.sendall(PREFACE + raw_frame(4, 0, 0))
    s.setblocking(False)
    before = run_h1.rss_kb(pid)
    sid = 1
    pending = b""
    for _ in range(100):
        pending += b"".join(
            raw_frame(1, 5, sid + 2 * i, hpack_get("/test?delay=5s"))
            + raw_frame(3, 0, sid + 2 * i, b"\x00\x00\x00\x08")
            for i in range(100)
        )
        sid += 200
        while pending:
            try:
                pending = pending[s.send(pending):]
            except BlockingIOError:
                pass
            try:
                while s.recv(65536):
                    pass
            except (BlockingIOError, OSError):
                pass
    s.close()
    grown = (run_h1.rss_kb(pid) - before) // 1024
    if grown >= GROWTH_MIB:
        fail("memory grew by %d MiB (want < %d)" % (grown, GROWTH_MIB))


def case_zero_window(port, pid, fail):
    s = connect(port)
    c = client({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    get(c, 1, "/echo?size=1000")
    s.sendall(c.data_to_send())
    events = pump(s, c, lambda ev: any(isinstance(e, h2.events.DataReceived) for e in ev), 0.6)
    if any(isinstance(e, h2.events.DataReceived) for e in events):
        fail("DATA came while the window was shut")
    if not any(isinstance(e, h2.events.ResponseReceived) for e in events):
        fail("no response head while the window was shut")
    c.increment_flow_control_window(1000, stream_id=1)
    s.sendall(c.data_to_send())
    got = [0]

    def until(ev):
        got[0] = sum(len(e.data) for e in ev if isinstance(e, h2.events.DataReceived))
        return any(isinstance(e, h2.events.StreamEnded) for e in ev)

    pump(s, c, until)
    if got[0] != 1000:
        fail("%d body bytes after the window opened (want 1000)" % got[0])
    s.close()


def case_status_1xx(port, pid, fail):
    s = connect(port)
    c = client()
    get(c, 1, "/echo?status=101")
    get(c, 3, "/echo?status=204")
    s.sendall(c.data_to_send())
    events = pump(s, c, lambda ev: sum(isinstance(e, h2.events.StreamEnded) for e in ev) == 2)
    heads = {e.stream_id: dict(e.headers) for e in events
             if isinstance(e, h2.events.ResponseReceived)}
    info = [e for e in events if isinstance(e, h2.events.InformationalResponseReceived)]
    data3 = [e for e in events if isinstance(e, h2.events.DataReceived) and e.stream_id == 3
             and e.data]
    if info:
        fail("an informational response was sent")
    if heads.get(1, {}).get(b":status") != b"400":
        fail("?status=101 answered %r (want 400)" % heads.get(1))
    if heads.get(3, {}).get(b":status") != b"204" or b"content-length" in heads.get(3, {}):
        fail("?status=204 answered %r (want 204 without content-length)" % heads.get(3))
    if data3:
        fail("?status=204 carried DATA")
    s.close()


def send_block(port, headers):
    """Sends one request with the header block `headers` encoded as is (no client-side checks),
    and returns what came back: ("answer", status, body), ("reset", code) or ("goaway", code)."""
    s = connect(port)
    s.sendall(PREFACE + raw_frame(4, 0, 0) + raw_frame(1, 5, 1, hpack.Encoder().encode(headers)))
    s.settimeout(0.5)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except (socket.timeout, OSError):
        pass
    s.close()
    dec = hpack.Decoder()
    status, body, i = None, b"", 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        ftype, sid, payload = data[i + 3], int.from_bytes(data[i + 5:i + 9], "big"), data[i + 9:i + 9 + n]
        if ftype == 1 and sid == 1:
            status = dict(dec.decode(payload)).get(":status")
        elif ftype == 0 and sid == 1:
            body += payload
        elif ftype == 3 and sid == 1:
            return ("reset", int.from_bytes(payload, "big"))
        elif ftype == 7:
            return ("goaway", int.from_bytes(payload[4:8], "big"))
        i += 9 + n
    return ("answer", status, body)


def case_malformed_fields(port, pid, fail):
    base = [(":method", "GET"), (":scheme", "http"), (":authority", "x")]
    many = [("x-f%d" % i, "v") for i in range(500)]
    cases = [
        ("empty :path", base + [(":path", "")], "400"),
        (":path without /", base + [(":path", "echo")], "400"),
        ("absolute :path", base + [(":path", "http://x/echo")], "400"),
        (":path * with GET", base + [(":path", "*")], "400"),
        ("keep-alive", base + [(":path", "/echo"), ("keep-alive", "1")], "400"),
        ("proxy-connection", base + [(":path", "/echo"), ("proxy-connection", "x")], "400"),
        ("connection", base + [(":path", "/echo"), ("connection", "close")], "goaway 1"),
        ("upgrade", base + [(":path", "/echo"), ("upgrade", "h2c")], "goaway 1"),
        ("te: gzip", base + [(":path", "/echo"), ("te", "gzip")], "goaway 1"),
        ("leading space", base + [(":path", "/test?delay=0"), ("x-slowsrv-status", " 503")], "400"),
        ("trailing space", base + [(":path", "/test?delay=0"), ("x-slowsrv-status", "503 ")], "400"),
        ("101 fields", base + [(":path", "/echo")] + many[:101], "431"),
        ("500 fields", base + [(":path", "/echo")] + many, "431"),
        ("%00 in the path", base + [(":path", "/echo%00.png")], "400"),
        ("CONNECT with :path", [(":method", "CONNECT"), (":authority", "x:80"), (":path", "/echo")],
         "reset 1"),
        ("empty field name", base + [(":path", "/echo"), ("", "v")], "goaway 9"),
        ("well-formed", base + [(":path", "/echo"), ("te", "trailers"), ("x-a", "v")], "200"),
        ("100 fields", base + [(":path", "/echo")] + many[:100], "200"),
    ]
    for name, headers, want in cases:
        got = send_block(port, headers)
        if got[0] == "answer":
            seen = got[1] or "nothing"
            if want in ("400", "431") and not got[2].startswith(b'{"error": '):
                fail("%s: %s answered with %r, not the JSON error" % (name, seen, got[2][:60]))
        else:
            seen = "%s %d" % got
        if seen != want:
            fail("%s: got %s, want %s" % (name, seen, want))


CASES = [
    ("ping-flood-read", case_ping_flood_read),
    ("ping-flood-unread", case_ping_flood_unread),
    ("settings-flood-unread", case_settings_flood_unread),
    ("continuation-flood", case_continuation_flood),
    ("rapid-reset", case_rapid_reset),
    ("zero-window", case_zero_window),
    ("status-1xx", case_status_1xx),
    ("malformed-fields", case_malformed_fields),
]


def main():
    binary = sys.argv[1]
    only = sys.argv[sys.argv.index("--only") + 1:] if "--only" in sys.argv else []
    proc, port = run_h1.start(binary, None, ["--idle-timeout", "2s"])
    failed = 0
    try:
        for name, run in CASES:
            if only and name not in only:
                continue
            problems = []
            run(port, proc.pid, problems.append)
            if proc.poll() is not None:
                problems.append("the server exited (%d)" % proc.returncode)
                print("FAIL %s: %s" % (name, "; ".join(problems)))
                return 1
            buf, _ = run_h1.exchange(port, b"", "sentinel")
            if run_h1.frame(buf, False) != ["200"]:
                problems.append("GET /echo afterwards: %r" % buf[:120])
            n = run_h1.in_flight(port)
            if n:
                problems.append("%d requests still in flight after 3 s" % n)
            print("%s %s: %s" % ("FAIL" if problems else "ok  ", name,
                                 "; ".join(problems) if problems else "as expected"))
            failed += bool(problems)
    finally:
        rc = run_h1.stop(proc)
    failed += rc != 0
    print("h2c: %d cases, %d failed" % (len(CASES) if not only else len(only), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
