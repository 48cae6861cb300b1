#include "run/drain.h"

enum { SERVING = 0, DRAINING, FINISHING, DONE };

void drain_init(struct drain *d, uint64_t grace_us)
{
    d->grace_us = grace_us;
    d->until = 0;
    d->phase = SERVING;
    d->given_up = 0;
}

enum drain_step drain_step(struct drain *d, int stopping, size_t active, uint64_t now_us)
{
    switch (d->phase) {
    case SERVING:
        if (!stopping)
            return DRAIN_SERVE;
        d->phase = DRAINING;
        d->until = now_us + d->grace_us;
        return DRAIN_QUIESCE;
    case DRAINING:
        if (active == 0) {
            d->phase = DONE; /* nothing of this loop's is left to cut */
            return DRAIN_DONE;
        }
        if (now_us < d->until)
            return DRAIN_RUN;
        d->phase = FINISHING;
        d->given_up = 1;
        d->until = now_us + DRAIN_FINISH_US;
        return DRAIN_GIVE_UP;
    case FINISHING:
        if (active > 0 && now_us < d->until)
            return DRAIN_FINISH;
        d->phase = DONE;
        return DRAIN_DONE;
    default:
        return DRAIN_DONE;
    }
}

uint64_t drain_wait_us(const struct drain *d, uint64_t now_us, uint64_t wait_us)
{
    if (d->phase != DRAINING && d->phase != FINISHING)
        return wait_us;
    uint64_t left = d->until > now_us ? d->until - now_us : 0;
    return left < wait_us ? left : wait_us;
}

int drain_given_up(const struct drain *d)
{
    return d->given_up;
}
