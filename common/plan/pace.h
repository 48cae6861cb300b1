/*
 * pace: bandwidth and mid-body faults of one answer (route keys, ?query= and X-Slowsrv-*
 * headers): how fast its body leaves (rate, burst), how fast its request body is read
 * (read-rate), and where its body breaks (reset-after, stall, slow-close). A struct pace_spec is
 * plain data, parsed once and copied freely; pace_next is the schedule, a pure function of the
 * spec, the bytes sent and the clock, kept by the core's exchange (run/exchange.c) for both
 * engines.
 *
 * Byte counts and rates take a decimal or binary unit: "1000", "100K" or "100KB" (100 000),
 * "1M" or "1MB" (1 000 000), "1G" or "1GB", "64Ki" or "64KiB" (65 536), "1Mi" or "1MiB"
 * (1 048 576), "1Gi" or "1GiB"; a rate is bytes per second. Durations are delay.h's ("5s").
 *
 *   rate=RATE[,burst=BYTES]   the body leaves through a token bucket of RATE bytes per second
 *                             that holds BURST bytes (default: PACE_TICK_US of the rate, at
 *                             least 1 byte) and is full at the start: BURST bytes go with the
 *                             head, then RATE a second, in whole steps of PACE_TICK_US; a
 *                             body that fell behind makes up for PACE_CATCHUP_US at most
 *   read-rate=RATE            the request body is read no faster than RATE bytes per second
 *   reset-after=BYTES         BYTES of the body, then a TCP reset (HTTP/2: the stream's reset)
 *   stall=BYTES,DURATION      after BYTES of the body, nothing for DURATION, then the rest
 *   slow-close=DURATION       the whole answer, then the connection stays open and silent for
 *                             DURATION before it closes
 */
#ifndef SLOWSRV_PACE_H
#define SLOWSRV_PACE_H

#include <stddef.h>
#include <stdint.h>

/* A paced body's steps are at least this far apart: a rate costs at most 100 timers a second. */
#define PACE_TICK_US 10000

/* A paced body that fell behind its rate (a late step, a client that did not read) makes up
 * for at most this much of it at once. */
#define PACE_CATCHUP_US 1000000

/* The fastest rate and the largest byte count the keys take. */
#define PACE_RATE_MAX (10ULL * 1000 * 1000 * 1000)
#define PACE_BYTES_MAX (1ULL << 40)

struct pace_spec {
    uint64_t rate;          /* body bytes a second; 0: as fast as the connection takes them */
    uint64_t burst;         /* the bucket's size; 0: the default (pace_burst) */
    uint64_t read_rate;     /* request body bytes a second; 0: as fast as they come */
    uint64_t reset_after;   /* with `reset`: body bytes sent before the reset */
    uint64_t stall_at;      /* with `stall`: body bytes sent before the pause */
    uint64_t stall_us;      /* the pause */
    uint64_t slow_close_us; /* the silence after the answer; 0: none */
    unsigned char reset;    /* reset-after is set */
    unsigned char stall;    /* stall is set */
    unsigned char has_rate; /* rate was given (a change may set it to "none": rate 0) */
};

/* 1 if the spec shapes the answer's body (rate, reset-after, stall): it leaves in steps. */
int pace_shapes_body(const struct pace_spec *p);

/* The bucket's size of spec p: its burst, or PACE_TICK_US of its rate (at least 1 byte). */
uint64_t pace_burst(const struct pace_spec *p);

/* Parses a byte count with an optional unit (above) into *out, at most PACE_BYTES_MAX. Returns
 * 0, or -EINVAL/-ERANGE with a one-phrase reason in err. */
int pace_bytes_parse(const char *s, uint64_t *out, char *err, size_t errlen);

/* Parses "RATE" or "RATE,burst=BYTES" (RATE 1 to PACE_RATE_MAX bytes a second; "none" or "0":
 * no rate) into p's rate and burst. Returns 0, or -EINVAL/-ERANGE with a reason in err. */
int pace_rate_parse(struct pace_spec *p, const char *s, char *err, size_t errlen);

/* Parses read-rate's "RATE" ("none" or "0": none) into p->read_rate. */
int pace_read_rate_parse(struct pace_spec *p, const char *s, char *err, size_t errlen);

/* Parses reset-after's "BYTES" ("none": none) into p. */
int pace_reset_parse(struct pace_spec *p, const char *s, char *err, size_t errlen);

/* Parses stall's "BYTES,DURATION" ("none": none) into p. */
int pace_stall_parse(struct pace_spec *p, const char *s, char *err, size_t errlen);

/* Parses slow-close's "DURATION" ("none" or "0": none) into p. */
int pace_slow_close_parse(struct pace_spec *p, const char *s, char *err, size_t errlen);

/* Checks p against an answer of body_len bytes and the longest duration allowed (--max-delay):
 * reset-after and stall within the body, a stall before the reset, durations within max_us.
 * Returns 0, or -EINVAL with "<key>: <reason>" in why. */
int pace_check(const struct pace_spec *p, uint64_t body_len, uint64_t max_us, char *why,
               size_t whylen);

/* Writes p's keys as a route's config would give them, one "key": "value" pair after the other
 * through add(ctx, key, value), for the keys that are set. */
void pace_describe(const struct pace_spec *p,
                   void (*add)(void *ctx, const char *key, const char *value), void *ctx);

/* What a paced body is doing, kept per answer. */
struct pace_state {
    uint64_t base_us;        /* the bucket's clock: burst + rate * (now - base) bytes are due */
    uint64_t stall_until_us; /* the stall's end, once it began; 0 before */
};

/* Starts the state of an answer whose head left at start_us. */
void pace_start(struct pace_state *s, uint64_t start_us);

enum pace_step {
    PACE_SEND = 0, /* *len more bytes may go now */
    PACE_WAIT,     /* nothing more before *due_us */
    PACE_END,      /* `end` bytes are out: the body is over, or is cut or reset here */
};

/* The next step of a body shaped by p, cut at `end` bytes (its length, or where a fault cuts
 * it), of which `sent` went out, at now_us. */
enum pace_step pace_next(const struct pace_spec *p, struct pace_state *s, uint64_t end,
                         uint64_t now_us, uint64_t sent, uint64_t *len, uint64_t *due_us);

/* Request body bytes of `avail` that may be read now by a reader at read_rate, of which `got`
 * were read since start_us, at now_us: all of avail without a read rate; else at most what the
 * rate allowed so far, with one PACE_TICK_US of it at the start. When that is 0, *due_us says
 * when the next byte may be read. */
uint64_t pace_read_allowed(const struct pace_spec *p, uint64_t start_us, uint64_t now_us,
                           uint64_t got, uint64_t avail, uint64_t *due_us);

#endif
