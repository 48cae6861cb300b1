/*
 * A loop's life, the same in every event-loop model: pop the timers that are due and resume
 * their connections, sweep for --header-timeout, wait through the model's backend, and stop as
 * drain.h says.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mhd.h"
#include "net.h"

/* Resumes are answered in batches of up to this long (see mhd_loop_main). */
#define RESUME_BATCH_US 1000
/* Longest wait of a turn while the loop stops, so that its end is noticed promptly. */
#define DRAIN_TICK_US (10 * 1000)

void mhd_loop_lock(struct mhd_loop *loop)
{
    if (loop->srv->internal)
        pthread_mutex_lock(&loop->lock);
}

void mhd_loop_unlock(struct mhd_loop *loop)
{
    if (loop->srv->internal)
        pthread_mutex_unlock(&loop->lock);
}

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

/* A timer was queued for rq: the poll model's timer thread must wake if it is now the earliest.
 * Called with the loop lock held. */
static void timer_queued(struct mhd_loop *loop, struct request *rq)
{
    if (loop->srv->internal && timer_heap_peek(&loop->timers) == &rq->x.timer)
        pthread_cond_signal(&loop->wake);
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
    mhd_loop_lock(loop);
    enum exchange_do d = exchange_hold(&rq->x, &loop->timers);
    if (d == EXCHANGE_DO_WAIT)
        timer_queued(loop, rq);
    mhd_loop_unlock(loop);
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
    mhd_loop_lock(loop);
    enum exchange_do d = exchange_pace(&rq->x, &loop->timers, due_us);
    if (d == EXCHANGE_DO_WAIT)
        timer_queued(loop, rq);
    mhd_loop_unlock(loop);
    if (d != EXCHANGE_DO_WAIT)
        mhd_resume(rq); /* CLOSE: the reader then ends the body with an error */
    return 0;
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
        mhd_loop_lock(loop);
        for (n = 0; n < sizeof batch / sizeof batch[0]; n++) {
            struct timer_node *node = timer_heap_pop_due(&loop->timers, now);
            if (!node)
                break;
            batch[n] = (struct request *)(void *)exchange_of_timer(node);
        }
        mhd_loop_unlock(loop);
        for (size_t i = 0; i < n; i++) {
            struct request *rq = batch[i];
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            /* What it decided is carried out when MHD runs the request again (exchange_next),
             * or reads the next chunk of a paced body. */
            exchange_on_timer(&rq->x, ci && net_peer_gone(ci->connect_fd), cancel);
            mhd_resume(rq);
        }
        fired += n;
    } while (n == sizeof batch / sizeof batch[0]);
    return fired;
}

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

    drain_init(&loop->drain, srv->cfg->grace_us);
    for (;;) {
        uint64_t now = timer_now_us();
        /* Once the loop has given up, every timer is due, and what waits is answered "server
         * stopping" (exchange.h). */
        int given_up = drain_given_up(&loop->drain);
        mhd_watch_sweep(loop, now);
        /* Let MHD answer what was just resumed before waiting again. */
        if (fire_due(loop, given_up ? UINT64_MAX : now, given_up) && !srv->internal)
            mhd_run_shards(loop, 0);
        /* The wait counts from now, not from the top of this turn (MHD may have run for a while
         * since). It is rounded up to whole milliseconds on purpose: each resume pass makes
         * libmicrohttpd 0.9.75 walk every suspended connection of the shard, so timers are
         * answered in batches of up to 1 ms rather than one pass each (measured: exact waits
         * cost more CPU and more lateness at 10 000 waiting connections). */
        mhd_loop_lock(loop);
        uint64_t wait_us = timer_heap_wait_us(&loop->timers, timer_now_us(), LOOP_TICK_US);
        mhd_loop_unlock(loop);
        wait_us = (wait_us + RESUME_BATCH_US - 1) / RESUME_BATCH_US * RESUME_BATCH_US;
        int stopping = atomic_load_explicit(&srv->stopping, memory_order_acquire);
        switch (drain_step(&loop->drain, stopping, atomic_load(&loop->active), now)) {
        case DRAIN_SERVE:
            break;
        case DRAIN_QUIESCE:
            backend->quiesce(loop);
            mhd_watch_close_idle(loop);
            break;
        case DRAIN_GIVE_UP:
            /* Parked requests of every loop are handed back; harmless if another loop did it. */
            service_flush(srv->svc);
            wait_us = 0;
            break;
        case DRAIN_DONE:
            return NULL;
        case DRAIN_RUN:
        case DRAIN_FINISH:
            break;
        }
        if (stopping && wait_us > DRAIN_TICK_US)
            wait_us = DRAIN_TICK_US;
        backend->turn(loop, drain_wait_us(&loop->drain, timer_now_us(), wait_us));
    }
}
