/*
 * conn: the connections of a loop, kept by the core for both engines, and their clocks. The
 * engine reports a connection's opening and closing (and, where its library shows it, the start
 * of a request line); the exchange reports its requests (exchange.h). The loop sweeps them
 * (conn_sweep), one policy at one granularity for every model of both binaries:
 *
 *   its head is due         the first from the connection's opening, a later one from its first
 *                           byte: shut down past --header-timeout
 *   silence                 no request under way and nothing received: shut down past
 *                           --idle-timeout
 *   a stalled exchange      a request under way that neither waits (a delay, a worker, a paced
 *                           body's next chunk) nor moves a byte either way (a client that stops
 *                           sending its body, or stops reading its answer): shut down past
 *                           --idle-timeout
 *
 * Progress is read from the kernel (TCP_INFO: bytes received, bytes acknowledged), the same for
 * every library. A connection is shut down (shutdown(2)), so that its library reads the end of
 * the stream and closes it, freeing what it holds; a waiting request is never cut.
 *
 * One registry per loop. Connections are added and removed by the loop's thread or, in models
 * where the library runs threads of its own (poll, thread-per-connection), by those, under the
 * registry's lock; the request counters are atomic; conn_sweep runs on one thread at a time.
 */
#ifndef SLOWSRV_CONN_H
#define SLOWSRV_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* How often a sweep comes: a twentieth of the shorter timeout, within these bounds. */
#define CONN_SWEEP_MIN_US (5 * 1000)
#define CONN_SWEEP_MAX_US (1000 * 1000)

/* A connection the engine ended (conn_end) and its library has not closed since: shut down by
 * the first sweep after this long. */
#define CONN_END_GRACE_US (1000 * 1000)

/* One connection; the engine embeds it in its own record, which it owns and frees after
 * conn_close. */
struct conn {
    struct conn *prev, *next; /* the registry's list */
    int fd;
    unsigned char control;        /* it came on the control listener (--control) */
    unsigned char h2;             /* it carried HTTP/2: no head is due after its preface */
    unsigned char shut;           /* a sweep shut it down (once) */
    unsigned requests;            /* begun on it (--max-requests); its requests' thread only */
    atomic_uint active;           /* requests under way */
    atomic_uint waiting;          /* of them, those that wait on purpose */
    atomic_int line;              /* a request line came, and its head is being read */
    _Atomic uint64_t head_since;  /* a head is being read since then; 0: none */
    _Atomic uint64_t quiet_since; /* no request under way since then */
    uint64_t received, acked;     /* TCP progress when the sweep last looked */
    uint64_t looked_quiet;        /* quiet_since then: a request ended since if it differs */
    uint64_t moved_us;            /* when the sweep last saw it move (or wait) */
    uint64_t ended_us;            /* the engine ended it then (conn_end); 0: not */
};

struct conn_registry {
    pthread_mutex_t lock;
    struct conn *head;
    size_t count;
    uint64_t header_us, idle_us; /* --header-timeout, --idle-timeout; 0: never */
    uint64_t every_us;           /* between sweeps; 0: no timeout, no sweep */
    uint64_t next_us;            /* the next sweep */
};

/* Prepares an empty registry for these timeouts (0: never). */
void conn_registry_init(struct conn_registry *r, uint64_t header_us, uint64_t idle_us);
void conn_registry_cleanup(struct conn_registry *r);

/* A connection on socket fd opened at now (control: on the control listener): its first head is
 * due from now. Any thread. */
void conn_open(struct conn_registry *r, struct conn *c, int fd, int control, uint64_t now);

/* It is closing (before its socket is closed): out of the registry, so that no sweep touches it
 * after this returns. Any thread. */
void conn_close(struct conn_registry *r, struct conn *c);

/* Where the library shows it: a request line came at now, so its head is due from now. */
void conn_head_begins(struct conn *c, uint64_t now);

/* From the exchange (exchange.h): a request's head is in (h2: over HTTP/2); it ended at now; it
 * begins or stops waiting on purpose. */
void conn_request_begin(struct conn *c, int h2);
void conn_request_end(struct conn *c, uint64_t now);
void conn_wait(struct conn *c, int begins);

/* The engine ended c at now (an HTTP/2 GOAWAY for a flood) and asked its library to close it:
 * if it is still open CONN_END_GRACE_US later (a client that does not read keeps the library's
 * last write from completing), the sweep shuts it down, whatever it carries. The loop's thread
 * only. */
void conn_end(struct conn *c, uint64_t now);

/* 1 if c's library holds bytes of a head it has not finished reading (called under the
 * registry's lock, for a connection between requests). */
typedef int (*conn_reading_fn)(void *ctx, struct conn *c);

/* Shuts down the connections past a timeout, if a sweep is due by now (every_us). `reading`
 * (NULL: never known) tells a head begun before a sweep could see its bytes arrive. Returns how
 * many. */
size_t conn_sweep(struct conn_registry *r, uint64_t now, conn_reading_fn reading, void *ctx);

/* When the next sweep is due; 0 when none ever is. */
uint64_t conn_next_sweep(const struct conn_registry *r);

/* The stop: shuts down the HTTP/1.x connections that carry no request, nor the head of one past
 * its request line (an HTTP/2 one ends with its library's GOAWAY). */
void conn_close_idle(struct conn_registry *r);

/* The end: shuts down every connection still open, so that its library closes it. */
void conn_shut_all(struct conn_registry *r);

/* Connections open. */
size_t conn_count(struct conn_registry *r);

#endif
