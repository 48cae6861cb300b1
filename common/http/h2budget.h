/*
 * h2budget: what an HTTP/2 client may make the server do for nothing, per connection (the
 * floods of CVE-2019-9512, 9514, 9515, 9518 and CVE-2023-44487), and the connection error a
 * client earns past it.
 *
 * The engine feeds the bytes a client sent, in order and split anywhere (the client preface
 * first, if the connection starts with one); h2budget_feed reads the 9-byte frame headers and
 * the few payload bytes it needs (SETTINGS entries, WINDOW_UPDATE increments) and allocates
 * nothing. Frames that do no work cost a credit each:
 *
 *   PING, SETTINGS, RST_STREAM, PRIORITY, WINDOW_UPDATE, a frame of an unknown type
 *   DATA with no payload and no END_STREAM
 *   HEADERS with no payload, and every CONTINUATION (a header block larger than a frame
 *   takes a few; thousands of small ones are a flood)
 *
 * A connection starts with H2BUDGET_CREDITS and never holds more; it earns H2BUDGET_PER_ANSWER
 * back for every request answered (h2budget_answered) and one per H2BUDGET_OUTPUT_PER_CREDIT
 * bytes the server wrote to it (h2budget_written: a client that downloads sends WINDOW_UPDATEs
 * in proportion). A frame that finds no credit left is a flood: H2BUDGET_CALM, to be answered
 * with GOAWAY ENHANCE_YOUR_CALM and a close.
 *
 * A change of SETTINGS_INITIAL_WINDOW_SIZE that would lift a stream's send window past
 * 2^31-1 is H2BUDGET_FLOW_CONTROL (RFC 9113 6.9.2: GOAWAY FLOW_CONTROL_ERROR). A stream's window
 * is at most the initial size plus what the client added to it (the server's DATA only lowers
 * it); the increments of the H2BUDGET_STREAMS streams raised most are kept.
 *
 * Output: a PING or SETTINGS is acknowledged in the connection's output, which grows while the
 * client does not read. The engine says whether its last write to the client is still unsent
 * ("blocked"); the acknowledgements owed meanwhile are counted, and past H2BUDGET_OWED_MAX the
 * engine stops reading the connection until that write has gone (h2budget_must_pause).
 *
 * One struct per HTTP/2 connection, in the engine's record; one thread at a time.
 */
#ifndef SLOWSRV_H2BUDGET_H
#define SLOWSRV_H2BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"

#define H2BUDGET_CREDITS 1000
#define H2BUDGET_PER_ANSWER 10
#define H2BUDGET_OUTPUT_PER_CREDIT 8192
#define H2BUDGET_OWED_MAX 8192
#define H2BUDGET_STREAMS 8

/* HTTP/2 error codes of the GOAWAY a verdict asks for. */
#define H2BUDGET_FLOW_CONTROL_ERROR 0x3
#define H2BUDGET_ENHANCE_YOUR_CALM 0xb

/* The size of a GOAWAY frame without debug data (h2budget_goaway). */
#define H2BUDGET_GOAWAY_LEN 17

enum h2budget_verdict {
    H2BUDGET_OK = 0,
    H2BUDGET_CALM,         /* a frame found no credit: GOAWAY ENHANCE_YOUR_CALM, close */
    H2BUDGET_FLOW_CONTROL, /* a window would overflow: GOAWAY FLOW_CONTROL_ERROR, close */
};

struct h2budget {
    int32_t credits;
    uint32_t owed;        /* acknowledgement bytes owed while the engine's write was blocked */
    uint64_t written;     /* output bytes already turned into credits */
    uint32_t remaining;   /* payload bytes of the current frame still to come */
    uint32_t length;      /* the current frame's payload length */
    uint32_t stream;      /* the current frame's stream */
    uint32_t last_stream; /* the highest stream the client opened */
    uint32_t initial;     /* SETTINGS_INITIAL_WINDOW_SIZE in force */
    uint8_t head[9];      /* a frame header being gathered */
    uint8_t have;         /* bytes of it (or of the preface) so far */
    uint8_t state;        /* where in the stream (h2budget.c) */
    uint8_t type, flags;  /* of the current frame */
    uint8_t value[6];     /* a SETTINGS entry or WINDOW_UPDATE increment being gathered */
    uint8_t vhave;        /* bytes of it so far */
    uint8_t verdict;      /* enum h2budget_verdict, once not OK: nothing more is read */
    uint8_t reason;       /* enum stats_h2 of the verdict */
    size_t at; /* where the verdict's frame starts in the bytes of the call that gave it */
    struct {
        uint32_t stream;
        uint32_t added; /* window increments the client sent on it, saturated */
    } raised[H2BUDGET_STREAMS];
};

/* An HTTP/2 connection's budget, full, before its first byte (or at a frame boundary: a
 * stream that does not start with the preface's 'P' starts with a frame). */
void h2budget_init(struct h2budget *b);

/* Counts the frames in the next len bytes the client sent. `blocked`: the engine's last write to
 * this client is still unsent (acknowledgements now pile up). Returns H2BUDGET_OK, or the
 * verdict of the first frame past a budget, after which every call returns it again. */
enum h2budget_verdict h2budget_feed(struct h2budget *b, const uint8_t *p, size_t len, int blocked);

/* Where the frame that earned the verdict starts in the bytes of the h2budget_feed call that
 * returned it (0 if it began in an earlier call): what precedes it was within the budget. */
size_t h2budget_verdict_at(const struct h2budget *b);

/* A request of this connection was answered: H2BUDGET_PER_ANSWER credits back. */
void h2budget_answered(struct h2budget *b);

/* The engine has written `total` bytes to the client so far: a credit back per
 * H2BUDGET_OUTPUT_PER_CREDIT since the last call. */
void h2budget_written(struct h2budget *b, uint64_t total);

/* 1 if the connection must not be read now: its write is blocked and it owes more than
 * H2BUDGET_OWED_MAX bytes of acknowledgements. An unblocked write has taken them all (the count
 * starts again). */
int h2budget_must_pause(struct h2budget *b, int blocked);

/* Why the verdict was given (a stats_h2 kind), valid once h2budget_feed returned it. */
enum stats_h2 h2budget_reason(const struct h2budget *b);

/* Writes the verdict's GOAWAY frame (last stream: the highest the client opened; no debug
 * data) to out; returns H2BUDGET_GOAWAY_LEN, or 0 while the verdict is H2BUDGET_OK. */
size_t h2budget_goaway(const struct h2budget *b, uint8_t out[H2BUDGET_GOAWAY_LEN]);

#endif
