/*
 * libFuzzer target for common/http/h1frame: an HTTP/1.x connection's bytes, followed as they
 * arrive.
 *
 * Input: its first byte picks the size of the pieces (1 to 256 bytes); the rest is the bytes of
 * one connection. They are fed twice: in pieces of that size, and whole. Each feed is given a
 * buffer that holds exactly what the library would hold (an exact-size heap copy, so ASan reports
 * a read past it), and the library here consumes nothing.
 *
 * Checked:
 *   - the answer is 0, 400 or 431, with a one-line reason exactly when it is not 0;
 *   - the refused request begins within what was fed;
 *   - both feeds give the same answer, at the same offset: the pieces do not matter;
 *   - once refused, every later call says the same;
 *   - the same in stream mode (each piece an exact-size copy of its own bytes): the same answer
 *     in pieces as whole, 0, 400 or 431.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/h1frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feeds s[0..len) in pieces of step bytes; returns the status, the refused request's start. */
static unsigned run(const uint8_t *s, size_t len, size_t step, uint64_t *begin)
{
    struct h1frame f;
    h1frame_init(&f, 8192);
    unsigned st = 0;
    for (size_t at = 0; at < len && !st;) {
        size_t n = len - at < step ? len - at : step;
        char *buf = malloc(at + n ? at + n : 1);
        if (!buf)
            abort();
        memcpy(buf, s, at + n);
        const char *why = NULL;
        uint64_t back = 0;
        st = h1frame_feed(&f, buf, at + n, n, &why, &back);
        if (st != 0 && st != 400 && st != 431)
            __builtin_trap();
        if ((st != 0) != (why != NULL && why[0] != '\0') || (why && strchr(why, '\n')))
            __builtin_trap();
        at += n;
        if (st) {
            if (back > at)
                __builtin_trap();
            *begin = at - back;
            const char *why2 = NULL;
            uint64_t back2 = 0;
            if (h1frame_feed(&f, buf, at, 0, &why2, &back2) != st || why2 != why)
                __builtin_trap();
        }
        free(buf);
    }
    return st;
}

/* Stream mode: s[0..len) in pieces of step bytes, each given alone. */
static unsigned run_stream(const uint8_t *s, size_t len, size_t step)
{
    struct h1frame f;
    h1frame_init_stream(&f, 8192);
    unsigned st = 0;
    for (size_t at = 0; at < len && !st; at += step) {
        size_t n = len - at < step ? len - at : step;
        char *piece = malloc(n);
        if (!piece)
            abort();
        memcpy(piece, s + at, n);
        const char *why = NULL;
        st = h1frame_feed_stream(&f, piece, n, &why);
        if ((st != 0 && st != 400 && st != 431) || (st != 0) != (why != NULL && why[0] != '\0'))
            __builtin_trap();
        free(piece);
    }
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)data[0] + 1;
    uint64_t b1 = 0, b2 = 0;
    unsigned s1 = run(data + 1, size - 1, step, &b1);
    unsigned s2 = run(data + 1, size - 1, size, &b2);
    if (s1 != s2 || (s1 && b1 != b2))
        __builtin_trap();
    if (run_stream(data + 1, size - 1, step) != run_stream(data + 1, size - 1, size))
        __builtin_trap();
    return 0;
}
