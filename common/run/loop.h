/*
 * loop: every loop thread of both engines, around the state machine (exchange.h), written once
 * in the manner of redis's ae.c: a loop accepts its connections (under --max-connections) and
 * sweeps their clocks (conn.h), owns its timer heap and answers what is due, batched and capped
 * by one set of constants, keeps the inbox through which other threads hand requests back, and
 * stops as drain.h says. loop_run is the thread: the core decides when; the engine fills in a
 * backend (struct loop_backend) that carries out: take over a connection, carry out an action
 * for a request, wait for its library's I/O, stop accepting, wake.
 *
 * One struct core_loop per loop thread. Its heap and fields are that thread's, except where a
 * backend shares the heap with a library thread (slowsrv's poll model): then the backend's lock
 * and unlock guard every use of the heap here. The inbox is safe from any thread.
 */
#ifndef SLOWSRV_LOOP_H
#define SLOWSRV_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "run/conn.h"
#include "run/drain.h"
#include "run/exchange.h"
#include "base/timer.h"

struct service;

/* Due answers are batched: the loop answers what is due no more often than every
 * LOOP_BATCH_US (after a turn that answered everything due), so that at 100 000 answers a second
 * one wake-up answers several, at most this late. */
#define LOOP_BATCH_US 250
/* At most this many due requests are answered in one turn, so that the loop's reads and writes
 * go on between the answers of a wave (libh2o frees each answer's memory only once it is
 * written, after the turn: a wave of 50 000 answered in one turn held 200 MiB, and its first
 * answer went out after its last was made). */
#define LOOP_ANSWERS_PER_TURN 1024
/* Of those, at most this many whose answer goes out only when the turn ends (loop_backend.carry
 * returns 1: HTTP/2 on libh2o), so that a wave of them is written in slices. */
#define LOOP_DEFERRED_PER_TURN 128
/* Longest wait of a turn while serving: a stop is noticed within this. */
#define LOOP_TICK_US (100 * 1000)
/* Longest wait of a turn while stopping, so that the drain's steps are taken on time. */
#define LOOP_DRAIN_TICK_US (10 * 1000)

struct loop_backend {
    /* Takes over connection fd, accepted by loop_accept from a listener of the engine's (control:
     * the control listener): hands it to the library, which then serves it. Returns 0, or -1
     * after closing fd itself. */
    int (*adopt)(void *ctx, int fd, const struct sockaddr *peer, socklen_t len, int control);
    /* 1 if the library holds bytes of connection c's next head (conn_reading_fn). NULL: never
     * known. */
    int (*reading)(void *ctx, struct conn *c);
    /* Carries out action d of request x (from exchange_on_timer or exchange_next). Returns 1 if
     * x's answer goes out only when the turn ends, else 0. */
    int (*carry)(void *ctx, struct exchange *x, enum exchange_do d);
    /* 1 if x's client is known to have left while it waited. NULL: never known. */
    int (*peer_gone)(void *ctx, struct exchange *x);
    /* Asks the CPU for what carrying out x will read, `ahead` (1 to 3) answers before it: a
     * request that waited its delay is out of the cache. NULL: nothing to ask for. */
    void (*prefetch)(void *ctx, struct exchange *x, unsigned ahead);
    /* The stop began: stop accepting (the core then shuts the connections that carry no
     * request). */
    void (*quiesce)(void *ctx);
    /* --grace is over with requests left, after the pools were flushed (service_flush): what
     * waits elsewhere than in the heap must now be answered "server stopping". NULL: nothing. */
    void (*give_up)(void *ctx);
    /* Wakes the loop's wait from another thread (a request was put in its inbox, the stop).
     * NULL: the core writes the loop's wake-up eventfd (loop_wake_fd), which the engine's wait
     * watches and hands to loop_woken. */
    void (*wake)(void *ctx);
    /* A parked request got its worker or the stop (any thread, the pool's lock held): NULL, it
     * goes in the loop's inbox and the loop carries out exchange_next; else the backend hands
     * it back its own way (a model whose request waits in a thread of its own). */
    void (*admit)(void *ctx, struct exchange *x);
    /* loop_run: waits up to wait_us for the library's I/O (and a wake-up) and runs it. */
    void (*wait)(void *ctx, uint64_t wait_us);
    /* loop_run answered due requests: the library runs them now. NULL: nothing to run. */
    void (*fired)(void *ctx);
    /* 1: loop_run leaves due requests to the engine, which answers them from its wait
     * (loop_fire), at a point of its library's turn of its own choosing. */
    int fires_in_wait;
    /* A timer just queued is the heap's earliest (under lock, if any): a wait sized for a later
     * one must be shortened. NULL: the loop sizes each wait afresh. */
    void (*earliest)(void *ctx);
    /* Guards the heap when a library thread shares it. NULL: the loop's thread alone uses it. */
    void (*lock)(void *ctx);
    void (*unlock)(void *ctx);
};

/* Most connections a loop keeps open after their answer for slow-close (loop_linger); more
 * close as usual. */
#define LOOP_LINGER_MAX 1024

/* A connection kept open and silent until until_us, through a descriptor of the core's. */
struct loop_linger {
    int fd;
    uint64_t until_us;
};

struct core_loop {
    struct timer_heap timers;    /* the requests that wait (delays and paced bodies) */
    struct loop_linger *lingers; /* LOOP_LINGER_MAX of them, nlinger in use; under inbox_lock */
    size_t nlinger;
    struct conn_registry conns; /* its connections and their timeouts (conn.h) */
    struct drain drain;         /* its stop */
    struct service *svc;        /* whose pools are flushed on giving up */
    const struct loop_backend *be;
    void *ctx;         /* the engine's loop, passed to every backend call */
    uint64_t fired_us; /* when due requests were last answered */
    int more_due;      /* more were due than a turn answers: the next turn answers on */
    /* Requests handed back by other threads (a worker of --workers was free), threaded through
     * their pool entries' next (pool.h). */
    pthread_mutex_t inbox_lock;
    struct pool_entry *inbox;
    int wake_fd;               /* an eventfd: other threads wake the loop's wait (loop_wake) */
    atomic_size_t active;      /* requests begun and not ended (loop_begin, loop_end) */
    struct stats_shard *shard; /* its counters */
    uint64_t accept_warned;    /* when running out of descriptors was last logged */
};

/* Prepares l, the index-th loop of svc, for up to max_waiting waiting requests, stopping within
 * grace_us, with svc's timeouts for its connections (--header-timeout, --idle-timeout) and its
 * counters' shard `index`. Returns 0, or -ENOMEM / -EMFILE with nothing left to clean up. */
int loop_init(struct core_loop *l, const struct loop_backend *be, void *ctx, struct service *svc,
              size_t index, size_t max_waiting, uint64_t grace_us);
void loop_cleanup(struct core_loop *l);

/* The loop's thread: serves until the stop is over (stopping set, drain.h): sweeps, answers what
 * is due (then backend fired), and waits (backend wait) no longer than the next of these or a
 * tick. */
void loop_run(struct core_loop *l, const atomic_int *stopping);

/* A request's head is in: exchange_on_head with the loop's counters, counted as l's until
 * loop_end (owner, conn and rq as exchange_on_head takes them). Any thread that runs the
 * library's requests. */
enum exchange_do loop_begin(struct core_loop *l, struct exchange *x, void *owner, struct conn *c,
                            const struct route_request *rq);

/* Wakes l's wait from any thread. */
void loop_wake(struct core_loop *l);

/* The engine's wait saw loop_wake_fd readable: empties it and carries out what the inbox holds
 * (loop_inbox_take). The loop's thread. */
void loop_woken(struct core_loop *l);

/* The eventfd that loop_wake writes, for the engine's wait to watch (a library that closes what
 * it watches must watch a duplicate: loop_cleanup closes this one). */
int loop_wake_fd(const struct core_loop *l);

/* Answers what is due by now, if a batch is due (LOOP_BATCH_US): at most a turn's worth
 * (LOOP_ANSWERS_PER_TURN), or everything due with give_up once the loop has given up draining.
 * Returns how many were answered. */
size_t loop_fire(struct core_loop *l, uint64_t now);

/* When the loop should answer next: the earliest deadline, held back to a batch after the last
 * answers; now when more are due than the last turn answered; 0 when nothing waits. */
uint64_t loop_next_fire_us(struct core_loop *l, uint64_t now);

/* The longest the loop may wait from now (at most idle_us) before it answers again or sweeps its
 * connections. */
uint64_t loop_wait_us(struct core_loop *l, uint64_t now, uint64_t idle_us);

/* Accepts what is pending on listening socket lfd (control: the control listener), a bounded
 * batch (NET_ACCEPT_BATCH), under --max-connections over every loop, and hands each connection
 * to the backend (adopt). Returns 0, or how long (µs) the engine leaves lfd alone:
 * SERVICE_LIMIT_RETRY_US at the limit (new connections wait in the backlog), NET_ACCEPT_PAUSE_US
 * out of descriptors, then with a line for the log in msg (else msg is ""). Any thread. */
uint64_t loop_accept(struct core_loop *l, int lfd, int control, uint64_t now, char *msg,
                     size_t len);

/* A connection the engine serves opened (on fd; control: on the control listener), or is
 * closing; loop_conn_closed also counts it closed for --max-connections. Any thread. */
void loop_conn_opened(struct core_loop *l, struct conn *c, int fd, int control);
void loop_conn_closed(struct core_loop *l, struct conn *c);

/* Shuts down the connections past a timeout, if a sweep is due (conn.h). Returns how many. */
size_t loop_sweep(struct core_loop *l, uint64_t now);

/* After exchange_next or exchange_on_body said HOLD, with the request suspended: queues its
 * timer (exchange_hold). Returns what exchange_hold returns. */
enum exchange_do loop_hold(struct core_loop *l, struct exchange *x);

/* A paced body's next chunk is due at due_us: queues its timer (exchange_pace). */
enum exchange_do loop_pace(struct core_loop *l, struct exchange *x, uint64_t due_us);

/* read-rate: x's body may be read on at due_us: queues its timer (exchange_read_pace). */
enum exchange_do loop_read_pace(struct core_loop *l, struct exchange *x, uint64_t due_us);

/* slow-close of x's answer, for an engine whose library closes the connection right after the
 * answer: a duplicate of socket fd is kept open until until_us, then closed (the FIN leaves
 * then, once the library has closed its own descriptor without shutdown(2)). Counted as x's
 * fault. Returns 0, or -1 if it cannot be kept (LOOP_LINGER_MAX, no descriptor): the connection
 * closes as usual. Any thread. */
int loop_linger(struct core_loop *l, struct exchange *x, int fd, uint64_t until_us);

/* Closes the lingering connections due by now. Returns when the next one is due, 0: none. */
uint64_t loop_linger_step(struct core_loop *l, uint64_t now);

/* The request is over: out of the heap, out of the inbox (exchange_end), no longer counted. */
void loop_end(struct core_loop *l, struct exchange *x);

/* Any thread: x was handed back (its pool entry's admit): it goes in the inbox, and the loop is
 * woken. */
void loop_inbox_put(struct core_loop *l, struct exchange *x);

/* The loop's thread: carries out exchange_next for every request in the inbox. */
void loop_inbox_take(struct core_loop *l);

/* One turn's step of the stop (drain.h), with `stopping` once the server is asked to stop and
 * `active` the loop's requests begun and not ended: quiesces the backend, gives up (flushes the
 * pools, the backend's give_up, the inbox, and answers every timer "server stopping"), shuts the
 * connections that carry no request on quiescing, and caps
 * *wait_us to the drain's tick. Returns 1 when the loop ends, else 0. */
int loop_stop_step(struct core_loop *l, int stopping, size_t active, uint64_t now,
                   uint64_t *wait_us);

#endif
