/*
 * exchange: the life of one request, as both engines live it. An engine embeds a struct
 * exchange in its per-request record and calls these at the matching moments; the decisions
 * (what to answer, when it is due, what counts as a cancel, which counters move) are all here.
 *
 *   exchange_begin   the request line and headers are in: plan the answer, count the request
 *   exchange_wait    the body is in and the plan has a delay: queue the timer
 *   exchange_fire    the engine popped the timer: the answer is due, or the client is gone
 *   exchange_answer  the engine queued the answer
 *   exchange_end     the engine is done with the request, answered or not
 *
 * An exchange belongs to the loop that began it; calls on it come from that loop's thread (or
 * with that loop's lock held, where the engine shares the heap with a library thread).
 */
#ifndef SLOWSRV_EXCHANGE_H
#define SLOWSRV_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"
#include "stats.h"
#include "timer.h"
#include "upload.h"

enum exchange_state {
    EXCHANGE_NEW = 0,   /* planned; the body, if any, is being read */
    EXCHANGE_WAITING,   /* its timer is queued */
    EXCHANGE_READY,     /* answer now */
    EXCHANGE_CANCELLED, /* the client left while waiting, or the server gave up on it */
    EXCHANGE_QUEUED,    /* waiting for a worker of --workers */
    EXCHANGE_ADMITTED,  /* got its worker after queueing: go on as a new request would */
    EXCHANGE_SENDING,   /* answered; its timer is queued for the next chunk of a drip */
};

/* What comes next of a paced body (exchange_body_next). */
enum exchange_body {
    EXCHANGE_BODY_SEND = 0, /* send the next bytes now */
    EXCHANGE_BODY_WAIT,     /* nothing is due yet: wait (exchange_pace) */
    EXCHANGE_BODY_DONE,     /* the whole body is out */
    EXCHANGE_BODY_CUT,      /* ?fault=truncate: close the connection here */
};

/* Upload results of exchange_upload_begin and exchange_upload_feed (or a negative errno). */
enum exchange_upload {
    EXCHANGE_UPLOAD_READING = 0, /* go on with the body */
    EXCHANGE_UPLOAD_DECIDED = 1, /* the answer is known (an error): x's plan holds it */
};

/* What the access log needs beyond the plan; allocated only while a log is open. */
struct exchange_record {
    char method[16];
    char target[256];
    char client[64];
    uint64_t bytes_in;
    uint64_t answered_us; /* when the answer was queued */
};

struct exchange {
    struct timer_node timer; /* queued while EXCHANGE_WAITING */
    enum exchange_state state;
    unsigned answered; /* status of the queued answer, 0 if none */
    struct stats_shard *shard;
    struct upload *upload;          /* PLAN_UPLOAD only, between upload_begin and exchange_end */
    uint64_t decided_at;            /* upload bytes received when its answer was decided */
    struct pool *pool;              /* the table's worker pool, or NULL */
    struct pool_entry pe;           /* its place in the pool */
    int overflow_reset;             /* refused requests are reset, not answered 503 */
    int refused;                    /* refused by the worker pool */
    uint64_t begun_us;              /* when the request came in (timer_now_us clock) */
    uint64_t due_us;                /* when its delay was due, 0 if it had none */
    uint64_t sent_us;               /* when its answer was queued (paced bodies start there) */
    struct accesslog *access;       /* the table's access log, or NULL */
    struct exchange_record *record; /* only with an access log */
    struct plan plan;
};

/* Plans the answer to rq through t and counts the request on shard sh (which must outlive the
 * exchange). rq is only read during the call. */
void exchange_begin(struct exchange *x, struct route_table *t, struct stats_shard *sh,
                    const struct route_request *rq);

/* Queues x's timer in heap h to fire plan.delay_us after now_us. Returns 0 (x is WAITING), or
 * -ENOSPC if the heap is full (x is CANCELLED; the engine closes the connection). */
int exchange_wait(struct exchange *x, struct timer_heap *h, uint64_t now_us);

/* Returns the exchange whose timer node n is (as popped from the heap). */
struct exchange *exchange_of_timer(struct timer_node *n);

/* `n` bytes of a request body arrived (and were dropped) on a route that does not read it. */
void exchange_body_bytes(struct exchange *x, size_t n);

/* POST /write: starts counting the body. content_type is the request's header value or NULL,
 * content_length the announced size or -1. Returns EXCHANGE_UPLOAD_DECIDED if the answer is
 * already decided (415, 400, or 413 from Content-Length; x's plan now holds it and the engine may
 * answer at once and drop the body), EXCHANGE_UPLOAD_READING to go on feeding, or -ENOMEM. */
int exchange_upload_begin(struct exchange *x, const char *content_type, int64_t content_length,
                          uint64_t max_body);

/* Most bytes an engine reads and drops after an upload error, before it gives up on the client
 * and closes the connection. */
#define EXCHANGE_DISCARD_MAX (64ULL << 20)

/* Feeds len body bytes (counted as received). Returns EXCHANGE_UPLOAD_DECIDED once the answer is
 * decided (an error: x's plan holds it), else EXCHANGE_UPLOAD_READING. Bytes fed after that are
 * only counted, and once more than EXCHANGE_DISCARD_MAX of them came after the decision, returns
 * -EMSGSIZE: the engine should close the connection rather than read an endless body. */
int exchange_upload_feed(struct exchange *x, const void *buf, size_t len);

/* The body is complete: x's plan now holds the answer (200 and the byte count of the data part,
 * or the error). */
void exchange_upload_finish(struct exchange *x);

/* Results of exchange_admit and exchange_admitted. */
enum exchange_admission {
    EXCHANGE_GO = 0,  /* a worker is free (or there is no pool): carry on */
    EXCHANGE_PARKED,  /* queued: the engine parks the request until `admit` runs */
    EXCHANGE_REFUSED, /* over workers and queue (or stopping): no worker for this request */
};

/* Takes a worker of --workers for x before its delay starts: GO (x is ADMITTED when it has a
 * worker), PARKED (x is QUEUED) or REFUSED (x is READY: its plan is the refusal). `admit` is called
 * later, from any thread with the pool's lock held, when a parked x gets its worker or the server
 * stops: it must only hand x back to its loop, which then calls exchange_admitted. Requests that
 * use no worker (no pool, /healthz, /stats, 404) always GO. */
enum exchange_admission exchange_admit(struct exchange *x, void (*admit)(struct pool_entry *e));

/* A parked x was handed back to its loop by `admit`: returns EXCHANGE_GO (x is ADMITTED: carry
 * on as after a GO), or EXCHANGE_REFUSED if the server is stopping (x is CANCELLED: it gets no
 * answer). */
enum exchange_admission exchange_admitted(struct exchange *x);

/* Returns the exchange whose pool entry is e. */
struct exchange *exchange_of_entry(struct pool_entry *e);

/* Blocking models: waits out the delay by calling sleep_fn(arg, delay_us) in the caller's thread.
 * sleep_fn returns 0 when the delay is over, or non-zero if it was cut short (the server gave up
 * draining); x becomes READY or CANCELLED accordingly. */
void exchange_sleep(struct exchange *x, int (*sleep_fn)(void *arg, uint64_t delay_us), void *arg);

/* The timer of x was popped: x becomes READY, or CANCELLED if `client_gone` (the engine saw the
 * connection closed) or `give_up` (the drain time is over). A paced body's timer (x SENDING)
 * means the next chunk is due: x stays SENDING, or becomes CANCELLED with `give_up`. */
void exchange_fire(struct exchange *x, int client_gone, int give_up);

/* The engine queued the plan's answer: records its service time and, for a delayed request, the
 * intended delay and how late the answer came after it was due. An answer sent whole frees its
 * worker of --workers here (the next queued request is admitted now); a paced one keeps it until
 * exchange_body_take hands over its last byte. */
void exchange_answer(struct exchange *x);

/* Returns 1 if the plan's body must be paced by exchange_body_next (?drip=, ?fault=truncate)
 * rather than sent whole. */
int exchange_paced(const struct exchange *x);

/* A paced body, of which `sent` bytes went out, at now_us: SEND with *len bytes from
 * plan.body + sent to send now; WAIT with *due_us when the next chunk is due; DONE; or CUT
 * (truncate: close the connection without the rest). The chunks of a drip go out one every
 * over_us / chunks after the answer was queued, so the last one leaves over_us after it. */
enum exchange_body exchange_body_next(const struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t *len, uint64_t *due_us);

/* The engine's step through a paced body: exchange_body_next, with at most `max` bytes to SEND.
 * When the step hands over the body's last byte (a SEND up to its end, DONE, or CUT), x's worker
 * of --workers is free, as for an answer sent whole. */
enum exchange_body exchange_body_take(struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t max, size_t *len, uint64_t *due_us);

/* Queues x's timer in heap h for the next chunk, due at due_us (x becomes SENDING; its popped
 * timer means: send on). Returns 0, or -ENOSPC if the heap is full (x is CANCELLED). */
int exchange_pace(struct exchange *x, struct timer_heap *h, uint64_t due_us);

/* The request is over. If x still waits, its timer is removed from h; its worker passes on, or
 * it leaves the queue. A request that ends without an answer is counted as a client cancel.
 * Frees what x allocated. */
void exchange_end(struct exchange *x, struct timer_heap *h);

#endif
