/*
 * thread-per-connection: libmicrohttpd gives each connection a thread of its own, and that
 * thread waits: for a worker of --workers, as a blocking server's accept queue would, and out
 * the delay itself, which is the point of the model (suspend/resume hangs there in
 * libmicrohttpd 0.9.75). No loop thread of ours runs; a thread sweeps for --header-timeout.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mhd.h"

/* thread-per-connection: the connection's own thread waits out the delay. It wakes early only
 * when the server gives up draining (hard stop). */
static int tpc_sleep(void *arg, uint64_t delay_us)
{
    struct app_server *srv = arg;
    struct timespec ts;
    int cut;
    mhd_deadline_after(&ts, delay_us);
    pthread_mutex_lock(&srv->sleep_lock);
    while (!srv->hard_stop) {
        if (pthread_cond_timedwait(&srv->sleep_cond, &srv->sleep_lock, &ts) == ETIMEDOUT)
            break;
    }
    cut = srv->hard_stop;
    pthread_mutex_unlock(&srv->sleep_lock);
    return cut;
}

/* A parked request was handed back: wake its thread. */
static void tpc_admit(struct request *rq)
{
    struct app_server *srv = rq->shard->loop->srv;
    pthread_mutex_lock(&srv->sleep_lock);
    rq->woken = 1;
    pthread_cond_broadcast(&srv->sleep_cond);
    pthread_mutex_unlock(&srv->sleep_lock);
}

/* A worker of --workers is waited for here, then the delay is slept out. */
static enum MHD_Result tpc_hold(struct request *rq, mhd_act_fn act)
{
    struct app_server *srv = rq->shard->loop->srv;
    enum exchange_do d = exchange_hold(rq->x, NULL);
    if (d == EXCHANGE_DO_PARK) {
        pthread_mutex_lock(&srv->sleep_lock);
        while (!rq->woken) /* handed back, or flushed when the server stops */
            pthread_cond_wait(&srv->sleep_cond, &srv->sleep_lock);
        pthread_mutex_unlock(&srv->sleep_lock);
        d = exchange_next(rq->x);
        if (d == EXCHANGE_DO_HOLD)
            d = exchange_hold(rq->x, NULL);
    }
    if (d == EXCHANGE_DO_WAIT)
        d = exchange_sleep(rq->x, tpc_sleep, srv);
    return act(rq, d);
}

/* A paced body sleeps until its next chunk is due, unless the stop cuts it. Returns 1: ask
 * again. */
static int tpc_pace(struct request *rq, uint64_t due_us, uint64_t now_us)
{
    exchange_pace(rq->x, NULL, due_us);
    exchange_on_timer(rq->x, 0, tpc_sleep(rq->shard->loop->srv, due_us - now_us));
    return 1;
}

/* The stop's backend (loop.h): libmicrohttpd runs the threads, so the drain is watched from the
 * stopping thread (mhd_tpc_drain). */
static void tpc_quiesce(void *ctx)
{
    mhd_accept_quiesce(ctx);
}

/* On giving up, parked threads were handed back first (service_flush: they wait for that
 * alone); now sleepers are cut. Both answer "server stopping". */
static void tpc_give_up(void *ctx)
{
    struct app_server *srv = ((struct mhd_loop *)ctx)->srv;
    pthread_mutex_lock(&srv->sleep_lock);
    srv->hard_stop = 1;
    pthread_cond_broadcast(&srv->sleep_cond);
    pthread_mutex_unlock(&srv->sleep_lock);
}

static int tpc_carry(void *ctx, struct exchange *x, enum exchange_do d)
{
    (void)ctx;
    (void)x;
    (void)d;
    return 0; /* no timer or inbox is ever queued on this loop */
}

static void tpc_wake(void *ctx)
{
    (void)ctx;
}

const struct loop_backend mhd_core_backend_tpc = {
    .adopt = mhd_adopt,
    .carry = tpc_carry,
    .quiesce = tpc_quiesce,
    .give_up = tpc_give_up,
    .wake = tpc_wake,
};

void mhd_tpc_drain(struct app_server *srv)
{
    struct mhd_loop *loop = &srv->loops[0];
    if (!loop->shards[0].daemon)
        return;
    for (;;) {
        uint64_t wait_us = LOOP_DRAIN_TICK_US;
        if (loop_stop_step(&loop->core, 1, mhd_active_total(srv), timer_now_us(), &wait_us))
            return;
        struct timespec ts = {0, (long)wait_us * 1000};
        nanosleep(&ts, NULL);
    }
}

static int tpc_open(struct mhd_loop *loop, char *err)
{
    int rc = mhd_open_accepting(loop, err);
    if (rc == 0 && loop->core.conns.every_us) {
        rc = -pthread_create(&loop->watch_thread, NULL, mhd_watch_main, loop);
        if (rc != 0)
            snprintf(err, CORE_ERR_LEN, "pthread_create: %s", strerror(-rc));
        loop->watch_started = rc == 0;
    }
    return rc;
}

/* A thread of the loop accepts (mhd_accept_some) and hands connections over. */
const struct mhd_backend mhd_backend_tpc = {
    .flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
             MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET,
    .open = tpc_open,
    .turn = NULL,
    .quiesce = mhd_accept_quiesce,
    .hold = tpc_hold,
    .admit = tpc_admit,
    .pace = tpc_pace,
};
