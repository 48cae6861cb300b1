/*
 * libFuzzer target for common/multipart.
 *
 * Input layout (tests/fuzz/corpus/multipart/ holds examples; gen_corpus.py writes them):
 *   byte 0       flags: bits 0-1 pick the limits (defaults, small header/part limits,
 *                max_body = half the body, max_body = body length)
 *   byte 1       L, the Content-Type length (taken modulo 128)
 *   L bytes      the Content-Type value, given to mp_boundary_parse(); when it has no valid
 *                boundary the body is parsed with the boundary "XbOuNdArY"
 *   1 byte       K, how many chunk sizes follow (1 + value % 8)
 *   K bytes      chunk sizes, used in turn (0 feeds an empty chunk, then 1 byte)
 *   the rest     the body
 * Missing bytes count as 0. The body is parsed three times: whole, in the chunk sizes from the
 * input, and one byte at a time (bodies up to 4 KiB). Every run must give the same answer
 * (error, data found, data size, parts, bytes taken, callbacks), and each answer must be
 * consistent; a violation calls __builtin_trap().
 *
 * Build: clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Icommon \
 *            tests/fuzz/fuzz_multipart.c common/multipart.c -o fuzz_multipart
 */
#include "http/multipart.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            __builtin_trap();                                                                      \
    } while (0)

struct outcome {
    int err;
    bool found;
    uint64_t size;
    uint32_t parts;
    uint64_t bytes;
    /* from the callbacks */
    uint32_t begins;
    uint32_t ends;
    bool in_part;
    bool counting;
    bool seen_data;
    uint64_t part_bytes;
    uint64_t data_bytes;
    uint64_t all_bytes;
};

static int on_begin(void *user, const char *name, const char *filename, const char *ctype)
{
    struct outcome *o = user;

    REQUIRE(name != NULL);
    REQUIRE(!o->in_part);
    REQUIRE(strlen(name) < MP_HEADER_BYTES_CAP);
    (void)filename;
    (void)ctype;
    o->begins++;
    o->in_part = true;
    o->part_bytes = 0;
    o->counting = !o->seen_data && strcmp(name, "data") == 0;
    if (o->counting)
        o->seen_data = true;
    return 0;
}

static int on_data(void *user, const void *buf, size_t len)
{
    struct outcome *o = user;

    REQUIRE(o->in_part);
    REQUIRE(buf != NULL && len > 0);
    o->part_bytes += len;
    o->all_bytes += len;
    if (o->counting)
        o->data_bytes += len;
    return 0;
}

static int on_end(void *user, uint64_t size)
{
    struct outcome *o = user;

    REQUIRE(o->in_part);
    REQUIRE(size == o->part_bytes);
    o->in_part = false;
    o->counting = false;
    o->ends++;
    return 0;
}

static const struct mp_callbacks callbacks = {on_begin, on_data, on_end};

/* Feeds body in chunks (sizes cycled; nsizes 0 means whole) and records the outcome. */
static void parse(const char *boundary, size_t blen, const struct mp_limits *lim,
                  const uint8_t *body, size_t len, const uint8_t *sizes, size_t nsizes, size_t one,
                  struct outcome *o)
{
    struct mp_parser p;
    size_t off = 0, i = 0;

    memset(o, 0, sizeof(*o));
    REQUIRE(mp_parser_init(&p, boundary, blen, lim, &callbacks, o) == 0);
    while (off < len) {
        size_t n = one ? one : nsizes ? sizes[i++ % nsizes] : len;
        ssize_t got;

        /* A 0 size feeds an empty chunk, then one byte, so the loop always moves on. */
        if (n == 0) {
            REQUIRE(mp_parser_feed(&p, body + off, 0) == 0);
            n = 1;
        }
        if (n > len - off)
            n = len - off;
        got = mp_parser_feed(&p, body + off, n);
        if (got < 0) {
            o->err = (int)got;
            break;
        }
        REQUIRE((size_t)got == n);
        off += n;
    }
    if (o->err == 0)
        o->err = mp_parser_finish(&p);
    if (o->err) {
        REQUIRE(o->err < 0);
        REQUIRE(mp_parser_feed(&p, body, len) == o->err);
        REQUIRE(mp_parser_finish(&p) == o->err);
        REQUIRE(mp_parser_finish(&p) == o->err);
    } else {
        REQUIRE(mp_parser_finish(&p) == 0);
    }
    o->found = mp_parser_data_found(&p);
    o->size = mp_parser_data_size(&p);
    o->parts = mp_parser_parts(&p);
    o->bytes = mp_parser_bytes(&p);
}

static void check_outcome(const struct outcome *o, const struct mp_limits *lim, size_t len)
{
    int status = mp_error_status(o->err);

    REQUIRE(mp_strerror(o->err) != NULL);
    REQUIRE(status == 200 || status == 400 || status == 413);
    REQUIRE(o->size <= len);
    REQUIRE(o->bytes <= len && o->bytes <= lim->max_body);
    REQUIRE(o->parts <= lim->max_parts);
    REQUIRE(o->found == o->seen_data);
    REQUIRE(o->size == o->data_bytes);
    REQUIRE(o->all_bytes <= len);
    REQUIRE(o->begins <= o->parts);
    REQUIRE(o->ends <= o->begins);
    if (!o->found)
        REQUIRE(o->size == 0);
    if (o->err == 0) {
        REQUIRE(o->bytes == len);
        REQUIRE(o->begins == o->parts && o->ends == o->parts && !o->in_part);
    }
    if (o->err == MP_ERR_BODY_TOO_LARGE)
        REQUIRE(len > lim->max_body && o->bytes == lim->max_body);
}

static bool same(const struct outcome *a, const struct outcome *b)
{
    return a->err == b->err && a->found == b->found && a->size == b->size && a->parts == b->parts &&
           a->bytes == b->bytes && a->begins == b->begins && a->ends == b->ends &&
           a->data_bytes == b->data_bytes && a->all_bytes == b->all_bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char fixed[] = "XbOuNdArY";
    size_t off = 0, ct_len, nsizes, len;
    uint8_t flags;
    const char *ct;
    const uint8_t *sizes, *body;
    char boundary[MP_BOUNDARY_MAX + 1];
    size_t blen = 0;
    struct mp_limits lim;
    struct outcome whole, chunked, bytewise;
    int rc;

    flags = off < size ? data[off] : 0;
    off++;
    ct_len = off < size ? data[off] % 128u : 0;
    off++;
    if (off > size)
        off = size;
    if (ct_len > size - off)
        ct_len = size - off;
    ct = (const char *)data + off;
    off += ct_len;
    nsizes = 1 + (off < size ? data[off] % 8u : 0);
    off = off < size ? off + 1 : size;
    if (nsizes > size - off)
        nsizes = size - off;
    sizes = data + off;
    off += nsizes;
    body = data + off;
    len = size - off;

    rc = mp_boundary_parse(ct, ct_len, boundary, &blen);
    if (rc == 0) {
        REQUIRE(blen >= 1 && blen <= MP_BOUNDARY_MAX && strlen(boundary) == blen);
        REQUIRE(mp_boundary_check(boundary, blen) == 0);
    } else {
        REQUIRE(rc == MP_ERR_CONTENT_TYPE || rc == MP_ERR_NO_BOUNDARY ||
                rc == MP_ERR_BOUNDARY_TOO_LONG || rc == MP_ERR_BAD_BOUNDARY);
        memcpy(boundary, fixed, sizeof(fixed));
        blen = sizeof(fixed) - 1;
    }

    mp_limits_default(&lim);
    switch (flags & 3) {
    case 1:
        lim.max_header_bytes = 64;
        lim.max_parts = 3;
        break;
    case 2:
        lim.max_body = len / 2;
        break;
    case 3:
        lim.max_body = len;
        break;
    default:
        break;
    }

    parse(boundary, blen, &lim, body, len, NULL, 0, 0, &whole);
    check_outcome(&whole, &lim, len);
    parse(boundary, blen, &lim, body, len, sizes, nsizes, 0, &chunked);
    check_outcome(&chunked, &lim, len);
    REQUIRE(same(&whole, &chunked));
    if (len <= 4096) {
        parse(boundary, blen, &lim, body, len, NULL, 0, 1, &bytewise);
        REQUIRE(same(&whole, &bytewise));
    }
    return 0;
}
