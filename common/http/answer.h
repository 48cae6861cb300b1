/*
 * answer: what an engine sends, library-neutral. The core decides every part of it (exchange.h
 * fills it): the status and its reason phrase, every header (Connection: close included), the
 * body and how it leaves (whole, or paced by the core's timers). An engine hands it to its
 * library as it is and decides nothing.
 *
 * Pointers in an answer point into storage that outlives the request's answer (the route table,
 * the exchange), or into the answer itself (timing); the struct is the caller's, usually on the
 * stack, so an engine whose library keeps a header past the call copies it.
 */
#ifndef SLOWSRV_ANSWER_H
#define SLOWSRV_ANSWER_H

#include <stddef.h>

/* Most headers an answer carries: Content-Type, Server-Timing, Allow and Connection beside a
 * route's own eight (CONFIG_ROUTE_HEADERS), or the control API's. */
#define ANSWER_HEADERS_MAX 12

/* Room for a Server-Timing value made for one answer: the plan's and its wait;dur. */
#define ANSWER_TIMING_LEN 112

struct answer_header {
    const char *name; /* in its canonical case ("Content-Type"); HTTP/2 lowercases it */
    const char *value;
};

struct answer {
    unsigned status;
    const char *reason; /* answer_reason(status) */
    struct answer_header headers[ANSWER_HEADERS_MAX];
    size_t nheaders;
    const char *body;
    size_t body_len; /* what Content-Length announces (0 and absent when bodiless) */
    int bodiless;    /* 1xx, 204, 304: neither a body nor a Content-Length */
    int paced;       /* the body leaves in pieces, each handed over by exchange_body_take */
    int unsized;     /* an event stream, or its HEAD (not paced): no Content-Length (HTTP/1.1
                        chunked coding, HTTP/2 DATA until the end of the stream); body_len is 0,
                        answer_format_h1 is not for it */
    int upgrade;     /* a WebSocket handshake's 101: the engine sends it through its library's
                        upgrade and hands the socket to the core (exchange_ws_take) */
    int close;       /* the connection closes after this answer ("Connection: close" is the
                        last of headers) */
    long cached;     /* the start table's route whose answer this is unchanged, for an engine
                        that prebuilds one per route (exchange_cached_answer); -1 otherwise */
    char timing[ANSWER_TIMING_LEN]; /* the Server-Timing value made for this answer alone */
};

/* The reason phrase of an HTTP status (RFC 9110 and the IANA registry: "Not Found", "I'm a
 * Teapot" for 418), or a generic one by class ("Client Error" for an unregistered 4xx). */
const char *answer_reason(unsigned status);

/* 1 if an answer with this status carries neither a body nor a Content-Length: 1xx, 204 and
 * 304 (RFC 9110 sections 6.4.1, 8.6 and 15.4.5). */
int answer_bodiless(unsigned status);

/* Adds a header to a (ignored past ANSWER_HEADERS_MAX; name and value must outlive a). */
void answer_add_header(struct answer *a, const char *name, const char *value);

/* The value of header `name` (case-insensitive) in a, or NULL. */
const char *answer_header(const struct answer *a, const char *name);

/* Writes a's HTTP/1.1 head ("HTTP/1.1 <status> <reason>", its headers, Content-Length unless
 * bodiless, the blank line) into buf, for an engine that must write an answer around its
 * library. Returns its length, or 0 if it does not fit in len bytes. */
size_t answer_format_h1(const struct answer *a, char *buf, size_t len);

#endif
