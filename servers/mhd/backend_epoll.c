/*
 * The epoll model: the loop accepts connections itself and hands them to its daemons
 * ("shards", see SHARD_CONNECTIONS), and waits in one epoll set on the daemons' epoll fds, its
 * wake-up eventfd and its listening socket.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mhd.h"
#include "base/net.h"

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
    int rc = mhd_start_daemon(s, loop->srv->cfg->max_connections, err);
    if (rc != 0)
        return rc;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (di)
        s->ep_fd = di->epoll_fd;
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
    if (loop->ep_fd < 0 || loop_watch(loop, loop_wake_fd(&loop->core), loop->nshards) != 0 ||
        loop_watch(loop, loop->listen_fd, loop->nshards + 1) != 0 ||
        (loop->control_fd >= 0 && loop_watch(loop, loop->control_fd, loop->nshards + 2) != 0)) {
        snprintf(err, CORE_ERR_LEN, "epoll: %s", strerror(errno));
        return -EMFILE;
    }
    /* The plain control daemon beside TLS shards (mhd_open_control), started already. */
    if (loop->ctl.daemon) {
        const union MHD_DaemonInfo *di =
            MHD_get_daemon_info(loop->ctl.daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (di)
            loop->ctl.ep_fd = di->epoll_fd;
        if (!di || loop_watch(loop, di->epoll_fd, loop->nshards + 3) != 0) {
            snprintf(err, CORE_ERR_LEN, "epoll: %s", strerror(errno));
            return -EMFILE;
        }
    }
    return shard_open(loop, err);
}

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

/* Accepts what is pending on the loop's socket and gives each connection to a shard. At
 * --max-connections, or out of descriptors, the socket is left out of the loop's wait for a
 * while (mhd_accept_some). */
static void accept_some(struct mhd_loop *loop, uint64_t now)
{
    uint64_t rest = mhd_accept(loop, loop->listen_fd, 0, now);
    if (rest) {
        epoll_ctl(loop->ep_fd, EPOLL_CTL_DEL, loop->listen_fd, NULL);
        loop->accept_paused_until = now + rest;
    }
}

/* libmicrohttpd 0.9.75's epoll mode reads a connection when its socket turns readable (edge
 * triggered), and takes a short read as the end of what is there: an end of stream that came
 * with the last bytes (a client that sends its body, or part of it, then shuts down its side)
 * is never read, and the connection waits for --idle-timeout, or for ever. So the loop watches
 * each connection for the peer's shutdown itself, and then has the daemon look at the socket
 * again: the daemon's own registration is modified to what it was (libmicrohttpd's event mask
 * and its connection as the key), which reports the socket readable anew; libmicrohttpd then
 * reads the end of the stream and answers or closes as in the other models. That is done once
 * the bytes before the end have been read (after a run of the daemons), or libmicrohttpd would
 * take them and the end together in one short read again. */
static void conn_epoll(struct mhd_conn *w, int open)
{
    struct mhd_loop *loop = w->shard->loop;
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLET, .data.ptr = w};
    if (open) {
        epoll_ctl(loop->ep_fd, EPOLL_CTL_ADD, w->c.fd, &ev);
        return;
    }
    epoll_ctl(loop->ep_fd, EPOLL_CTL_DEL, w->c.fd, NULL);
    for (size_t i = 0; i < loop->nshut; i++)
        if (loop->shut[i] == w)
            loop->shut[i--] = loop->shut[--loop->nshut];
}

/* Has the daemon look at w's socket again (see conn_epoll). */
static void rearm(struct mhd_conn *w)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLET,
                             .data.ptr = w->conn};
    /* A suspended connection is out of the daemon's set (ENOENT): its wait notices the close. */
    if (epoll_ctl(w->shard->ep_fd, EPOLL_CTL_MOD, w->c.fd, &ev) == 0)
        atomic_store_explicit(&w->shard->due, 1, memory_order_relaxed);
}

/* The peer shut down its side: w waits for the daemon to read what came before the end. */
static void peer_shut(struct mhd_loop *loop, struct mhd_conn *w)
{
    for (size_t i = 0; i < loop->nshut; i++)
        if (loop->shut[i] == w)
            return;
    if (loop->nshut < MHD_SHUT_PENDING)
        loop->shut[loop->nshut++] = w;
    else
        rearm(w);
}

/* After a run of the daemons: every half-closed connection whose bytes were all read has its
 * socket looked at again; the others wait for the next run. */
static void rearm_shut(struct mhd_loop *loop)
{
    for (size_t i = 0; i < loop->nshut; i++) {
        int unread = 0;
        if (ioctl(loop->shut[i]->c.fd, FIONREAD, &unread) == 0 && unread > 0)
            continue;
        rearm(loop->shut[i]);
        loop->shut[i--] = loop->shut[--loop->nshut];
    }
}

/* Waits to the microsecond (epoll_pwait2), so that the core loop's batch (LOOP_BATCH_US) is the
 * batch; a kernel older than 5.11 has only epoll_wait's milliseconds, rounded up. */
static int wait_events(int ep_fd, struct epoll_event *ev, int max, uint64_t wait_us)
{
    static atomic_int no_pwait2;
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
        struct timespec ts = {(time_t)(wait_us / 1000000), (long)(wait_us % 1000000) * 1000};
        int n = epoll_pwait2(ep_fd, ev, max, &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        atomic_store_explicit(&no_pwait2, 1, memory_order_relaxed);
    }
    return epoll_wait(ep_fd, ev, max, (int)((wait_us + 999) / 1000));
}

/* epoll model: waits up to wait_us for the shards' sockets, libmicrohttpd's earliest timeout, a
 * new connection or a wake-up, then runs the shards that have something to do. The loop's epoll
 * set holds each daemon's epoll fd (readable while it has events; never epoll_wait()ed here,
 * which would take MHD's edge-triggered events), the wake-up eventfd, the listening socket and
 * the control listener (loop 0), keyed by number, and the connections watched for their peer's
 * shutdown, keyed by their record. */
static void run_epoll(void *ctx, uint64_t wait_us)
{
    struct mhd_loop *loop = ctx;
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
    for (size_t i = 0; i <= loop->used; i++) {
        struct mhd_shard *s = i < loop->used ? &loop->shards[i] : &loop->ctl;
        uint64_t next = s->next_us;
        if (!s->daemon)
            continue;
        /* A shard can be due already: a connection this thread resumed while MHD ran (a request
         * admitted at once by --workers, say). MHD picks it up on its next run only, and an
         * external-loop daemon has no channel that would wake this wait for it. */
        if (next <= now || atomic_load_explicit(&s->due, memory_order_acquire))
            wait_us = 0;
        else if (next - now < wait_us)
            wait_us = next - now;
    }
    int n = wait_events(loop->ep_fd, ev, MAX_SHARDS + 2, wait_us);
    now = timer_now_us();
    for (int i = 0; i < n; i++) {
        uint64_t k = ev[i].data.u64;
        if (k > loop->nshards + 3)
            peer_shut(loop, ev[i].data.ptr);
        else if (k == loop->nshards + 3)
            atomic_store_explicit(&loop->ctl.due, 1, memory_order_relaxed);
        else if (k == loop->nshards + 2)
            mhd_accept(loop, loop->control_fd, 1, now);
        else if (k < loop->nshards)
            atomic_store_explicit(&loop->shards[k].due, 1, memory_order_relaxed);
        else if (k == loop->nshards)
            loop_woken(&loop->core);
        else if (loop->listen_fd >= 0)
            accept_some(loop, now);
    }
    for (size_t i = 0; i < loop->used; i++)
        if (loop->shards[i].next_us <= now)
            atomic_store_explicit(&loop->shards[i].due, 1, memory_order_relaxed);
    if (loop->ctl.daemon && loop->ctl.next_us <= now)
        atomic_store_explicit(&loop->ctl.due, 1, memory_order_relaxed);
    mhd_run_shards(loop, 0);
    rearm_shut(loop);
}

/* Out of the set first: under socket activation the other loops hold dups of the socket, which
 * would keep it registered here after a close. */
static void quiesce_epoll(void *ctx)
{
    struct mhd_loop *loop = ctx;
    if (loop->listen_fd >= 0) {
        epoll_ctl(loop->ep_fd, EPOLL_CTL_DEL, loop->listen_fd, NULL);
        close(loop->listen_fd);
    }
    loop->listen_fd = -1;
    net_close(&loop->control_fd);
}

static const struct loop_backend core = {
    .adopt = mhd_adopt,
    .carry = mhd_carry,
    .peer_gone = mhd_peer_gone,
    .quiesce = quiesce_epoll,
    .admit = mhd_admit,
    .wait = run_epoll,
    .fired = mhd_fired,
};

/* The loop accepts and hands connections over (MHD_add_connection). */
const struct mhd_backend mhd_backend_epoll = {
    .core = &core,
    .flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET,
    .open = loop_epoll_init,
    .hold = mhd_loop_hold,
    .pace = mhd_loop_pace,
    .read_pace = mhd_loop_read_pace,
    .conn = conn_epoll,
    .place = place,
};
