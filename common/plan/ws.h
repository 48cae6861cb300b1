/*
 * ws: the plan of a WebSocket route (RFC 6455), planned here for both engines: what the core's
 * socket loop (run/wsloop.h) does with a socket once its handshake is answered 101.
 *
 * Grammar (the route key "websocket"):
 *   echo[,delay=SPEC][,push=N][,size=BYTES][,every=SPEC][,close=CODE][,after=N|DURATION]
 *       [,limit=BYTES]
 *   echo         each message (text or binary, whole once its fragments are in) is sent back as
 *                it came, after a delay drawn per message
 *   delay=SPEC   that delay, any delay spec (delay.h); 0 when absent. A spec's own commas are
 *                its own: it ends only at a comma followed by another key
 *   push=N       N messages of the server's own (text, `size` bytes of a letter pattern), the
 *                first `every` after the handshake, each next one `every` later
 *   size=BYTES   bytes of a pushed message, 1 to WS_PUSH_SIZE_MAX; 16 when absent
 *   every=SPEC   the time between two pushes, any delay spec; 1s when absent
 *   close=CODE   the server closes with this code (1000, 1001, 1003, 1008, 1011, or 3000 to
 *                4999) ...
 *   after=N      ... once it has sent N messages (echoes and pushes), or
 *   after=DUR    ... once DUR has passed since the handshake (a duration with its unit: "5s");
 *                close= without after= closes at once
 *   limit=BYTES  the largest message taken, WS_LIMIT_MIN to WS_LIMIT_MAX; WS_LIMIT_DEFAULT
 *                when absent; a larger one is closed 1009
 *   "none" is no WebSocket.
 *
 * Draws are pure functions of (seed, route, the socket's index within its route, message index):
 * message k of socket i of a route gets the same echo delay on every run and both binaries.
 */
#ifndef SLOWSRV_WS_H
#define SLOWSRV_WS_H

#include <stddef.h>
#include <stdint.h>

#include "plan/delay.h"

#define WS_PUSH_MAX 1000000U
#define WS_PUSH_SIZE_MAX 65536U
#define WS_PUSH_SIZE_DEFAULT 16U
#define WS_LIMIT_MIN 125U
#define WS_LIMIT_MAX (64U << 20)
#define WS_LIMIT_DEFAULT (1U << 20)
#define WS_AFTER_MAX 1000000000U

struct ws_spec {
    int on;                  /* 1: a WebSocket route */
    struct delay_spec delay; /* of each echo */
    uint32_t push;           /* messages pushed, 0: none */
    uint32_t size;           /* bytes of a pushed message */
    struct delay_spec every; /* between pushes */
    uint16_t close_code;     /* 0: the server never closes of its own */
    uint32_t close_after_n;  /* close after this many messages sent; 0: see close_after_us */
    uint64_t close_after_us; /* close this long after the handshake; 0 with close_after_n 0: at
                                once */
    uint32_t limit;          /* largest message taken */
};

/* Parses the grammar above into *out ("none": on 0). Returns 0, or -EINVAL / -ERANGE with a
 * one-phrase reason in err. *out is only written on success. */
int ws_spec_parse(struct ws_spec *out, const char *s, char *err, size_t errlen);

/* Writes s in the grammar (every key spelled out) into buf. Returns the length written. */
size_t ws_spec_format(const struct ws_spec *s, char *buf, size_t len);

/* The largest delay s may draw (an echo's or a push gap's), UINT64_MAX for an unbounded
 * distribution (its draws are cut at --max-delay). */
uint64_t ws_spec_max_us(const struct ws_spec *s);

/* The echo delay of message k (from 0) of the socket whose draws are keyed by key. */
uint64_t ws_echo_delay_us(const struct ws_spec *s, uint64_t key, uint64_t k);

/* The time before push k (from 0): after the handshake for k 0, after push k - 1 otherwise. */
uint64_t ws_push_gap_us(const struct ws_spec *s, uint64_t key, uint64_t k);

/* Fills dst with n bytes of a pushed message: letters and digits, valid UTF-8. */
void ws_push_fill(char *dst, size_t n);

#endif
