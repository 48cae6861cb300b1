/*
 * Connections: --max-connections over every loop, and the --header-timeout watcher.
 * libmicrohttpd has no header-read timeout of its own (its timeout is for silence, which a
 * slowloris never is), so each loop keeps its connections in a list that it sweeps for overdue
 * header blocks.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "mhd.h"
#include "base/net.h"

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
        /* Counted open by mhd_accept_some, which applies --max-connections. */
        if (!ci || !(w = calloc(1, sizeof *w)))
            return;
        w->fd = ci->connect_fd;
        w->control = loop->srv->control_port && net_local_port(w->fd) == loop->srv->control_port;
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

/* The stop: a connection that carries no request is shut down (libmicrohttpd reads the end of
 * the stream and closes it), as nginx closes its idle keep-alive connections when it stops, on
 * every model and on slowsrv-h2o alike. One whose request is under way is served within --grace
 * and closed after its answer (Connection: close, exchange.h). */
void mhd_watch_close_idle(struct mhd_loop *loop)
{
    pthread_mutex_lock(&loop->watch_lock);
    for (struct conn_watch *w = loop->watched; w; w = w->next) {
        int idle_fd = w->fd;
        if (!atomic_load_explicit(&w->busy, memory_order_acquire))
            shutdown(idle_fd, SHUT_RDWR);
    }
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

/* Every model accepts its connections itself and hands them to a daemon (MHD_add_connection):
 * at --max-connections over every loop it stops, and new connections wait in the listen backlog
 * until an open one closes (libmicrohttpd's own accept would close them at its limit, and each
 * daemon would only know its own connections). */
/* What accept_one did. */
enum mhd_accepted {
    MHD_ACCEPTED_ONE = 0, /* a connection went to a daemon */
    MHD_ACCEPTED_NONE,    /* nothing was pending */
    MHD_ACCEPTED_LIMIT,   /* --max-connections are open */
    MHD_ACCEPTED_STARVED, /* out of descriptors */
};

static enum mhd_accepted accept_one(struct mhd_loop *loop, int lfd, uint64_t now,
                                    struct mhd_shard *(*place)(struct mhd_loop *loop))
{
    struct service *svc = loop->srv->svc;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char msg[160];
    if (service_conn_reserve(svc) != 0)
        return MHD_ACCEPTED_LIMIT;
    int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        service_conn_closed(svc);
        if (!net_accept_starved(e, now, &loop->accept_warned, msg, sizeof msg))
            return MHD_ACCEPTED_NONE;
        if (msg[0])
            LOG(loop->srv->log, LOG_LEVEL_WARN, "%s", msg);
        return MHD_ACCEPTED_STARVED;
    }
    struct mhd_shard *s = place ? place(loop) : &loop->shards[0];
    /* On failure libmicrohttpd has closed the socket already. */
    if (MHD_add_connection(s->daemon, fd, (struct sockaddr *)&ss, len) != MHD_YES)
        service_conn_closed(svc);
    atomic_store_explicit(&s->due, 1, memory_order_relaxed);
    return MHD_ACCEPTED_ONE;
}

uint64_t mhd_accept_some(struct mhd_loop *loop, int fd, uint64_t now,
                         struct mhd_shard *(*place)(struct mhd_loop *loop))
{
    for (int n = 0; n < NET_ACCEPT_BATCH; n++) {
        switch (accept_one(loop, fd, now, place)) {
        case MHD_ACCEPTED_ONE:
            continue;
        case MHD_ACCEPTED_NONE:
            return 0;
        case MHD_ACCEPTED_LIMIT:
            return SERVICE_LIMIT_RETRY_US;
        case MHD_ACCEPTED_STARVED:
            return NET_ACCEPT_PAUSE_US;
        }
    }
    return 0;
}

/* poll and thread-per-connection, whose daemons run threads of libmicrohttpd's: a thread of the
 * loop's accepts, until the stop. */
static void *accept_main(void *arg)
{
    struct mhd_loop *loop = arg;
    struct app_server *srv = loop->srv;
    while (!atomic_load_explicit(&srv->stopping, memory_order_acquire)) {
        struct pollfd p[2] = {{.fd = loop->listen_fd, .events = POLLIN},
                              {.fd = loop->control_fd, .events = POLLIN}};
        if (poll(p, loop->control_fd >= 0 ? 2 : 1, 50) <= 0)
            continue;
        uint64_t rest = 0;
        for (int i = 0; i < 2; i++) {
            uint64_t r =
                p[i].revents & POLLIN ? mhd_accept_some(loop, p[i].fd, timer_now_us(), NULL) : 0;
            rest = r > rest ? r : rest;
        }
        if (rest) {
            struct timespec ts = {0, (long)rest * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

int mhd_open_accepting(struct mhd_loop *loop, char *err)
{
    int rc = mhd_open_daemon(loop, err);
    if (rc != 0)
        return rc;
    rc = -pthread_create(&loop->accept_thread, NULL, accept_main, loop);
    if (rc != 0)
        snprintf(err, CORE_ERR_LEN, "pthread_create: %s", strerror(-rc));
    loop->accept_started = rc == 0;
    return rc;
}

void mhd_accept_quiesce(struct mhd_loop *loop)
{
    if (loop->accept_started)
        pthread_join(loop->accept_thread, NULL);
    loop->accept_started = 0;
    net_close(&loop->listen_fd);
    net_close(&loop->control_fd);
}
