#!/usr/bin/python3
"""Clients that stop reading: memory stays bounded and they are dropped by --idle-timeout.

    stalled_readers.py BINARY [--model MODEL] [--h2]

Starts BINARY with --idle-timeout 2s, then opens CONNS connections that each ask for
?size=16000000 (16 MB) and never read a byte (HTTP/1.1; with --h2, h2c connections that open
STREAMS streams each with SETTINGS_INITIAL_WINDOW_SIZE 0, so no DATA may be sent). Checks:
  - the server's resident memory grows by less than 64 MiB over the run (a copy of each body
    per request would be 16 MB times the requests: 480 MB here);
  - every connection is closed by the server within --idle-timeout plus 2 s of the last byte
    it could write (the client sees the end of the stream or a reset);
  - the server stays up and answers GET /echo afterwards, and exits 0 on SIGTERM.
Exit status 0 if all hold, 1 if not, 2 if the server could not be run.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_h1  # noqa: E402

CONNS = 30
STREAMS = 10
IDLE = 2.0




def small_socket(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    return s


def open_h1(port):
    s = small_socket(port)
    s.sendall(b"GET /echo?size=16000000 HTTP/1.1\r\nHost: x\r\n\r\n")
    return s


def open_h2(port):
    import h2.config
    import h2.connection
    import h2.settings

    s = small_socket(port)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    for i in range(STREAMS):
        c.send_headers(
            1 + 2 * i,
            [(":method", "GET"), (":path", "/echo?size=16000000"), (":scheme", "http"),
             (":authority", "x")],
            end_stream=True,
        )
    s.sendall(c.data_to_send())
    return s


def closed_by_server(s, deadline):
    """Reads (slowly draining what the server managed to send) until the end of the stream."""
    s.settimeout(0.2)
    while time.time() < deadline:
        try:
            d = s.recv(65536)
            if not d:
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def main():
    binary = sys.argv[1]
    model = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else None
    h2mode = "--h2" in sys.argv
    proc, port = run_h1.start(binary, model, ["--idle-timeout", "2s"])
    failed = 0
    try:
        time.sleep(0.2)
        before = run_h1.rss_kb(proc.pid)
        socks = [(open_h2 if h2mode else open_h1)(port) for _ in range(CONNS)]
        time.sleep(1.0)
        peak = run_h1.rss_kb(proc.pid)
        grown = (peak - before) // 1024
        # Closed within the timeout (counted from now: nothing has moved since the first
        # second), plus slack for the sweep and this machine.
        deadline = time.time() + IDLE + 3
        still_open = sum(0 if closed_by_server(s, deadline) else 1 for s in socks)
        for s in socks:
            s.close()
        after = run_h1.rss_kb(proc.pid)
        print("rss before %d KiB, with %d stalled clients %d KiB (+%d MiB), after %d KiB"
              % (before, CONNS, peak, grown, after))
        if grown >= 64:
            print("FAIL: memory grew by %d MiB (want < 64)" % grown)
            failed += 1
        if still_open:
            print("FAIL: %d of %d connections still open %.0f s after they stalled"
                  % (still_open, CONNS, IDLE + 3))
            failed += 1
        buf, closed = run_h1.exchange(port, b"", "sentinel")
        if run_h1.frame(buf, False) != ["200"]:
            print("FAIL: GET /echo afterwards: %r" % buf[:200])
            failed += 1
    finally:
        rc = run_h1.stop(proc)
    if rc != 0:
        print("FAIL: the server exited %d" % rc)
        failed += 1
    print("%s%s: stalled readers %s" % (os.path.basename(binary), " h2c" if h2mode else "",
                                        "ok" if not failed else "FAILED"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
