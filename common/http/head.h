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
 *   a target not in origin ("/..."), absolute ("http://..."), asterisk    400
 *     (OPTIONS *) or authority (CONNECT) form
 *   a field name that is not a token ("Content-Length :")                400
 *   a control byte other than HTAB in a field value (NUL, VT, CR, ...)   400
 *   more than HEAD_MAX_FIELDS fields                                     431
 *   a folded field value (obs-fold)                                      400
 *   Content-Length that is not one plain number, or sent twice           400
 *   Content-Length and Transfer-Encoding together                        400
 *   Transfer-Encoding other than one field "chunked" (gzip; chunked,      400
 *     identity; gzip, chunked; chunked,; xchunked; "chunked " with
 *     whitespace after it)
 *   Transfer-Encoding in an HTTP/1.0 request                             400
 *   HTTP/1.1 without Host, or Host sent twice                            400
 *   a Host that is not uri-host [":" port] ("a b", "a@b/c", "x:8o")       400
 *   a percent-encoded NUL (%00) in the path                              400
 *   an Expect other than 100-continue                                    417
 *
 * An HTTP/2 request (h2) is held to the checks of the method, the target's bytes, the count of
 * fields, their names and their values' bytes, and to RFC 9113 section 8.2 and 8.3.1's own:
 *
 *   a :path that is empty or does not start with '/' (but "*" for OPTIONS)    400
 *   a connection-specific field (connection, keep-alive, proxy-connection,  400
 *     transfer-encoding, upgrade, te other than "trailers")
 *   a field value that starts or ends with a space or a tab                 400
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

/* A request head (HTTP/1.x as received, or HTTP/2 as decoded), as the engine's library parsed
 * it. */
struct head {
    const char *method; /* its bytes, mlen of them */
    size_t mlen;
    const char *target; /* the request target as received, tlen bytes */
    size_t tlen;
    unsigned minor;                  /* HTTP/1.<minor> */
    const struct head_field *fields; /* the first min(nfields, HEAD_MAX_FIELDS) */
    size_t nfields;                  /* how many the head has */
    int folded;                      /* the library unfolded an obs-fold continuation line */
    int h2; /* an HTTP/2 request: method and target are its :method and :path, fields the rest
               of its header block as decoded, and the checks are RFC 9113's */
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

/* Every value of h's field `name` (case-insensitive), joined with ", " as RFC 9110 section 5.3
 * combines a list field sent on several lines, into buf (len bytes, NUL-terminated): the whole
 * length, or -1 when h has no such field. */
long head_values_joined(const struct head *h, const char *name, char *buf, size_t len);

/* Names a request by the start of its request line in buf[0..len) ("METHOD TARGET HTTP/1.x",
 * possibly cut short, or a head too long or too broken to parse): h's method is what comes
 * before the line's first space, its target what follows up to the next space or the line's
 * end, both pointing into buf; "-" and an empty target for a line with no space. For a request
 * refused before its head could be parsed: its log line and counters. */
void head_name_line(const char *buf, size_t len, struct head *h);

/* 1 if s[0..n) is a token (RFC 9110 section 5.6.2): a method, a field name. */
int head_is_token(const char *s, size_t n);

/* The value of the first field of h named `name` (case-insensitive), without the whitespace
 * around it, its length in *len; NULL if h has no such field. */
const char *head_value(const struct head *h, const char *name, size_t *len);

/* 1 if the connection closes after the answer to h (RFC 9112 section 9.3): a Connection field
 * lists "close", among other options or alone, or an HTTP/1.0 request does not list
 * "keep-alive". Any other option ("upgrade", "TE") keeps an HTTP/1.1 connection open. 0 over
 * HTTP/2. */
int head_wants_close(const struct head *h);

/* 0 if the head may be served, else the status to refuse it with (400, 417, 431), with
 * *why set to a one-line reason for the JSON error body. */
unsigned head_check(const struct head *h, const char **why);

#endif
