/*
 * A loop thread of slowsrv-h2o: libh2o's evloop as the core loop's backend (loop.h). The core
 * decides when (its timer heap, armed on a timerfd; its sweeps; its stop); libh2o waits for the
 * sockets, and the core's accepted connections are handed to it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "h2o.h"

/* Idle connections closing after the stop: at most this long. */
#define CLOSE_WAIT_US (1000 * 1000)

/* Arms the timerfd for when the core loop answers next (loop_next_fire_us). */
static void arm_timer(struct h2s_loop *loop)
{
    uint64_t due = loop_next_fire_us(&loop->core, timer_now_us());
    /* An earlier deadline than the armed one must re-arm; a later one can wait for the next
     * expiry, which re-arms from the heap anyway. */
    if (due == loop->armed_us || (due && loop->armed_us && loop->armed_us < due))
        return;
    struct itimerspec its = {.it_value = {(time_t)(due / 1000000), (long)(due % 1000000) * 1000}};
    timerfd_settime(loop->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
    loop->armed_us = due;
}

/* Asks this turn's timeout phase to answer what is due by then (on_fire). Called by the
 * timerfd, by every request read and between turns while more are due (serve). The timerfd alone
 * was not enough: epoll hands out ready sockets in the order they became ready, 256 a turn, so
 * with thousands of connections readable the timerfd waited turns behind them, and a wave of
 * due answers went out late (doc/benchmarks.md). */
void h2s_want_fire(struct h2s_loop *loop)
{
    if (!h2o_timeout_is_linked(&loop->fire_entry))
        h2o_timeout_link(loop->evloop, &loop->fire_phase, &loop->fire_entry);
}

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
    loop->armed_us = 0;  /* expired: nothing is armed now */
    h2s_want_fire(loop); /* on_fire answers at the end of this turn */
}

/* Handed back by the pool; a stop is seen by the loop after this turn. */
static void on_wake(h2o_socket_t *sock, const char *err)
{
    (void)err;
    loop_woken(&((struct h2s_loop *)sock->data)->core);
}

void h2s_conn_free(struct h2s_conn *c)
{
    free(c->refusal);
    free(c->deferred_head);
    if (h2o_timeout_is_linked(&c->fire))
        h2o_timeout_unlink(&c->fire);
    h2s_budget_free(c->h2);
    free(c);
}

int h2s_call_library(struct h2s_conn *c, h2o_socket_t *sock, h2o_socket_cb cb, const char *err)
{
    c->busy++;
    cb(sock, err);
    c->busy--;
    if (c->closed) {
        if (!c->busy)
            h2s_conn_free(c);
        return -1;
    }
    return 0;
}

void h2s_on_conn_close(void *data)
{
    struct h2s_conn *c = data;
    loop_conn_closed(&c->loop->core, &c->c);
    if (c->busy)
        c->closed = 1;
    else
        h2s_conn_free(c);
}

static void on_accept(h2o_socket_t *listener, const char *err);

/* A listener rests at the limit or out of descriptors (loop_accept); both start again here. */
static void resume_listeners(struct h2s_loop *loop)
{
    if (loop->listener)
        h2o_socket_read_start(loop->listener, on_accept);
    if (loop->ctl_listener)
        h2o_socket_read_start(loop->ctl_listener, on_accept);
}

static void on_resume_limit(h2o_timeout_entry_t *entry)
{
    resume_listeners(H2O_STRUCT_FROM_MEMBER(struct h2s_loop, resume[0], entry));
}

static void on_resume_starved(h2o_timeout_entry_t *entry)
{
    resume_listeners(H2O_STRUCT_FROM_MEMBER(struct h2s_loop, resume[1], entry));
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    struct h2s_loop *loop = listener->data;
    char msg[160];
    if (err)
        return;
    uint64_t rest = loop_accept(&loop->core, h2o_socket_get_fd(listener),
                                listener == loop->ctl_listener, timer_now_us(), msg, sizeof msg);
    if (msg[0])
        LOG(loop->srv->log, LOG_LEVEL_WARN, "%s", msg);
    if (!rest)
        return;
    h2o_socket_read_stop(listener);
    int k = rest == SERVICE_LIMIT_RETRY_US ? 0 : 1;
    if (!h2o_timeout_is_linked(&loop->resume[k]))
        h2o_timeout_link(loop->evloop, &loop->pause[k], &loop->resume[k]);
}

static void wait(void *ctx, uint64_t wait_us);

/* The core loop's backend (loop.h). */
static int adopt(void *ctx, int fd, const struct sockaddr *peer, socklen_t len, int control)
{
    struct h2s_loop *loop = ctx;
    struct h2s_conn *c = malloc(sizeof *c);
    (void)peer;
    (void)len;
    if (!c) {
        close(fd);
        return -1;
    }
    h2o_socket_t *sock =
        h2o_evloop_socket_create(loop->evloop, fd, H2O_SOCKET_FLAG_IS_ACCEPTED_CONNECTION);
    *c = (struct h2s_conn){.loop = loop, .sock = sock};
    loop_conn_opened(&loop->core, &c->c, fd, control);
    sock->on_close.cb = h2s_on_conn_close;
    sock->on_close.data = c;
    h2o_accept(control ? &loop->ctl_accept : &loop->accept_ctx, sock);
    return 0;
}

/* An HTTP/1.x connection's input buffer holds what libh2o read of the next request's head. */
static int reading(void *ctx, struct conn *c)
{
    h2o_socket_t *sock = ((struct h2s_conn *)(void *)c)->sock;
    (void)ctx;
    return sock->input && sock->input->size > 0;
}

/* Closes a listener (the main one or the control one) once. */
static void unlisten(h2o_socket_t **listener)
{
    if (!*listener)
        return;
    h2o_socket_read_stop(*listener);
    h2o_socket_close(*listener);
    *listener = NULL;
}

/* Stops accepting, on both listeners. */
static void quiesce(void *ctx)
{
    struct h2s_loop *loop = ctx;
    unlisten(&loop->listener);
    unlisten(&loop->ctl_listener);
}

/* A timer just queued is the earliest: the timerfd is armed for it. */
static void earliest(void *ctx)
{
    arm_timer(ctx);
}

const struct loop_backend h2s_backend = {
    .adopt = adopt,
    .reading = reading,
    .carry = h2s_carry,
    .peer_gone = h2s_peer_gone,
    .prefetch = h2s_prefetch,
    .quiesce = quiesce,
    .wait = wait,
    .fires_in_wait = 1,
    .earliest = earliest,
};

static int conns_open(h2o_context_t *ctx)
{
    return !h2o_linklist_is_empty(&ctx->http1._conns) || !h2o_linklist_is_empty(&ctx->http2._conns);
}

/* One turn of libh2o's loop, waiting up to wait_us. libh2o returns -1 on EINTR too, which is no
 * error. */
static void turn(struct h2s_loop *loop, uint64_t wait_us)
{
    uint64_t ms = (wait_us + 999) / 1000;
    if (h2o_evloop_run(loop->evloop, (int32_t)(ms < INT32_MAX ? ms : INT32_MAX)) != 0 &&
        errno != EINTR)
        LOG(loop->srv->log, LOG_LEVEL_ERROR, "event loop: %s", strerror(errno));
}

/* loop_run's wait: one turn, which answers what is due in its timeout phase (on_fire). */
static void wait(void *ctx, uint64_t wait_us)
{
    struct h2s_loop *loop = ctx;
    if (loop->core.more_due)
        h2s_want_fire(loop); /* and the turn does not wait */
    turn(loop, wait_us);
}

/* Turns until ctx's connections are closed, for at most CLOSE_WAIT_US. */
static void close_wait(struct h2s_loop *loop, h2o_context_t *ctx)
{
    uint64_t until = timer_now_us() + CLOSE_WAIT_US;
    while (conns_open(ctx) && timer_now_us() < until)
        turn(loop, LOOP_DRAIN_TICK_US);
}

/* Releases the loop in its own thread, as libh2o's buffer caches are per thread. A context
 * with connections still open (after the extra second) is left as it is: disposing it would
 * pull memory from under them. */
static void teardown(struct h2s_loop *loop)
{
    if (loop->ctl_ready) {
        unlisten(&loop->ctl_listener);
        close_wait(loop, &loop->ctl_ctx);
    }
    h2o_socket_read_stop(loop->timer_sock);
    h2o_socket_close(loop->timer_sock);
    h2o_socket_read_stop(loop->wake_sock);
    h2o_socket_close(loop->wake_sock);
    loop->timer_fd = -1;
    h2o_evloop_run(loop->evloop, 0);
    if (conns_open(&loop->ctx) || (loop->ctl_ready && conns_open(&loop->ctl_ctx))) {
        LOG(loop->srv->log, LOG_LEVEL_WARN, "loop %zu: connections still open at exit",
            loop->index);
        return;
    }
    if (loop->ctl_ready)
        h2o_context_dispose(&loop->ctl_ctx);
    /* request_shutdown left HTTP/2's graceful-shutdown timer linked; dispose insists that
     * every timer list is empty. */
    if (h2o_timeout_is_linked(&loop->ctx.http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&loop->ctx.http2._graceful_shutdown_timeout);
    h2o_context_dispose(&loop->ctx);
    if (h2o_timeout_is_linked(&loop->fire_entry))
        h2o_timeout_unlink(&loop->fire_entry);
    h2o_timeout_dispose(loop->evloop, &loop->fire_phase);
    h2o_timeout_dispose(loop->evloop, &loop->h2_wait);
    for (int k = 0; k < 2; k++) {
        if (h2o_timeout_is_linked(&loop->resume[k]))
            h2o_timeout_unlink(&loop->resume[k]);
        h2o_timeout_dispose(loop->evloop, &loop->pause[k]);
    }
    h2o_evloop_destroy(loop->evloop);
    loop->evloop = NULL;
    /* Empty this thread's socket-buffer cache through the public allocator calls. */
    h2o_mem_recycle_t *cache = &h2o_socket_buffer_prototype.allocator;
    while (cache->cnt > 0)
        free(h2o_mem_alloc_recycle(cache, 0));
}

/* A socket of the loop's evloop, read by cb. */
static h2o_socket_t *watch(struct h2s_loop *loop, int fd, h2o_socket_cb cb)
{
    h2o_socket_t *sock = h2o_evloop_socket_create(loop->evloop, fd, H2O_SOCKET_FLAG_DONT_READ);
    sock->data = loop;
    h2o_socket_read_start(sock, cb);
    return sock;
}

void *h2s_loop_main(void *arg)
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
    h2o_timeout_init(loop->evloop, &loop->pause[0], SERVICE_LIMIT_RETRY_US / 1000);
    loop->resume[0].cb = on_resume_limit;
    h2o_timeout_init(loop->evloop, &loop->pause[1], NET_ACCEPT_PAUSE_US / 1000);
    loop->resume[1].cb = on_resume_starved;
    h2o_timeout_init(loop->evloop, &loop->h2_wait, H2S_WAIT_MS);
    h2o_context_init(&loop->ctx, loop->evloop, &srv->globalconf);
    loop->accept_ctx = (h2o_accept_ctx_t){
        .ctx = &loop->ctx, .hosts = srv->globalconf.hosts, .ssl_ctx = srv->ssl_ctx};
    loop->listener = watch(loop, loop->listen_fd, on_accept);
    loop->listen_fd = -1; /* the listener socket owns it now */
    loop->timer_sock = watch(loop, loop->timer_fd, on_timer);
    loop->wake_sock = watch(loop, loop->wake_poll_fd, on_wake);
    loop->wake_poll_fd = -1; /* the socket owns it now */
    if (loop->index == 0 && srv->control_fd >= 0) {
        h2o_context_init(&loop->ctl_ctx, loop->evloop, &srv->ctl_conf);
        /* With --tls-cert the control API speaks TLS too, with the same certificate, so that
         * its token does not cross the network in clear; plain HTTP only if asked (http://). */
        loop->ctl_accept =
            (h2o_accept_ctx_t){.ctx = &loop->ctl_ctx,
                               .hosts = srv->ctl_conf.hosts,
                               .ssl_ctx = config_control_tls(srv->cfg) ? srv->ssl_ctx : NULL};
        loop->ctl_listener = watch(loop, srv->control_fd, on_accept);
        srv->control_fd = -1;
        loop->ctl_ready = 1;
    }
    atomic_fetch_add(&srv->ready, 1);

    loop_run(&loop->core, &srv->stopping);
    /* Idle keep-alive connections and HTTP/2 sessions are asked to close, and get one more
     * second. libh2o 2.2.5 leaves an idle HTTP/1 keep-alive connection open on a shutdown
     * request: what is still open then is shut down under it, and libh2o closes it (and frees
     * it) on the end of stream it then reads. */
    h2o_context_request_shutdown(&loop->ctx);
    close_wait(loop, &loop->ctx);
    conn_shut_all(&loop->core.conns);
    close_wait(loop, &loop->ctx);
    teardown(loop);
    return NULL;
}
