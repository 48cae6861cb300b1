#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_multipart_oracle to tests/fuzz/corpus/multipart_oracle/ (or
argv[1]).

The target reads its input as a stream of choices (fuzz_multipart_oracle.c), so any bytes make
a valid form: the seeds are fixed patterns and bytes from a seeded PRNG, of several lengths.
"""
import os
import random
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "corpus", "multipart_oracle")
os.makedirs(out, exist_ok=True)


def seed(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


seed("empty", b"")
seed("all_ff", b"\xff" * 512)
seed("counting", bytes(range(256)) * 4)
for n, size in enumerate((64, 300, 1000, 3000, 6000)):
    rng = random.Random(1000 + n)
    seed("random_%d" % size, bytes(rng.randrange(256) for _ in range(size)))
# Inputs that end a chunk one byte before a delimiter's end after a dense run of CRs: each fails
# when find_delimiter()'s tail window in common/http/multipart.c is made one byte short.
for k in (2017, 2084, 2284):
    rng = random.Random(k)
    seed("cut_delimiter_tail_%d" % k, bytes(rng.randrange(256) for _ in range(3000)))
