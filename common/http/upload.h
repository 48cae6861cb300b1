/*
 * upload: the engine-independent answer to POST /write.
 *
 * The engine gives the request's Content-Type and Content-Length, feeds every body byte as it
 * arrives, and at the end of the body asks for the answer: 200 with the decimal byte count of
 * the first form part named "data" (text/plain, no newline), or an error status with a JSON
 * body {"error": "<what was wrong>", "status": N} (application/json):
 *  - 415: Content-Type absent or not multipart/form-data;
 *  - 400: no, empty, too long or invalid boundary; malformed or truncated multipart; bad part
 *    headers; part headers over 8 KiB; more than 1000 parts; no "data" part;
 *  - 413: Content-Length or the bytes received over max_body.
 * The count comes from the multipart parser, never from Content-Length, which only allows an
 * early 413. Memory is the struct alone (about 8.5 KiB, no allocation), whatever the body size.
 *
 * Once an error is decided, the engine may answer at once: later feeds only add to the byte
 * counter. Whether the rest of the body is then read and dropped or the connection closed is
 * the engine's choice (HTTP/1.1 keep-alive needs the body read, or "Connection: close").
 *
 * Threads: one struct upload per request, used by one thread at a time.
 */
#ifndef SLOWSRV_UPLOAD_H
#define SLOWSRV_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "http/multipart.h"

/* Room for the longest answer body; every message fits, so none is ever cut. */
#define UPLOAD_BODY_MAX 256

/*
 * The answer to send. content_type and body are NUL-terminated; content_type is a static
 * string, body points into the struct upload and stays valid until that struct is initialised
 * again or goes away.
 */
struct upload_answer {
    int status;
    const char *content_type;
    const char *body;
    size_t body_len;
};

/* One upload. Caller-owned storage; fields are private: use the functions below. */
struct upload {
    struct mp_parser mp;
    uint64_t max_body;
    uint64_t received;
    int status; /* 0 while undecided, else the decided answer's status */
    int err;    /* the enum mp_error behind an error status */
    size_t body_len;
    char body[UPLOAD_BODY_MAX];
};

/*
 * Starts an upload. content_type is the request's Content-Type value, NUL-terminated, or NULL
 * when absent; it is not kept. content_length is the announced body size, -1 (or any negative
 * value) when unknown. max_body is --max-body in bytes.
 * Returns 0 when the body should be fed, or the error status already decided (415 wrong
 * content type, 400 bad boundary, 413 Content-Length over max_body): the engine may answer
 * at once with upload_finish() and drop the body.
 */
int upload_init(struct upload *u, const char *content_type, int64_t content_length,
                uint64_t max_body);

/*
 * Feeds the next len bytes of the body (buf may be NULL if len is 0); buf is not kept. Every
 * byte is counted in upload_received(). Returns 0 while no error is known, or the error
 * status once one is decided (400 or 413); after that, and after upload_finish(), feeds only
 * count bytes and return that status (0 after a 200).
 */
int upload_feed(struct upload *u, const void *buf, size_t len);

/*
 * Ends the body and fills *out with the answer (see struct upload_answer). Returns
 * out->status: 200, or 400/413/415. May be called more than once and gives the same answer.
 */
int upload_finish(struct upload *u, struct upload_answer *out);

/* Bytes fed so far, including those fed after an error was decided. */
uint64_t upload_received(const struct upload *u);

/*
 * The enum mp_error behind an error answer (MP_ERR_NO_DATA_PART for a form without "data"),
 * 0 if there is none (yet). For logs and tests.
 */
int upload_error(const struct upload *u);

#endif
