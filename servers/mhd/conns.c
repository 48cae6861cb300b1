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

void mhd_watch_arm(struct mhd_loop *loop, struct conn_watch *w)
{
    uint64_t t = loop->srv->cfg->header_timeout_us;
    if (t && w && atomic_load_explicit(&w->deadline, memory_order_relaxed) == 0)
        atomic_store_explicit(&w->deadline, timer_now_us() + t, memory_order_relaxed);
}

struct conn_watch *mhd_watch_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* --max-connections over every loop: refused connections are closed at once by MHD. */
enum MHD_Result mhd_on_accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    struct mhd_loop *loop = ((struct mhd_shard *)cls)->loop;
    (void)addr;
    (void)len;
    return service_conn_admit(loop->srv->svc) == 0 ? MHD_YES : MHD_NO;
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
