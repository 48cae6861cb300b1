#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_multipart to tests/fuzz/corpus/multipart/ (or argv[1]).

Each seed follows the input layout described at the top of fuzz_multipart.c:
flags, Content-Type length, Content-Type, chunk-size count, chunk sizes, body.
"""
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "corpus", "multipart")
os.makedirs(out, exist_ok=True)

B = b"XbOuNdArY"
CT = b"multipart/form-data; boundary=" + B


def field(name, value, b=B, extra=b""):
    return (b"--" + b + b"\r\nContent-Disposition: form-data; name=\"" + name + b"\"" + extra +
            b"\r\n\r\n" + value + b"\r\n")


def close(b=B):
    return b"--" + b + b"--\r\n"


def seed(name, body, ct=CT, flags=0, sizes=(7, 1, 3)):
    data = bytes([flags, len(ct)]) + ct + bytes([len(sizes) - 1]) + bytes(sizes) + body
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


seed("file_and_token", field(b"token", b"abc") +
     field(b"data", b"hello\r\n--XbOu world", extra=b"; filename=\"a.bin\"\r\n"
           b"Content-Type: application/octet-stream") + close())
seed("plain_field", field(b"token", b"abc") + field(b"data", b"12345") + close(), sizes=(1,))
seed("empty_data", field(b"data", b"") + close(), sizes=(0, 2))
seed("preamble_epilogue", b"preamble\r\n--XbOuNdArY-ish\r\n" + field(b"data", b"abc") +
     close() + b"epilogue\r\n--XbOuNdArY\r\n")
seed("boundary_like_content", field(b"data", b"x\r\n--XbOuNdArYz\r\n--XbOuNdArY-y\r\n"
                                    b"--XbOuNdArY\rq\n--XbOuNdArY\r\n\r\r\n--") + close(),
     sizes=(5, 9, 2))
seed("truncated", field(b"data", b"abc") + b"--" + B)
seed("bad_headers", b"--" + B + b"\r\nContent-Disposition: attachment; name=data\r\n\r\nx\r\n" +
     close())
seed("padding_bare_lf", b"--" + B + b" \t\nContent-Disposition: form-data; name=data\n\nabc"
     b"\r\n--" + B + b"\t\r\ncontent-disposition: FORM-DATA; NAME=x\r\n\r\n\r\n--" + B + b"--")
seed("two_data_parts", field(b"data", b"first") + field(b"data", b"second") + close())
seed("hc5_style_quoted", field(b"data", b"\x00\xff\r\n", b=b"tz-nroo_xG",
                               extra=b"; filename=\"C:\\dir\\\"q\\\".bin\"") + close(b"tz-nroo_xG"),
     ct=b"Multipart/Form-Data; charset=ISO-8859-1; BOUNDARY=\"tz-nroo_xG\"")
seed("small_limits", field(b"a", b"1") + b"--" + B + b"\r\nX-Long: " + b"a" * 80 +
     b"\r\nContent-Disposition: form-data; name=data\r\n\r\nzz\r\n" + field(b"c", b"3") +
     field(b"d", b"4") + close(), flags=1)
seed("max_body_half", field(b"data", b"0123456789" * 8) + close(), flags=2)
seed("max_body_exact", field(b"data", b"0123456789") + close(), flags=3)
seed("wrong_content_type", field(b"data", b"abc") + close(), ct=b"text/plain; boundary=x")
seed("bad_boundary_param", field(b"data", b"abc") + close(),
     ct=b"multipart/form-data; boundary=\"a\\\"b\"; x")
seed("crlf_dense", field(b"data", b"\r\n" * 40 + b"\r\n--XbOuNdAr" * 3 + b"\r\r\r\r") + close(),
     sizes=(64, 3))
