#include "server.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "exchange.h"
#include "service.h"
#include "route.h"
#include "stats.h"
#include "timer.h"

/* Per-connection memory pool. MHD's default (32 KiB) costs 32 KiB of RSS for every idle
 * keep-alive connection once it has served a request; 8 KiB still holds request headers of
 * several KiB, the request line and our small responses. */
#define CONN_MEMORY_LIMIT (8 * 1024)
/* Defined at the end, with the engine table; the error paths of the start call them. */
static void mhd_server_stop(struct app_server *srv);
static void mhd_server_free(struct app_server *srv);

#define LISTEN_BACKLOG 4096
/* Longest wait in a loop iteration, so a stop request is noticed promptly. */
#define LOOP_TICK_US (100 * 1000)
#define RESUME_BATCH_US 1000
/* After --grace: how long the last answers ("server stopping") may take to go out, in turns of
 * FINISH_TICK_US. */
#define FINISH_US (1000 * 1000)
#define FINISH_TICK_US (10 * 1000)
/* libmicrohttpd 0.9.75 walks every suspended connection of a daemon each time it resumes one
 * (resume_suspended_connections): at 10 000 waiting connections that walk was over a third of
 * slowsrv's CPU. An epoll loop therefore accepts its connections itself and hands them to
 * several daemons ("shards"), filling each up to SHARD_CONNECTIONS before starting the next, and
 * runs only the shards with socket events or resumed connections: up to 128 connections are one
 * daemon, as before; 10 000 on one loop are 79. */
#define SHARD_CONNECTIONS 128
#define MAX_SHARDS 160

struct mhd_loop;

/* One libmicrohttpd daemon of a loop; the callbacks' closure. */
struct mhd_shard {
    struct mhd_loop *loop;
    struct MHD_Daemon *daemon;
    atomic_int due;      /* a connection was resumed: the daemon must run */
    atomic_size_t conns; /* its connections */
    uint64_t next_us;    /* epoll model: when libmicrohttpd asked to run next (its timeouts) */
};

struct request {
    struct exchange x; /* first member: a popped timer node leads back to the request */
    struct MHD_Connection *conn;
    struct mhd_shard *shard; /* the daemon of the connection, and through it the loop */
    int started;             /* exchange_on_head ran */
    int answered_early;      /* an upload error was written to the socket mid-body (answer_early) */
    int woken;               /* thread-per-connection: handed back by the worker pool; sleep_lock */
    char *raw_uri; /* the target as received, query included: kept for the access log only */
};

/* What slowsrv keeps of a connection (its socket context): libmicrohttpd has no header-read
 * timeout of its own (its timeout is for silence, which a slowloris never is), so each loop
 * keeps its connections in a list that it sweeps for overdue header blocks. */
struct conn_watch {
    struct conn_watch *prev, *next;
    int fd;
    _Atomic uint64_t deadline; /* headers due by then (timer_now_us); 0 while none are read */
    unsigned requests;         /* begun on this connection */
    size_t target_bytes;       /* the current request's target, query included */
};

struct mhd_loop {
    struct app_server *srv;
    size_t index;
    struct mhd_shard *shards; /* one unless the epoll model */
    size_t nshards;
    size_t used;   /* shards whose daemon runs: shards[0..used) */
    int listen_fd; /* given to the daemon, except in the epoll model where the loop accepts */
    int ep_fd;     /* epoll model: the shards' epoll fds, wake_fd and listen_fd */
    uint64_t accept_paused_until; /* epoll model: out of descriptors, listen_fd left out */
    uint64_t accept_warned;
    pthread_t thread;
    int thread_started;
    struct timer_heap timers;
    /* poll model only: MHD runs its own thread, so the heap is shared with it under `lock`, and
     * this loop's thread only fires timers, waiting on `wake` until the earliest deadline. */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    /* epoll and select models: an eventfd that other threads write to wake this loop (MHD drops
     * its own inter-thread channel in external mode, so a cross-thread resume alone would wait
     * for the loop's next tick). */
    int wake_fd;
    struct stats_shard *shard;
    atomic_size_t active; /* requests begun and not completed */
    struct MHD_Response *cache[ROUTE_MAX];
    /* Connections, for --header-timeout: added and removed by libmicrohttpd's callbacks, swept
     * by the loop's thread (thread-per-connection: a thread of its own). */
    pthread_mutex_t watch_lock;
    struct conn_watch *watched;
    uint64_t next_sweep;
    pthread_t watch_thread; /* thread-per-connection only */
    int watch_started;
};

struct app_server {
    const struct config *cfg;
    const struct log *log;
    struct service svc; /* routes, worker pool, counters */
    unsigned port;
    int tpc;      /* thread-per-connection model */
    int internal; /* poll model: MHD polls in its own thread; ours only fires timers */
    size_t nloops;
    struct mhd_loop *loops;
    atomic_int stopping;
    /* thread-per-connection: sleeping handlers wait on this until their deadline or hard_stop */
    pthread_mutex_t sleep_lock;
    pthread_cond_t sleep_cond;
    int hard_stop;
    char *tls_cert; /* PEM text, when serving HTTPS */
    char *tls_key;
};

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    const struct log *lg = cls;
    char line[512];
    if (lg->level < LOG_LEVEL_DEBUG)
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_write(lg, LOG_LEVEL_DEBUG, "libmicrohttpd: %s", line);
}

static void loop_lock(struct mhd_loop *loop)
{
    if (loop->srv->internal)
        pthread_mutex_lock(&loop->lock);
}

static void loop_unlock(struct mhd_loop *loop)
{
    if (loop->srv->internal)
        pthread_mutex_unlock(&loop->lock);
}

/* Every resume goes through here, so that the loop knows which daemon to run. Any thread; once
 * resumed, the request may be answered and freed by the thread running MHD (poll model, or a
 * resume from another thread), so nothing of it is read after. Returns its loop. */
static struct mhd_loop *resume(struct request *rq)
{
    struct mhd_shard *shard = rq->shard;
    MHD_resume_connection(rq->conn);
    atomic_store_explicit(&shard->due, 1, memory_order_release);
    return shard->loop;
}

static void add_plan_headers(struct MHD_Response *resp, const struct plan *p)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, p->content_type);
    if (p->timing)
        MHD_add_response_header(resp, "Server-Timing", p->timing);
    if (p->allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, p->allow);
    for (size_t i = 0; i < p->nheaders; i++)
        MHD_add_response_header(resp, p->headers[i].name, p->headers[i].value);
}

static struct MHD_Response *build_response(const struct plan *p)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        p->body_len, (void *)(uintptr_t)p->body, MHD_RESPMEM_MUST_COPY);
    if (resp)
        add_plan_headers(resp, p);
    return resp;
}

/* Builds the default answer of every route once per loop; the hot path then only queues it. */
static int build_cache(struct app_server *srv, struct MHD_Response **cache)
{
    for (size_t i = 0; i < srv->svc.routes.count; i++) {
        struct plan p;
        cache[i] = NULL;
        if (route_cached_plan(&srv->svc.routes, i, &p) != 0)
            continue;
        /* The body is the route table's static text: persistent, no copy. */
        cache[i] = MHD_create_response_from_buffer(p.body_len, (void *)(uintptr_t)p.body,
                                                   MHD_RESPMEM_PERSISTENT);
        if (!cache[i])
            return -ENOMEM;
        add_plan_headers(cache[i], &p);
    }
    return 0;
}

static void free_cache(struct MHD_Response **cache, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (cache[i])
            MHD_destroy_response(cache[i]);
        cache[i] = NULL;
    }
}

static struct MHD_Response *report_response(struct app_server *srv, const struct plan *p)
{
    char *text = service_report(&srv->svc, p->action);
    if (!text)
        return NULL;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, p->content_type);
    return resp;
}

/* --overflow reset and ?fault=reset: the client sees a reset, not an answer (libmicrohttpd would
 * shut the socket down before closing it, and the client read an end of stream first). */
static enum MHD_Result reset(struct request *rq)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci)
        net_reset(ci->connect_fd);
    return MHD_NO;
}

static int tpc_sleep(void *arg, uint64_t delay_us);

/* A timer was queued for rq: the poll model's timer thread must wake if it is now the earliest.
 * Called with the loop lock held. */
static void timer_queued(struct mhd_loop *loop, struct request *rq)
{
    if (loop->srv->internal && timer_heap_peek(&loop->timers) == &rq->x.timer)
        pthread_cond_signal(&loop->wake);
}

/* Content reader of a paced body (?drip=, ?fault=truncate). Between chunks the connection is
 * suspended and its timer queued, as for a delay; thread-per-connection sleeps instead. */
static ssize_t read_paced(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct request *rq = cls;
    struct mhd_loop *loop = rq->shard->loop;
    struct app_server *srv = loop->srv;
    size_t len;
    uint64_t due, now;
    for (;;) {
        if (exchange_next(&rq->x) == EXCHANGE_DO_CLOSE)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        now = timer_now_us();
        switch (exchange_body_take(&rq->x, now, pos, max, &len, &due)) {
        case EXCHANGE_BODY_SEND:
            memcpy(buf, rq->x.plan.body + pos, len);
            return (ssize_t)len;
        case EXCHANGE_BODY_DONE:
            return MHD_CONTENT_READER_END_OF_STREAM;
        case EXCHANGE_BODY_CUT:
            return MHD_CONTENT_READER_END_WITH_ERROR;
        case EXCHANGE_BODY_WAIT:
            break;
        }
        if (!srv->tpc)
            break;
        exchange_pace(&rq->x, NULL, due);
        exchange_on_timer(&rq->x, 0, tpc_sleep(srv, due - now));
    }
    MHD_suspend_connection(rq->conn);
    loop_lock(loop);
    enum exchange_do d = exchange_pace(&rq->x, &loop->timers, due);
    if (d == EXCHANGE_DO_WAIT)
        timer_queued(loop, rq);
    loop_unlock(loop);
    if (d != EXCHANGE_DO_WAIT)
        resume(rq); /* CLOSE: the reader then ends the body with an error */
    return 0;
}

static enum MHD_Result respond(struct request *rq)
{
    struct MHD_Response *resp = NULL;
    int fresh = 0;
    if (exchange_paced(&rq->x)) {
        resp =
            MHD_create_response_from_callback(rq->x.plan.body_len, 16 * 1024, read_paced, rq, NULL);
        if (resp)
            add_plan_headers(resp, &rq->x.plan);
        fresh = 1;
    } else if (rq->x.plan.action == PLAN_STATS || rq->x.plan.action == PLAN_METRICS) {
        resp = report_response(rq->shard->loop->srv, &rq->x.plan);
        if (!resp)
            return MHD_NO;
        fresh = 1;
    } else if (rq->x.plan.cacheable && rq->x.plan.route && !rq->x.plan.close) {
        resp = rq->shard->loop->cache[rq->x.plan.route_id];
    }
    if (!resp) {
        resp = build_response(&rq->x.plan);
        fresh = 1;
    }
    if (!resp)
        return MHD_NO;
    /* --max-requests, or the server stopping: the last answer on this connection; pipelined
     * requests after it are dropped with the connection. */
    if (rq->x.plan.close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(rq->conn, rq->x.plan.status, resp);
    if (fresh)
        MHD_destroy_response(resp);
    if (ret == MHD_YES)
        exchange_answer(&rq->x);
    return ret;
}

static void deadline_after(struct timespec *ts, uint64_t us)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + (us % 1000000) * 1000;
    ts->tv_sec += (time_t)(us / 1000000 + ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

/* thread-per-connection: the connection's own thread waits out the delay. It wakes early only
 * when the server gives up draining (hard stop). */
static int tpc_sleep(void *arg, uint64_t delay_us)
{
    struct app_server *srv = arg;
    struct timespec ts;
    int cut;
    deadline_after(&ts, delay_us);
    pthread_mutex_lock(&srv->sleep_lock);
    while (!srv->hard_stop) {
        if (pthread_cond_timedwait(&srv->sleep_cond, &srv->sleep_lock, &ts) == ETIMEDOUT)
            break;
    }
    cut = srv->hard_stop;
    pthread_mutex_unlock(&srv->sleep_lock);
    return cut;
}

static void wake_loop(struct mhd_loop *loop)
{
    uint64_t one = 1;
    if (loop->wake_fd >= 0 && write(loop->wake_fd, &one, sizeof one) < 0)
        LOG(loop->srv->log, LOG_LEVEL_WARN, "cannot wake loop %zu: %s", loop->index,
            strerror(errno));
}

/* A parked request got its worker (or the server is stopping): hand it back to its connection,
 * which asks the core what follows (exchange_next). Runs on any thread, under the pool's lock. */
static void on_admit(struct pool_entry *e)
{
    struct request *rq = (struct request *)(void *)exchange_of_entry(e);
    struct app_server *srv = rq->shard->loop->srv;
    if (srv->tpc) {
        pthread_mutex_lock(&srv->sleep_lock);
        rq->woken = 1;
        pthread_cond_broadcast(&srv->sleep_cond);
        pthread_mutex_unlock(&srv->sleep_lock);
        return;
    }
    wake_loop(resume(rq));
}

static enum MHD_Result act(struct request *rq, enum exchange_do d);

/* thread-per-connection: a worker of --workers is waited for in the connection's own thread, as
 * a blocking server's accept queue would, and the delay is slept out there. */
static enum MHD_Result tpc_hold(struct request *rq)
{
    struct app_server *srv = rq->shard->loop->srv;
    enum exchange_do d = exchange_hold(&rq->x, NULL);
    if (d == EXCHANGE_DO_PARK) {
        pthread_mutex_lock(&srv->sleep_lock);
        while (!rq->woken) /* handed back, or flushed when the server stops */
            pthread_cond_wait(&srv->sleep_cond, &srv->sleep_lock);
        pthread_mutex_unlock(&srv->sleep_lock);
        d = exchange_next(&rq->x);
        if (d == EXCHANGE_DO_HOLD)
            d = exchange_hold(&rq->x, NULL);
    }
    if (d == EXCHANGE_DO_WAIT)
        d = exchange_sleep(&rq->x, tpc_sleep, srv);
    return act(rq, d);
}

/* Event-loop models: the connection is suspended before the request enters the pool or the
 * heap, so that an admission or a timer on another thread never resumes a connection that is not
 * suspended yet. What is answered at once resumes it, and runs again (exchange_next). */
static enum MHD_Result hold(struct request *rq)
{
    struct mhd_loop *loop = rq->shard->loop;
    if (loop->srv->tpc)
        return tpc_hold(rq);
    MHD_suspend_connection(rq->conn);
    loop_lock(loop);
    enum exchange_do d = exchange_hold(&rq->x, &loop->timers);
    if (d == EXCHANGE_DO_WAIT)
        timer_queued(loop, rq);
    loop_unlock(loop);
    if (d != EXCHANGE_DO_WAIT && d != EXCHANGE_DO_PARK)
        resume(rq);
    return MHD_YES;
}

/* Carries out what the core said. */
static enum MHD_Result act(struct request *rq, enum exchange_do d)
{
    switch (d) {
    case EXCHANGE_DO_HOLD:
        return hold(rq);
    case EXCHANGE_DO_ANSWER:
        return respond(rq);
    case EXCHANGE_DO_RESET:
        return reset(rq);
    case EXCHANGE_DO_CLOSE:
    case EXCHANGE_DO_DROP:
        return MHD_NO;
    case EXCHANGE_DO_READ:
    case EXCHANGE_DO_WAIT:
    case EXCHANGE_DO_PARK:
    case EXCHANGE_DO_SEND:
    case EXCHANGE_DO_DONE:
        break;
    }
    return MHD_YES;
}

static long on_lookup(void *ctx, enum route_input kind, const char *name, char *buf, size_t len)
{
    const char *v = MHD_lookup_connection_value(
        ctx, kind == ROUTE_QUERY ? MHD_GET_ARGUMENT_KIND : MHD_HEADER_KIND, name);
    return v ? route_value_copy(v, strlen(v), buf, len) : -1;
}

/* libmicrohttpd 0.9.75 cannot queue an answer while it receives a body (only before it, or after
 * it). An upload error found mid-body (over --max-body without Content-Length, malformed
 * multipart) is therefore written straight to the socket, on a cleartext connection, with
 * Connection: close: the client learns it when it happens (libcurl then stops sending), the rest
 * of the body is read and dropped, and the connection is closed at its end. Over TLS the answer
 * waits for the end of the body. Returns 0, or -1 if the connection must close now (a partial
 * write). */
static int answer_early(struct request *rq)
{
    const struct plan *p = &rq->x.plan;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    char head[256];
    if (rq->shard->loop->srv->tls_cert || !ci)
        return 0;
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     p->status, route_reason(p->status), p->content_type, p->body_len);
    struct iovec iov[2] = {{head, (size_t)n}, {(void *)(uintptr_t)p->body, p->body_len}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    ssize_t w = sendmsg(ci->connect_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w <= 0)
        return 0; /* nothing written: answered at the end of the body after all */
    rq->answered_early = 1;
    exchange_answer(&rq->x);
    return (size_t)w == (size_t)n + p->body_len ? 0 : -1;
}

static void watch_arm(struct mhd_loop *loop, struct conn_watch *w)
{
    uint64_t t = loop->srv->cfg->header_timeout_us;
    if (t && w && atomic_load_explicit(&w->deadline, memory_order_relaxed) == 0)
        atomic_store_explicit(&w->deadline, timer_now_us() + t, memory_order_relaxed);
}

static struct conn_watch *watch_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Size of the request's header block, for --max-header-size: libmicrohttpd's size of the whole
 * head less the request line ("METHOD TARGET VERSION\r\n") and the blank line that ends it. */
static size_t header_bytes(struct MHD_Connection *conn, const char *method, size_t target,
                           const char *version)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    size_t around = strlen(method) + target + strlen(version) + 4 + 2;
    return ci && ci->header_size > around ? ci->header_size - around : 0;
}

static struct mhd_loop *loop_of(void *cls)
{
    return ((struct mhd_shard *)cls)->loop;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    struct mhd_loop *loop = loop_of(cls);
    struct request *rq = *req_cls;

    if (!rq || !rq->started) {
        if (!rq && !(rq = calloc(1, sizeof *rq)))
            return MHD_NO;
        rq->conn = conn;
        rq->shard = cls;
        rq->started = 1;
        struct conn_watch *w = watch_of(conn);
        if (w)
            atomic_store_explicit(&w->deadline, 0, memory_order_relaxed);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct route_request in = {
            .method = method,
            .target = url,
            .target_len = strlen(url),
            .lookup = on_lookup,
            .ctx = conn,
            .peer = ci ? ci->client_addr : NULL,
            .raw_target = rq->raw_uri,
            .header_bytes = header_bytes(conn, method, w ? w->target_bytes : strlen(url), version),
            .target_bytes = w ? w->target_bytes : 0,
            .last = w && service_request_on_connection(&loop->srv->svc, &w->requests)};
        enum exchange_do d =
            exchange_on_head(&rq->x, &loop->srv->svc.routes, loop->shard, &in, on_admit);
        atomic_fetch_add_explicit(&loop->active, 1, memory_order_relaxed);
        *req_cls = rq;
        return act(rq, d);
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        enum exchange_do d = exchange_on_body(&rq->x, upload_data, n);
        if (d == EXCHANGE_DO_ANSWER && answer_early(rq) != 0)
            return MHD_NO;
        return d == EXCHANGE_DO_CLOSE ? MHD_NO : MHD_YES;
    }
    /* An answer written around libmicrohttpd: the rest of the body was dropped, and the
     * connection closes. */
    if (rq->answered_early)
        return MHD_NO;
    return act(rq, exchange_next(&rq->x));
}

/* --max-connections over every loop: refused connections are closed at once by MHD. */
static enum MHD_Result on_accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    struct mhd_loop *loop = loop_of(cls);
    (void)addr;
    (void)len;
    return service_conn_admit(&loop->srv->svc) == 0 ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct mhd_shard *shard = cls;
    struct mhd_loop *loop = shard->loop;
    struct conn_watch *w = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add_explicit(&shard->conns, 1, memory_order_relaxed);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci || !(w = calloc(1, sizeof *w)))
            return;
        w->fd = ci->connect_fd;
        /* The first request's headers are due from the connection's opening, as in nginx. */
        watch_arm(loop, w);
        pthread_mutex_lock(&loop->watch_lock);
        w->next = loop->watched;
        if (w->next)
            w->next->prev = w;
        loop->watched = w;
        pthread_mutex_unlock(&loop->watch_lock);
        *socket_context = w;
        return;
    }
    atomic_fetch_sub_explicit(&shard->conns, 1, memory_order_relaxed);
    service_conn_closed(&loop->srv->svc);
    if (!w)
        return;
    pthread_mutex_lock(&loop->watch_lock);
    if (w->prev)
        w->prev->next = w->next;
    else
        loop->watched = w->next;
    if (w->next)
        w->next->prev = w->prev;
    pthread_mutex_unlock(&loop->watch_lock);
    free(w);
    *socket_context = NULL;
}

/* Shuts down the connections whose headers are overdue: libmicrohttpd then reads the end of
 * the stream and closes them itself, freeing their memory. */
static void sweep_watched(struct mhd_loop *loop, uint64_t now)
{
    size_t cut = 0;
    uint64_t t = loop->srv->cfg->header_timeout_us;
    if (!t || now < loop->next_sweep)
        return;
    /* A twentieth of the timeout, from 50 ms to 1 s: late by at most 5 %, and a sweep of
     * 10 000 connections once a second rather than ten times. */
    uint64_t every = t / 20 < 50000 ? 50000 : t / 20 > 1000000 ? 1000000 : t / 20;
    loop->next_sweep = now + every;
    pthread_mutex_lock(&loop->watch_lock);
    for (struct conn_watch *w = loop->watched; w; w = w->next) {
        uint64_t d = atomic_load_explicit(&w->deadline, memory_order_relaxed);
        if (d && now >= d) {
            atomic_store_explicit(&w->deadline, 0, memory_order_relaxed);
            shutdown(w->fd, SHUT_RDWR);
            cut++;
        }
    }
    pthread_mutex_unlock(&loop->watch_lock);
    if (cut)
        LOG(loop->srv->log, LOG_LEVEL_DEBUG, "closed %zu connections over --header-timeout", cut);
}

/* thread-per-connection: no loop of ours runs, so a thread sweeps. */
static void *watch_main(void *arg)
{
    struct mhd_loop *loop = arg;
    while (!atomic_load_explicit(&loop->srv->stopping, memory_order_acquire)) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        sweep_watched(loop, timer_now_us());
    }
    return NULL;
}

/* The request line is in. With an access log, keeps the target as received: libmicrohttpd hands
 * the handler the path without its query. The record it returns becomes the request's. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct mhd_loop *loop = loop_of(cls);
    /* A later request on a kept-alive connection: its headers are due from its request line. */
    struct conn_watch *w = watch_of(conn);
    watch_arm(loop, w);
    if (w)
        w->target_bytes = strlen(uri);
    if (!loop->srv->svc.routes.access)
        return NULL;
    struct request *rq = calloc(1, sizeof *rq);
    if (rq)
        rq->raw_uri = strndup(uri, 255);
    return rq;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct mhd_loop *loop = loop_of(cls);
    struct request *rq = *req_cls;
    (void)conn;
    (void)toe;
    if (!rq)
        return;
    if (rq->started) {
        loop_lock(loop);
        exchange_end(&rq->x, &loop->timers);
        loop_unlock(loop);
        atomic_fetch_sub_explicit(&loop->active, 1, memory_order_relaxed);
    }
    free(rq->raw_uri);
    free(rq);
    *req_cls = NULL;
}

/* Resumes the requests due by `now` (all of them with now = UINT64_MAX and `cancel`). A client
 * that left while waiting is only seen here, as MHD does not watch suspended sockets: it is
 * counted as a cancel and its connection closed without an answer. Requests are popped under the
 * loop lock and resumed outside it, so that no lock of ours is held while MHD takes its own. */
static size_t fire_due(struct mhd_loop *loop, uint64_t now, int cancel)
{
    struct request *batch[256];
    size_t n, fired = 0;
    do {
        loop_lock(loop);
        for (n = 0; n < sizeof batch / sizeof batch[0]; n++) {
            struct timer_node *node = timer_heap_pop_due(&loop->timers, now);
            if (!node)
                break;
            batch[n] = (struct request *)(void *)exchange_of_timer(node);
        }
        loop_unlock(loop);
        for (size_t i = 0; i < n; i++) {
            struct request *rq = batch[i];
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            /* What it decided is carried out when MHD runs the request again (exchange_next),
             * or reads the next chunk of a paced body. */
            exchange_on_timer(&rq->x, ci && net_peer_gone(ci->connect_fd), cancel);
            resume(rq);
        }
        fired += n;
    } while (n == sizeof batch / sizeof batch[0]);
    return fired;
}

/* Runs the shards that are due (a connection resumed or added, a socket event, libmicrohttpd's
 * own timeout), or all of them, and notes when each asks to run next. */
static void run_shards(struct mhd_loop *loop, int all)
{
    for (size_t i = 0; i < loop->used; i++) {
        struct mhd_shard *s = &loop->shards[i];
        if (!atomic_exchange_explicit(&s->due, 0, memory_order_acq_rel) && !all)
            continue;
        MHD_run(s->daemon);
        MHD_UNSIGNED_LONG_LONG ms;
        s->next_us = UINT64_MAX;
        if (MHD_get_timeout(s->daemon, &ms) == MHD_YES)
            s->next_us = timer_now_us() + (ms < UINT64_MAX / 4000 ? ms * 1000 : UINT64_MAX / 4);
    }
}

static void drain_wake(struct mhd_loop *loop)
{
    uint64_t v;
    if (read(loop->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
        LOG(loop->srv->log, LOG_LEVEL_DEBUG, "wake read: %s", strerror(errno));
}

static int shard_open(struct mhd_loop *loop, char *err);

/* The shard for a new connection: the first with room, else a new one while there may be more,
 * else the least loaded. */
static struct mhd_shard *place(struct mhd_loop *loop)
{
    struct mhd_shard *best = &loop->shards[0];
    size_t least = SIZE_MAX;
    char err[CORE_ERR_LEN];
    for (size_t i = 0; i < loop->used; i++) {
        size_t c = atomic_load_explicit(&loop->shards[i].conns, memory_order_relaxed);
        if (c < SHARD_CONNECTIONS)
            return &loop->shards[i];
        if (c < least) {
            least = c;
            best = &loop->shards[i];
        }
    }
    if (loop->used < loop->nshards) {
        if (shard_open(loop, err) == 0)
            return &loop->shards[loop->used - 1];
        LOG(loop->srv->log, LOG_LEVEL_DEBUG, "no daemon added to loop %zu: %s", loop->index, err);
    }
    return best;
}

/* Accepts what is pending on the loop's socket and gives each connection to a shard (which
 * applies --max-connections through the accept policy). Out of descriptors, the socket is left
 * out of the loop's wait for a while (net_accept_starved). */
static void accept_some(struct mhd_loop *loop, uint64_t now)
{
    for (int n = 0; n < NET_ACCEPT_BATCH; n++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd =
            accept4(loop->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            char msg[160];
            if (net_accept_starved(errno, now, &loop->accept_warned, msg, sizeof msg)) {
                if (msg[0])
                    LOG(loop->srv->log, LOG_LEVEL_WARN, "%s", msg);
                epoll_ctl(loop->ep_fd, EPOLL_CTL_DEL, loop->listen_fd, NULL);
                loop->accept_paused_until = now + NET_ACCEPT_PAUSE_US;
            }
            return;
        }
        struct mhd_shard *s = place(loop);
        /* On refusal libmicrohttpd has closed the socket already. */
        MHD_add_connection(s->daemon, fd, (struct sockaddr *)&ss, len);
        atomic_store_explicit(&s->due, 1, memory_order_relaxed);
    }
}

/* epoll model: waits up to wait_us for the shards' sockets, libmicrohttpd's earliest timeout, a
 * new connection or a wake-up, then runs the shards that have something to do. The loop's epoll
 * set holds each daemon's epoll fd (readable while it has events; never epoll_wait()ed here,
 * which would take MHD's edge-triggered events), the wake-up eventfd and the listening socket. */
static void run_epoll(struct mhd_loop *loop, uint64_t wait_us)
{
    struct epoll_event ev[MAX_SHARDS + 2];
    uint64_t now = timer_now_us();
    if (loop->accept_paused_until) {
        struct epoll_event lev = {.events = EPOLLIN, .data.u64 = loop->nshards + 1};
        if (now >= loop->accept_paused_until) {
            loop->accept_paused_until = 0;
            if (loop->listen_fd >= 0)
                epoll_ctl(loop->ep_fd, EPOLL_CTL_ADD, loop->listen_fd, &lev);
        } else if (loop->accept_paused_until - now < wait_us) {
            wait_us = loop->accept_paused_until - now;
        }
    }
    for (size_t i = 0; i < loop->used; i++) {
        uint64_t next = loop->shards[i].next_us;
        /* A shard can be due already: a connection this thread resumed while MHD ran (a request
         * admitted at once by --workers, say). MHD picks it up on its next run only, and an
         * external-loop daemon has no channel that would wake this wait for it. */
        if (next <= now || atomic_load_explicit(&loop->shards[i].due, memory_order_acquire))
            wait_us = 0;
        else if (next - now < wait_us)
            wait_us = next - now;
    }
    int n = epoll_wait(loop->ep_fd, ev, (int)loop->nshards + 2, (int)((wait_us + 999) / 1000));
    now = timer_now_us();
    for (int i = 0; i < n; i++) {
        uint64_t k = ev[i].data.u64;
        if (k < loop->nshards)
            atomic_store_explicit(&loop->shards[k].due, 1, memory_order_relaxed);
        else if (k == loop->nshards)
            drain_wake(loop);
        else if (loop->listen_fd >= 0)
            accept_some(loop, now);
    }
    for (size_t i = 0; i < loop->used; i++)
        if (loop->shards[i].next_us <= now)
            atomic_store_explicit(&loop->shards[i].due, 1, memory_order_relaxed);
    run_shards(loop, 0);
}

/* select model (one shard): waits up to wait_us for MHD's sockets or a wake-up, then lets MHD
 * process what is ready. */
static void run_select(struct mhd_loop *loop, uint64_t wait_us)
{
    struct MHD_Daemon *d = loop->shards[0].daemon;
    MHD_UNSIGNED_LONG_LONG mhd_ms;
    if (MHD_get_timeout(d, &mhd_ms) == MHD_YES && mhd_ms * 1000 < wait_us)
        wait_us = mhd_ms * 1000;
    /* Resumed by this thread during the last run (see run_epoll): run again without waiting. */
    if (atomic_exchange_explicit(&loop->shards[0].due, 0, memory_order_acq_rel))
        wait_us = 0;
    fd_set rs, ws, es;
    MHD_socket max = -1;
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_ZERO(&es);
    if (MHD_get_fdset(d, &rs, &ws, &es, &max) != MHD_YES) {
        MHD_run(d);
        return;
    }
    FD_SET(loop->wake_fd, &rs);
    if (loop->wake_fd > max)
        max = loop->wake_fd;
    struct timeval tv = {(time_t)(wait_us / 1000000), (suseconds_t)(wait_us % 1000000)};
    int n = select(max + 1, &rs, &ws, &es, &tv);
    if (n < 0) {
        MHD_run(d);
        return;
    }
    int woken = FD_ISSET(loop->wake_fd, &rs);
    if (woken)
        drain_wake(loop);
    MHD_run_from_select(d, &rs, &ws, &es);
    /* A wake-up means a connection was resumed from another thread; MHD_run_from_select only
     * handles the sockets select() reported, MHD_run also picks up resumed connections. */
    if (woken)
        MHD_run(d);
}

static void *loop_main(void *arg)
{
    struct mhd_loop *loop = arg;
    struct app_server *srv = loop->srv;
    uint64_t drain_until = 0;
    int quiesced = 0;

    for (;;) {
        uint64_t now = timer_now_us();
        sweep_watched(loop, now);
        /* Let MHD answer what was just resumed before waiting again. */
        if (fire_due(loop, now, 0) && !srv->internal)
            run_shards(loop, 0);
        /* The wait counts from now, not from the top of this turn (MHD may have run for a while
         * since). It is rounded up to whole milliseconds on purpose: each resume pass makes
         * libmicrohttpd 0.9.75 walk every suspended connection of the shard, so timers are
         * answered in batches of up to 1 ms rather than one pass each (measured: exact waits
         * cost more CPU and more lateness at 10 000 waiting connections). */
        loop_lock(loop);
        uint64_t wait_us = timer_heap_wait_us(&loop->timers, timer_now_us(), LOOP_TICK_US);
        loop_unlock(loop);
        wait_us = (wait_us + RESUME_BATCH_US - 1) / RESUME_BATCH_US * RESUME_BATCH_US;
        if (atomic_load_explicit(&srv->stopping, memory_order_acquire)) {
            if (!quiesced) {
                if (srv->cfg->model == CONFIG_MODEL_EPOLL) {
                    /* Out of the set first: under socket activation the other loops hold dups
                     * of the socket, which would keep it registered here after a close. */
                    if (loop->listen_fd >= 0) {
                        epoll_ctl(loop->ep_fd, EPOLL_CTL_DEL, loop->listen_fd, NULL);
                        close(loop->listen_fd);
                    }
                    loop->listen_fd = -1;
                } else {
                    MHD_socket fd = MHD_quiesce_daemon(loop->shards[0].daemon);
                    if (fd != MHD_INVALID_SOCKET)
                        close(fd);
                }
                quiesced = 1;
                drain_until = now + srv->cfg->grace_us;
            }
            if (atomic_load(&loop->active) == 0 || now >= drain_until)
                break;
        }
        if (srv->cfg->model == CONFIG_MODEL_EPOLL) {
            run_epoll(loop, wait_us);
            continue;
        }
        if (!srv->internal) {
            run_select(loop, wait_us);
            continue;
        }
        struct timespec ts;
        deadline_after(&ts, wait_us);
        pthread_mutex_lock(&loop->lock);
        /* A request queued after wait_us was computed signals `wake` if it is the earliest. */
        if (timer_heap_wait_us(&loop->timers, timer_now_us(), wait_us) > 0)
            pthread_cond_timedwait(&loop->wake, &loop->lock, &ts);
        pthread_mutex_unlock(&loop->lock);
    }
    /* --grace is over, or nothing is left. Parked requests of every loop are handed back (to
     * be answered "server stopping"; harmless if another loop did it), what still waits is
     * answered the same, and what is in flight gets FINISH_US more to go out before the
     * daemons stop. */
    route_table_flush(&srv->svc.routes);
    uint64_t until = timer_now_us() + FINISH_US;
    do {
        fire_due(loop, UINT64_MAX, 1);
        if (srv->cfg->model == CONFIG_MODEL_EPOLL) {
            run_epoll(loop, FINISH_TICK_US);
        } else if (!srv->internal) {
            run_select(loop, FINISH_TICK_US);
        } else {
            struct timespec ts = {0, FINISH_TICK_US * 1000};
            nanosleep(&ts, NULL);
        }
    } while (atomic_load(&loop->active) > 0 && timer_now_us() < until);
    return NULL;
}

/* The per-connection pool holds the request line and headers, what libmicrohttpd parses out of
 * them and the answer's header. libmicrohttpd 0.9.75 zeroes the whole pool after each request, so
 * every kept-alive connection costs its pool in RSS: 8 KiB at the default limits, less when they
 * are lowered (768 bytes over the two limits), what they ask plus 2 KiB when raised. */
static size_t conn_memory(const struct config *cfg)
{
    size_t need = (size_t)(cfg->max_request_line + cfg->max_header_size);
    if (cfg->max_request_line > 8192 || cfg->max_header_size > 8192)
        return need + 2048;
    return need + 768 < CONN_MEMORY_LIMIT ? need + 768 : CONN_MEMORY_LIMIT;
}

static unsigned daemon_flags(const struct config *cfg)
{
    unsigned flags = MHD_USE_ERROR_LOG;
    switch (cfg->model) {
    case CONFIG_MODEL_EPOLL:
        /* The loop accepts and hands connections over (MHD_add_connection). */
        return flags | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
    case CONFIG_MODEL_POLL:
        /* libmicrohttpd offers poll() only with its own polling thread. */
        return flags | MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    case CONFIG_MODEL_SELECT:
        return flags | MHD_ALLOW_SUSPEND_RESUME;
    case CONFIG_MODEL_THREAD_PER_CONNECTION:
        /* ITC lets MHD_quiesce_daemon wake the listening thread. */
        return flags | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
               MHD_USE_POLL | MHD_USE_ITC;
    }
    return flags;
}

static int start_daemon(struct mhd_shard *shard, unsigned conn_limit, char *err)
{
    struct app_server *srv = shard->loop->srv;
    unsigned flags = daemon_flags(srv->cfg);
    struct MHD_OptionItem opts[16];
    size_t n = 0;

#define OPT(o, v, p) (opts[n++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (p)})
    /* The logger goes first so that MHD reports the other options' problems through it. */
    OPT(MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, (void *)(uintptr_t)srv->log);
    if (srv->cfg->model != CONFIG_MODEL_EPOLL)
        OPT(MHD_OPTION_LISTEN_SOCKET, shard->loop->listen_fd, NULL);
    OPT(MHD_OPTION_CONNECTION_LIMIT, conn_limit, NULL);
    OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, conn_memory(srv->cfg), NULL);
    /* In seconds. libmicrohttpd never times out a suspended (waiting) connection. It also
     * reclaims the connections its epoll mode loses when a client closes mid-body. */
    OPT(MHD_OPTION_CONNECTION_TIMEOUT, (srv->cfg->idle_timeout_us + 999999) / 1000000, NULL);
    OPT(MHD_OPTION_NOTIFY_COMPLETED, on_completed, shard);
    OPT(MHD_OPTION_NOTIFY_CONNECTION, on_connection, shard);
    OPT(MHD_OPTION_URI_LOG_CALLBACK, on_uri, shard);
    if (srv->tpc)
        OPT(MHD_OPTION_THREAD_STACK_SIZE, 256 * 1024, NULL);
    if (srv->tls_cert) {
        flags |= MHD_USE_TLS;
        OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert);
        OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key);
    }
    OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
    shard->daemon = MHD_start_daemon(flags, 0, on_accept_policy, shard, on_request, shard,
                                     MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!shard->daemon) {
        if (srv->tls_cert)
            snprintf(err, CORE_ERR_LEN,
                     "tls-key: libmicrohttpd (GnuTLS) refused the certificate and key; is "
                     "--tls-key the PEM key of --tls-cert? (--log-level debug says more)");
        else
            snprintf(err, CORE_ERR_LEN,
                     "libmicrohttpd: cannot start the %s daemon (--log-level debug says why)",
                     config_model_name(srv->cfg->model));
        return -EINVAL;
    }
    /* The daemon owns the listening socket now and closes it when stopped. */
    if (srv->cfg->model != CONFIG_MODEL_EPOLL)
        shard->loop->listen_fd = -1;
    return 0;
}

static void monotonic_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}

/* Daemons per loop: one, except in the epoll model, where there may be enough for the loop's
 * share of --max-connections in shards of SHARD_CONNECTIONS, started as they fill up. */
static size_t shards_per_loop(const struct config *cfg, size_t nloops)
{
    if (cfg->model != CONFIG_MODEL_EPOLL)
        return 1;
    size_t per_loop = ((size_t)cfg->max_connections + nloops - 1) / nloops;
    size_t k = (per_loop + SHARD_CONNECTIONS - 1) / SHARD_CONNECTIONS;
    return k < 1 ? 1 : k > MAX_SHARDS ? MAX_SHARDS : k;
}

/* epoll model: adds fd to the loop's wait, reported as key k. */
static int loop_watch(struct mhd_loop *loop, int fd, uint64_t k)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = k};
    return epoll_ctl(loop->ep_fd, EPOLL_CTL_ADD, fd, &ev);
}

/* epoll model: starts the loop's next daemon, when the ones in use are full (the first at
 * start-up, so that a bad TLS certificate is reported there), and adds its epoll fd to the
 * loop's wait. */
static int shard_open(struct mhd_loop *loop, char *err)
{
    struct mhd_shard *s = &loop->shards[loop->used];
    int rc = start_daemon(s, loop->srv->cfg->max_connections, err);
    if (rc != 0)
        return rc;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (!di || loop_watch(loop, di->epoll_fd, loop->used) != 0) {
        snprintf(err, CORE_ERR_LEN, "epoll: %s", strerror(errno));
        MHD_stop_daemon(s->daemon);
        s->daemon = NULL;
        return -EMFILE;
    }
    loop->used++;
    return 0;
}

/* epoll model: the loop waits on its daemons' epoll fds, its wake-up eventfd and its listening
 * socket. */
static int loop_epoll_init(struct mhd_loop *loop, char *err)
{
    loop->ep_fd = epoll_create1(EPOLL_CLOEXEC);
    if (loop->ep_fd < 0 || loop_watch(loop, loop->wake_fd, loop->nshards) != 0 ||
        loop_watch(loop, loop->listen_fd, loop->nshards + 1) != 0) {
        snprintf(err, CORE_ERR_LEN, "epoll: %s", strerror(errno));
        return -EMFILE;
    }
    return shard_open(loop, err);
}

static int mhd_server_start(struct app_server **out, const struct config *cfg, const struct log *lg,
                            int inherited_fd, struct accesslog *access, char *err, size_t errlen)
{
    struct app_server *srv = calloc(1, sizeof *srv);
    int fds[1024];
    int rc;

    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    srv->cfg = cfg;
    srv->log = lg;
    srv->tpc = cfg->model == CONFIG_MODEL_THREAD_PER_CONNECTION;
    srv->internal = cfg->model == CONFIG_MODEL_POLL;
    srv->nloops = srv->tpc ? 1 : cfg->threads;
    if (srv->nloops > sizeof fds / sizeof fds[0])
        srv->nloops = sizeof fds / sizeof fds[0];
    size_t nshards = shards_per_loop(cfg, srv->nloops);
    atomic_init(&srv->stopping, 0);
    pthread_mutex_init(&srv->sleep_lock, NULL);
    monotonic_cond_init(&srv->sleep_cond);
    if (service_init(&srv->svc, cfg, srv->nloops, access) != 0) {
        snprintf(err, errlen, "out of memory");
        free(srv);
        return -ENOMEM;
    }
    srv->loops = calloc(srv->nloops, sizeof *srv->loops);
    for (size_t i = 0; srv->loops && i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        loop->listen_fd = loop->wake_fd = loop->ep_fd = -1;
        loop->shards = calloc(nshards, sizeof *loop->shards);
        if (!loop->shards) {
            mhd_server_free(srv);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        loop->nshards = nshards;
        for (size_t k = 0; k < nshards; k++) {
            loop->shards[k].loop = loop;
            loop->shards[k].next_us = UINT64_MAX;
            atomic_init(&loop->shards[k].due, 0);
            atomic_init(&loop->shards[k].conns, 0);
        }
    }
    if (!srv->loops) {
        mhd_server_free(srv);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }

    if (cfg->tls_cert[0]) {
        size_t len;
        char why[CORE_ERR_LEN];
        rc = config_read_file(cfg->tls_cert, 1 << 20, &srv->tls_cert, &len, why, sizeof why);
        if (rc == 0)
            rc = config_read_file(cfg->tls_key, 1 << 20, &srv->tls_key, &len, why, sizeof why);
        if (rc != 0) {
            snprintf(err, errlen, "%s: %.200s", srv->tls_cert ? "tls-key" : "tls-cert", why);
            mhd_server_free(srv);
            return -EINVAL;
        } /* A certificate and key libmicrohttpd refuses are a config error, found before the
           * port is bound (a daemon with no listening socket binds nothing). */
        struct MHD_Daemon *probe =
            MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, on_request,
                             NULL, MHD_OPTION_HTTPS_MEM_CERT, srv->tls_cert,
                             MHD_OPTION_HTTPS_MEM_KEY, srv->tls_key, MHD_OPTION_END);
        if (!probe) {
            snprintf(err, errlen,
                     "tls-key: %.80s does not load as the private key of %.80s (PEM expected)",
                     cfg->tls_key, cfg->tls_cert);
            mhd_server_free(srv);
            return -EINVAL;
        }
        MHD_stop_daemon(probe);
    }
    rc = net_open(cfg->bind, cfg->port, srv->nloops, LISTEN_BACKLOG, inherited_fd, fds, &srv->port,
                  err, errlen);
    if (rc != 0) {
        mhd_server_free(srv);
        return rc;
    }
    /* --max-connections is enforced over all loops by the accept policy; any one loop may hold
     * them all, so each daemon and heap is sized for the whole limit. */
    unsigned per_loop = cfg->max_connections;
    for (size_t i = 0; i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        loop->srv = srv;
        loop->index = i;
        loop->listen_fd = fds[i];
        loop->shard = service_shard(&srv->svc, i);
        atomic_init(&loop->active, 0);
        if (!srv->internal && !srv->tpc)
            loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        pthread_mutex_init(&loop->lock, NULL);
        pthread_mutex_init(&loop->watch_lock, NULL);
        monotonic_cond_init(&loop->wake);
    }
    for (size_t i = 0; i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        if (!srv->internal && !srv->tpc && loop->wake_fd < 0) {
            snprintf(err, errlen, "eventfd: %s", strerror(errno));
            rc = -EMFILE;
            break;
        }
        rc = timer_heap_init(&loop->timers, per_loop);
        if (rc == 0)
            rc = build_cache(srv, loop->cache);
        if (rc != 0) {
            snprintf(err, errlen, "out of memory");
            break;
        }
        if (cfg->model == CONFIG_MODEL_EPOLL) {
            rc = loop_epoll_init(loop, err);
        } else {
            rc = start_daemon(&loop->shards[0], per_loop, err);
            loop->used = rc == 0;
        }
        if (rc != 0)
            break;
        if (srv->tpc && cfg->header_timeout_us) {
            rc = -pthread_create(&loop->watch_thread, NULL, watch_main, loop);
            if (rc != 0) {
                snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
                break;
            }
            loop->watch_started = 1;
        }
        if (!srv->tpc) {
            rc = -pthread_create(&loop->thread, NULL, loop_main, loop);
            if (rc != 0) {
                snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
                break;
            }
            loop->thread_started = 1;
        }
    }
    if (rc != 0) {
        mhd_server_stop(srv);
        mhd_server_free(srv);
        return rc;
    }
    *out = srv;
    return 0;
}

static unsigned mhd_server_port(const struct app_server *srv)
{
    return srv->port;
}

static unsigned mhd_server_threads(const struct app_server *srv)
{
    return (unsigned)srv->nloops;
}

static size_t active_total(struct app_server *srv)
{
    size_t n = 0;
    for (size_t i = 0; i < srv->nloops; i++)
        n += atomic_load(&srv->loops[i].active);
    return n;
}

/* thread-per-connection: MHD runs its own threads, so the drain is watched from here. */
static void tpc_drain(struct app_server *srv)
{
    struct mhd_loop *loop = &srv->loops[0];
    uint64_t until = timer_now_us() + srv->cfg->grace_us;
    if (!loop->shards[0].daemon)
        return;
    MHD_socket fd = MHD_quiesce_daemon(loop->shards[0].daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    while (active_total(srv) > 0 && timer_now_us() < until) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* Parked threads are handed back first (they wait for that alone), then sleepers are cut:
     * both answer "server stopping". */
    route_table_flush(&srv->svc.routes);
    pthread_mutex_lock(&srv->sleep_lock);
    srv->hard_stop = 1;
    pthread_cond_broadcast(&srv->sleep_cond);
    pthread_mutex_unlock(&srv->sleep_lock);
    until = timer_now_us() + FINISH_US;
    while (active_total(srv) > 0 && timer_now_us() < until) {
        struct timespec ts = {0, FINISH_TICK_US * 1000};
        nanosleep(&ts, NULL);
    }
}

static void mhd_server_stop(struct app_server *srv)
{
    atomic_store_explicit(&srv->stopping, 1, memory_order_release);
    for (size_t i = 0; i < srv->nloops; i++)
        if (srv->loops[i].thread_started)
            wake_loop(&srv->loops[i]);
    if (srv->tpc)
        tpc_drain(srv);
    for (size_t i = 0; i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        if (loop->thread_started)
            pthread_join(loop->thread, NULL);
        loop->thread_started = 0;
        if (loop->watch_started)
            pthread_join(loop->watch_thread, NULL);
        loop->watch_started = 0;
        for (size_t k = 0; k < loop->nshards; k++) {
            if (loop->shards[k].daemon)
                MHD_stop_daemon(loop->shards[k].daemon);
            loop->shards[k].daemon = NULL;
        }
    }
}

static void mhd_server_free(struct app_server *srv)
{
    if (!srv)
        return;
    for (size_t i = 0; srv->loops && i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        if (loop->listen_fd >= 0)
            close(loop->listen_fd);
        free(loop->shards);
        if (loop->ep_fd >= 0)
            close(loop->ep_fd);
        free_cache(loop->cache, srv->svc.routes.count);
        timer_heap_cleanup(&loop->timers);
        if (loop->srv) {
            pthread_cond_destroy(&loop->wake);
            pthread_mutex_destroy(&loop->lock);
            pthread_mutex_destroy(&loop->watch_lock);
        }
        if (loop->wake_fd >= 0)
            close(loop->wake_fd);
    }
    free(srv->loops);
    service_cleanup(&srv->svc);
    free(srv->tls_cert);
    free(srv->tls_key);
    pthread_cond_destroy(&srv->sleep_cond);
    pthread_mutex_destroy(&srv->sleep_lock);
    free(srv);
}

static const char *library(void)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "libmicrohttpd %s", MHD_get_version());
    return buf;
}

const struct app_engine mhd_engine = {
    .caps = {.program = "slowsrv",
             .description = "libmicrohttpd engine",
             .models = CONFIG_MODEL_BIT(CONFIG_MODEL_EPOLL) | CONFIG_MODEL_BIT(CONFIG_MODEL_POLL) |
                       CONFIG_MODEL_BIT(CONFIG_MODEL_SELECT) |
                       CONFIG_MODEL_BIT(CONFIG_MODEL_THREAD_PER_CONNECTION),
             .models_name = "every model",
             .others = "no other engine"},
    .name = "mhd",
    .library = library,
    .start = mhd_server_start,
    .port = mhd_server_port,
    .threads = mhd_server_threads,
    .stop = mhd_server_stop,
    .free = mhd_server_free,
};
