#include <pthread.h>
#include <stdlib.h>

#include "base/pool.h"
#include "check.h"

static struct pool_entry *admitted[16];
static size_t nadmitted;

static void on_admit(struct pool_entry *e)
{
    admitted[nadmitted++] = e;
}

static void pool_admits_queues_then_rejects(void)
{
    struct pool p;
    struct pool_entry e[6];
    CHECK_INT(pool_init(&p, 2, 2), 0);
    static const enum pool_state want[] = {POOL_ADMITTED, POOL_ADMITTED, POOL_QUEUED,
                                           POOL_QUEUED,   POOL_OUT,      POOL_OUT};
    for (size_t i = 0; i < 6; i++) {
        e[i].admit = on_admit;
        e[i].state = POOL_OUT;
        CHECK_INT(pool_enter(&p, &e[i]), want[i]);
    }
    struct pool_counts c;
    pool_counts_get(&p, &c);
    CHECK_INT(c.active, 2);
    CHECK_INT(c.queued, 2);
    CHECK_U64(c.rejected, 2);
    pool_cleanup(&p);
}

static void pool_hands_workers_over_in_fifo_order(void)
{
    struct pool p;
    struct pool_entry e[5];
    nadmitted = 0;
    pool_init(&p, 1, 10);
    for (size_t i = 0; i < 5; i++) {
        e[i].admit = on_admit;
        pool_enter(&p, &e[i]);
    }
    pool_leave(&p, &e[2]); /* a queued client leaves */
    CHECK_INT(e[2].state, POOL_OUT);
    pool_leave(&p, &e[0]);
    pool_leave(&p, &e[1]);
    pool_leave(&p, &e[3]);
    CHECK_INT(nadmitted, 3);
    CHECK(admitted[0] == &e[1]);
    CHECK(admitted[1] == &e[3]);
    CHECK(admitted[2] == &e[4]);
    CHECK_INT(e[4].state, POOL_ADMITTED);
    pool_leave(&p, &e[4]);
    pool_leave(&p, &e[4]); /* twice: harmless */
    struct pool_counts c;
    pool_counts_get(&p, &c);
    CHECK_INT(c.active, 0);
    CHECK_INT(c.queued, 0);
    pool_cleanup(&p);
}

static void pool_flush_releases_every_waiter(void)
{
    struct pool p;
    struct pool_entry e[4];
    nadmitted = 0;
    pool_init(&p, 1, 5);
    for (size_t i = 0; i < 4; i++) {
        e[i].admit = on_admit;
        pool_enter(&p, &e[i]);
    }
    pool_flush(&p);
    CHECK_INT(nadmitted, 3);
    for (size_t i = 1; i < 4; i++) {
        CHECK_INT(e[i].flushed, 1);
        CHECK_INT(e[i].state, POOL_OUT);
    }
    CHECK_INT(e[0].flushed, 0);
    pool_leave(&p, &e[0]);
    struct pool_counts c;
    pool_counts_get(&p, &c);
    CHECK_INT(c.active, 0);
    CHECK_INT(c.queued, 0);
    pool_cleanup(&p);
}

struct runner {
    struct pool *p;
    unsigned max_seen;
};

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static void spin_admit(struct pool_entry *e)
{
    (void)e;
}

static void *churn(void *arg)
{
    struct runner *r = arg;
    for (int i = 0; i < 20000; i++) {
        struct pool_entry e = {.admit = spin_admit};
        pool_enter(r->p, &e);
        struct pool_counts c;
        pool_counts_get(r->p, &c);
        pthread_mutex_lock(&seen_lock);
        if (c.active > r->max_seen)
            r->max_seen = c.active;
        pthread_mutex_unlock(&seen_lock);
        pool_leave(r->p, &e);
    }
    return NULL;
}

static void pool_never_exceeds_its_workers_across_threads(void)
{
    struct pool p;
    struct runner r = {&p, 0};
    pthread_t th[4];
    pool_init(&p, 3, 100);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, churn, &r);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(r.max_seen <= 3);
    struct pool_counts c;
    pool_counts_get(&p, &c);
    CHECK_INT(c.active, 0);
    CHECK_INT(c.queued, 0);
    pool_cleanup(&p);
}

int main(void)
{
    pool_admits_queues_then_rejects();
    pool_hands_workers_over_in_fifo_order();
    pool_flush_releases_every_waiter();
    pool_never_exceeds_its_workers_across_threads();
    return CHECK_DONE();
}
