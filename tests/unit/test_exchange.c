#include <errno.h>
#include <stdlib.h>

#include "../../common/exchange.h"
#include "check.h"

struct fixture {
    struct route_table t;
    struct stats *st;
    struct timer_heap h;
};

static void setup(struct fixture *f, size_t heap_max)
{
    struct config cfg = config_defaults;
    delay_spec_fixed(&cfg.delay, 200000);
    route_table_init(&f->t, &cfg);
    f->st = stats_new(1, route_stats_count(&f->t));
    timer_heap_init(&f->h, heap_max);
}

static void begin(struct exchange *x, struct fixture *f, const char *method, const char *target)
{
    struct route_request rq = {.method = method, .target = target, .target_len = strlen(target)};
    exchange_begin(x, &f->t, stats_shard(f->st, 0), &rq);
}

static void teardown(struct fixture *f)
{
    stats_free(f->st);
    timer_heap_cleanup(&f->h);
}

static void exchange_delayed_answer_counts_once(void)
{
    struct fixture f;
    struct exchange x;
    struct stats_totals t;
    setup(&f, 4);
    begin(&x, &f, "GET", "/test");
    CHECK_U64(x.plan.delay_us, 200000);
    CHECK_INT(exchange_wait(&x, &f.h, 1000), 0);
    CHECK_INT(x.state, EXCHANGE_WAITING);
    CHECK_U64(x.timer.due_us, 201000);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 1);
    CHECK(timer_heap_pop_due(&f.h, 200999) == NULL);
    struct timer_node *n = timer_heap_pop_due(&f.h, 201000);
    CHECK(exchange_of_timer(n) == &x);
    exchange_fire(&x, 0, 0);
    CHECK_INT(x.state, EXCHANGE_READY);
    exchange_answer(&x);
    exchange_end(&x, &f.h);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 0);
    CHECK_U64(t.in_flight, 0);
    CHECK_U64(t.answered, 1);
    CHECK_U64(t.cancels, 0);
    CHECK_U64(stats_route_status(f.st, 0, 200), 1);
    teardown(&f);
}

static void exchange_client_gone_at_fire_is_a_cancel(void)
{
    struct fixture f;
    struct exchange x;
    struct stats_totals t;
    setup(&f, 4);
    begin(&x, &f, "GET", "/test");
    exchange_wait(&x, &f.h, 0);
    exchange_fire(exchange_of_timer(timer_heap_pop_due(&f.h, UINT64_MAX)), 1, 0);
    CHECK_INT(x.state, EXCHANGE_CANCELLED);
    exchange_end(&x, &f.h);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.cancels, 1);
    CHECK_U64(t.answered, 0);
    CHECK_U64(stats_route_status(f.st, 0, 0), 1);
    teardown(&f);
}

static void exchange_end_while_waiting_removes_the_timer(void)
{
    struct fixture f;
    struct exchange x;
    struct stats_totals t;
    setup(&f, 4);
    begin(&x, &f, "GET", "/test");
    exchange_wait(&x, &f.h, 0);
    exchange_end(&x, &f.h);
    CHECK(timer_heap_peek(&f.h) == NULL);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 0);
    CHECK_U64(t.cancels, 1);
    teardown(&f);
}

static void exchange_full_heap_cancels_instead_of_waiting(void)
{
    struct fixture f;
    struct exchange a, b;
    setup(&f, 1);
    begin(&a, &f, "GET", "/test");
    begin(&b, &f, "GET", "/test");
    CHECK_INT(exchange_wait(&a, &f.h, 0), 0);
    CHECK_INT(exchange_wait(&b, &f.h, 0), -ENOSPC);
    CHECK_INT(b.state, EXCHANGE_CANCELLED);
    exchange_end(&b, &f.h);
    exchange_end(&a, &f.h);
    struct stats_totals t;
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 0);
    CHECK_U64(t.in_flight, 0);
    teardown(&f);
}

static int sleep_ok(void *arg, uint64_t us)
{
    *(uint64_t *)arg = us;
    return 0;
}

static int sleep_cut(void *arg, uint64_t us)
{
    (void)arg;
    (void)us;
    return 1;
}

static void exchange_sleep_reports_a_cut_sleep(void)
{
    struct fixture f;
    struct exchange x;
    uint64_t slept = 0;
    setup(&f, 1);
    begin(&x, &f, "GET", "/test");
    exchange_sleep(&x, sleep_ok, &slept);
    CHECK_U64(slept, 200000);
    CHECK_INT(x.state, EXCHANGE_READY);
    begin(&x, &f, "GET", "/test");
    exchange_sleep(&x, sleep_cut, NULL);
    CHECK_INT(x.state, EXCHANGE_CANCELLED);
    teardown(&f);
}

/* A drip of 4 chunks over 400 ms: nothing at the answer, chunk k at 100 ms * (k + 1), each a
 * quarter of the body; truncate stops at half the body and asks for a cut; a plain body is sent
 * whole. */
static void exchange_paces_drips_and_truncation(void)
{
    struct fixture f;
    struct exchange x;
    size_t len = 0;
    uint64_t due = 0;
    setup(&f, 4);
    begin(&x, &f, "GET", "/echo");
    CHECK_INT(exchange_paced(&x), 0);
    x.plan.body_len = 10;
    x.sent_us = 1000;
    CHECK_INT(exchange_body_next(&x, 1000, 0, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 10);
    CHECK_INT(exchange_body_next(&x, 1000, 10, &len, &due), EXCHANGE_BODY_DONE);

    x.plan.drip.chunks = 4;
    x.plan.drip.over_us = 400000;
    CHECK_INT(exchange_paced(&x), 1);
    CHECK_INT(exchange_body_next(&x, 1000, 0, &len, &due), EXCHANGE_BODY_WAIT);
    CHECK_U64(due, 101000);
    CHECK_INT(exchange_body_next(&x, 100999, 0, &len, &due), EXCHANGE_BODY_WAIT);
    CHECK_INT(exchange_body_next(&x, 101000, 0, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 2); /* 10 * 1 / 4 */
    /* The engine sent only 1 of them: the rest of what is due comes next, at once. */
    CHECK_INT(exchange_body_next(&x, 101000, 1, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 1);
    CHECK_INT(exchange_body_next(&x, 150000, 2, &len, &due), EXCHANGE_BODY_WAIT);
    CHECK_U64(due, 201000);
    /* Late: everything due by then goes in one piece. */
    CHECK_INT(exchange_body_next(&x, 350000, 2, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 5); /* up to 10 * 3 / 4 */
    CHECK_INT(exchange_body_next(&x, 401000, 7, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 3);
    CHECK_INT(exchange_body_next(&x, 401000, 10, &len, &due), EXCHANGE_BODY_DONE);

    /* The timer of the next chunk is queued once, however often it is asked. */
    CHECK_INT(exchange_pace(&x, &f.h, 201000), 0);
    CHECK_INT(exchange_pace(&x, &f.h, 201000), 0);
    CHECK_INT(x.state, EXCHANGE_SENDING);
    CHECK(exchange_of_timer(timer_heap_pop_due(&f.h, 201000)) == &x);
    CHECK(timer_heap_pop_due(&f.h, UINT64_MAX) == NULL);

    x.plan.truncate = 1;
    CHECK_INT(exchange_body_next(&x, 401000, 2, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 3); /* up to half of 10 */
    CHECK_INT(exchange_body_next(&x, 401000, 5, &len, &due), EXCHANGE_BODY_CUT);
    x.plan.drip.chunks = 0;
    CHECK_INT(exchange_body_next(&x, 1000, 0, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 5);
    CHECK_INT(exchange_body_next(&x, 1000, 5, &len, &due), EXCHANGE_BODY_CUT);
    x.answered = 200;
    exchange_end(&x, &f.h);
    teardown(&f);
}

/* An injected fault is counted as a fault, not as a client cancel. */
static void exchange_faults_are_not_cancels(void)
{
    struct fixture f;
    struct exchange x;
    struct stats_totals t;
    setup(&f, 4);
    struct route_request rq = {.method = "GET", .target = "/echo", .target_len = 5};
    exchange_begin(&x, &f.t, stats_shard(f.st, 0), &rq);
    x.plan.action = PLAN_RESET;
    exchange_end(&x, &f.h);
    exchange_begin(&x, &f.t, stats_shard(f.st, 0), &rq);
    x.plan.action = PLAN_CLOSE;
    exchange_end(&x, &f.h);
    exchange_begin(&x, &f.t, stats_shard(f.st, 0), &rq);
    exchange_end(&x, &f.h);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.faults, 2);
    CHECK_U64(t.cancels, 1);
    teardown(&f);
}

static struct exchange *admitted_x;
static void note_admit(struct pool_entry *e)
{
    admitted_x = exchange_of_entry(e);
}

/* --workers 1 --queue 1: the worker passes to the queued request when the first one's answer is
 * queued, not when the engine ends it later; a drip keeps its worker until its last byte is handed
 * over. */
static void exchange_answer_frees_the_worker(void)
{
    struct fixture f;
    struct exchange a, b;
    struct config cfg = config_defaults;
    cfg.workers = 1;
    cfg.queue = 1;
    route_table_init(&f.t, &cfg);
    CHECK_INT(route_table_init_pool(&f.t, &cfg), 0);
    f.st = stats_new(1, route_stats_count(&f.t));
    timer_heap_init(&f.h, 4);
    for (int paced = 0; paced <= 1; paced++) {
        admitted_x = NULL;
        begin(&a, &f, "GET", "/echo");
        begin(&b, &f, "GET", "/echo");
        CHECK_INT(exchange_admit(&a, note_admit), EXCHANGE_GO);
        CHECK_INT(exchange_admit(&b, note_admit), EXCHANGE_PARKED);
        if (paced) {
            a.plan.drip.chunks = 2;
            a.plan.drip.over_us = 100000;
        }
        exchange_answer(&a);
        CHECK(admitted_x == (paced ? NULL : &b));
        if (paced) {
            size_t len = 0;
            uint64_t due = 0, t = a.sent_us;
            /* Nothing due yet; then the whole "OK", one byte per step: the worker passes on
             * only when the last byte is handed over. */
            CHECK_INT(exchange_body_take(&a, t, 0, 1, &len, &due), EXCHANGE_BODY_WAIT);
            CHECK_INT(exchange_body_take(&a, t + 100000, 0, 1, &len, &due), EXCHANGE_BODY_SEND);
            CHECK_INT(len, 1);
            CHECK(admitted_x == NULL);
            CHECK_INT(exchange_body_take(&a, t + 100000, 1, 1, &len, &due), EXCHANGE_BODY_SEND);
            CHECK_INT(len, 1);
        }
        CHECK(admitted_x == &b);
        admitted_x = NULL;
        exchange_end(&a, &f.h); /* the worker is not handed on twice */
        CHECK(admitted_x == NULL);
        exchange_answer(&b);
        exchange_end(&b, &f.h);
        struct pool_counts pc;
        pool_counts_get(f.t.pool, &pc);
        CHECK_U64(pc.active, 0);
        CHECK_U64(pc.queued, 0);
    }
    route_table_cleanup(&f.t);
    teardown(&f);
}

/* The core alone writes the state: admission (GO, PARKED, a parked request handed back, or
 * flushed when the server stops), a drip's timer (sent on, or given up), a full heap while
 * pacing. */
static void exchange_core_owns_every_state_change(void)
{
    struct fixture f;
    struct exchange a, b, c;
    struct config cfg = config_defaults;
    cfg.workers = 1;
    cfg.queue = 2;
    route_table_init(&f.t, &cfg);
    CHECK_INT(route_table_init_pool(&f.t, &cfg), 0);
    f.st = stats_new(1, route_stats_count(&f.t));
    timer_heap_init(&f.h, 1);
    admitted_x = NULL;
    begin(&a, &f, "GET", "/echo");
    begin(&b, &f, "GET", "/echo");
    begin(&c, &f, "GET", "/echo");
    CHECK_INT(exchange_admit(&a, note_admit), EXCHANGE_GO);
    CHECK_INT(a.state, EXCHANGE_ADMITTED);
    CHECK_INT(exchange_admit(&b, note_admit), EXCHANGE_PARKED);
    CHECK_INT(b.state, EXCHANGE_QUEUED);
    CHECK_INT(exchange_admit(&c, note_admit), EXCHANGE_PARKED);
    struct exchange d;
    begin(&d, &f, "GET", "/echo");
    CHECK_INT(exchange_admit(&d, note_admit), EXCHANGE_REFUSED);
    CHECK_INT(d.state, EXCHANGE_READY);
    CHECK_INT(d.plan.status, 503);
    exchange_answer(&d);
    exchange_end(&d, &f.h);
    exchange_answer(&a);
    CHECK(admitted_x == &b);
    CHECK_INT(exchange_admitted(&b), EXCHANGE_GO);
    CHECK_INT(b.state, EXCHANGE_ADMITTED);
    /* The server stops: the one still queued is handed back flushed, and gets no answer. */
    admitted_x = NULL;
    route_table_flush(&f.t);
    CHECK(admitted_x == &c);
    CHECK_INT(exchange_admitted(&c), EXCHANGE_REFUSED);
    CHECK_INT(c.state, EXCHANGE_CANCELLED);
    exchange_end(&a, &f.h);
    exchange_end(&c, &f.h);

    /* A drip's timer: sent on, or given up; pacing into a full heap cancels. */
    b.plan.drip.chunks = 2;
    b.plan.drip.over_us = 100000;
    exchange_answer(&b);
    CHECK_INT(exchange_pace(&b, &f.h, b.sent_us + 50000), 0);
    CHECK_INT(b.state, EXCHANGE_SENDING);
    struct timer_node *n = timer_heap_pop_due(&f.h, b.sent_us + 50000);
    CHECK(n == &b.timer);
    exchange_fire(&b, 1, 0);
    CHECK_INT(b.state, EXCHANGE_SENDING);
    exchange_fire(&b, 0, 1);
    CHECK_INT(b.state, EXCHANGE_CANCELLED);
    struct timer_node filler = {0};
    CHECK_INT(timer_heap_push(&f.h, &filler), 0);
    CHECK_INT(exchange_pace(&b, &f.h, b.sent_us + 100000), -ENOSPC);
    CHECK_INT(b.state, EXCHANGE_CANCELLED);
    timer_heap_cancel(&f.h, &filler);
    exchange_end(&b, &f.h);
    route_table_cleanup(&f.t);
    teardown(&f);
}

int main(void)
{
    exchange_core_owns_every_state_change();
    exchange_answer_frees_the_worker();
    exchange_paces_drips_and_truncation();
    exchange_faults_are_not_cancels();
    exchange_delayed_answer_counts_once();
    exchange_client_gone_at_fire_is_a_cancel();
    exchange_end_while_waiting_removes_the_timer();
    exchange_full_heap_cancels_instead_of_waiting();
    exchange_sleep_reports_a_cut_sleep();
    return CHECK_DONE();
}
