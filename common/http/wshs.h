/*
 * wshs: the WebSocket opening handshake (RFC 6455 section 4.2), decided here for both engines.
 * Reads the request's method and fields and says what it is answered: 101 with the
 * Sec-WebSocket-Accept value, or the 4xx the RFC gives, with a one-line reason. Pure: any
 * thread.
 *
 *   over HTTP/2 (RFC 8441 is not supported), or HTTP/1.0   400
 *   over TLS (not supported)                               400
 *   a method other than GET                                400
 *   no Upgrade field at all (a plain request)              426, Upgrade: websocket
 *   Upgrade without the token "websocket"                  400
 *   Connection without the token "upgrade"                 400
 *   Sec-WebSocket-Key missing, or not base64 of 16 bytes   400
 *   Sec-WebSocket-Version missing or not 13                426, Sec-WebSocket-Version: 13
 */
#ifndef SLOWSRV_WSHS_H
#define SLOWSRV_WSHS_H

#include <stddef.h>

/* Length of a Sec-WebSocket-Accept value (base64 of a SHA-1). */
#define WSHS_ACCEPT_LEN 28

/* Reads the request's field `name` into buf (len bytes, NUL-terminated), as route.h's
 * route_lookup_fn: the whole value's length, or -1 when absent. */
typedef long (*wshs_lookup_fn)(void *ctx, const char *name, char *buf, size_t len);

struct wshs_result {
    unsigned status;      /* 101, 400 or 426 */
    const char *why;      /* the 4xx's one-line reason; NULL for 101 */
    const char *hdr_name; /* a field the 4xx carries (426), or NULL */
    const char *hdr_value;
    char accept[WSHS_ACCEPT_LEN + 1]; /* for 101 */
};

/* Decides the answer to a handshake: method (NUL-terminated), the request's fields through
 * lookup(ctx, ...) (a list field sent on several lines joined, as RFC 9110 reads it), h2: it
 * came over HTTP/2, http10: over HTTP/1.0, tls: over TLS. Fills *out. */
void wshs_check(const char *method, wshs_lookup_fn lookup, void *ctx, int h2, int http10, int tls,
                struct wshs_result *out);

/* Writes the Sec-WebSocket-Accept value of key (klen bytes) into out (WSHS_ACCEPT_LEN + 1
 * bytes, NUL-terminated): base64 of the SHA-1 of the key and the RFC's GUID. */
void wshs_accept(const char *key, size_t klen, char *out);

/* 1 if the comma-separated list v holds `token` (case-insensitive, spaces around ignored). */
int wshs_has_token(const char *v, const char *token);

#endif
