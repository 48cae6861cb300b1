/*
 * Connections: every model accepts through the core (loop_accept: --max-connections over every
 * loop, the pause at the limit) and hands each connection to a daemon (MHD_add_connection);
 * libmicrohttpd's notifications keep the core's registry (conn.h), whose sweeps apply the
 * timeouts.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/net.h"
#include "mhd.h"

struct mhd_conn *mhd_conn_of(struct MHD_Connection *conn)
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
    struct mhd_conn *w = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add_explicit(&shard->conns, 1, memory_order_relaxed);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci || !(w = calloc(1, sizeof *w)))
            return;
        w->shard = shard;
        w->conn = conn;
        /* Which listener it came from: the control listener's port (loop 0). */
        unsigned cp = loop->srv->control_port;
        loop_conn_opened(&loop->core, &w->c, ci->connect_fd,
                         cp && net_local_port(ci->connect_fd) == cp);
        *socket_context = w;
        mhd_watch(w, ci->connect_fd, 1);
        if (loop->srv->backend->conn)
            loop->srv->backend->conn(w, 1);
        return;
    }
    atomic_fetch_sub_explicit(&shard->conns, 1, memory_order_relaxed);
    if (!w) {
        service_conn_closed(loop->srv->svc);
        return;
    }
    if (loop->srv->backend->conn)
        loop->srv->backend->conn(w, 0);
    mhd_watch(w, w->c.fd, 0);
    loop_conn_closed(&loop->core, &w->c);
    free(w);
    *socket_context = NULL;
}

int mhd_adopt(void *ctx, int fd, const struct sockaddr *peer, socklen_t len, int control)
{
    struct mhd_loop *loop = ctx;
    struct mhd_shard *s = control && loop->ctl.daemon ? &loop->ctl
                          : loop->srv->backend->place ? loop->srv->backend->place(loop)
                                                      : &loop->shards[0];
    /* On failure libmicrohttpd has closed the socket already. */
    int rc = MHD_add_connection(s->daemon, fd, peer, len) == MHD_YES ? 0 : -1;
    atomic_store_explicit(&s->due, 1, memory_order_relaxed);
    return rc;
}

uint64_t mhd_accept(struct mhd_loop *loop, int fd, int control, uint64_t now)
{
    char msg[160];
    uint64_t rest = loop_accept(&loop->core, fd, control, now, msg, sizeof msg);
    if (msg[0])
        LOG(loop->srv->log, LOG_LEVEL_WARN, "%s", msg);
    return rest;
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
            uint64_t r = p[i].revents & POLLIN ? mhd_accept(loop, p[i].fd, i, timer_now_us()) : 0;
            rest = r > rest ? r : rest;
        }
        struct timespec ts = {0, (long)rest * 1000};
        if (rest)
            nanosleep(&ts, NULL);
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

void mhd_accept_quiesce(void *ctx)
{
    struct mhd_loop *loop = ctx;
    if (loop->accept_started)
        pthread_join(loop->accept_thread, NULL);
    loop->accept_started = 0;
    net_close(&loop->listen_fd);
    net_close(&loop->control_fd);
}
