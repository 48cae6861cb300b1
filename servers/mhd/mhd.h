/*
 * The libmicrohttpd engine's own declarations, shared by its files:
 *
 *   request.c         libmicrohttpd's request callbacks, turned into core events (exchange.h),
 *                     and the core's actions carried out
 *   conns.c           connections: accepted by the core, handed to a daemon, kept in the core's
 *                     registry
 *   daemon.c          the libmicrohttpd daemons: options and callbacks
 *   loop.c            what the event-loop models share: how a request waits (suspend, resume)
 *   backend_epoll.c   the thread models, one backend each: how a loop waits and runs
 *   backend_select.c    libmicrohttpd, and how a request waits
 *   backend_poll.c
 *   backend_tpc.c
 *   server.c          start and stop, the engine table
 */
#ifndef SLOWSRV_MHD_H
#define SLOWSRV_MHD_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../app.h"
#include "http/h1frame.h"
#include "run/loop.h"

/* libmicrohttpd 0.9.75 walks every suspended connection of a daemon each time it resumes one
 * (resume_suspended_connections): at 10 000 waiting connections that walk was over a third of
 * slowsrv's CPU. An epoll loop therefore accepts its connections itself and hands them to
 * several daemons ("shards"), filling each up to SHARD_CONNECTIONS before starting the next, and
 * runs only the shards with socket events or resumed connections: up to 128 connections are one
 * daemon, as before; 10 000 on one loop are 79. */
#define SHARD_CONNECTIONS 128
#define MAX_SHARDS 160

/* epoll model: half-closed connections a loop keeps track of at once (more are handled at
 * once, with a small chance of waiting for --idle-timeout). */
#define MHD_SHUT_PENDING 256

struct mhd_loop;

/* One libmicrohttpd daemon of a loop; the callbacks' closure. */
struct mhd_shard {
    struct mhd_loop *loop;
    struct MHD_Daemon *daemon;
    atomic_int due;      /* a connection was resumed: the daemon must run */
    atomic_size_t conns; /* its connections */
    uint64_t next_us;    /* epoll model: when libmicrohttpd asked to run next (its timeouts) */
    int ep_fd;           /* epoll model: the daemon's own epoll set */
};

struct request {
    struct exchange *x; /* right after the record, in the same block (request.c) */
    struct MHD_Connection *conn;
    struct mhd_shard *shard; /* the daemon of the connection, and through it the loop */
    int started;             /* exchange_on_head ran */
    int answered_early;      /* an upload error was written to the socket mid-body (answer_early) */
    int woken;               /* thread-per-connection: handed back by the worker pool; sleep_lock */
    char *raw_uri;           /* the target as received, query included (NULL if it has neither a
                                query nor an access log to go to) */
    size_t raw_len;          /* its length */
    const char *uri_at;      /* where libmicrohttpd's read buffer holds the target (mhd_on_uri) */
    int target_nul;          /* a NUL byte in the target cut libmicrohttpd's string short */
    uint64_t body_len;       /* a paced answer's body length */
    struct wsloop_ticket *ws; /* a WebSocket's plan until its socket is handed over (freed at
                                 the end of a request whose client left before the 101 went) */
    char path[64]; /* the target's path, when it fits: a request libmicrohttpd answers itself
                      is counted under its route (mhd_on_completed) */
};

/* A connection: its socket context. */
struct mhd_conn {
    struct conn c;       /* the core's (conn.h) */
    size_t target_bytes; /* the current request's target, query included */
    struct MHD_Connection *conn;
    struct mhd_shard *shard;
    struct request *current; /* the request whose exchange has begun, until it completes */
    struct h1frame h1;       /* its framing (watch.c) */
    int tls;                 /* read through a TLS session: watched there, not in recv */
    int refuse_pending;      /* a refused request waits for those before it to be answered */
};

struct mhd_loop {
    struct app_server *srv;
    size_t index;
    struct mhd_shard *shards; /* one unless the epoll model */
    size_t nshards;
    size_t used; /* shards whose daemon runs: shards[0..used) */
    /* Loop 0, when the control listener speaks plain HTTP beside a TLS main port (--control
     * http://...): the control connections' own daemon, without TLS; else its daemon is NULL
     * and they go to the shards. */
    struct mhd_shard ctl;
    int listen_fd;  /* the loop accepts on it (mhd_accept) */
    int control_fd; /* loop 0: the control listener (--control), or -1; accepted the same way */
    int ep_fd;      /* epoll model: the shards' epoll fds, the wake-up and the listeners */
    uint64_t accept_paused_until; /* epoll, select: at the limit or out of descriptors, the
                                     listening sockets are left alone until then */
    /* epoll model: half-closed connections waiting to have their end of stream read
     * (backend_epoll.c). */
    struct mhd_conn *shut[MHD_SHUT_PENDING];
    size_t nshut;
    pthread_t thread; /* runs loop_run */
    int thread_started;
    int ready;             /* core is set up */
    struct core_loop core; /* timers, connections, inbox and stop (loop.h) */
    /* poll model: MHD runs its own thread, so the heap is shared with it under `lock`, and the
     * loop's thread waits on `wake` until the earliest deadline. thread-per-connection: the
     * loop's thread sweeps and drains, waiting on `wake`. */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    /* The start table's route answers, by route, each built at its first use here (NULL until
     * then, or for a route with no fixed answer). */
    _Atomic(struct MHD_Response *) *cache;
    size_t ncache;
    pthread_t accept_thread; /* poll, thread-per-connection: accepts until the stop */
    int accept_started;
};

struct app_server {
    const struct config *cfg;
    const struct log *log;
    struct service *svc;               /* routes, worker pool, counters (the app's) */
    const struct mhd_backend *backend; /* the thread model's */
    size_t nloops;
    struct mhd_loop *loops;
    atomic_int stopping;
    /* thread-per-connection: a delayed handler sleeps on this until its deadline or hard_stop, a
     * parked one until it is handed back (woken) */
    pthread_mutex_t sleep_lock;
    pthread_cond_t sleep_cond;
    int hard_stop;
    char *tls_cert; /* PEM text, when serving HTTPS */
    char *tls_key;
    unsigned control_port; /* the control listener's port (--control), 0 when off */
};

/* request.c's carrying out of a core action, for a backend that holds a request in its thread. */
typedef enum MHD_Result (*mhd_act_fn)(struct request *rq, enum exchange_do d);

/* A thread model: the core loop's backend (loop.h: how its loop waits and runs libmicrohttpd),
 * and how a request waits. */
struct mhd_backend {
    const struct loop_backend *core;
    unsigned flags; /* the libmicrohttpd daemon flags of the model */
    /* Starts the loop's daemon(s); returns 0, or a negative errno with err (CORE_ERR_LEN). */
    int (*open)(struct mhd_loop *loop, char *err);
    /* The core said HOLD: event loops suspend the connection and call exchange_hold (the request
     * runs again when resumed); thread-per-connection waits in the connection's thread and
     * carries out what follows through act. Returns what the request handler returns. */
    enum MHD_Result (*hold)(struct request *rq, mhd_act_fn act);
    /* A paced body has nothing due before due_us: returns 0 if the connection was suspended
     * until then, 1 once the wait is over (the reader asks again). */
    int (*pace)(struct request *rq, uint64_t due_us, uint64_t now_us);
    /* read-rate: no more of the request body may be read before due_us: returns 0 if the
     * connection was suspended until then, 1 once the wait is over (read again). */
    int (*read_pace)(struct request *rq, uint64_t due_us, uint64_t now_us);
    /* A connection opened (open 1) or is closing (0). NULL: nothing to do. */
    void (*conn)(struct mhd_conn *w, int open);
    /* The daemon a new connection goes to. NULL: the loop's one. */
    struct mhd_shard *(*place)(struct mhd_loop *loop);
};

extern const struct mhd_backend mhd_backend_epoll, mhd_backend_poll, mhd_backend_select,
    mhd_backend_tpc;

/* daemon.c */
/* Starts one libmicrohttpd daemon for `shard` with its model's flags. */
int mhd_start_daemon(struct mhd_shard *shard, unsigned conn_limit, char *err);
/* select, poll and thread-per-connection: the loop's one daemon. */
int mhd_open_daemon(struct mhd_loop *loop, char *err);
/* Loop 0, where the control listener speaks plain HTTP beside a TLS main port: starts the
 * control connections' daemon (loop->ctl) with the model's flags and no TLS. 0 where there is
 * nothing to start. */
int mhd_open_control(struct mhd_loop *loop, char *err);
/* 1 if the connections of shard speak TLS. */
int mhd_shard_tls(const struct mhd_shard *shard);

/* Accepts what is pending on listening socket fd (control: the control listener) through the
 * core (loop_accept), which hands each connection to a daemon; returns what loop_accept returns,
 * having logged its line. */
uint64_t mhd_accept(struct mhd_loop *loop, int fd, int control, uint64_t now);

/* poll and thread-per-connection: starts the loop's daemon and its accepting thread. */
int mhd_open_accepting(struct mhd_loop *loop, char *err);

/* The core loop's quiesce of those models: stops that thread (it ends at the stop) and closes
 * the listening sockets. */
void mhd_accept_quiesce(void *ctx);

/* request.c */
enum MHD_Result mhd_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **req_cls);
void *mhd_on_uri(void *cls, const char *uri, struct MHD_Connection *conn);
void mhd_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                      enum MHD_RequestTerminationCode toe);
/* Makes the loop's room for the default answer of every route of the start table, each built at
 * its first use and then only queued (a table of thousands of routes costs a pointer a route
 * until they are requested). 0 or -ENOMEM. */
int mhd_build_cache(struct app_server *srv, struct mhd_loop *loop);
void mhd_free_cache(struct mhd_loop *loop);

/* conns.c */
void mhd_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe);
/* The connection's record, or NULL. */
struct mhd_conn *mhd_conn_of(struct MHD_Connection *conn);
/* The core loop's adopt (loop.h): the connection goes to a daemon of the loop's. */
int mhd_adopt(void *ctx, int fd, const struct sockaddr *peer, socklen_t len, int control);

/* watch.c */
/* Sets up the table of watched sockets (before any connection). Returns 0, or -1. */
int mhd_watch_init(void);
/* Watches w's socket fd from its first byte (on), or no longer (off: before it is freed). */
void mhd_watch(struct mhd_conn *w, int fd, int on);

/* Marks the connection on fd as lingering (slow-close: the core holds a descriptor of its
 * socket, loop_linger): libmicrohttpd's shutdown(2) of it is skipped, so that its close sends no
 * FIN. A new connection on fd clears the mark (mhd_watch). */
void mhd_watch_linger(int fd, int on);

/* request.c */
/* Answers w's request that h1frame refused (status, why) with the core's answer, written to fd
 * (through the GnuTLS session over TLS, NULL otherwise) around libmicrohttpd: the request under way
 * if its exchange has begun, else one named by the request line the watch kept. Counted and logged
 * as a refused head is. Returns 0 once written. */
int mhd_refuse_early(struct mhd_conn *w, int fd, void *session, unsigned status, const char *why);

/* Request rq's head as received, for the core's checks (head.h): in *h, its fields in f (room for
 * HEAD_MAX_FIELDS); NULL if it is not in libmicrohttpd's read buffer (head.c). libmicrohttpd
 * 0.9.75 parses the head in place there: it writes a NUL over the space after the method, the
 * colon of each field and each CR and LF, and hands over C strings. A NUL byte the client sent
 * inside a value therefore cuts the value short where libmicrohttpd reads it ("Content-Length:
 * 0\0 12" is 0), and would go unseen. In the buffer, though, a field's next line starts right
 * after its value's one or two line-end NULs: when it starts later, the value hid bytes behind a
 * NUL, and the core is handed the value with that NUL. A value that does not lie in the buffer
 * at all was unfolded (obs-fold) into new memory. */
const struct head *mhd_raw_head(struct request *rq, const char *method, const char *version,
                                struct head *h, struct head_field *f);

/* loop.c: what the event-loop models share. */
/* Every resume goes through here, so that the loop knows which daemon to run. Returns its loop. */
struct mhd_loop *mhd_resume(struct request *rq);
/* The core loop's carry, peer_gone and admit (loop.h) of the event-loop models. */
int mhd_carry(void *ctx, struct exchange *x, enum exchange_do d);
int mhd_peer_gone(void *ctx, struct exchange *x);
void mhd_admit(void *ctx, struct exchange *x);
/* The event-loop models' hold and pace (struct mhd_backend). */
enum MHD_Result mhd_loop_hold(struct request *rq, mhd_act_fn act);
int mhd_loop_pace(struct request *rq, uint64_t due_us, uint64_t now_us);
int mhd_loop_read_pace(struct request *rq, uint64_t due_us, uint64_t now_us);
/* The core loop's fired: runs the shards that are due. */
void mhd_fired(void *ctx);
/* Runs the shards that are due (or all of them), and notes when each asks to run next. */
void mhd_run_shards(struct mhd_loop *loop, int all);
/* Waits on the loop's `wake` for at most wait_us (poll, thread-per-connection). */
void mhd_cond_wait(struct mhd_loop *loop, uint64_t wait_us);
/* The absolute CLOCK_MONOTONIC time `us` from now, for timed waits. */
void mhd_deadline_after(struct timespec *ts, uint64_t us);

#endif
