#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <h2o.h>
#include <h2o/http2.h>
#include <h2o/version.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "run/loop.h"
#include "base/net.h"
#include "pool_fit.h"
#include "run/exchange.h"
#include "run/service.h"
#include "plan/route.h"
#include "base/stats.h"
#include "base/timer.h"
#include "http/upload.h"

/* Defined at the end, with the engine table; the error paths of the start call them. */
static void h2s_server_stop(struct app_server *srv);
static void h2s_server_free(struct app_server *srv);

struct h2s_loop;

struct h2s_request {
    struct exchange *x; /* right after the record, in the same pool block (on_req) */
    h2o_req_t *req;
    struct h2s_loop *loop;
    h2o_generator_t gen;   /* a paced body (?drip=, ?fault=truncate) */
    uint64_t sent;         /* its bytes handed to libh2o so far */
    struct h2s_conn *conn; /* while its whole answer is being sent (send_plan), else NULL */
    struct h2s_conn *on;   /* the connection it came on, or NULL */
    /* Flags, a byte each: every waiting request carries this record. */
    unsigned char sending;   /* bytes handed to libh2o and not yet sent (proceed is due) */
    unsigned char head_sent; /* the head went out ahead of the first chunk */
};

struct h2s_conn {
    struct h2s_loop *loop;
    h2o_socket_t *sock;
    struct h2s_conn *prev, *next; /* the loop's open connections */
    unsigned requests;            /* begun on this connection */
    unsigned answering;           /* answers handed to libh2o and not yet sent (send_plan) */
    unsigned active;              /* requests under way on it (on_req to on_dispose) */
    int h2;                       /* it carried an HTTP/2 request */
    int control;                  /* it came on the control listener */
    size_t written;               /* sock->bytes_written when last seen moving */
    uint64_t still_since;         /* since when it has not moved while an answer waits */
};

/* The connection that carries req, or NULL. */
static struct h2s_conn *conn_of(h2o_req_t *req);

struct h2s_loop {
    struct app_server *srv;
    size_t index;
    pthread_t thread;
    int thread_started;
    h2o_evloop_t *evloop;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    int listen_fd;
    h2o_socket_t *listener;
    /* Out of descriptors: the listener rests (net_accept_starved). */
    h2o_timeout_t accept_pause;
    h2o_timeout_entry_t accept_resume;
    /* At --max-connections: the listener rests for SERVICE_LIMIT_RETRY_US at a time. */
    h2o_timeout_t limit_pause;
    h2o_timeout_entry_t limit_resume;
    uint64_t accept_warned;
    int timer_fd;
    h2o_socket_t *timer_sock;
    uint64_t armed_us; /* deadline the timerfd is armed for, 0 if disarmed */
    /* Due requests are answered in the timeout phase of a turn, after its reads and before
     * libh2o writes the turn's HTTP/2 frames: a 0 ms list made before the contexts' own, so that
     * libh2o runs it first. The timerfd only wakes a loop that waits. */
    h2o_timeout_t fire_phase;
    h2o_timeout_entry_t fire_entry;
    /* Written by other threads (the stop, on_admit) until every loop has been joined, so it is
     * closed only then (h2s_server_free). libh2o watches a duplicate, wake_poll_fd, and closes
     * it with the loop: closing the one others write to raced a stop, which then wrote to a
     * closed descriptor, or to whatever file had just been given its number. */
    int wake_fd;
    int wake_poll_fd; /* until the loop's libh2o socket owns it */
    h2o_socket_t *wake_sock;
    struct core_loop core; /* timers, inbox and stop (loop.h) */
    struct stats_shard *shard;
    size_t active;          /* requests begun and not disposed; loop thread only */
    struct h2s_conn *conns; /* its open connections (on_accept, on_conn_close) */
    uint64_t next_sweep;    /* when sweep_stalled runs next */
    /* Loop 0 also serves the control API (--control) on a context of its own. */
    h2o_context_t ctl_ctx;
    h2o_accept_ctx_t ctl_accept;
    h2o_socket_t *ctl_listener;
    int ctl_ready;
};

struct app_server {
    const struct config *cfg;
    const struct log *log;
    struct service *svc; /* routes, worker pool, counters (the app's) */
    size_t nloops;
    struct h2s_loop *loops;
    h2o_globalconf_t globalconf;
    SSL_CTX *ssl_ctx;
    int control_fd; /* its listening socket until loop 0 takes it */
    h2o_globalconf_t ctl_conf;
    atomic_int stopping;
    atomic_size_t ready; /* loops whose context and sockets are set up */
};

/* Arms the timerfd for when the core loop answers next (loop_next_fire_us: at most once a
 * LOOP_BATCH_US, so that with deadlines microseconds apart one expiry answers several). */
static void arm_timer(struct h2s_loop *loop)
{
    uint64_t due = loop_next_fire_us(&loop->core, timer_now_us());
    if (due == loop->armed_us)
        return;
    /* An earlier deadline than the armed one must re-arm; a later one can wait for the next
     * expiry, which re-arms from the heap anyway. */
    if (due && loop->armed_us && loop->armed_us < due)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (due) {
        its.it_value.tv_sec = (time_t)(due / 1000000);
        its.it_value.tv_nsec = (long)(due % 1000000) * 1000;
    }
    timerfd_settime(loop->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
    loop->armed_us = due;
}

/* Copies n bytes of s into dst lowercased: libh2o keeps header names that way. */
static void lowercase(char *dst, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
}

/* `name` in its canonical case ("Content-Type"): HTTP/1 sends it as given, HTTP/2 lowercased. */
static void add_header(h2o_req_t *req, const char *name, const char *value)
{
    size_t n = strlen(name);
    char *lower = h2o_mem_alloc_pool(&req->pool, n);
    lowercase(lower, name, n);
    h2o_add_header_by_str(&req->pool, &req->res.headers, lower, n, 1, name, value, strlen(value));
}

/* The answer's status and headers, as the core made them (exchange_answer_of). */
static void start_answer(struct h2s_request *r, const struct answer *a)
{
    h2o_req_t *req = r->req;
    req->res.status = (int)a->status;
    req->res.reason = a->reason;
    /* SIZE_MAX: libh2o then sends no content-length (and no chunked coding for these). */
    req->res.content_length = a->bodiless ? SIZE_MAX : a->body_len;
    for (size_t i = 0; i < a->nheaders; i++)
        if (strcasecmp(a->headers[i].name, "Connection") != 0)
            add_header(req, a->headers[i].name, a->headers[i].value);
    /* HTTP/1 closes after this answer (libh2o writes Connection: close itself). */
    if (a->close)
        req->http1_is_persistent = 0;
    exchange_answer(r->x);
}

/* Hands libh2o the next bytes of a paced body, or queues the timer of the next chunk. Runs when
 * the answer starts, when libh2o has sent the previous bytes (proceed) and when the timer pops. */
static void send_paced(struct h2s_request *r)
{
    size_t len;
    uint64_t due;
    const char *bytes;
    h2o_iovec_t buf;
    switch (exchange_body_take(r->x, timer_now_us(), r->sent, SIZE_MAX, &bytes, &len, &due)) {
    case EXCHANGE_BODY_SEND:
        buf = h2o_iovec_init(bytes, len);
        r->sent += len;
        r->sending = 1;
        h2o_send(r->req, &buf, 1,
                 r->sent == r->req->res.content_length ? H2O_SEND_STATE_FINAL
                                                       : H2O_SEND_STATE_IN_PROGRESS);
        return;
    case EXCHANGE_BODY_DONE:
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_FINAL);
        return;
    case EXCHANGE_BODY_CUT:
        /* HTTP/1: the connection closes short of Content-Length; HTTP/2: the stream is reset. */
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    case EXCHANGE_BODY_WAIT:
        break;
    }
    if (loop_pace(&r->loop->core, r->x, due) != EXCHANGE_DO_WAIT) {
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    }
    /* The head goes out when the delay ends, as slowsrv's does, not with the first chunk:
     * libh2o writes it on the first send, so send nothing yet. */
    if (!r->head_sent && !r->sending) {
        r->head_sent = 1;
        r->sending = 1;
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_IN_PROGRESS);
    }
}

static void on_paced_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    struct h2s_request *r =
        (struct h2s_request *)(void *)((char *)gen - offsetof(struct h2s_request, gen));
    (void)req;
    /* libh2o may ask again while the next chunk's timer runs: that timer sends it. */
    if (!r->sending)
        return;
    r->sending = 0;
    if (exchange_next(r->x) == EXCHANGE_DO_CLOSE) /* cut short while libh2o sent */
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
    else
        send_paced(r);
}

static void on_paced_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    /* The client left: on_dispose cancels the timer of the next chunk. */
    (void)gen;
    (void)req;
}

static void on_whole_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    (void)gen;
    (void)req;
}

/* ?fault=close, ?fault=reset, --overflow reset and a client gone: libh2o 2.2.5 has no call to
 * drop a connection from a handler, so the socket is broken under it, shut down (the client
 * reads an end of stream) or reset (net_reset), and the request ends in error before its head:
 * HTTP/1 closes the connection, HTTP/2 resets the stream (and every stream of the connection
 * ends with it). */
static void break_connection(struct h2s_request *r, int rst)
{
    h2o_req_t *req = r->req;
    h2o_socket_t *sock =
        req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (sock) {
        int fd = h2o_socket_get_fd(sock);
        if (rst)
            net_reset(fd);
        else
            shutdown(fd, SHUT_RDWR);
    }
    /* libh2o cannot end a request before its head; this one is never written, as the socket
     * under it is broken already. */
    req->res.status = 500;
    req->http1_is_persistent = 0;
    r->gen.proceed = on_whole_proceed;
    r->gen.stop = on_paced_stop;
    h2o_start_response(req, &r->gen);
    h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
}

/* The body as it is, not copied (h2o_send_inline copies it into the request's pool): it lives
 * as long as the request, and a client that stops reading, or an HTTP/2 stream whose window
 * stays shut, then holds no copy of a large ?size= body. A paced one leaves by send_paced. */
static void respond(struct h2s_request *r)
{
    struct answer a;
    exchange_answer_of(r->x, &a);
    start_answer(r, &a);
    r->gen.proceed = a.paced ? on_paced_proceed : on_whole_proceed;
    r->gen.stop = on_paced_stop;
    if (!a.paced && (r->conn = conn_of(r->req)) != NULL)
        r->conn->answering++;
    h2o_start_response(r->req, &r->gen);
    if (a.paced) {
        send_paced(r);
        return;
    }
    /* HEAD: the head alone (h2o_send, unlike h2o_send_inline, would send the body too). */
    int head = h2o_memis(r->req->method.base, r->req->method.len, H2O_STRLIT("HEAD"));
    h2o_iovec_t buf = h2o_iovec_init(a.body, a.body_len);
    h2o_send(r->req, &buf, a.body_len && !head ? 1 : 0, H2O_SEND_STATE_FINAL);
}

/* Runs as libh2o clears the request's pool, before its chunks go: p is the shared handle that
 * points at the record (on_req). */
static void on_dispose(void *p)
{
    struct h2s_request *r = *(struct h2s_request **)p;
    struct h2s_loop *loop = r->loop;
    /* Out of the pool, the heap and the inbox: once this has returned, no thread can hand r
     * back. */
    loop_end(&loop->core, r->x);
    loop->active--;
    /* Before its connection's on_conn_close: libh2o disposes a connection's requests first. */
    if (r->conn)
        r->conn->answering--;
    if (r->on)
        r->on->active--;
}

static int client_gone(h2o_req_t *req)
{
    /* HTTP/1 does not watch a connection while its request waits; look at the socket. HTTP/2
     * disposes a reset or closed stream itself, so a live request there is wanted. */
    h2o_socket_t *sock =
        req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    return sock && req->version < 0x200 && net_peer_gone(h2o_socket_get_fd(sock));
}

static void act(struct h2s_request *r, enum exchange_do d);

/* Asks this turn's timeout phase to answer what is due by then (on_fire). Called by the
 * timerfd, by every request read (on_req) and between turns while more are due (serve). The
 * timerfd alone was not enough: epoll hands out ready sockets in the order they became ready,
 * 256 a turn, so with thousands of connections readable the timerfd waited turns behind them,
 * and a wave of due answers went out 1024 per round of every readable connection: up to 170 ms
 * late at 100 000 h2c streams, an overshoot p99 of 5-10 ms at 10 000 HTTP/1.1 connections
 * (doc/benchmarks.md). */
static void want_fire(struct h2s_loop *loop)
{
    if (!h2o_timeout_is_linked(&loop->fire_entry))
        h2o_timeout_link(loop->evloop, &loop->fire_phase, &loop->fire_entry);
}

/* The core loop answers what is due, if a batch is (loop_fire); the timerfd is armed for the
 * next (anew if it expired for a request gone since). */
static void on_fire(h2o_timeout_entry_t *entry)
{
    struct h2s_loop *loop = H2O_STRUCT_FROM_MEMBER(struct h2s_loop, fire_entry, entry);
    if (loop_fire(&loop->core, timer_now_us()))
        loop->armed_us = 0; /* re-armed from the heap */
    arm_timer(loop);
}

static void on_timer(h2o_socket_t *sock, const char *err)
{
    struct h2s_loop *loop = sock->data;
    uint64_t expirations;
    (void)err;
    if (read(loop->timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        LOG(loop->srv->log, LOG_LEVEL_WARN, "timerfd read: %s", strerror(errno));
    loop->armed_us = 0; /* expired: nothing is armed now */

    want_fire(loop); /* on_fire answers at the end of this turn */
}

static long on_lookup(void *ctx, enum route_input kind, const char *name, char *buf, size_t len)
{
    h2o_req_t *req = ctx;
    if (kind == ROUTE_QUERY) {
        if (req->query_at == SIZE_MAX)
            return -1;
        return target_query_param(req->path.base + req->query_at + 1,
                                  req->path.len - req->query_at - 1, name, buf, len);
    }
    char lower[64];
    size_t n = strlen(name) < sizeof lower ? strlen(name) : sizeof lower;
    lowercase(lower, name, n);
    ssize_t i = h2o_find_header_by_str(&req->headers, lower, n, -1);
    if (i < 0)
        return -1;
    h2o_iovec_t v = req->headers.entries[i].value;
    return route_value_copy(v.base, v.len, buf, len);
}

/* Carries out what the core said. */
static void act(struct h2s_request *r, enum exchange_do d)
{
    switch (d) {
    case EXCHANGE_DO_HOLD: /* nothing to suspend: a handler that returned is left waiting */
        act(r, loop_hold(&r->loop->core, r->x));
        return;
    case EXCHANGE_DO_ANSWER:
        respond(r);
        return;
    case EXCHANGE_DO_SEND:
        if (!r->sending) /* else libh2o still sends the previous chunk; proceed sends on */
            send_paced(r);
        return;
    case EXCHANGE_DO_RESET:
    case EXCHANGE_DO_CLOSE:
        if (!exchange_has_answered(r->x))
            break_connection(r, d == EXCHANGE_DO_RESET);
        else if (!r->sending) /* a paced body cut short; else proceed cuts it */
            h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    case EXCHANGE_DO_DROP: /* the HTTP/1 client is gone: its connection closes */
        break_connection(r, 0);
        return;
    case EXCHANGE_DO_WAIT: /* its timer is queued (loop.c called earliest if it is first) */
    case EXCHANGE_DO_READ:
    case EXCHANGE_DO_PARK:
    case EXCHANGE_DO_DONE:
        return;
    }
}

/* A parked request got its worker, or the server is stopping: hand it to its loop. Runs on any
 * thread, under the pool's lock. */
static void on_admit(struct pool_entry *e)
{
    struct h2s_request *r = exchange_owner(exchange_of_entry(e));
    loop_inbox_put(&r->loop->core, r->x);
}

/* The core loop's backend (loop.h). */
static int carry(void *ctx, struct exchange *x, enum exchange_do d)
{
    struct h2s_request *r = exchange_owner(x);
    (void)ctx;
    /* libh2o sends an HTTP/2 answer when the turn ends, an HTTP/1 answer as it is made. */
    int deferred = r->req->version >= 0x200;
    act(r, d);
    return deferred;
}

static int peer_gone(void *ctx, struct exchange *x)
{
    (void)ctx;
    return client_gone(((struct h2s_request *)exchange_owner(x))->req);
}

/* A request has waited its delay, so its record and libh2o's request are out of the cache: the
 * next answer's pool, the one after's libh2o request, the third's record. */
static void prefetch(void *ctx, struct exchange *x, unsigned ahead)
{
    struct h2s_request *r = exchange_owner(x);
    (void)ctx;
    if (ahead == 1) {
        if (r->req)
            __builtin_prefetch(r->req->pool.chunks);
    } else if (ahead == 2) {
        const char *req = (const char *)r->req;
        for (size_t off = 0; req && off < sizeof *r->req; off += 64)
            __builtin_prefetch(req + off);
    } else {
        __builtin_prefetch(&r->req);
        __builtin_prefetch(r->x);
    }
}

static void quiesce(struct h2s_loop *loop);

static void be_quiesce(void *ctx)
{
    quiesce(ctx);
}

static void wake(void *ctx)
{
    struct h2s_loop *loop = ctx;
    uint64_t one = 1;
    if (write(loop->wake_fd, &one, sizeof one) < 0)
        LOG(loop->srv->log, LOG_LEVEL_WARN, "cannot wake loop %zu: %s", loop->index,
            strerror(errno));
}

/* A timer just queued is the earliest: the timerfd is armed for it. */
static void earliest(void *ctx)
{
    arm_timer(ctx);
}

static const struct loop_backend core_backend = {
    .carry = carry,
    .peer_gone = peer_gone,
    .prefetch = prefetch,
    .quiesce = be_quiesce,
    .wake = wake,
    .earliest = earliest,
};

/* What slowsrv keeps of a connection: the socket's on_close data. */

static void on_conn_close(void *data)
{
    struct h2s_conn *c = data;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->loop->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    service_conn_closed(c->loop->srv->svc);
    free(c);
}

static struct h2s_conn *conn_of(h2o_req_t *req)
{
    h2o_socket_t *sock =
        req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    return sock && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
}

/* A client that stops reading: an answer (or HTTP/2 frames) waits to be written and nothing
 * has moved on the socket for --idle-timeout. The connection is shut down; libh2o then fails
 * its write and closes it. Its memory is bounded meanwhile: bodies are sent from where they
 * live, never copied (send_plan). Runs every STALL_EVERY_US from the loop (serve). */
static void sweep_stalled(struct h2s_loop *loop, uint64_t now)
{
    uint64_t limit = loop->srv->cfg->idle_timeout_us;
    size_t cut = 0;
    for (struct h2s_conn *c = loop->conns; c; c = c->next) {
        int waiting = c->answering || h2o_socket_is_writing(c->sock);
        if (!waiting || c->sock->bytes_written != c->written) {
            c->written = c->sock->bytes_written;
            c->still_since = now;
        } else if (now - c->still_since >= limit) {
            shutdown(h2o_socket_get_fd(c->sock), SHUT_RDWR);
            c->still_since = UINT64_MAX / 2; /* once */
            cut++;
        }
    }
    if (cut)
        LOG(loop->srv->log, LOG_LEVEL_DEBUG,
            "closed %zu connections that read nothing for --idle-timeout", cut);
}

/* --max-requests: 1 if this is the last HTTP/1.1 request the connection may carry (it is answered
 * with Connection: close, and what was pipelined after it goes with the connection). */
static int last_request(h2o_req_t *req, const struct service *svc)
{
    if (!svc->max_requests)
        return 0;
    struct h2s_conn *c = conn_of(req);
    return c && service_request_on_connection(svc, &c->requests) && req->version < 0x200;
}

/* libh2o 2.2.5 takes much larger header blocks than libmicrohttpd; the core holds both engines
 * to the same limits. */
static size_t header_bytes(const h2o_req_t *req)
{
    size_t n = 0;
    for (size_t i = 0; i < req->headers.size; i++)
        n += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
    return n;
}

/* picohttpparser's request parser: libh2o exports it, Debian ships no header for it. */
struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len);

/* The HTTP/1.x head of req as received, parsed again into *h (fields into f), or NULL over
 * HTTP/2 or if the buffer does not start with this request (then libh2o's own checks stand).
 * libh2o keeps only the first Content-Length, folds Host, Expect and Transfer-Encoding away from
 * req->headers, and reads the body before the handler; but its HTTP/1.x connection keeps the
 * head as received at the start of the socket's input buffer until the answer is done. */
static const struct head *raw_head(h2o_req_t *req, struct head *h, struct head_field *f)
{
    if (req->version >= 0x200)
        return NULL;
    h2o_socket_t *sock =
        req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    h2o_buffer_t *in = sock ? sock->input : NULL;
    struct phr_header ph[HEAD_MAX_FIELDS + 1];
    size_t n = HEAD_MAX_FIELDS + 1;
    const char *m, *path;
    size_t mlen, plen;
    int minor;
    if (!in ||
        phr_parse_request(in->bytes, in->size, &m, &mlen, &path, &plen, &minor, ph, &n, 0) <= 0 ||
        mlen != req->method.len || memcmp(m, req->method.base, mlen) != 0 ||
        plen != req->path.len || memcmp(path, req->path.base, plen) != 0)
        return NULL;
    *h = (struct head){.method = m,
                       .mlen = mlen,
                       .target = path,
                       .tlen = plen,
                       .minor = (unsigned)minor,
                       .fields = f,
                       .nfields = n};
    for (size_t i = 0; i < n && i < HEAD_MAX_FIELDS; i++) {
        /* picohttpparser gives a continuation line as a field without a name. */
        h->folded |= ph[i].name == NULL;
        f[i] = (struct head_field){ph[i].name ? ph[i].name : "", ph[i].name ? ph[i].name_len : 0,
                                   ph[i].value, ph[i].value_len};
    }
    return h;
}

/* A request of loop's main listener or (control) of its control listener, read whole by libh2o:
 * the core plans and answers it (exchange.h). */
static int begin_request(struct h2s_loop *loop, h2o_req_t *req, int control)
{
    char method[32];
    size_t mlen = req->method.len < sizeof method - 1 ? req->method.len : sizeof method - 1;

    /* Due requests are answered at the end of the turn (on_fire), never from here: answering
     * them while arrivals are read ties the two together, so that one second's answers and the
     * next second's arrivals gather into a burst that never spreads out again. At 10 000
     * HTTP/1.1 connections that kept 0.8 of ideal with 200 ms of lateness (doc/benchmarks.md). */
    memcpy(method, req->method.base, mlen);
    method[mlen] = '\0';
    /* The record and its exchange live in the request's pool, whose first chunk (4 KiB) every
     * request has and little of which libh2o fills; a small shared handle brings on_dispose. A
     * record of its own (malloc) cost 0.6 KiB more a waiting request. */
    size_t rsize =
        (sizeof(struct h2s_request) + EXCHANGE_ALIGN - 1) / EXCHANGE_ALIGN * EXCHANGE_ALIGN;
    struct h2s_request *r = h2o_mem_alloc_pool(&req->pool, rsize + exchange_size());
    struct h2s_request **handle = h2o_mem_alloc_shared(&req->pool, sizeof *handle, on_dispose);
    *handle = r;
    memset(r, 0, sizeof *r);
    r->x = (struct exchange *)(void *)((char *)r + rsize);
    r->req = req;
    r->loop = loop;
    if ((r->on = conn_of(req)) != NULL) {
        r->on->active++;
        r->on->h2 |= req->version >= 0x200;
    }
    struct sockaddr_storage peer;
    socklen_t plen = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer);
    struct head head;
    struct head_field fields[HEAD_MAX_FIELDS];
    /* Routed by the normalized path (percent-decoded, no dot segments), as libmicrohttpd does;
     * the query is read raw (on_lookup), and the limits and the log see the target as sent. */
    struct route_request in = {.method = method,
                               .target = req->path_normalized.base,
                               .target_len = req->path_normalized.len,
                               .target_bytes = req->path.len,
                               .raw_target = req->path.base,
                               .raw_target_len = req->path.len,
                               .lookup = on_lookup,
                               .ctx = req,
                               .peer = plen ? (struct sockaddr *)&peer : NULL,
                               .header_bytes = header_bytes(req),
                               .last = last_request(req, loop->srv->svc),
                               .head = raw_head(req, &head, fields),
                               .control = control};
    enum exchange_do d = exchange_on_head(r->x, r, loop->srv->svc, loop->shard, &in, on_admit);
    loop->active++;
    /* libh2o has read the whole body already. */
    if (d == EXCHANGE_DO_READ && req->entity.base)
        d = exchange_on_body(r->x, req->entity.base, req->entity.len);
    if (d == EXCHANGE_DO_READ || d == EXCHANGE_DO_ANSWER)
        d = exchange_next(r->x);
    /* A request about to wait keeps only what its pool holds, not libh2o's 4 KiB chunk: nothing
     * but the request, its pool and the handle point into the pool yet (pool_fit.h). */
    if (d == EXCHANGE_DO_HOLD)
        *handle = r = pool_fit(req, r);
    act(r, d);
    want_fire(loop);
    return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    return begin_request(
        (struct h2s_loop *)(void *)((char *)req->conn->ctx - offsetof(struct h2s_loop, ctx)), req,
        0);
}

static int on_control_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    return begin_request(
        (struct h2s_loop *)(void *)((char *)req->conn->ctx - offsetof(struct h2s_loop, ctl_ctx)),
        req, 1);
}

static void on_accept(h2o_socket_t *listener, const char *err);

static void on_accept_resume(h2o_timeout_entry_t *entry)
{
    struct h2s_loop *loop = H2O_STRUCT_FROM_MEMBER(struct h2s_loop, accept_resume, entry);
    if (loop->listener)
        h2o_socket_read_start(loop->listener, on_accept);
}

static void on_limit_resume(h2o_timeout_entry_t *entry)
{
    struct h2s_loop *loop = H2O_STRUCT_FROM_MEMBER(struct h2s_loop, limit_resume, entry);
    if (loop->listener)
        h2o_socket_read_start(loop->listener, on_accept);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    struct h2s_loop *loop = listener->data;
    h2o_socket_t *sock = NULL;
    char msg[160];
    if (err)
        return;
    /* Take what the backlog holds, a bounded batch per wake-up so one loop cannot starve. */
    for (int i = 0; i < NET_ACCEPT_BATCH; i++) {
        /* At --max-connections (all loops together) the listener rests: new connections wait
         * in the backlog (service.h), as on slowsrv. */
        if (service_conn_reserve(loop->srv->svc) != 0) {
            h2o_socket_read_stop(listener);
            h2o_timeout_link(loop->evloop, &loop->limit_pause, &loop->limit_resume);
            return;
        }
        if ((sock = h2o_evloop_socket_accept(listener)) == NULL) {
            service_conn_closed(loop->srv->svc);
            break;
        }
        struct h2s_conn *c = malloc(sizeof *c);
        if (!c) {
            service_conn_closed(loop->srv->svc);
            h2o_socket_close(sock);
            continue;
        }
        /* Every field not named here starts at zero (a field added later included). */
        *c = (struct h2s_conn){
            .loop = loop, .sock = sock, .next = loop->conns, .still_since = timer_now_us()};
        if (c->next)
            c->next->prev = c;
        loop->conns = c;
        sock->on_close.cb = on_conn_close;
        sock->on_close.data = c;
        h2o_accept(&loop->accept_ctx, sock);
    }
    if (!sock && net_accept_starved(errno, timer_now_us(), &loop->accept_warned, msg, sizeof msg)) {
        if (msg[0])
            LOG(loop->srv->log, LOG_LEVEL_WARN, "%s", msg);
        h2o_socket_read_stop(listener);
        h2o_timeout_link(loop->evloop, &loop->accept_pause, &loop->accept_resume);
    }
}

/* Stops accepting. */
static void quiesce(struct h2s_loop *loop)
{
    if (!loop->listener)
        return;
    if (h2o_timeout_is_linked(&loop->accept_resume))
        h2o_timeout_unlink(&loop->accept_resume);
    if (h2o_timeout_is_linked(&loop->limit_resume))
        h2o_timeout_unlink(&loop->limit_resume);
    h2o_socket_read_stop(loop->listener);
    h2o_socket_close(loop->listener);
    loop->listener = NULL;
    /* An HTTP/1.x connection that carries no request is shut down, as on slowsrv (its
     * conns.c); libh2o then closes it. HTTP/2 ones get libh2o's GOAWAY and end with their
     * streams. One whose request is under way is served and closed after its answer. */
    for (struct h2s_conn *c = loop->conns; c; c = c->next)
        if (!c->active && !c->h2)
            shutdown(h2o_socket_get_fd(c->sock), SHUT_RDWR);
}

static void on_wake(h2o_socket_t *sock, const char *err)
{
    struct h2s_loop *loop = sock->data;
    uint64_t v;
    (void)err;
    if (read(loop->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
        return;
    /* Handed back by the pool; a stop is seen by the loop after this turn. */
    loop_inbox_take(&loop->core);
}

static int conns_open(h2o_context_t *ctx)
{
    return !h2o_linklist_is_empty(&ctx->http1._conns) || !h2o_linklist_is_empty(&ctx->http2._conns);
}

/* One turn of libh2o's loop, waiting up to wait_ms; 0, or -1 on a loop error. */
static int turn(struct h2s_loop *loop, uint64_t wait_ms)
{
    if (h2o_evloop_run(loop->evloop, (int32_t)(wait_ms < INT32_MAX ? wait_ms : INT32_MAX)) != 0 &&
        errno != EINTR) {
        LOG(loop->srv->log, LOG_LEVEL_ERROR, "event loop: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* How often a loop looks for stalled readers: --idle-timeout is kept to within this. */
#define STALL_EVERY_US (250 * 1000)

/* Serves until the stop is over (loop_stop_step). */
static void serve(struct h2s_loop *loop)
{
    struct app_server *srv = loop->srv;
    for (;;) {
        uint64_t now = timer_now_us();
        /* Timers are the timerfd's: the wait is for the stop's steps and the sweep. */
        uint64_t wait_us = UINT64_MAX;
        if (loop_stop_step(&loop->core, atomic_load(&srv->stopping), loop->active, now, &wait_us))
            return;
        if (srv->cfg->idle_timeout_us) {
            if (now >= loop->next_sweep) {
                sweep_stalled(loop, now);
                loop->next_sweep = now + STALL_EVERY_US;
            }
            wait_us = wait_us < STALL_EVERY_US ? wait_us : STALL_EVERY_US;
        }
        if (loop->core.more_due)
            want_fire(loop); /* and libh2o's next turn does not wait */
        if (turn(loop, wait_us / 1000) != 0)
            return;
    }
}

/* Idle connections closing after the stop: at most this long. */
#define CLOSE_WAIT_US (1000 * 1000)

/* Releases the loop in its own thread, as libh2o's buffer caches are per thread. A context
 * with connections still open (after the extra second) is left as it is: disposing it would
 * pull memory from under them. */
static void control_end(struct h2s_loop *loop);

static void teardown(struct h2s_loop *loop)
{
    control_end(loop);
    h2o_socket_read_stop(loop->timer_sock);
    h2o_socket_close(loop->timer_sock);
    h2o_socket_read_stop(loop->wake_sock);
    h2o_socket_close(loop->wake_sock);
    loop->timer_sock = loop->wake_sock = NULL;
    loop->timer_fd = -1;
    h2o_evloop_run(loop->evloop, 0);
    if (conns_open(&loop->ctx)) {
        LOG(loop->srv->log, LOG_LEVEL_WARN, "loop %zu: connections still open at exit",
            loop->index);
        return;
    }
    /* request_shutdown left HTTP/2's graceful-shutdown timer linked; dispose insists that
     * every timer list is empty. */
    if (h2o_timeout_is_linked(&loop->ctx.http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&loop->ctx.http2._graceful_shutdown_timeout);
    h2o_context_dispose(&loop->ctx);
    if (h2o_timeout_is_linked(&loop->fire_entry))
        h2o_timeout_unlink(&loop->fire_entry);
    h2o_timeout_dispose(loop->evloop, &loop->fire_phase);
    h2o_timeout_dispose(loop->evloop, &loop->accept_pause);
    h2o_timeout_dispose(loop->evloop, &loop->limit_pause);
    h2o_evloop_destroy(loop->evloop);
    loop->evloop = NULL;
    /* Empty this thread's socket-buffer cache through the public allocator calls. */
    h2o_mem_recycle_t *cache = &h2o_socket_buffer_prototype.allocator;
    while (cache->cnt > 0)
        free(h2o_mem_alloc_recycle(cache, 0));
}

static void on_control_accept(h2o_socket_t *listener, const char *err)
{
    struct h2s_loop *loop = listener->data;
    h2o_socket_t *sock;
    if (err)
        return;
    for (int i = 0; i < 16 && (sock = h2o_evloop_socket_accept(listener)) != NULL; i++)
        h2o_accept(&loop->ctl_accept, sock);
}

/* Loop 0 serves the control API beside its own work: a change is a short call into the core. */
static void control_begin(struct h2s_loop *loop)
{
    struct app_server *srv = loop->srv;
    if (loop->index != 0 || srv->control_fd < 0)
        return;
    h2o_context_init(&loop->ctl_ctx, loop->evloop, &srv->ctl_conf);
    loop->ctl_accept.ctx = &loop->ctl_ctx;
    loop->ctl_accept.hosts = srv->ctl_conf.hosts;
    loop->ctl_listener =
        h2o_evloop_socket_create(loop->evloop, srv->control_fd, H2O_SOCKET_FLAG_DONT_READ);
    loop->ctl_listener->data = loop;
    srv->control_fd = -1;
    loop->ctl_ready = 1;
    h2o_socket_read_start(loop->ctl_listener, on_control_accept);
}

static void control_end(struct h2s_loop *loop)
{
    if (!loop->ctl_ready)
        return;
    if (loop->ctl_listener) {
        h2o_socket_read_stop(loop->ctl_listener);
        h2o_socket_close(loop->ctl_listener);
        loop->ctl_listener = NULL;
    }
    /* Each answer closes its connection: at most one still in its answer is waited for. */
    uint64_t until = timer_now_us() + CLOSE_WAIT_US;
    while (conns_open(&loop->ctl_ctx) && timer_now_us() < until &&
           turn(loop, LOOP_DRAIN_TICK_US / 1000) == 0)
        ;
    if (!conns_open(&loop->ctl_ctx))
        h2o_context_dispose(&loop->ctl_ctx);
    loop->ctl_ready = 0;
}

static void *loop_main(void *arg)
{
    struct h2s_loop *loop = arg;
    struct app_server *srv = loop->srv;

    /* libh2o keeps per-thread buffer pools: the loop and context are made in their thread.
     * A connection's input buffer holds its request's head until the answer is sent. libh2o
     * makes it 8 KiB, and reads with 4 KiB free at least: 4 KiB and room for a usual head (a
     * larger one grows the buffer) hold a waiting HTTP/1.1 connection to nginx's memory. */
    h2o_socket_buffer_prototype._initial_buf.capacity = H2O_SOCKET_INITIAL_INPUT_BUFFER_SIZE + 512;
    loop->evloop = h2o_evloop_create();
    /* Before the contexts' lists: libh2o runs a turn's timeout lists in the order made. */
    h2o_timeout_init(loop->evloop, &loop->fire_phase, 0);
    loop->fire_entry.cb = on_fire;
    h2o_context_init(&loop->ctx, loop->evloop, &srv->globalconf);
    loop->accept_ctx.ctx = &loop->ctx;
    loop->accept_ctx.hosts = srv->globalconf.hosts;
    loop->accept_ctx.ssl_ctx = srv->ssl_ctx;
    loop->listener =
        h2o_evloop_socket_create(loop->evloop, loop->listen_fd, H2O_SOCKET_FLAG_DONT_READ);
    loop->listener->data = loop;
    loop->listen_fd = -1; /* the listener socket owns it now */
    h2o_timeout_init(loop->evloop, &loop->accept_pause, NET_ACCEPT_PAUSE_US / 1000);
    loop->accept_resume.cb = on_accept_resume;
    h2o_timeout_init(loop->evloop, &loop->limit_pause, SERVICE_LIMIT_RETRY_US / 1000);
    loop->limit_resume.cb = on_limit_resume;
    h2o_socket_read_start(loop->listener, on_accept);
    loop->timer_sock =
        h2o_evloop_socket_create(loop->evloop, loop->timer_fd, H2O_SOCKET_FLAG_DONT_READ);
    loop->timer_sock->data = loop;
    h2o_socket_read_start(loop->timer_sock, on_timer);
    loop->wake_sock =
        h2o_evloop_socket_create(loop->evloop, loop->wake_poll_fd, H2O_SOCKET_FLAG_DONT_READ);
    loop->wake_poll_fd = -1; /* the socket owns it now */
    loop->wake_sock->data = loop;
    h2o_socket_read_start(loop->wake_sock, on_wake);
    control_begin(loop);
    atomic_fetch_add(&srv->ready, 1);

    serve(loop);
    /* Idle keep-alive connections and HTTP/2 sessions are asked to close, and get one more
     * second. */
    h2o_context_request_shutdown(&loop->ctx);
    uint64_t until = timer_now_us() + CLOSE_WAIT_US;
    while (conns_open(&loop->ctx) && timer_now_us() < until &&
           turn(loop, LOOP_DRAIN_TICK_US / 1000) == 0)
        ;
    /* libh2o 2.2.5 leaves an idle HTTP/1 keep-alive connection open on a shutdown request: what
     * is still open is shut down under it, and libh2o closes it (and frees it) on the end of
     * stream it then reads. */
    for (struct h2s_conn *c = loop->conns; c; c = c->next)
        shutdown(h2o_socket_get_fd(c->sock), SHUT_RDWR);
    until = timer_now_us() + CLOSE_WAIT_US;
    while (conns_open(&loop->ctx) && timer_now_us() < until &&
           turn(loop, LOOP_DRAIN_TICK_US / 1000) == 0)
        ;
    teardown(loop);
    return NULL;
}

static int setup_tls(struct app_server *srv, char *err)
{
    const struct config *cfg = srv->cfg;
    srv->ssl_ctx = SSL_CTX_new(TLS_server_method());
    if (!srv->ssl_ctx) {
        snprintf(err, CORE_ERR_LEN, "tls: cannot create an OpenSSL context");
        return -EINVAL;
    }
    SSL_CTX_set_min_proto_version(srv->ssl_ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(srv->ssl_ctx, cfg->tls_cert) != 1) {
        snprintf(err, CORE_ERR_LEN, "tls-cert: cannot load '%.120s': %s", cfg->tls_cert,
                 ERR_reason_error_string(ERR_get_error()));
        return -EINVAL;
    }
    if (SSL_CTX_use_PrivateKey_file(srv->ssl_ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(srv->ssl_ctx) != 1) {
        snprintf(err, CORE_ERR_LEN, "tls-key: cannot load '%.120s' for the certificate: %s",
                 cfg->tls_key, ERR_reason_error_string(ERR_get_error()));
        return -EINVAL;
    }
    h2o_ssl_register_alpn_protocols(srv->ssl_ctx, h2o_http2_alpn_protocols);
    return 0;
}

/* One listener's libh2o configuration: its body limit, the timeouts of the options, one handler. */
static void configure(h2o_globalconf_t *g, const struct config *cfg, uint64_t max_body,
                      int (*on)(h2o_handler_t *, h2o_req_t *))
{
    h2o_config_init(g);
    g->server_name = h2o_iovec_init(H2O_STRLIT(""));
    g->max_request_entity_size = max_body;
    /* libh2o 2.2.5 has one clock for an HTTP/1 request: from the connection's opening or the
     * previous answer to the request's last byte (headers, then body), so it serves as both
     * --header-timeout and --idle-timeout: the shorter of the two (0 is never), so that neither
     * bound is ever exceeded. HTTP/2 has an idle timeout of its own. */
    uint64_t ht = cfg->header_timeout_us, it = cfg->idle_timeout_us;
    uint64_t h1 = !ht ? it : !it ? ht : ht < it ? ht : it;
    g->http1.req_timeout = h1 ? h1 / 1000 : UINT32_MAX;
    g->http2.idle_timeout = it ? it / 1000 : UINT32_MAX;
    /* The TLS handshake counts in --header-timeout (libh2o's own default is 10 s), as the
     * first request's head is due from the connection's opening on slowsrv too. */
    g->handshake_timeout = ht ? ht / 1000 : UINT32_MAX;
    h2o_hostconf_t *host =
        h2o_config_register_host(g, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_handler_t *handler =
        h2o_create_handler(h2o_config_register_path(host, "/", 0), sizeof *handler);
    handler->on_req = on;
}

static int setup_globalconf(struct app_server *srv, char *err)
{
    if (!pool_fit_init())
        LOG(srv->log, LOG_LEVEL_INFO, "%s",
            "libh2o's pool layout is not 2.2.5's: waiting requests keep their 4 KiB chunk");
    configure(&srv->globalconf, srv->cfg, srv->cfg->max_body, on_req);
    /* The control API (--control) has a host of its own, on its own listener: a body over its
     * limit gets libh2o's 413 from the head, before any of it is read. */
    configure(&srv->ctl_conf, srv->cfg, CONTROL_BODY_MAX, on_control_req);
    /* The spool template is a libh2o global: set it before any loop runs. */
    char *tmpl = h2o_socket_buffer_mmap_settings.fn_template;
    size_t room = sizeof h2o_socket_buffer_mmap_settings.fn_template;
    if ((size_t)snprintf(tmpl, room, "%s/slowsrv-h2o.b.XXXXXX", srv->cfg->spool_dir) >= room) {
        snprintf(err, CORE_ERR_LEN, "spool-dir: path too long");
        return -EINVAL;
    }
    return 0;
}

/* Makes the server: libh2o's configuration, and OpenSSL's context when serving HTTPS (a
 * certificate or key it refuses is a config error, found before the port is bound). */
static int h2s_server_prepare(struct app_server **out, const struct config *cfg,
                              const struct log *lg, char *err, size_t errlen)
{
    struct app_server *srv = calloc(1, sizeof *srv);
    (void)errlen;
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *out = srv;
    srv->cfg = cfg;
    srv->log = lg;
    srv->control_fd = -1;
    atomic_init(&srv->stopping, 0);
    atomic_init(&srv->ready, 0);
    int rc = setup_globalconf(srv, err);
    if (rc == 0 && cfg->tls_cert[0])
        rc = setup_tls(srv, err);
    return rc;
}

/* The loops, each with its listening socket, timer heap, timerfd and wake-up eventfd, in
 * threads of their own; returns once every one of them serves. */
static int h2s_server_start(struct app_server *srv, struct app_base *base, char *err, size_t errlen)
{
    const struct config *cfg = srv->cfg;
    int rc = 0;
    srv->svc = base->svc;
    srv->control_fd = base->control_fd;
    base->control_fd = -1; /* loop 0 takes it */
    if (!(srv->loops = calloc(base->nloops, sizeof *srv->loops))) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    srv->nloops = base->nloops;
    for (size_t i = 0; i < srv->nloops; i++) {
        srv->loops[i].listen_fd = base->listen_fds[i];
        base->listen_fds[i] = -1;
        srv->loops[i].timer_fd = srv->loops[i].wake_fd = srv->loops[i].wake_poll_fd = -1;
    }
    /* Any one loop may hold every connection the limit allows. */
    size_t per_loop = cfg->max_connections;
    for (size_t i = 0; i < srv->nloops; i++) {
        struct h2s_loop *loop = &srv->loops[i];
        loop->srv = srv;
        loop->index = i;
        loop->shard = service_shard(srv->svc, i);
        loop->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        loop->wake_poll_fd = loop->wake_fd < 0 ? -1 : fcntl(loop->wake_fd, F_DUPFD_CLOEXEC, 0);
        /* HTTP/2 multiplexes: a loop may hold up to 100 waiting streams per connection. */
        if (loop->timer_fd < 0 || loop->wake_fd < 0 || loop->wake_poll_fd < 0 ||
            loop_init(&loop->core, &core_backend, loop, srv->svc, per_loop * 100, cfg->grace_us) !=
                0) {
            snprintf(err, errlen, "loop set-up: %s", strerror(errno));
            rc = -ENOMEM;
            break;
        }
    }
    for (size_t i = 0; rc == 0 && i < srv->nloops; i++) {
        rc = -pthread_create(&srv->loops[i].thread, NULL, loop_main, &srv->loops[i]);
        if (rc != 0)
            snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
        else
            srv->loops[i].thread_started = 1;
    }
    /* The loops make their contexts in their own threads; "listening" (and READY=1) is only
     * said once every one of them serves. */
    uint64_t deadline = timer_now_us() + 10 * 1000000;
    while (rc == 0 && atomic_load(&srv->ready) < srv->nloops && timer_now_us() < deadline) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (rc == 0 && atomic_load(&srv->ready) < srv->nloops) {
        snprintf(err, errlen, "event loops did not start within 10 s");
        rc = -ETIMEDOUT;
    }
    if (rc != 0)
        h2s_server_stop(srv);
    return rc;
}

static void h2s_server_stop(struct app_server *srv)
{
    atomic_store(&srv->stopping, 1);
    for (size_t i = 0; i < srv->nloops; i++) {
        uint64_t one = 1;
        if (srv->loops[i].thread_started && write(srv->loops[i].wake_fd, &one, sizeof one) < 0)
            LOG(srv->log, LOG_LEVEL_WARN, "cannot wake loop %zu: %s", i, strerror(errno));
    }
    for (size_t i = 0; i < srv->nloops; i++) {
        if (srv->loops[i].thread_started)
            pthread_join(srv->loops[i].thread, NULL);
        srv->loops[i].thread_started = 0;
    }
}

static void h2s_server_free(struct app_server *srv)
{
    if (!srv)
        return;
    for (size_t i = 0; srv->loops && i < srv->nloops; i++) {
        struct h2s_loop *loop = &srv->loops[i];
        net_close(&loop->listen_fd);
        net_close(&loop->timer_fd);
        net_close(&loop->wake_fd);
        net_close(&loop->wake_poll_fd);
        if (loop->srv)
            loop_cleanup(&loop->core);
    }
    free(srv->loops);
    net_close(&srv->control_fd);
    if (srv->globalconf.hosts)
        h2o_config_dispose(&srv->globalconf);
    if (srv->ctl_conf.hosts)
        h2o_config_dispose(&srv->ctl_conf);
    if (srv->ssl_ctx)
        SSL_CTX_free(srv->ssl_ctx);
    free(srv);
}

static const char *library(void)
{
    return "libh2o " H2O_VERSION;
}

const struct app_engine h2o_engine = {
    .caps = {.program = "slowsrv-h2o",
             .description = "libh2o engine",
             .models = CONFIG_MODEL_BIT(CONFIG_MODEL_EPOLL),
             .models_name = "event loops",
             .others = "slowsrv (libmicrohttpd)"},
    .name = "h2o",
    .library = library,
    .prepare = h2s_server_prepare,
    .start = h2s_server_start,
    .stop = h2s_server_stop,
    .free = h2s_server_free,
};
