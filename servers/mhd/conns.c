/*
 * Connections: --max-connections over every loop, and the --header-timeout watcher.
 * libmicrohttpd has no header-read timeout of its own (its timeout is for silence, which a
 * slowloris never is), so each loop keeps its connections in a list that it sweeps for overdue
 * header blocks.
 */
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "mhd.h"
#include "net.h"

void mhd_watch_arm(struct mhd_loop *loop, struct conn_watch *w)
{
    uint64_t t = loop->srv->cfg->header_timeout_us;
    if (t && w && atomic_load_explicit(&w->deadline, memory_order_relaxed) == 0)
        atomic_store_explicit(&w->deadline, timer_now_us() + t, memory_order_relaxed);
}

static struct conn_watch refused;

struct conn_watch *mhd_watch_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci && ci->socket_context != &refused ? ci->socket_context : NULL;
}

void mhd_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe)
{
    struct mhd_shard *shard = cls;
    struct mhd_loop *loop = shard->loop;
    struct conn_watch *w = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add_explicit(&shard->conns, 1, memory_order_relaxed);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        /* --max-connections over every loop: beyond it a connection is reset at once, without
         * an answer, and counted (connections.refused), on every model alike. libmicrohttpd's
         * own limit lies above it (daemon.c), so it never leaves one in the backlog instead;
         * it sees the reset and closes the connection. */
        if (service_conn_admit(loop->srv->svc) != 0) {
            if (ci)
                net_reset(ci->connect_fd);
            *socket_context = &refused;
            return;
        }
        if (!ci || !(w = calloc(1, sizeof *w)))
            return;
        w->fd = ci->connect_fd;
        w->conn = conn;
        w->shard = shard;
        /* The first request's headers are due from the connection's opening, as in nginx. */
        mhd_watch_arm(loop, w);
        pthread_mutex_lock(&loop->watch_lock);
        w->next = loop->watched;
        if (w->next)
            w->next->prev = w;
        loop->watched = w;
        pthread_mutex_unlock(&loop->watch_lock);
        *socket_context = w;
        if (loop->srv->backend->conn)
            loop->srv->backend->conn(w, 1);
        return;
    }
    atomic_fetch_sub_explicit(&shard->conns, 1, memory_order_relaxed);
    if (w == &refused) {
        *socket_context = NULL;
        return;
    }
    service_conn_closed(loop->srv->svc);
    if (!w)
        return;
    if (loop->srv->backend->conn)
        loop->srv->backend->conn(w, 0);
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
void mhd_watch_sweep(struct mhd_loop *loop, uint64_t now)
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

/* The stop: a connection that carries no request is shut down (libmicrohttpd reads the end of
 * the stream and closes it), as nginx closes its idle keep-alive connections when it stops, on
 * every model and on slowsrv-h2o alike. One whose request is under way is served within --grace
 * and closed after its answer (Connection: close, exchange.h). */
void mhd_watch_close_idle(struct mhd_loop *loop)
{
    pthread_mutex_lock(&loop->watch_lock);
    for (struct conn_watch *w = loop->watched; w; w = w->next)
        if (!atomic_load_explicit(&w->busy, memory_order_acquire))
            shutdown(w->fd, SHUT_RDWR);
    pthread_mutex_unlock(&loop->watch_lock);
}

/* thread-per-connection: no loop of ours runs, so a thread sweeps. */
void *mhd_watch_main(void *arg)
{
    struct mhd_loop *loop = arg;
    while (!atomic_load_explicit(&loop->srv->stopping, memory_order_acquire)) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        mhd_watch_sweep(loop, timer_now_us());
    }
    return NULL;
}
