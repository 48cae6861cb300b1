/* Unit tests of http/h1frame: where requests begin and end on an HTTP/1.x connection, and what
 * is refused, whatever the pieces the bytes come in. */
#include <stdio.h>
#include <string.h>

#include "http/h1frame.h"
#include "check.h"

/* Feeds s in pieces of `step` bytes into a buffer that keeps everything (a library that has
 * consumed nothing). Returns the refusal's status, 0 if none, and its offset from the start of s
 * in *begin. */
static unsigned feed(const char *s, size_t len, size_t step, uint64_t *begin, const char **why)
{
    struct h1frame f;
    h1frame_init(&f, 8192);
    for (size_t at = 0; at < len;) {
        size_t n = len - at < step ? len - at : step;
        uint64_t back;
        unsigned st = h1frame_feed(&f, s, at + n, n, why, &back);
        at += n;
        if (st) {
            *begin = at - back;
            return st;
        }
    }
    *why = NULL;
    return 0;
}

#define S(x) x, sizeof(x) - 1

static const struct {
    const char *s;
    size_t len;
    unsigned want;
    size_t begin; /* where the refused request begins */
} cases[] = {
    {S("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n"), 400,
     52},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5;ext=1\r\nhello\r\n0\r\nX-T: v\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"),
     0, 0},
    /* a trailer line without a colon (a request read as trailers) */
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5\r\nhello\r\n0\r\nGET /echo HTTP/1.1\r\n\r\n"),
     400, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n: v\r\n\r\n"), 400, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nNo-Colon\r\n\r\n"),
     400, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\x01\r\n\r\n"),
     400, 0},
    /* chunk sizes */
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\n\r\n"), 400, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n"), 400, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
       "10000000000000000\r\n"),
     400, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n"),
     400, 0},
    {S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\n"), 400, 0},
    /* a head that fails head_check, after a good request */
    {S("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: a b\r\n\r\n"), 400, 27},
    /* not HTTP/1.x from here: the watch ends, nothing is refused */
    {S("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04"), 0, 0},
    {S("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n\x01\x02junk"), 0,
     0},
};

static void requests_are_followed_and_refused(void)
{
    static const size_t steps[] = {1, 3, 7, 4096};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
            uint64_t begin = 0;
            const char *why;
            unsigned got = feed(cases[i].s, cases[i].len, steps[k], &begin, &why);
            if (got != cases[i].want || (got && begin != cases[i].begin))
                CHECK_FAIL_("case %zu in pieces of %zu: %u at %llu, want %u at %zu", i, steps[k],
                            got, (unsigned long long)begin, cases[i].want, cases[i].begin);
            CHECK(got == 0 || (why && why[0]));
        }
    }
}

/* A chunk-size line of 4096 bytes is taken, one more is refused; 101 trailer fields get 431. */
static void chunk_lines_and_trailers_are_bounded(void)
{
    static char req[20000];
    const char *why;
    uint64_t begin;
    for (int extra = 0; extra < 2; extra++) {
        int n = snprintf(req, sizeof req,
                         "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;");
        size_t ext = H1FRAME_CHUNK_LINE_MAX - 4 + (size_t)extra; /* "5;" and CRLF around it */
        memset(req + n, 'a', ext);
        n += (int)ext;
        n += snprintf(req + n, sizeof req - (size_t)n, "\r\nhello\r\n0\r\n\r\n");
        CHECK_INT(feed(req, (size_t)n, 100, &begin, &why), extra ? 400 : 0);
    }
    int n = snprintf(req, sizeof req,
                     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
    for (int i = 0; i < 101; i++)
        n += snprintf(req + n, sizeof req - (size_t)n, "X-%d: v\r\n", i);
    n += snprintf(req + n, sizeof req - (size_t)n, "\r\n");
    CHECK_INT(feed(req, (size_t)n, 50, &begin, &why), 431);
}

/* A library that consumes a request once it is whole, or decodes a chunked body in place,
 * leaves a head still arriving at the end of its buffer: that is all that is read again. */
static void a_consuming_library_is_followed(void)
{
    struct h1frame f;
    const char *why;
    uint64_t back;
    h1frame_init(&f, 8192);
    const char a[] = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe";
    CHECK_INT(h1frame_feed(&f, a, sizeof a - 1, sizeof a - 1, &why, &back), 0);
    /* The library decoded "he" in place and kept the head and it: 2 bytes fewer. */
    char buf[200];
    size_t held = sizeof a - 1 - 3;
    memcpy(buf, a, held);
    const char b[] = "llo\r\n0\r\n\r\nGET / HTTP/1.1\r\nHo";
    memcpy(buf + held, b, sizeof b - 1);
    CHECK_INT(h1frame_feed(&f, buf, held + sizeof b - 1, sizeof b - 1, &why, &back), 0);
    /* The library consumed the first request; the second head's start is all it holds. */
    const char c[] = "GET / HTTP/1.1\r\nHost: a b\r\n\r\n";
    CHECK_INT(h1frame_feed(&f, c, sizeof c - 1, sizeof c - 1 - 18, &why, &back), 400);
    CHECK_INT(back, sizeof c - 1);
}

/* Stream mode sees each byte once: the chunk and trailer rules hold as in the buffered mode, a
 * head is only followed, and the request line is kept for the engine to name the request. */
static void stream_mode_follows_bodies_in_any_pieces(void)
{
    static const struct {
        const char *s;
        size_t len;
        unsigned want;
    } streams[] = {
        {S("POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\n\r\nhello"
           "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           "5;ext=1\r\nhello\r\n0\r\nX-T: v\r\n\r\n"),
         0},
        {S("\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           "5\r\nhello\r\n0\r\nGET /echo HTTP/1.1\r\n\r\n"),
         400},
        {S("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n0\r\nPOST / HTTP/1.1\r\n"
           "Transfer-Encoding: chunked\r\n\r\nzz\r\n"),
         400},
        /* a body that looks like a long chunk line is a body */
        {S("POST / HTTP/1.1\r\nContent-Length: 5000\r\n\r\n"), 0},
        {S("GET / HTTP/1.1\r\nUpgrade: h2c\r\n\r\n5\r\nzz"), 0},
        {S("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04"), 0},
        {S("POST / HTTP/1.1\r\nHost: a b\r\n\r\n"), 0},
    };
    static char long_body[6000];
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++) {
        for (size_t step = 1; step <= 4096; step *= 8) {
            struct h1frame f;
            h1frame_init_stream(&f, 8192);
            unsigned got = 0;
            const char *why = NULL;
            for (size_t at = 0; at < streams[i].len && !got; at += step) {
                size_t n = streams[i].len - at < step ? streams[i].len - at : step;
                got = h1frame_feed_stream(&f, streams[i].s + at, n, &why);
            }
            if (i == 3) {
                memset(long_body, 'a', sizeof long_body);
                got = h1frame_feed_stream(&f, long_body, 5000, &why);
                CHECK_INT(f.state, H1FRAME_HEAD);
            }
            if (got != streams[i].want)
                CHECK_FAIL_("stream %zu in pieces of %zu: %u, want %u", i, step, got,
                            streams[i].want);
        }
    }
    struct h1frame f;
    const char *why;
    h1frame_init_stream(&f, 8192);
    const char req[] = "POST /echo?x=1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;";
    CHECK_INT(h1frame_feed_stream(&f, req, sizeof req - 1, &why), 0);
    CHECK(f.first_len == 23 && memcmp(f.first, "POST /echo?x=1 HTTP/1.1", 23) == 0);
    memset(long_body, 'a', 4096);
    CHECK_INT(h1frame_feed_stream(&f, long_body, 4096, &why), 400);
    CHECK_INT(h1frame_feed_stream(&f, "x", 1, &why), 400);
}

int main(void)
{
    stream_mode_follows_bodies_in_any_pieces();
    requests_are_followed_and_refused();
    chunk_lines_and_trailers_are_bounded();
    a_consuming_library_is_followed();
    return CHECK_DONE();
}
