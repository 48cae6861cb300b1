#!/usr/bin/python3
"""A differential probe of HTTP/1.1 framing and head checks: generated requests, the same bytes
to slowsrv and slowsrv-h2o, and the answers compared.

    diff_h1.py BINARY OTHER_BINARY [--model MODEL] [--seed N] [--cases N] [--print]

MODEL is BINARY's thread model (its default if not given).

Each case is a well-formed request (GET, POST with Content-Length, chunked POST, an upload, a
pipelined pair) with one to three mutations drawn from a seeded generator: a byte put into the
head (CR, LF, NUL, HTAB, SP, VT, DEL, ':', ',', 0x80, 0xff), a byte taken out, a header line
given twice, a field name's case changed, a framing or routing header added (Content-Length,
Transfer-Encoding, Host, Expect, Connection variants), or the body cut short. Each case is sent
as run_h1.py sends a corpus case (then the sentinel GET /echo with Connection: close), and what
comes back is framed the same way. The two binaries must agree: the same answers in the same
order, the same close. Two differences are the libraries', as h1/expected.txt's @ENGINE lines
list them, and are counted apart: an interim 100 (libmicrohttpd sends one to any
"Expect: 100-continue", a request without a body included), and the shape of a refusal where a
library refuses the request before slowsrv sees it (both refuse it and close, but the status
differs, or libmicrohttpd doubles its head or closes without an answer; and where slowsrv
refuses a head at once, slowsrv-h2o, whose libh2o reads the whole body first, refuses it once the
body is in, or waits for a body cut short). After the run, nothing may be in flight on either
binary, and both must still answer.

Exit status 0 if every case agreed, 1 if not, 2 if a server could not be run.
"""

import random
import sys

import run_h1

BASES = [
    b"GET /echo HTTP/1.1\r\nHost: x\r\nX-A: v\r\n\r\n",
    b"GET /test?delay=0&status=201 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-A: v\r\n\r\nhello",
    b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"POST /write HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XY\r\n"
    b"Content-Length: 62\r\n\r\n--XY\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\nabc\r\n--XY--\r\n",
    b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\nGET /test?delay=0 HTTP/1.1\r\nHost: x\r\n\r\n",
]
BYTES = [b"\r", b"\n", b"\0", b"\t", b" ", b"\x0b", b"\x7f", b":", b",", b"\x80", b"\xff"]
HEADERS = [
    b"Content-Length: 5", b"Content-Length: 0", b"Content-Length: 05", b"Content-Length: 5, 5",
    b"Content-Length: -1", b"Content-Length: 99999999999999999999", b"Content-Length : 5",
    b"Transfer-Encoding: chunked", b"Transfer-Encoding: Chunked", b"Transfer-Encoding: gzip",
    b"Transfer-Encoding: chunked, chunked", b"Transfer-Encoding:\tchunked",
    b"Transfer-Encoding : chunked", b" Transfer-Encoding: chunked", b"Host: y", b"Host: a b",
    b"Host: [::1]:80", b"Expect: 100-continue", b"Expect: 200-ok", b"Connection: close",
    b"Connection: keep-alive, close", b"Connection: upgrade", b"Upgrade: h2c",
    b"X-Slowsrv-Status: 503", b"X-Slowsrv-Status:  503  ", b"X-Slowsrv-Delay: 1ms",
]


def mutate(rng, req):
    head, sep, body = req.partition(b"\r\n\r\n")
    kind = rng.randrange(7)
    if kind == 0:  # a byte put into the head
        at = rng.randrange(len(head) + 1)
        head = head[:at] + rng.choice(BYTES) + head[at:]
    elif kind == 1 and len(head) > 1:  # a byte of the head taken out
        at = rng.randrange(len(head))
        head = head[:at] + head[at + 1:]
    elif kind == 2:  # a header line twice
        lines = head.split(b"\r\n")
        if len(lines) > 1:
            i = rng.randrange(1, len(lines))
            lines.insert(i, lines[i])
        head = b"\r\n".join(lines)
    elif kind == 3:  # a field name's case
        lines = head.split(b"\r\n")
        if len(lines) > 1:
            i = rng.randrange(1, len(lines))
            lines[i] = lines[i].swapcase() if rng.random() < 0.5 else lines[i].upper()
        head = b"\r\n".join(lines)
    elif kind in (4, 5):  # a framing or routing header added
        head += b"\r\n" + rng.choice(HEADERS)
    elif kind == 6 and body:  # the body cut short
        body = body[: rng.randrange(len(body))]
    return head + sep + body


def cases(seed, n):
    rng = random.Random(seed)
    for i in range(n):
        req = rng.choice(BASES)
        for _ in range(rng.randint(1, 3)):
            req = mutate(rng, req)
        yield "case-%d" % i, req


def run(port, req):
    buf, closed = run_h1.exchange(port, req, "sentinel")
    return " ".join(run_h1.frame(buf, req.startswith(b"HEAD"))) + (" close" if closed else " open")


def library_difference(ra, rb):
    """1 if answers ra and rb differ only as the libraries' own answers do."""
    def tokens(r):
        return [t for t in r.split() if t not in ("100", "garbage")]
    ta, tb = tokens(ra), tokens(rb)
    while len(ta) > 1 and len(tb) > 1 and ta[0] == tb[0]:
        ta, tb = ta[1:], tb[1:]
    if ta == tb:
        return 1

    def refused(t):
        return t[-1] == "close" and (len(t) == 1 or t[0][0] in "45")

    def waits_for_body(t):
        return t == ["open"]
    # libh2o reads a whole body before slowsrv sees the head: what slowsrv refuses from the
    # head, slowsrv-h2o refuses once the body is in, and a body cut short is never in.
    # libmicrohttpd's 100 to a request without a body, then the close (h1/expected.txt).
    if ta == ["close"] and ra.split()[0] == "100":
        return 1
    return refused(ta) and (refused(tb) or waits_for_body(tb))


def main():
    argv = sys.argv[1:]
    if len(argv) < 2:
        sys.exit(__doc__)
    a, b = argv[0], argv[1]
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1
    n = int(argv[argv.index("--cases") + 1]) if "--cases" in argv else 300
    show = "--print" in argv
    model = argv[argv.index("--model") + 1] if "--model" in argv else None
    run_h1.SILENCE = 1.0
    pa, porta = run_h1.start(a, model, ["--delay", "0"])
    pb, portb = run_h1.start(b, None, ["--delay", "0"])
    differ = known = 0
    try:
        for name, req in cases(seed, n):
            ra, rb = run(porta, req), run(portb, req)
            lib = ra != rb and library_difference(ra, rb)
            if show or (ra != rb and not lib):
                print("%s %s: %s | %s | %r" % ("ok  " if ra == rb else "lib " if lib else "DIFF",
                                              name, ra, rb, req[:200]))
            differ += ra != rb and not lib
            known += lib
        left = [run_h1.in_flight(porta), run_h1.in_flight(portb)]
        if any(left):
            print("FAIL in flight after the run: %r" % left)
    finally:
        rc = run_h1.stop(pa) | run_h1.stop(pb)
    print("diff_h1: seed %d, %d cases, %d differ, %d as the libraries' own answers" %
          (seed, n, differ, known))
    return 1 if differ or any(left) or rc else 0


if __name__ == "__main__":
    sys.exit(main())
