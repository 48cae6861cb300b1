/*
 * The poll model: libmicrohttpd offers poll() only with its own polling thread, so the timer heap
 * is shared with that thread under the loop's lock, and the loop's own thread only fires timers,
 * waiting on `wake` until the earliest deadline. A thread of the loop accepts (mhd_accept_some).
 */
#include <time.h>

#include "mhd.h"

static void run_poll(struct mhd_loop *loop, uint64_t wait_us)
{
    struct timespec ts;
    mhd_deadline_after(&ts, wait_us);
    pthread_mutex_lock(&loop->lock);
    /* A request queued after wait_us was computed signals `wake` if it is the earliest. */
    if (timer_heap_wait_us(&loop->core.timers, timer_now_us(), wait_us) > 0)
        pthread_cond_timedwait(&loop->wake, &loop->lock, &ts);
    pthread_mutex_unlock(&loop->lock);
}

const struct mhd_backend mhd_backend_poll = {
    .flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET,
    .open = mhd_open_accepting,
    .turn = run_poll,
    .quiesce = mhd_accept_quiesce,
    .hold = mhd_loop_hold,
    .admit = mhd_loop_admit,
    .pace = mhd_loop_pace,
};
