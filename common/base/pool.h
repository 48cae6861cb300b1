/*
 * pool: a bounded worker pool without threads, for --workers N --queue M. At most N requests
 * are in service at once (from admission to their answer, delay included), up to M more wait in
 * FIFO order, and beyond that a request is rejected: a thread pool of N with a queue of M,
 * emulated with counters instead of blocked threads. (Tomcat's executor queue has no bound, so
 * a large M stands in for it; its acceptCount is the listen backlog, --backlog, not this queue.)
 *
 * One pool serves every loop, under one mutex: requests from any thread enter it, and the
 * thread whose request leaves admits the next one by calling that entry's `admit` callback, with
 * the pool's lock held. The callback must be quick and must not call back into the pool: an
 * engine marks the request and wakes its own loop (e.g. MHD_resume_connection, or an eventfd).
 */
#ifndef SLOWSRV_POOL_H
#define SLOWSRV_POOL_H

#include <pthread.h>
#include <stdint.h>

enum pool_state {
    POOL_OUT = 0,  /* not in the pool (never entered, rejected, withdrawn or left) */
    POOL_QUEUED,   /* waiting for a worker */
    POOL_ADMITTED, /* holds a worker */
};

struct pool_entry {
    struct pool_entry *next; /* the pool's queue while queued; once `admit` was called, the
                                entry's owner may use it (an engine's inbox of hand-backs) */
    enum pool_state state;
    int flushed; /* set by pool_flush: admitted only to be told the server is stopping */
    void (*admit)(struct pool_entry *e); /* called once, under the pool lock, on admission */
};

struct pool {
    pthread_mutex_t lock;
    unsigned workers;
    unsigned queue_max;
    unsigned active;
    unsigned queued;
    uint64_t rejected;
    int stopping; /* pool_flush ran: entries are turned away flushed */
    struct pool_entry *head, *tail;
};

struct pool_counts {
    unsigned workers, active, queued;
    uint64_t rejected;
};

/* Prepares a pool of `workers` (>= 1) with a queue of `queue_max`. Returns 0 or -errno. */
int pool_init(struct pool *p, unsigned workers, unsigned queue_max);

/* Releases the pool's lock; no entry may be in it. */
void pool_cleanup(struct pool *p);

/* Enters e (state POOL_OUT, `admit` set): returns POOL_ADMITTED if a worker was free,
 * POOL_QUEUED if it waits (its admit callback will run later, from any thread), or POOL_OUT if
 * the queue is full (counted as rejected) or the pool was flushed (e->flushed set: the server is
 * stopping). Thread-safe. */
enum pool_state pool_enter(struct pool *p, struct pool_entry *e);

/* e is over. If it held a worker, the worker goes to the first queued entry (whose admit runs
 * now); if it was still queued, it just leaves the queue. Afterwards e is POOL_OUT. Calling it on
 * an entry that is out does nothing. Thread-safe. */
void pool_leave(struct pool *p, struct pool_entry *e);

/* Server stopping: every queued entry leaves the queue with `flushed` set and its admit
 * callback called, so its engine can answer it; entries that come later are turned away the
 * same way (pool_enter). Thread-safe; harmless when the queue is empty. */
void pool_flush(struct pool *p);

/* Changes the pool's size and queue (the control API): more workers admit the oldest waiters at
 * once; with fewer, busy workers finish and are not passed on until the pool fits. Requests
 * already queued keep their place. Thread-safe. */
void pool_resize(struct pool *p, unsigned workers, unsigned queue_max);

/* Snapshot of the counters. Thread-safe. */
void pool_counts_get(struct pool *p, struct pool_counts *out);

#endif
