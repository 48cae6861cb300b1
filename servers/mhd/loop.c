/*
 * What the event-loop models share: a waiting request's connection is suspended, and the core
 * loop resumes it when its timer is due (or its worker is free); libmicrohttpd then runs the
 * request again and the core says what follows.
 */
#include <time.h>

#include "base/net.h"
#include "mhd.h"

/* Any thread; once resumed, the request may be answered and freed by the thread running MHD (poll
 * model, or a resume from another thread), so nothing of it is read after. */
struct mhd_loop *mhd_resume(struct request *rq)
{
    struct mhd_shard *shard = rq->shard;
    MHD_resume_connection(rq->conn);
    atomic_store_explicit(&shard->due, 1, memory_order_release);
    return shard->loop;
}

/* What the core decided for a due request is carried out when MHD runs the request again
 * (exchange_next), or reads the next chunk of a paced body: here it is only resumed. */
int mhd_carry(void *ctx, struct exchange *x, enum exchange_do d)
{
    (void)ctx;
    (void)d;
    mhd_resume(exchange_owner(x));
    return 0;
}

/* A client that left while waiting is only seen here, as MHD does not watch suspended sockets:
 * it is counted as a cancel and its connection closed without an answer. */
int mhd_peer_gone(void *ctx, struct exchange *x)
{
    struct request *rq = exchange_owner(x);
    (void)ctx;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci && net_peer_gone(ci->connect_fd);
}

/* A parked request got its worker: resume its connection, and wake its loop, which runs the
 * daemon (MHD drops its own inter-thread channel in external mode). */
void mhd_admit(void *ctx, struct exchange *x)
{
    (void)ctx;
    loop_wake(&mhd_resume(exchange_owner(x))->core);
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
    (void)now_us;
    MHD_suspend_connection(rq->conn);
    if (loop_pace(&rq->shard->loop->core, rq->x, due_us) != EXCHANGE_DO_WAIT)
        mhd_resume(rq); /* CLOSE: the reader then ends the body with an error */
    return 0;
}

/* read-rate: between reads the connection is suspended (libmicrohttpd reads nothing from its
 * socket then, so TCP's window pushes back on the client) and its timer queued. */
int mhd_loop_read_pace(struct request *rq, uint64_t due_us, uint64_t now_us)
{
    (void)now_us;
    MHD_suspend_connection(rq->conn);
    if (loop_read_pace(&rq->shard->loop->core, rq->x, due_us) != EXCHANGE_DO_WAIT) {
        mhd_resume(rq);
        return 1;
    }
    return 0;
}

/* Let MHD answer what was just resumed before waiting again. */
void mhd_fired(void *ctx)
{
    mhd_run_shards(ctx, 0);
}

void mhd_run_shards(struct mhd_loop *loop, int all)
{
    for (size_t i = 0; i <= loop->used; i++) {
        struct mhd_shard *s = i < loop->used ? &loop->shards[i] : &loop->ctl;
        if (!s->daemon)
            continue;
        if (!atomic_exchange_explicit(&s->due, 0, memory_order_acq_rel) && !all)
            continue;
        MHD_run(s->daemon);
        MHD_UNSIGNED_LONG_LONG ms;
        s->next_us = UINT64_MAX;
        if (MHD_get_timeout(s->daemon, &ms) == MHD_YES)
            s->next_us = timer_now_us() + (ms < UINT64_MAX / 4000 ? ms * 1000 : UINT64_MAX / 4);
    }
}

void mhd_cond_wait(struct mhd_loop *loop, uint64_t wait_us)
{
    struct timespec ts;
    mhd_deadline_after(&ts, wait_us);
    pthread_mutex_lock(&loop->lock);
    /* A request queued after wait_us was computed signals `wake` if it is the earliest. */
    if (timer_heap_wait_us(&loop->core.timers, timer_now_us(), wait_us) > 0)
        pthread_cond_timedwait(&loop->wake, &loop->lock, &ts);
    pthread_mutex_unlock(&loop->lock);
}

void mhd_deadline_after(struct timespec *ts, uint64_t us)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + (us % 1000000) * 1000;
    ts->tv_sec += (time_t)(us / 1000000 + ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}
