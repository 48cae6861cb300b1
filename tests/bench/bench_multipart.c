/*
 * bench_multipart: throughput of the multipart parser on one large "data" part.
 *
 * Feeds a form whose data part holds 256 MiB in 64 KiB chunks, taken from a 32 MiB source
 * buffer (larger than the caches, so memory is read as in a real upload), and prints GB/s
 * (10^9 bytes/s) of body parsed, for four contents:
 *  - random: uniform bytes, a CR every 256 bytes on average (a typical binary file);
 *  - zeros: no CR at all (memchr's best case);
 *  - near-delims: the delimiter with its last byte changed, repeated: with the default
 *    40-character boundary, every 44 bytes a 43-byte near-match;
 *  - crlf: "\r\n" repeated: every other byte a CR followed by LF (the most candidates a body
 *    can hold; each is rejected at its third byte).
 * It checks the count of each run and exits 1 if it is wrong.
 *
 * Build and run (from the repository root; the optional argument is another boundary):
 *   gcc -std=c11 -D_GNU_SOURCE -O2 -Icommon tests/bench/bench_multipart.c common/multipart.c \
 *       -o /tmp/bench_multipart && /tmp/bench_multipart [BOUNDARY]
 */
#include "http/multipart.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PART_SIZE ((uint64_t)256 << 20)
#define SOURCE_SIZE ((size_t)32 << 20)
#define CHUNK ((size_t)64 << 10)

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill_random(char *buf, size_t len)
{
    uint64_t s = 0x9e3779b97f4a7c15u;

    for (size_t i = 0; i < len; i += 8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        memcpy(buf + i, &s, len - i < 8 ? len - i : 8);
    }
}

/* The boundary: curl's format by default, or argv[1] (to see short boundaries). */
static const char *boundary = "------------------------7da5a5fb1d7de4f9";

static void fill_crlf(char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = i % 2 ? '\n' : '\r';
}

static void fill_near_delimiters(char *buf, size_t len)
{
    /* A delimiter with its last boundary character changed: the longest possible near-match. */
    const size_t b = strlen(boundary), n = b + 4;

    for (size_t i = 0; i < len; i++) {
        size_t k = i % n;

        buf[i] = k < 4 ? "\r\n--"[k] : k == n - 1 ? (char)(boundary[b - 1] ^ 1) : boundary[k - 4];
    }
}

/* Parses one form with a PART_SIZE data part; returns seconds, or -1 if the count is wrong. */
static double run(const char *src)
{
    static struct mp_parser p;
    char head[512], tail[128];
    int head_len, tail_len;
    struct mp_limits lim;
    uint64_t fed = 0;
    size_t off = 0;
    double t0, t1;

    mp_limits_default(&lim);
    lim.max_body = UINT64_MAX;
    head_len = snprintf(head, sizeof(head),
                        "--%s\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nabc\r\n"
                        "--%s\r\nContent-Disposition: form-data; name=\"data\"; "
                        "filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                        boundary, boundary);
    tail_len = snprintf(tail, sizeof(tail), "\r\n--%s--\r\n", boundary);
    if (mp_parser_init(&p, boundary, strlen(boundary), &lim, NULL, NULL) != 0)
        return -1;
    t0 = now();
    if (mp_parser_feed(&p, head, (size_t)head_len) < 0)
        return -1;
    while (fed < PART_SIZE) {
        if (mp_parser_feed(&p, src + off, CHUNK) < 0)
            return -1;
        fed += CHUNK;
        off = (off + CHUNK) % SOURCE_SIZE;
    }
    if (mp_parser_feed(&p, tail, (size_t)tail_len) < 0 || mp_parser_finish(&p) != 0)
        return -1;
    t1 = now();
    if (mp_parser_data_size(&p) != PART_SIZE) {
        fprintf(stderr, "wrong count %llu\n", (unsigned long long)mp_parser_data_size(&p));
        return -1;
    }
    return t1 - t0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fill)(char *, size_t);
    } kinds[] = {{"random", fill_random},
                 {"zeros", NULL},
                 {"near-delims", fill_near_delimiters},
                 {"crlf", fill_crlf}};
    char *src = calloc(1, SOURCE_SIZE);

    if (argc > 1) {
        if (mp_boundary_check(argv[1], strlen(argv[1])) != 0) {
            fprintf(stderr, "invalid boundary: %s\n", argv[1]);
            return 2;
        }
        boundary = argv[1];
    }
    if (!src)
        return 1;
    printf("multipart: %llu MiB data part in %zu KiB chunks, boundary of %zu chars\n",
           (unsigned long long)(PART_SIZE >> 20), CHUNK >> 10, strlen(boundary));
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        double best = 0;

        if (kinds[k].fill)
            kinds[k].fill(src, SOURCE_SIZE);
        else
            memset(src, 0, SOURCE_SIZE);
        for (int r = 0; r < 5; r++) {
            double s = run(src);

            if (s < 0) {
                fprintf(stderr, "%s: parse failed\n", kinds[k].name);
                free(src);
                return 1;
            }
            if (best == 0 || s < best)
                best = s;
        }
        printf("%-12s %6.2f GB/s (best of 5: %.3f s)\n", kinds[k].name,
               (double)PART_SIZE / best / 1e9, best);
    }
    free(src);
    return 0;
}
