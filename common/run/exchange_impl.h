/*
 * The exchange's own fields: private to common/run (exchange.c, loop.c) and the unit tests.
 * Engines see struct exchange as opaque (exchange.h) and never include this file.
 */
#ifndef SLOWSRV_EXCHANGE_IMPL_H
#define SLOWSRV_EXCHANGE_IMPL_H

#include "run/exchange.h"

enum exchange_state {
    EXCHANGE_NEW = 0,     /* planned; the body, if any, is being read */
    EXCHANGE_HOLDING,     /* told to hold; exchange_hold not called yet */
    EXCHANGE_WAITING,     /* its timer is queued */
    EXCHANGE_QUEUED,      /* waiting for a worker of --workers, until handed back */
    EXCHANGE_DECIDED,     /* `next` says what comes */
    EXCHANGE_ANSWERED,    /* the answer's head is queued */
    EXCHANGE_SENDING,     /* answered; its timer is queued for the next chunk of a paced body */
    EXCHANGE_READ_PAUSED, /* its body is read at read-rate: its timer is queued for the next
                             read */
};

/* What the access log needs beyond the plan; allocated only while a log is open. */
struct exchange_record {
    char method[16];
    char target[256];
    char client[64];
    uint64_t bytes_in;
    uint64_t answered_us; /* when the answer was queued */
};

/* An event stream's run, allocated with the plan (exchange_on_head) and freed by exchange_end:
 * its spec (a copy: a request's own lives on the stack of the call that planned it), the event
 * being sent (len bytes of buf, from byte `base` of the body), the next event's id and when it
 * is due (microseconds after the answer), the events sent. */
/* How an event stream ended, for its access-log line. */
enum exchange_stream_end {
    STREAM_END_CLIENT_LEFT = 0, /* the client left before its end (the default) */
    STREAM_END_COMPLETE,        /* its count of events went out */
    STREAM_END_MAX_DELAY,       /* no count: its next event would have come after --max-delay */
    STREAM_END_STOPPED,         /* the server stopped and --grace ran out */
};

struct exchange_stream {
    struct stream_spec spec;
    size_t len;
    uint64_t base;
    uint64_t id;
    uint64_t due_rel;
    uint64_t sent;
    uint64_t bytes;      /* bytes of its events handed to the engine */
    unsigned char begun; /* counted as open (stats_stream_begin) */
    unsigned char done;  /* its last event went out */
    unsigned char end;   /* how it ended (enum exchange_stream_end), once it has */
    char buf[];          /* spec.size_hi + STREAM_EVENT_OVERHEAD bytes */
};

/* A request of the control listener: what control_handle is given, and its answer. Allocated
 * by exchange_on_head, freed by exchange_end. */
struct exchange_call {
    struct control_request rq;
    char method[16];
    char who[64];
    char *target, *authorization, *origin, *host; /* malloc'd copies, or NULL */
    char *body; /* up to CONTROL_BODY_MAX bytes, grown as they come */
    size_t cap;
    int too_big; /* more than CONTROL_BODY_MAX came: 413 */
    struct control_answer reply;
};

struct exchange {
    struct timer_node timer; /* queued while EXCHANGE_WAITING or EXCHANGE_SENDING */
    enum exchange_state state;
    enum exchange_do next; /* what exchange_next returns once the body is in */
    unsigned answered;     /* status of the queued answer, 0 if none */
    /* Flags, a byte each: every waiting request carries this record. */
    unsigned char overflow_reset; /* refused requests are reset, not answered 503 */
    unsigned char refused;        /* refused by the worker pool */
    unsigned char stopped;        /* answered a 503 of the core's ("server stopping", "too many
                                     waiting requests", "out of memory") instead of its plan */
    unsigned char refused_head;   /* the head failed head_check: answered at once, then closed */
    unsigned char in_queue;       /* counted as queued for a worker (stats_queue_begin) */
    unsigned char in_inbox;       /* handed back, in its loop's inbox (loop.h); under its lock */
    unsigned char waits;          /* counted as waiting on its connection (conn_wait) */
    unsigned char body_refused;   /* a route that drops its body got more than --max-body */
    unsigned char h2;             /* it came over HTTP/2 */
    unsigned char faulted;        /* a mid-body fault struck (reset-after, stall, slow-close) */
    void *owner;                  /* the engine's record (exchange_owner) */
    struct conn *conn;            /* its connection, or NULL */
    void *home;                   /* the loop it was begun on (loop_begin), or NULL */
    struct stats_shard *shard;
    struct service *svc;            /* whose stop makes every answer close its connection */
    struct route_table *table;      /* the generation that planned it, held until _end; NULL
                                       for the control listener */
    struct upload *upload;          /* PLAN_UPLOAD only, between exchange_on_head and _end */
    struct exchange_call *call;     /* PLAN_CONTROL only */
    char *built;                    /* an answer's body the core made (/stats), or NULL */
    uint64_t decided_at;            /* upload bytes received when its answer was decided; on a
                                       route that drops its body, the bytes dropped (since the
                                       413, once body_refused) */
    struct pool *pool;              /* the table's worker pool, or NULL */
    struct pool_entry pe;           /* its place in the pool; pe.admit is the engine's hand-back */
    uint64_t begun_us;              /* when the request came in (timer_now_us clock) */
    uint64_t due_us;                /* when its delay was due, 0 if it had none */
    uint64_t sent_us;               /* when its answer was queued (paced bodies start there) */
    struct pace_state pace;         /* its paced body's bucket and stall (pace.h) */
    uint64_t flush_until_us;        /* reset-after: the reset waits for the bytes before it
                                       to leave until then; 0: not begun */
    uint64_t linger_until_us;       /* slow-close: the end is held until then; 0: not begun */
    uint64_t read_got;              /* request body bytes read (read-rate) */
    struct exchange_stream *ev;     /* an event stream's run (plan.stream), or NULL */
    struct wsloop_ticket *ws;       /* PLAN_UPGRADE: the socket's plan, until the engine takes
                                       it (exchange_ws_take); else NULL */
    struct accesslog *access;       /* the table's access log, or NULL */
    struct exchange_record *record; /* only with an access log */
    struct plan plan;
};

#endif
