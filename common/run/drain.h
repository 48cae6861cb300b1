/*
 * drain: how a loop stops, decided once for both engines. Asked to stop, a loop stops accepting
 * (QUIESCE, once) and lets what is in flight finish for up to --grace (RUN); it ends (DONE) as
 * soon as none of its requests is left. If some are left when --grace is over, it gives up
 * (GIVE_UP, once): the engine hands back the requests parked for a worker (service_flush: every
 * loop's, and the pools turn later ones away) and from then on fires every timer at once with
 * give_up, so that what still waits is answered "server stopping" (exchange.h). Those last
 * answers get up to DRAIN_FINISH_US to go out (FINISH) before the loop ends (DONE). A loop that
 * empties early never gives up, so the shared pools are flushed only once --grace is over.
 *
 * One struct drain per loop, used by that loop's thread only.
 */
#ifndef SLOWSRV_DRAIN_H
#define SLOWSRV_DRAIN_H

#include <stddef.h>
#include <stdint.h>

/* How long the answers given on GIVE_UP may take to go out. */
#define DRAIN_FINISH_US (1000 * 1000)

enum drain_step {
    DRAIN_SERVE = 0, /* not stopping: serve as usual */
    DRAIN_QUIESCE,   /* stopping: close the listener now (once), then go on serving */
    DRAIN_RUN,       /* stopping: let what is in flight finish; wait at most drain_wait_us */
    DRAIN_GIVE_UP,   /* --grace is over with requests left: flush the pools, give up on timers */
    DRAIN_FINISH,    /* the last answers go out; wait at most drain_wait_us */
    DRAIN_DONE,      /* end the loop */
};

struct drain {
    uint64_t grace_us;
    uint64_t until; /* end of the current phase (timer_now_us clock) */
    int phase;
    int given_up;
};

/* Prepares d for a loop that may drain for grace_us (--grace). */
void drain_init(struct drain *d, uint64_t grace_us);

/* One turn of the loop at now_us: `stopping` once the server is asked to stop, `active` the
 * loop's requests begun and not ended. Returns what the loop does on this turn. */
enum drain_step drain_step(struct drain *d, int stopping, size_t active, uint64_t now_us);

/* The longest the loop may wait on this turn (at most `wait_us`): up to the end of the current
 * phase, so that the step is taken on time. */
uint64_t drain_wait_us(const struct drain *d, uint64_t now_us, uint64_t wait_us);

/* 1 once the loop has given up (GIVE_UP returned): its timers are due at once, with give_up. */
int drain_given_up(const struct drain *d);

#endif
