/*
 * thread-per-connection: libmicrohttpd gives each connection a thread of its own, and that
 * thread waits: for a worker of --workers, as a blocking server's accept queue would, and out
 * the delay itself, which is the point of the model (suspend/resume hangs there in
 * libmicrohttpd 0.9.75). The loop's thread only sweeps the connections and drains at the stop;
 * a thread of the loop accepts (mhd_accept).
 */
#include <errno.h>

#include "mhd.h"

/* The connection's own thread waits out the delay. It wakes early only when the server gives
 * up draining (hard stop). */
static int tpc_sleep(struct app_server *srv, uint64_t delay_us)
{
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

/* exchange_sleep's sleep and its look at the client, for the request `arg`: a client that left
 * while its thread slept is a cancel, as in the event-loop models when its timer pops. */
static int sleep_request(void *arg, uint64_t delay_us)
{
    return tpc_sleep(((struct request *)arg)->shard->loop->srv, delay_us);
}

static int request_gone(void *arg)
{
    return mhd_peer_gone(NULL, ((struct request *)arg)->x);
}

/* A parked request was handed back: wake its thread. */
static void admit(void *ctx, struct exchange *x)
{
    struct app_server *srv = ((struct mhd_loop *)ctx)->srv;
    pthread_mutex_lock(&srv->sleep_lock);
    ((struct request *)exchange_owner(x))->woken = 1;
    pthread_cond_broadcast(&srv->sleep_cond);
    pthread_mutex_unlock(&srv->sleep_lock);
}

/* A worker of --workers is waited for here, then the delay is slept out. */
static enum MHD_Result hold(struct request *rq, mhd_act_fn act)
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
        d = exchange_sleep(rq->x, sleep_request, request_gone, rq);
    return act(rq, d);
}

/* A paced body sleeps until its next chunk is due, unless the stop cuts it. Returns 1: ask
 * again. */
static int pace(struct request *rq, uint64_t due_us, uint64_t now_us)
{
    exchange_pace(rq->x, NULL, due_us);
    exchange_on_timer(rq->x, 0, tpc_sleep(rq->shard->loop->srv, due_us - now_us));
    return 1;
}

/* read-rate: the connection's thread sleeps until more of the body may be read. Returns 1: read
 * again. */
static int read_pace(struct request *rq, uint64_t due_us, uint64_t now_us)
{
    exchange_read_pace(rq->x, NULL, due_us);
    exchange_on_timer(rq->x, 0, tpc_sleep(rq->shard->loop->srv, due_us - now_us));
    return 1;
}

/* On giving up, parked threads were handed back first (service_flush: they wait for that
 * alone); now sleepers are cut. Both answer "server stopping". */
static void give_up(void *ctx)
{
    struct app_server *srv = ((struct mhd_loop *)ctx)->srv;
    pthread_mutex_lock(&srv->sleep_lock);
    srv->hard_stop = 1;
    pthread_cond_broadcast(&srv->sleep_cond);
    pthread_mutex_unlock(&srv->sleep_lock);
}

/* No timer or inbox is ever queued on this loop. */
static int carry(void *ctx, struct exchange *x, enum exchange_do d)
{
    (void)ctx;
    (void)x;
    (void)d;
    return 0;
}

static void signal_wake(void *ctx)
{
    pthread_cond_signal(&((struct mhd_loop *)ctx)->wake);
}

static void wait(void *ctx, uint64_t wait_us)
{
    mhd_cond_wait(ctx, wait_us);
}

static const struct loop_backend core = {
    .adopt = mhd_adopt,
    .carry = carry,
    .quiesce = mhd_accept_quiesce,
    .give_up = give_up,
    .wake = signal_wake,
    .admit = admit,
    .wait = wait,
};

const struct mhd_backend mhd_backend_tpc = {
    .core = &core,
    .flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
             MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET,
    .open = mhd_open_accepting,
    .hold = hold,
    .pace = pace,
    .read_pace = read_pace,
};
