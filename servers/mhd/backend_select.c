/*
 * The select model: one daemon per loop, in external mode; the loop waits in select() on the
 * daemon's sockets, its wake-up eventfd and its listening socket (the loop accepts).
 */
#include <errno.h>
#include <string.h>
#include <sys/select.h>

#include "mhd.h"
#include "base/net.h"

static void quiesce_select(void *ctx)
{
    struct mhd_loop *loop = ctx;
    net_close(&loop->listen_fd);
    net_close(&loop->control_fd);
}

/* select model (one shard): waits up to wait_us for MHD's sockets or a wake-up, then lets MHD
 * process what is ready. */
static void run_select(void *ctx, uint64_t wait_us)
{
    struct mhd_loop *loop = ctx;
    int wake_fd = loop_wake_fd(&loop->core);
    struct MHD_Daemon *d = loop->shards[0].daemon;
    /* The plain control daemon beside a TLS one (mhd_open_control), or NULL. */
    struct MHD_Daemon *ctl = loop->ctl.daemon;
    MHD_UNSIGNED_LONG_LONG mhd_ms;
    if (MHD_get_timeout(d, &mhd_ms) == MHD_YES && mhd_ms * 1000 < wait_us)
        wait_us = mhd_ms * 1000;
    if (ctl && MHD_get_timeout(ctl, &mhd_ms) == MHD_YES && mhd_ms * 1000 < wait_us)
        wait_us = mhd_ms * 1000;
    /* Resumed by this thread during the last run (see run_epoll): run again without waiting. */
    if (atomic_exchange_explicit(&loop->shards[0].due, 0, memory_order_acq_rel) ||
        (ctl && atomic_exchange_explicit(&loop->ctl.due, 0, memory_order_acq_rel)))
        wait_us = 0;
    fd_set rs, ws, es;
    MHD_socket max = -1;
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_ZERO(&es);
    if (MHD_get_fdset(d, &rs, &ws, &es, &max) != MHD_YES ||
        (ctl && MHD_get_fdset(ctl, &rs, &ws, &es, &max) != MHD_YES)) {
        MHD_run(d);
        if (ctl)
            MHD_run(ctl);
        return;
    }
    FD_SET(wake_fd, &rs);
    if (wake_fd > max)
        max = wake_fd;
    /* The loop accepts (mhd_accept_some); at --max-connections, or out of descriptors, it leaves
     * the socket alone for a while. */
    uint64_t now = timer_now_us();
    int listening = loop->listen_fd >= 0 && now >= loop->accept_paused_until;
    if (listening) {
        FD_SET(loop->listen_fd, &rs);
        if (loop->listen_fd > max)
            max = loop->listen_fd;
        if (loop->control_fd >= 0) {
            FD_SET(loop->control_fd, &rs);
            max = loop->control_fd > max ? loop->control_fd : max;
        }
    } else if (loop->listen_fd >= 0 && loop->accept_paused_until - now < wait_us) {
        wait_us = loop->accept_paused_until - now;
    }
    struct timeval tv = {(time_t)(wait_us / 1000000), (suseconds_t)(wait_us % 1000000)};
    int n = select(max + 1, &rs, &ws, &es, &tv);
    if (n < 0) {
        MHD_run(d);
        if (ctl)
            MHD_run(ctl);
        return;
    }
    int woken = FD_ISSET(wake_fd, &rs);
    if (woken)
        loop_woken(&loop->core);
    for (int i = 0; listening && i < 2; i++) {
        int fd = i ? loop->control_fd : loop->listen_fd;
        if (fd < 0 || !FD_ISSET(fd, &rs))
            continue;
        FD_CLR(fd, &rs);
        uint64_t rest = mhd_accept(loop, fd, i, now);
        if (rest)
            loop->accept_paused_until = now + rest;
    }
    MHD_run_from_select(d, &rs, &ws, &es);
    if (ctl)
        MHD_run_from_select(ctl, &rs, &ws, &es);
    /* A wake-up means a connection was resumed from another thread; MHD_run_from_select only
     * handles the sockets select() reported, MHD_run also picks up resumed connections. */
    if (woken)
        MHD_run(d);
    if (woken && ctl)
        MHD_run(ctl);
}

static const struct loop_backend core = {
    .adopt = mhd_adopt,
    .carry = mhd_carry,
    .peer_gone = mhd_peer_gone,
    .quiesce = quiesce_select,
    .admit = mhd_admit,
    .wait = run_select,
    .fired = mhd_fired,
};

const struct mhd_backend mhd_backend_select = {
    .core = &core,
    .flags = MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET,
    .open = mhd_open_daemon,
    .hold = mhd_loop_hold,
    .pace = mhd_loop_pace,
    .read_pace = mhd_loop_read_pace,
};
