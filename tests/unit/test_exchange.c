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

int main(void)
{
    exchange_delayed_answer_counts_once();
    exchange_client_gone_at_fire_is_a_cancel();
    exchange_end_while_waiting_removes_the_timer();
    exchange_full_heap_cancels_instead_of_waiting();
    exchange_sleep_reports_a_cut_sleep();
    return CHECK_DONE();
}
