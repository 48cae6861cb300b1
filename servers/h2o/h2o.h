/*
 * The libh2o engine's own declarations, shared by its files:
 *
 *   request.c   libh2o's requests turned into core events (exchange.h), and the core's answers
 *               handed to libh2o
 *   loop.c      a loop thread: libh2o's evloop as the core loop's backend (loop.h): accept, the
 *               timerfd, the wake-up, the turns, the stop
 *   server.c    libh2o's configuration and TLS, start and stop, the engine table
 *   pool_fit.c  a waiting request's memory pool, cut to what it holds
 *   budget.c    the HTTP/2 flood budgets' filter in front of libh2o's HTTP/2 reads
 *   h1watch.c   the HTTP/1 framing watch in front of libh2o's HTTP/1 reads
 */
#ifndef SLOWSRV_H2O_H
#define SLOWSRV_H2O_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <h2o.h>

#include "../app.h"
#include "http/h1frame.h"
#include "http/h2budget.h"
#include "run/loop.h"

struct h2s_loop;

/* A request: its record and, right after it in the request's pool, its exchange. */
struct h2s_request {
    struct exchange *x;
    h2o_req_t *req;
    struct h2s_loop *loop;
    h2o_generator_t gen; /* the answer's */
    uint64_t sent;       /* bytes of a paced body handed to libh2o so far */
    /* Flags, a byte each: every waiting request carries this record. */
    unsigned char sending;   /* bytes handed to libh2o and not yet sent (proceed is due) */
    unsigned char head_sent; /* a paced body's head went out ahead of its first chunk */
    unsigned char head_read; /* the core read its HTTP/1.x head as sent, and decides whether
                                the connection stays open */
};

/* A request's record and its exchange are one block (begin_request): the record is found from
 * the exchange without reading it, so that a due request's prefetch does not wait on memory. */
#define REQUEST_SIZE                                                                               \
    ((sizeof(struct h2s_request) + EXCHANGE_ALIGN - 1) / EXCHANGE_ALIGN * EXCHANGE_ALIGN)

/* Bytes of a deferred refusal's request kept for its log line (h1watch.c). */
#define H2S_DEFERRED_HEAD 1024

/* How often a connection whose reading paused for what it owes is looked at again. */
#define H2S_WAIT_MS 10

/* Why slowsrv-h2o refuses read-rate (doc/engines.md): libh2o 2.2.5 reads a request body whole
 * before its handler runs, and over HTTP/2 it opens the flow-control windows itself. */
#define H2S_WHOLE_BODIES                                                                           \
    "slowsrv-h2o cannot read a body slowly (libh2o 2.2.5 reads it whole before slowsrv sees the "  \
    "request); use slowsrv"

/* An HTTP/2 connection's budget and filter (budget.c), made when it turns HTTP/2. */
struct h2s_h2 {
    struct h2budget budget;
    struct h2s_conn *conn;
    h2o_socket_cb inner;                 /* libh2o's read callback, behind the filter */
    size_t fed;                          /* bytes at the start of the input already counted */
    h2o_timeout_entry_t resume;          /* linked while reading is paused */
    uint8_t goaway[H2BUDGET_GOAWAY_LEN]; /* the frame while it is written */
    unsigned char ending;                /* past a budget: its input is dropped */
};

/* A connection: the socket's on_close data. */
struct h2s_conn {
    struct conn c; /* the core's (conn.h) */
    struct h2s_loop *loop;
    h2o_socket_t *sock;
    struct h2s_h2 *h2;      /* NULL until it speaks HTTP/2 */
    struct h1frame h1;      /* its HTTP/1 framing, while it speaks cleartext HTTP/1 (h1watch.c) */
    h2o_socket_cb h1_inner; /* libh2o's HTTP/1 read callback, behind the watch */
    unsigned char busy;     /* libh2o runs under the filter: a close now frees it after */
    unsigned char closed;   /* its socket closed while busy */
    unsigned char upgraded; /* it turned HTTP/2 by Upgrade: h2c, and the request that asked for
                               it, which came as HTTP/1.1, is still to begin */
    unsigned char gated;    /* a control connection's first head went to the core (h1watch.c) */
    unsigned char h1_ready; /* its h1 watch is set up: a TLS connection once libh2o took it as
                               HTTP/1 */
    char *refusal;          /* TLS: the core's refusal while libh2o's socket writes it */
    /* A refused request pipelined behind others (h1watch.c): cut off the input, answered once
     * libh2o has answered those before it and reads again with nothing left. */
    unsigned deferred;        /* its status, 0 if none */
    const char *deferred_why; /* its reason (static) */
    char *deferred_head;      /* the start of it as received (for the log), malloc'd */
    size_t deferred_len;
    h2o_timeout_entry_t fire; /* linked to the loop's 0 ms list when it is due */
};

struct h2s_loop {
    struct app_server *srv;
    size_t index;
    pthread_t thread;
    int thread_started;
    int ready; /* its core loop is set up (loop_init) */
    h2o_evloop_t *evloop;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    int listen_fd;          /* until its libh2o socket owns it */
    h2o_socket_t *listener; /* NULL once the stop began */
    /* Loop 0 also serves the control listener (--control), on a context of its own. */
    h2o_context_t ctl_ctx;
    h2o_accept_ctx_t ctl_accept;
    h2o_socket_t *ctl_listener;
    int ctl_ready;
    /* At the limit or out of descriptors (loop_accept), both listeners rest: one resume a
     * length. */
    h2o_timeout_t pause[2];
    h2o_timeout_entry_t resume[2];
    h2o_timeout_t h2_wait; /* HTTP/2 connections whose reading paused (budget.c) */
    int timer_fd;
    h2o_socket_t *timer_sock;
    uint64_t armed_us; /* deadline the timerfd is armed for, 0 if disarmed */
    /* Due requests are answered in the timeout phase of a turn, after its reads and before
     * libh2o writes the turn's HTTP/2 frames: a 0 ms list made before the contexts' own, so that
     * libh2o runs it first. The timerfd only wakes a loop that waits. */
    h2o_timeout_t fire_phase;
    h2o_timeout_entry_t fire_entry;
    /* The core loop's wake-up eventfd is written by other threads (the stop, a hand-back) until
     * every loop has been joined, so it is closed only then (loop_cleanup). libh2o watches a
     * duplicate, and closes it with the loop: closing the one others write to raced a stop,
     * which then wrote to a closed descriptor, or to whatever file had just been given its
     * number. */
    int wake_poll_fd; /* until the loop's libh2o socket owns it */
    h2o_socket_t *wake_sock;
    struct core_loop core; /* timers, connections, inbox and stop (loop.h) */
};

struct app_server {
    const struct config *cfg;
    const struct log *log;
    struct service *svc; /* routes, worker pool, counters (the app's) */
    size_t nloops;
    struct h2s_loop *loops;
    h2o_globalconf_t globalconf;
    h2o_globalconf_t ctl_conf;
    SSL_CTX *ssl_ctx;
    int control_fd; /* the control listener until loop 0 takes it */
    atomic_int stopping;
    atomic_size_t ready; /* loops whose context and sockets are set up */
};

/* request.c */
/* libh2o's handlers of the main and the control listener. */
int h2s_on_req(h2o_handler_t *self, h2o_req_t *req);
int h2s_on_control_req(h2o_handler_t *self, h2o_req_t *req);
/* A logger of the fallback path: an answer libh2o gave by itself (exchange_library_answer). */
struct h2s_logger {
    h2o_logger_t super;
    struct app_server *srv;
};
void h2s_library_answer(h2o_logger_t *self, h2o_req_t *req);
/* The core loop's carrying out of a due or handed-back request, and what it asks of one. */
int h2s_carry(void *ctx, struct exchange *x, enum exchange_do d);
int h2s_peer_gone(void *ctx, struct exchange *x);
void h2s_prefetch(void *ctx, struct exchange *x, unsigned ahead);

/* loop.c */
void *h2s_loop_main(void *arg);
extern const struct loop_backend h2s_backend;
/* A connection socket's on_close: the core forgets it, and it is freed (after the filter that
 * runs libh2o under it, if one does). */
void h2s_on_conn_close(void *data);
void h2s_conn_free(struct h2s_conn *c);
/* Runs libh2o's read callback cb of c's socket from a filter in front of it. Returns 0, or -1 if
 * libh2o closed the connection meanwhile (c is freed then). */
int h2s_call_library(struct h2s_conn *c, h2o_socket_t *sock, h2o_socket_cb cb, const char *err);

/* h1watch.c */
/* libh2o (re)starts reading c's socket with cb: the callback to install instead (the watch in
 * front of cb), or cb itself where there is nothing to watch (a TLS handshake, no longer
 * HTTP/1). */
h2o_socket_cb h2s_h1_watch(struct h2s_conn *c, h2o_socket_t *sock, h2o_socket_cb cb);
/* The write callback of a refusal written through libh2o's socket (TLS): the connection ends. */
void h2s_refusal_sent(h2o_socket_t *sock, const char *err);

/* request.c */
/* What became of a request answered around libh2o. */
enum h2s_early {
    H2S_EARLY_NONE,    /* nothing to answer: the request goes on to libh2o */
    H2S_EARLY_SENT,    /* the answer is written whole: the connection ends now */
    H2S_EARLY_SENDING, /* TLS: libh2o's socket writes it; h2s_refusal_sent ends the connection */
    H2S_EARLY_FAILED,  /* it could not be written */
};
/* budget.c */
/* A request of c was answered: budget given back. */
void h2s_budget_answered(struct h2s_conn *c);
void h2s_budget_free(struct h2s_h2 *h);

/* Asks this turn's timeout phase to answer what is due (a request was just read). */
void h2s_want_fire(struct h2s_loop *loop);

#endif
