/*
 * A loop's life, the same in every event-loop model: the core loop (loop.h) answers what is due
 * by resuming its connections, the loop sweeps for --header-timeout, waits through the model's
 * backend, and stops as the core loop says.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mhd.h"
#include "base/net.h"

/* Every resume goes through here, so that the loop knows which daemon to run. Any thread; once
 * resumed, the request may be answered and freed by the thread running MHD (poll model, or a
 * resume from another thread), so nothing of it is read after. Returns its loop. */
struct mhd_loop *mhd_resume(struct request *rq)
{
    struct mhd_shard *shard = rq->shard;
    MHD_resume_connection(rq->conn);
    atomic_store_explicit(&shard->due, 1, memory_order_release);
    return shard->loop;
}

void mhd_wake_loop(struct mhd_loop *loop)
{
    uint64_t one = 1;
    if (loop->wake_fd >= 0 && write(loop->wake_fd, &one, sizeof one) < 0)
        LOG(loop->srv->log, LOG_LEVEL_WARN, "cannot wake loop %zu: %s", loop->index,
            strerror(errno));
}

/* A parked request was handed back: resume its connection and wake its loop. */
void mhd_loop_admit(struct request *rq)
{
    mhd_wake_loop(mhd_resume(rq));
}

/* The connection is suspended before the request enters the pool or the heap, so that an
 * admission or a timer on another thread never resumes a connection that is not suspended yet.
 * What is answered at once resumes it, and runs again (exchange_next). */
enum MHD_Result mhd_loop_hold(struct request *rq, mhd_act_fn act)
{
    struct mhd_loop *loop = rq->shard->loop;
    (void)act;
    MHD_suspend_connection(rq->conn);
    enum exchange_do d = loop_hold(&loop->core, rq->x);
    if (d != EXCHANGE_DO_WAIT && d != EXCHANGE_DO_PARK)
        mhd_resume(rq);
    return MHD_YES;
}

/* Between chunks of a paced body the connection is suspended and its timer queued, as for a
 * delay. */
int mhd_loop_pace(struct request *rq, uint64_t due_us, uint64_t now_us)
{
    struct mhd_loop *loop = rq->shard->loop;
    (void)now_us;
    MHD_suspend_connection(rq->conn);
    enum exchange_do d = loop_pace(&loop->core, rq->x, due_us);
    if (d != EXCHANGE_DO_WAIT)
        mhd_resume(rq); /* CLOSE: the reader then ends the body with an error */
    return 0;
}

/* The core loop's backend (loop.h). What the core decided for a due request is carried out when
 * MHD runs the request again (exchange_next), or reads the next chunk of a paced body: here it
 * is only resumed. */
static int carry(void *ctx, struct exchange *x, enum exchange_do d)
{
    (void)ctx;
    (void)d;
    mhd_resume(exchange_owner(x));
    return 0;
}

/* A client that left while waiting is only seen here, as MHD does not watch suspended sockets:
 * it is counted as a cancel and its connection closed without an answer. */
static int peer_gone(void *ctx, struct exchange *x)
{
    struct request *rq = exchange_owner(x);
    (void)ctx;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci && net_peer_gone(ci->connect_fd);
}

static void quiesce(void *ctx)
{
    struct mhd_loop *loop = ctx;
    loop->srv->backend->quiesce(loop);
}

static void wake(void *ctx)
{
    mhd_wake_loop(ctx);
}

static void lock(void *ctx)
{
    pthread_mutex_lock(&((struct mhd_loop *)ctx)->lock);
}

static void unlock(void *ctx)
{
    pthread_mutex_unlock(&((struct mhd_loop *)ctx)->lock);
}

/* The poll model's timer thread waits for the earliest deadline: a new earliest wakes it. */
static void earliest(void *ctx)
{
    pthread_cond_signal(&((struct mhd_loop *)ctx)->wake);
}

const struct loop_backend mhd_core_backend = {
    .adopt = mhd_adopt,
    .carry = carry,
    .peer_gone = peer_gone,
    .quiesce = quiesce,
    .wake = wake,
};

/* The poll model: MHD's own thread shares the heap. */
const struct loop_backend mhd_core_backend_shared = {
    .adopt = mhd_adopt,
    .carry = carry,
    .peer_gone = peer_gone,
    .quiesce = quiesce,
    .wake = wake,
    .earliest = earliest,
    .lock = lock,
    .unlock = unlock,
};

/* Runs the shards that are due (a connection resumed or added, a socket event, libmicrohttpd's
 * own timeout), or all of them, and notes when each asks to run next. */
void mhd_run_shards(struct mhd_loop *loop, int all)
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

void mhd_drain_wake(struct mhd_loop *loop)
{
    uint64_t v;
    if (read(loop->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
        LOG(loop->srv->log, LOG_LEVEL_DEBUG, "wake read: %s", strerror(errno));
}

void mhd_deadline_after(struct timespec *ts, uint64_t us)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + (us % 1000000) * 1000;
    ts->tv_sec += (time_t)(us / 1000000 + ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

size_t mhd_active_total(struct app_server *srv)
{
    size_t n = 0;
    for (size_t i = 0; i < srv->nloops; i++)
        n += atomic_load(&srv->loops[i].active);
    return n;
}

void *mhd_loop_main(void *arg)
{
    struct mhd_loop *loop = arg;
    struct app_server *srv = loop->srv;
    const struct mhd_backend *backend = srv->backend;

    for (;;) {
        uint64_t now = timer_now_us();
        loop_sweep(&loop->core, now);
        /* Let MHD answer what was just resumed before waiting again. */
        if (loop_fire(&loop->core, now) && !srv->internal)
            mhd_run_shards(loop, 0);
        /* The wait counts from now, not from the top of this turn (MHD may have run for a while
         * since). */
        uint64_t wait_us = loop_wait_us(&loop->core, timer_now_us(), LOOP_TICK_US);
        int stopping = atomic_load_explicit(&srv->stopping, memory_order_acquire);
        if (loop_stop_step(&loop->core, stopping, atomic_load(&loop->active), now, &wait_us))
            return NULL;
        backend->turn(loop, wait_us);
    }
}
