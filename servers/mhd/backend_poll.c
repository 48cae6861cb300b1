/*
 * The poll model: libmicrohttpd offers poll() only with its own polling thread, so the timer heap
 * is shared with that thread under the loop's lock, and the loop's own thread only answers what
 * is due (resumes it), waiting on `wake` until the earliest deadline. A thread of the loop
 * accepts (mhd_accept).
 */
#include "mhd.h"

static void lock(void *ctx)
{
    pthread_mutex_lock(&((struct mhd_loop *)ctx)->lock);
}

static void unlock(void *ctx)
{
    pthread_mutex_unlock(&((struct mhd_loop *)ctx)->lock);
}

/* A new earliest deadline, or the stop, wakes the loop's wait. */
static void signal_wake(void *ctx)
{
    pthread_cond_signal(&((struct mhd_loop *)ctx)->wake);
}

static void wait(void *ctx, uint64_t wait_us)
{
    mhd_cond_wait(ctx, wait_us);
}

/* A resume wakes libmicrohttpd's own thread through its own channel. */
static void admit(void *ctx, struct exchange *x)
{
    (void)ctx;
    mhd_resume(exchange_owner(x));
}

static const struct loop_backend core = {
    .adopt = mhd_adopt,
    .carry = mhd_carry,
    .peer_gone = mhd_peer_gone,
    .quiesce = mhd_accept_quiesce,
    .wake = signal_wake,
    .admit = admit,
    .wait = wait,
    .earliest = signal_wake,
    .lock = lock,
    .unlock = unlock,
};

const struct mhd_backend mhd_backend_poll = {
    .core = &core,
    .flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET,
    .open = mhd_open_accepting,
    .hold = mhd_loop_hold,
    .pace = mhd_loop_pace,
    .read_pace = mhd_loop_read_pace,
};
