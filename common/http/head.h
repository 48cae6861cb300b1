/*
 * head: the checks of an HTTP/1.x request head that decide whether the request is read at all,
 * made once for both engines on the head as received (RFC 9112 sections 3, 5, 6 and 11, RFC
 * 9110 section 5). A request that fails one is answered with the status head_check returns and
 * the connection is closed after it: where the head is in doubt, so is where the next request
 * begins, and a proxy in front of slowsrv may have read it differently (request smuggling).
 *
 *   what is wrong                                                        answer
 *   a method that is not a token                                         400
 *   a control byte, space or DEL in the target                           400
 *   a field name that is not a token ("Content-Length :")                400
 *   a control byte other than HTAB in a field value (NUL, VT, CR, ...)   400
 *   more than HEAD_MAX_FIELDS fields                                     431
 *   a folded field value (obs-fold)                                      400
 *   Content-Length that is not one plain number, or sent twice           400
 *   Content-Length and Transfer-Encoding together                        400
 *   Transfer-Encoding other than one field "chunked" (gzip; chunked,      400
 *     identity; gzip, chunked; chunked,; xchunked)
 *   Transfer-Encoding in an HTTP/1.0 request                             400
 *   HTTP/1.1 without Host, or Host sent twice                            400
 *   an Expect other than 100-continue                                    417
 *
 * Pure functions over what the engine hands in; no state, any thread.
 */
#ifndef SLOWSRV_HEAD_H
#define SLOWSRV_HEAD_H

#include <stddef.h>

/* Most fields a head may have; more get 431. nginx and libh2o allow 100; libmicrohttpd's
 * per-connection pool holds about 140 at the default limits. */
#define HEAD_MAX_FIELDS 100

/* One header field as received: its name and its value, with the whitespace around the value
 * or not (the checks trim it). Not NUL-terminated: NUL bytes inside count. */
struct head_field {
    const char *name;
    size_t nlen;
    const char *value;
    size_t vlen;
};

/* An HTTP/1.x request head, as the engine's library parsed it. */
struct head {
    const char *method; /* its bytes, mlen of them */
    size_t mlen;
    const char *target; /* the request target as received, tlen bytes */
    size_t tlen;
    unsigned minor;                  /* HTTP/1.<minor> */
    const struct head_field *fields; /* the first min(nfields, HEAD_MAX_FIELDS) */
    size_t nfields;                  /* how many the head has */
    int folded;                      /* the library unfolded an obs-fold continuation line */
};

/* Parses the HTTP/1.x request head at the start of buf[0..len), as received, into *h and its
 * fields into f (room for HEAD_MAX_FIELDS; h->nfields counts them all), pointing into buf: empty
 * lines before the request line are skipped (RFC 9112 section 2.2), lines end at LF (a CR before
 * it is not part of the line), the method ends at the request line's first space and the target
 * at its next, a field's name at its first ':', and a line that starts with a space or a tab is
 * a folded one (h->folded, kept as a field without a name). Returns the head's length through
 * its blank line, -1 if it is not an HTTP/1.x request head, -2 if more bytes are needed. For an
 * engine whose library keeps the head as received but not as it was sent. */
long head_parse(const char *buf, size_t len, struct head *h, struct head_field *f);

/* 0 if the head may be served, else the status to refuse it with (400, 417, 431), with
 * *why set to a one-line reason for the JSON error body. */
unsigned head_check(const struct head *h, const char **why);

#endif
