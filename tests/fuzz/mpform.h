/*
 * mpform: an oracle for common/multipart. Generates multipart/form-data bodies whose answer is
 * known by construction (the first "data" part's exact bytes, the part count, every part's name
 * and filename), then checks what the parser reports for the whole body, or a cut of it, fed in
 * a given chunking.
 *
 * Every choice (boundary, parts, content, chunk sizes) comes from a caller's source, so the same
 * code runs from a seeded PRNG (tests/unit/test_multipart.c) and from fuzz input
 * (fuzz_multipart_oracle.c). Content is dense in CR, LF and '-' and in near-misses of the
 * delimiter (a proper prefix of CRLF "--" boundary, the boundary without its CRLF, after a bare
 * LF or a bare CR, with one byte changed), and never holds the whole delimiter.
 *
 * No allocation: the caller owns struct mpform and struct mpform_plan (about 16 KiB and 128 KiB;
 * make them static or heap). Not thread-safe per object; distinct objects share nothing.
 */
#ifndef SLOWSRV_MPFORM_H
#define SLOWSRV_MPFORM_H

#include "http/multipart.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The ceiling of a generated body; generation stops adding content before it. */
#define MPFORM_BODY_CAP 16384
#define MPFORM_MAX_PARTS 8

/* A source of choices: returns a value in [0, n), n >= 1. Any value is valid input. */
typedef uint32_t (*mpform_pick_cb)(void *ctx, uint32_t n);

struct mpform {
    char boundary[MP_BOUNDARY_MAX + 1];
    size_t blen;
    char ctype[MP_BOUNDARY_MAX + 64]; /* a Content-Type header value carrying the boundary */
    char body[MPFORM_BODY_CAP];
    size_t len;
    size_t close_end; /* offset just past the close delimiter's "--": a shorter cut is truncated */
    uint32_t parts;
    const char *names[MPFORM_MAX_PARTS];     /* static strings */
    const char *filenames[MPFORM_MAX_PARTS]; /* static strings, NULL for a plain field */
    bool found;                              /* a part named "data" exists */
    size_t data_off;                         /* the first data part's content in body */
    size_t data_len;
    size_t marks[MPFORM_MAX_PARTS + 1]; /* where each delimiter (CRLF or "--") starts */
    uint32_t nmarks;
};

/* Chunk ends, increasing, the last one the body length given to mpform_plan(). */
struct mpform_plan {
    size_t n;
    size_t ends[MPFORM_BODY_CAP + 1];
};

/* Fills *f with a new valid form, every choice taken from pick. */
void mpform_make(struct mpform *f, mpform_pick_cb pick, void *ctx);

/*
 * Fills *plan with a chunking of len (<= f->len) bytes of f's body: whole, one byte at a time,
 * random small or large chunks, or cuts right around the delimiters (chosen by pick).
 */
void mpform_plan(struct mpform_plan *plan, const struct mpform *f, size_t len, mpform_pick_cb pick,
                 void *ctx);

/*
 * Parses the first len bytes of f's body in plan's chunks (plan made for this len) and
 * compares with the known answer: for len >= f->close_end no error, every byte taken, the
 * part count, names and filenames, and the first data part's size, content and on_part_end
 * size; for a shorter cut MP_ERR_TRUNCATED from mp_parser_finish(). Also checks that
 * mp_boundary_parse() gives f's boundary back from f->ctype. Returns 0 when all match, else -1
 * with the first difference written to why (NUL-terminated, why_size bytes).
 */
int mpform_check(const struct mpform *f, size_t len, const struct mpform_plan *plan, char *why,
                 size_t why_size);

#endif
