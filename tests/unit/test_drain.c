#include "run/drain.h"
#include "check.h"

/* Serving until asked to stop; then quiesce once, run while requests are active within the
 * grace time, give up once at its end, finish for DRAIN_FINISH_US at most, and be done. */
static void drain_walks_the_stop_in_order(void)
{
    struct drain d;
    drain_init(&d, 500);
    CHECK_INT(drain_step(&d, 0, 3, 100), DRAIN_SERVE);
    CHECK_U64(drain_wait_us(&d, 100, 7000), 7000);
    CHECK_INT(drain_given_up(&d), 0);
    CHECK_INT(drain_step(&d, 1, 3, 1000), DRAIN_QUIESCE);
    CHECK_INT(drain_step(&d, 1, 3, 1000), DRAIN_RUN);
    CHECK_U64(drain_wait_us(&d, 1200, 7000), 300); /* no later than the grace's end */
    CHECK_INT(drain_step(&d, 1, 3, 1499), DRAIN_RUN);
    CHECK_INT(drain_given_up(&d), 0);
    CHECK_INT(drain_step(&d, 1, 3, 1500), DRAIN_GIVE_UP);
    CHECK_INT(drain_given_up(&d), 1);
    CHECK_INT(drain_step(&d, 1, 3, 1500), DRAIN_FINISH);
    CHECK_U64(drain_wait_us(&d, 1500, UINT64_MAX), DRAIN_FINISH_US);
    CHECK_INT(drain_step(&d, 1, 3, 1500 + DRAIN_FINISH_US), DRAIN_DONE);
    CHECK_INT(drain_step(&d, 1, 0, 1500 + DRAIN_FINISH_US), DRAIN_DONE);
}

/* Nothing in flight: the stop waits neither for the grace time nor for a finish, and never gives
 * up (a loop that empties early must not flush the pools other loops still use). */
static void drain_idle_loop_ends_at_once(void)
{
    struct drain d;
    drain_init(&d, 5000000);
    CHECK_INT(drain_step(&d, 1, 0, 10), DRAIN_QUIESCE);
    CHECK_INT(drain_step(&d, 1, 0, 10), DRAIN_DONE);
    CHECK_INT(drain_given_up(&d), 0);
    /* Requests that end during the grace time end it early too. */
    drain_init(&d, 5000000);
    CHECK_INT(drain_step(&d, 1, 2, 10), DRAIN_QUIESCE);
    CHECK_INT(drain_step(&d, 1, 1, 20), DRAIN_RUN);
    CHECK_INT(drain_step(&d, 1, 0, 30), DRAIN_DONE);
    CHECK_INT(drain_given_up(&d), 0);
    /* Given up, the finish ends when the last answer is out. */
    drain_init(&d, 100);
    CHECK_INT(drain_step(&d, 1, 2, 10), DRAIN_QUIESCE);
    CHECK_INT(drain_step(&d, 1, 2, 110), DRAIN_GIVE_UP);
    CHECK_INT(drain_step(&d, 1, 1, 120), DRAIN_FINISH);
    CHECK_INT(drain_step(&d, 1, 0, 130), DRAIN_DONE);
}

int main(void)
{
    drain_walks_the_stop_in_order();
    drain_idle_loop_ends_at_once();
    return CHECK_DONE();
}
