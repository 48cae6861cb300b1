#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "run/exchange_impl.h"
#include "check.h"

struct fixture {
    struct service svc;
    struct stats *st; /* svc's */
    struct timer_heap h;
};

static void setup_with(struct fixture *f, const struct config *cfg, size_t heap_max)
{
    CHECK_INT(service_init(&f->svc, cfg, 1, NULL), 0);
    f->st = f->svc.stats;
    timer_heap_init(&f->h, heap_max);
}

static void setup(struct fixture *f, size_t heap_max)
{
    struct config cfg = config_defaults;
    delay_spec_fixed(&cfg.delay, 200000);
    setup_with(f, &cfg, heap_max);
}

static struct exchange *admitted_x;
static void note_admit(struct pool_entry *e)
{
    admitted_x = exchange_of_entry(e);
}

/* A test request: its target's query, and headers as name/value pairs, NULL-terminated. */
struct test_request {
    const char *target;
    const char *const *headers;
};

static long lookup_pairs(void *ctx, const char *name, char *buf, size_t len)
{
    const struct test_request *tr = ctx;
    const char *const *kv = tr->headers;
    for (size_t i = 0; kv && kv[i]; i += 2)
        if (strcasecmp(kv[i], name) == 0)
            return route_value_copy(kv[i + 1], strlen(kv[i + 1]), buf, len);
    return -1;
}

/* 1 if x's answer leaves in pieces. */
static int is_paced(struct exchange *x)
{
    struct answer a;
    exchange_answer_of(x, &a);
    return a.paced;
}

static enum exchange_do begin_with(struct exchange *x, struct fixture *f, const char *method,
                                   const char *target, const char *const *headers)
{
    struct test_request tr = {target, headers};
    struct route_request rq = {.method = method,
                               .target = target,
                               .target_len = strlen(target),
                               .lookup = lookup_pairs,
                               .ctx = &tr};
    return exchange_on_head(x, NULL, NULL, &f->svc, stats_shard(f->st, 0), &rq, note_admit);
}

static void begin(struct exchange *x, struct fixture *f, const char *method, const char *target)
{
    CHECK_INT(begin_with(x, f, method, target, NULL), EXCHANGE_DO_READ);
}

static void teardown(struct fixture *f)
{
    service_cleanup(&f->svc);
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
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_HOLD);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_HOLD); /* asked again: the same */
    uint64_t before = timer_now_us();
    CHECK_INT(exchange_hold(&x, &f.h), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_WAIT);
    CHECK(x.timer.due_us >= before + 200000 && x.timer.due_us <= timer_now_us() + 200000);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 1);
    CHECK(timer_heap_pop_due(&f.h, x.timer.due_us - 1) == NULL);
    struct timer_node *n = timer_heap_pop_due(&f.h, x.timer.due_us);
    CHECK(exchange_of_timer(n) == &x);
    CHECK_INT(exchange_on_timer(&x, 0, 0), EXCHANGE_DO_ANSWER);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_ANSWER); /* an engine that runs it again */
    CHECK_INT(exchange_has_answered(&x), 0);
    exchange_answer(&x);
    CHECK_INT(exchange_has_answered(&x), 1);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_DONE);
    exchange_end(&x, &f.h);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 0);
    CHECK_U64(t.in_flight, 0);
    CHECK_U64(t.answered, 1);
    CHECK_U64(t.cancels, 0);
    CHECK_U64(stats_route_status(f.st, 0, 200), 1);
    teardown(&f);
}

/* A request with neither a delay nor a worker to wait for is answered as soon as its body is
 * in; a body on a route that does not read it is only counted. */
static void exchange_undelayed_answers_at_once(void)
{
    struct fixture f;
    struct exchange x;
    setup(&f, 4);
    begin(&x, &f, "POST", "/echo");
    CHECK_INT(exchange_on_body(&x, "abc", 3), EXCHANGE_DO_READ);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_ANSWER);
    CHECK_INT(x.plan.status, 200);
    CHECK_INT(x.plan.close, 0);
    exchange_answer(&x);
    exchange_end(&x, &f.h);
    /* The connection's last request (--max-requests) closes after its answer. */
    struct route_request rq = {.method = "GET", .target = "/echo", .target_len = 5, .last = 1};
    CHECK_INT(exchange_on_head(&x, NULL, NULL, &f.svc, stats_shard(f.st, 0), &rq, note_admit),
              EXCHANGE_DO_READ);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_ANSWER);
    CHECK_INT(x.plan.close, 1);
    exchange_answer(&x);
    exchange_end(&x, &f.h);
    teardown(&f);
}

/* POST /write: the Content-Type and Content-Length are read through the request's lookup; an
 * answer known from them is given before the body; a good form is counted; an error found
 * mid-body is told once. */
static void exchange_uploads_through_the_core(void)
{
    struct fixture f;
    struct exchange x;
    setup(&f, 4);
    CHECK_INT(begin_with(&x, &f, "POST", "/write", NULL), EXCHANGE_DO_ANSWER);
    CHECK_INT(x.plan.status, 415);
    exchange_answer(&x);
    CHECK_INT(exchange_on_body(&x, "zz", 2), EXCHANGE_DO_READ); /* dropped, counted */
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_DONE);
    exchange_end(&x, &f.h);

    const char *const big[] = {"Content-Type", "multipart/form-data; boundary=b", "Content-Length",
                               "99999999999", NULL};
    CHECK_INT(begin_with(&x, &f, "POST", "/write", big), EXCHANGE_DO_ANSWER);
    CHECK_INT(x.plan.status, 413);
    exchange_end(&x, &f.h);

    const char *const ok[] = {"Content-Type", "multipart/form-data; boundary=b", "Content-Length",
                              "x12", NULL};
    static const char form[] = "--b\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n"
                               "hello\r\n--b--\r\n";
    CHECK_INT(begin_with(&x, &f, "POST", "/write", ok), EXCHANGE_DO_READ);
    CHECK_INT(exchange_on_body(&x, form, 10), EXCHANGE_DO_READ);
    CHECK_INT(exchange_on_body(&x, form + 10, sizeof form - 11), EXCHANGE_DO_READ);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_ANSWER);
    CHECK_INT(x.plan.status, 200);
    CHECK_STR(x.plan.body, "5");
    exchange_answer(&x);
    exchange_end(&x, &f.h);

    f.svc.routes.max_body = 8; /* over it mid-body, with no Content-Length to tell before */
    CHECK_INT(begin_with(&x, &f, "POST", "/write", ok), EXCHANGE_DO_READ);
    CHECK_INT(exchange_on_body(&x, form, 10), EXCHANGE_DO_ANSWER);
    CHECK_INT(x.plan.status, 413);
    /* Not answered yet (an engine that could not write it): told again. */
    CHECK_INT(exchange_on_body(&x, "more", 4), EXCHANGE_DO_ANSWER);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_ANSWER);
    CHECK_INT(x.plan.status, 413);
    exchange_answer(&x);
    CHECK_INT(exchange_on_body(&x, "more", 4), EXCHANGE_DO_READ); /* answered: dropped */
    exchange_end(&x, &f.h);
    teardown(&f);
}

static void exchange_client_gone_at_fire_is_a_cancel(void)
{
    struct fixture f;
    struct exchange x;
    struct stats_totals t;
    setup(&f, 4);
    begin(&x, &f, "GET", "/test");
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_HOLD);
    CHECK_INT(exchange_hold(&x, &f.h), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_on_timer(exchange_of_timer(timer_heap_pop_due(&f.h, UINT64_MAX)), 1, 0),
              EXCHANGE_DO_DROP);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_DROP);
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
    exchange_next(&x);
    exchange_hold(&x, &f.h);
    exchange_end(&x, &f.h);
    CHECK(timer_heap_peek(&f.h) == NULL);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 0);
    CHECK_U64(t.cancels, 1);
    teardown(&f);
}

/* The one answer of a request the server gives up on: 503 "server stopping", then close. The
 * access log keeps its planned delay; the delay histograms leave it out. */
static void check_stopping(const struct exchange *x, uint64_t delay_us)
{
    CHECK_INT(x->plan.status, 503);
    CHECK_INT(x->plan.close, 1);
    CHECK(strstr(x->plan.body, "server stopping") != NULL);
    CHECK_U64(x->plan.delay_us, delay_us);
}

static void exchange_give_up_answers_server_stopping(void)
{
    struct fixture f;
    struct exchange x;
    struct stats_totals t;
    setup(&f, 4);
    begin(&x, &f, "GET", "/test");
    exchange_next(&x);
    CHECK_INT(exchange_hold(&x, &f.h), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_on_timer(exchange_of_timer(timer_heap_pop_due(&f.h, UINT64_MAX)), 0, 1),
              EXCHANGE_DO_ANSWER);
    check_stopping(&x, 200000);
    exchange_answer(&x);
    exchange_end(&x, &f.h);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.answered, 1);
    CHECK_U64(t.cancels, 0);
    CHECK_U64(stats_route_status(f.st, 0, 503), 1);
    const char *names[] = {"/test"};
    char *prom = stats_to_prometheus(f.st, names, 1, 1.0, NULL, NULL);
    CHECK(prom && strstr(prom, "slowsrv_service_seconds_count{route=\"/test\"} 1") != NULL);
    CHECK(prom && strstr(prom, "slowsrv_delay_intended_seconds_count{route=\"/test\"} 0") != NULL);
    free(prom);
    teardown(&f);
}

/* A full heap answers 503 "too many waiting requests" (and closes) instead of waiting. */
static void exchange_full_heap_answers_503(void)
{
    struct fixture f;
    struct exchange a, b;
    setup(&f, 1);
    begin(&a, &f, "GET", "/test");
    begin(&b, &f, "GET", "/test");
    exchange_next(&a);
    exchange_next(&b);
    CHECK_INT(exchange_hold(&a, &f.h), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_hold(&b, &f.h), EXCHANGE_DO_ANSWER);
    CHECK_INT(b.plan.status, 503);
    CHECK_INT(b.plan.close, 1);
    CHECK(strstr(b.plan.body, "too many waiting requests") != NULL);
    exchange_answer(&b);
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

static int client_left(void *arg)
{
    (void)arg;
    return 1;
}

/* A blocking model's client that left during the sleep gets nothing and is counted as a cancel,
 * not as answered; a sleep cut by the stop still answers "server stopping". */
static void exchange_sleep_drops_a_request_whose_client_left(void)
{
    struct fixture f;
    struct exchange x;
    uint64_t slept = 0;
    setup(&f, 1);
    begin(&x, &f, "GET", "/test");
    exchange_next(&x);
    CHECK_INT(exchange_hold(&x, NULL), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_sleep(&x, sleep_ok, client_left, &slept), EXCHANGE_DO_DROP);
    exchange_end(&x, NULL);
    begin(&x, &f, "GET", "/test");
    exchange_next(&x);
    CHECK_INT(exchange_hold(&x, NULL), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_sleep(&x, sleep_cut, client_left, NULL), EXCHANGE_DO_ANSWER);
    check_stopping(&x, 200000);
    exchange_answer(&x);
    exchange_end(&x, NULL);
    struct stats_totals t;
    stats_totals_get(f.st, &t);
    CHECK_U64(t.cancels, 1);
    CHECK_U64(t.answered, 1);
    CHECK_U64(t.waiting, 0);
    CHECK_U64(t.in_flight, 0);
    teardown(&f);
}

static void exchange_sleep_reports_a_cut_sleep(void)
{
    struct fixture f;
    struct exchange x;
    uint64_t slept = 0;
    setup(&f, 1);
    begin(&x, &f, "GET", "/test");
    exchange_next(&x);
    CHECK_INT(exchange_hold(&x, NULL), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_sleep(&x, sleep_ok, NULL, &slept), EXCHANGE_DO_ANSWER);
    CHECK_U64(slept, 200000);
    CHECK_INT(x.plan.status, 200);
    exchange_end(&x, NULL);
    begin(&x, &f, "GET", "/test");
    exchange_next(&x);
    CHECK_INT(exchange_hold(&x, NULL), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_sleep(&x, sleep_cut, NULL, NULL), EXCHANGE_DO_ANSWER);
    check_stopping(&x, 200000);
    exchange_end(&x, NULL);
    struct stats_totals t;
    stats_totals_get(f.st, &t);
    CHECK_U64(t.waiting, 0);
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
    CHECK_INT(is_paced(&x), 0);
    x.plan.body_len = 10;
    x.sent_us = 1000;
    CHECK_INT(exchange_body_next(&x, 1000, 0, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 10);
    CHECK_INT(exchange_body_next(&x, 1000, 10, &len, &due), EXCHANGE_BODY_DONE);

    x.plan.drip.chunks = 4;
    x.plan.drip.over_us = 400000;
    CHECK_INT(is_paced(&x), 1);
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
    CHECK_INT(exchange_pace(&x, &f.h, 201000), EXCHANGE_DO_WAIT);
    CHECK_INT(exchange_pace(&x, &f.h, 201000), EXCHANGE_DO_WAIT);
    CHECK(exchange_of_timer(timer_heap_pop_due(&f.h, 201000)) == &x);
    CHECK(timer_heap_pop_due(&f.h, UINT64_MAX) == NULL);
    CHECK_INT(exchange_on_timer(&x, 0, 0), EXCHANGE_DO_SEND);

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

/* An event stream: unsized, each event made when it is due with its times, an event the engine
 * took in part finished first, the end after the count; its counters. */
static void exchange_steps_an_event_stream(void)
{
    struct fixture f;
    struct exchange x;
    size_t len = 0;
    uint64_t due = 0;
    const char *bytes;
    struct config cfg = config_defaults;
    delay_spec_fixed(&cfg.delay, 0);
    setup_with(&f, &cfg, 4);
    CHECK_INT(begin_with(&x, &f, "GET", "/echo?stream=ndjson,count=2,size=3,gap=100ms", NULL),
              EXCHANGE_DO_READ);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_ANSWER);
    struct answer a;
    exchange_answer_of(&x, &a);
    CHECK_INT(a.paced, 1);
    CHECK_INT(a.unsized, 1);
    CHECK_STR(answer_header(&a, "Content-Type"), "application/x-ndjson");
    exchange_answer(&x);
    x.sent_us = 1000;
    static const char first[] = "{\"id\":1,\"intended_us\":0,\"sent_us\":5,\"data\":\"abc\"}\n";
    CHECK_INT(exchange_body_take(&x, 1005, 0, 10, &bytes, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, 10);
    CHECK(memcmp(bytes, first, 10) == 0);
    CHECK_INT(exchange_body_take(&x, 1006, 10, 4096, &bytes, &len, &due), EXCHANGE_BODY_SEND);
    CHECK_INT(len, sizeof first - 1 - 10);
    CHECK(memcmp(bytes, first + 10, len) == 0);
    size_t sent = sizeof first - 1;
    CHECK_INT(exchange_body_take(&x, 1007, sent, 4096, &bytes, &len, &due), EXCHANGE_BODY_WAIT);
    CHECK_U64(due, 101000);
    CHECK_INT(exchange_body_take(&x, 101250, sent, 4096, &bytes, &len, &due), EXCHANGE_BODY_SEND);
    static const char second[] = "{\"id\":2,\"intended_us\":100000,\"sent_us\":100250,";
    CHECK(memcmp(bytes, second, sizeof second - 1) == 0);
    sent += len;
    CHECK_INT(exchange_body_take(&x, 101300, sent, 4096, &bytes, &len, &due), EXCHANGE_BODY_DONE);
    x.answered = 200;
    exchange_end(&x, &f.h);
    char *j = stats_to_json(f.st, (const char *const[]){"/test", "/write", "/", "/echo"}, 4, 1,
                            NULL, NULL);
    CHECK(j && strstr(j, "\"streams\":{\"open\":0,\"begun\":1,\"cut\":0,\"events\":2}"));
    free(j);
    teardown(&f);
}

/* An injected fault is counted as a fault, not as a client cancel; the plan's RESET and CLOSE
 * are what the engine is told. */
static void exchange_faults_are_not_cancels(void)
{
    struct fixture f;
    struct exchange x;
    struct stats_totals t;
    setup(&f, 4);
    begin(&x, &f, "GET", "/echo?fault=reset");
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_RESET);
    exchange_end(&x, &f.h);
    begin(&x, &f, "GET", "/echo?fault=close");
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_CLOSE);
    exchange_end(&x, &f.h);
    begin(&x, &f, "GET", "/echo");
    exchange_end(&x, &f.h);
    stats_totals_get(f.st, &t);
    CHECK_U64(t.faults, 2);
    CHECK_U64(t.cancels, 1);
    teardown(&f);
}

static void pool_fixture(struct fixture *f, unsigned workers, unsigned queue, int reset,
                         size_t heap_max)
{
    struct config cfg = config_defaults;
    cfg.workers = workers;
    cfg.queue = queue;
    if (reset)
        cfg.overflow = CONFIG_OVERFLOW_RESET;
    setup_with(f, &cfg, heap_max);
    admitted_x = NULL;
}

/* Begins a request on `target` and brings it to its hold: the first step past the body. */
static enum exchange_do held(struct exchange *x, struct fixture *f, const char *target)
{
    begin(x, f, "GET", target);
    CHECK_INT(exchange_next(x), EXCHANGE_DO_HOLD);
    return exchange_hold(x, &f->h);
}

/* --workers 1 --queue 1: the worker passes to the queued request when the first one's answer is
 * queued, not when the engine ends it later; a drip keeps its worker until its last byte is handed
 * over. */
static void exchange_answer_frees_the_worker(void)
{
    struct fixture f;
    struct exchange a, b;
    pool_fixture(&f, 1, 1, 0, 4);
    for (int paced = 0; paced <= 1; paced++) {
        admitted_x = NULL;
        CHECK_INT(held(&a, &f, "/echo"), EXCHANGE_DO_ANSWER);
        CHECK_INT(held(&b, &f, "/echo"), EXCHANGE_DO_PARK);
        CHECK_INT(exchange_next(&b), EXCHANGE_DO_PARK); /* still queued */
        if (paced) {
            a.plan.drip.chunks = 2;
            a.plan.drip.over_us = 100000;
        }
        exchange_answer(&a);
        CHECK(admitted_x == (paced ? NULL : &b));
        if (paced) {
            size_t len = 0;
            const char *bytes = NULL;
            uint64_t due = 0, t = a.sent_us;
            /* Nothing due yet; then the whole "OK", one byte per step: the worker passes on
             * only when the last byte is handed over. */
            CHECK_INT(exchange_body_take(&a, t, 0, 1, &bytes, &len, &due), EXCHANGE_BODY_WAIT);
            CHECK_INT(exchange_body_take(&a, t + 100000, 0, 1, &bytes, &len, &due),
                      EXCHANGE_BODY_SEND);
            CHECK_INT(len, 1);
            CHECK(admitted_x == NULL);
            CHECK_INT(exchange_body_take(&a, t + 100000, 1, 1, &bytes, &len, &due),
                      EXCHANGE_BODY_SEND);
            CHECK_INT(len, 1);
        }
        CHECK(admitted_x == &b);
        CHECK_INT(exchange_next(&b), EXCHANGE_DO_ANSWER); /* handed back: no delay, answer */
        admitted_x = NULL;
        exchange_end(&a, &f.h); /* the worker is not handed on twice */
        CHECK(admitted_x == NULL);
        exchange_answer(&b);
        exchange_end(&b, &f.h);
        struct pool_counts pc;
        pool_counts_get(f.svc.pool, &pc);
        CHECK_U64(pc.active, 0);
        CHECK_U64(pc.queued, 0);
    }
    teardown(&f);
}

/* Admission as the engine is told it: a worker (go on), parked, refused (503, or a reset with
 * --overflow reset), a parked request handed back with a delay to wait (hold again, then wait),
 * and the server stopping: queued requests and later ones are answered "server stopping". */
static void exchange_admission_and_the_stop(void)
{
    struct fixture f;
    struct exchange a, b, c, d, e;
    pool_fixture(&f, 1, 2, 0, 4);
    CHECK_INT(held(&a, &f, "/echo"), EXCHANGE_DO_ANSWER);
    CHECK_INT(held(&b, &f, "/echo?delay=100"), EXCHANGE_DO_PARK);
    CHECK_INT(held(&c, &f, "/echo"), EXCHANGE_DO_PARK);
    CHECK_INT(held(&d, &f, "/echo"), EXCHANGE_DO_ANSWER);
    CHECK_INT(d.plan.status, 503);
    CHECK(strstr(d.plan.body, "all 1 workers are busy") != NULL);
    exchange_answer(&d);
    exchange_end(&d, &f.h);
    exchange_answer(&a);
    CHECK(admitted_x == &b);
    CHECK_INT(exchange_next(&b), EXCHANGE_DO_HOLD); /* its worker: suspend again, then wait */
    CHECK_INT(exchange_hold(&b, &f.h), EXCHANGE_DO_WAIT);
    CHECK(timer_heap_peek(&f.h) == &b.timer);
    /* The server stops: the one still queued is handed back, and so is any later one. */
    admitted_x = NULL;
    service_flush(&f.svc);
    CHECK(admitted_x == &c);
    CHECK_INT(exchange_next(&c), EXCHANGE_DO_ANSWER);
    check_stopping(&c, 0);
    CHECK_INT(held(&e, &f, "/echo"), EXCHANGE_DO_ANSWER);
    check_stopping(&e, 0);
    struct pool_counts pc;
    pool_counts_get(f.svc.pool, &pc);
    CHECK_U64(pc.rejected, 1); /* d alone: the stop is not a rejection */
    exchange_end(&a, &f.h);
    exchange_end(&b, &f.h);
    exchange_end(&c, &f.h);
    exchange_end(&e, &f.h);
    teardown(&f);

    /* --overflow reset: the refused request is reset. */
    pool_fixture(&f, 1, 0, 1, 4);
    CHECK_INT(held(&a, &f, "/echo"), EXCHANGE_DO_ANSWER);
    CHECK_INT(held(&b, &f, "/echo"), EXCHANGE_DO_RESET);
    CHECK_INT(exchange_next(&b), EXCHANGE_DO_RESET);
    exchange_end(&b, &f.h);
    exchange_answer(&a);
    exchange_end(&a, &f.h);
    teardown(&f);
}

/* A paced body's timer: sent on, or closed when the server gives up on it; pacing into a full
 * heap closes. */
static void exchange_paced_body_timer(void)
{
    struct fixture f;
    struct exchange b;
    setup(&f, 1);
    begin(&b, &f, "GET", "/echo?drip=2,100ms");
    CHECK_INT(exchange_next(&b), EXCHANGE_DO_ANSWER);
    CHECK_INT(is_paced(&b), 1);
    exchange_answer(&b);
    CHECK_INT(exchange_pace(&b, &f.h, b.sent_us + 50000), EXCHANGE_DO_WAIT);
    struct timer_node *n = timer_heap_pop_due(&f.h, b.sent_us + 50000);
    CHECK(n == &b.timer);
    CHECK_INT(exchange_on_timer(&b, 1, 0), EXCHANGE_DO_SEND); /* HTTP/1 looks only when idle */
    CHECK_INT(exchange_next(&b), EXCHANGE_DO_DONE);
    CHECK_INT(exchange_on_timer(&b, 0, 1), EXCHANGE_DO_CLOSE);
    CHECK_INT(exchange_next(&b), EXCHANGE_DO_CLOSE);
    exchange_end(&b, &f.h);
    begin(&b, &f, "GET", "/echo?drip=2,100ms");
    exchange_next(&b);
    exchange_answer(&b);
    struct timer_node filler = {0};
    CHECK_INT(timer_heap_push(&f.h, &filler), 0);
    CHECK_INT(exchange_pace(&b, &f.h, b.sent_us + 100000), EXCHANGE_DO_CLOSE);
    timer_heap_cancel(&f.h, &filler);
    exchange_end(&b, &f.h);
    teardown(&f);
}

int main(void)
{
    exchange_admission_and_the_stop();
    exchange_paced_body_timer();
    exchange_answer_frees_the_worker();
    exchange_paces_drips_and_truncation();
    exchange_steps_an_event_stream();
    exchange_faults_are_not_cancels();
    exchange_delayed_answer_counts_once();
    exchange_undelayed_answers_at_once();
    exchange_uploads_through_the_core();
    exchange_client_gone_at_fire_is_a_cancel();
    exchange_end_while_waiting_removes_the_timer();
    exchange_give_up_answers_server_stopping();
    exchange_full_heap_answers_503();
    exchange_sleep_reports_a_cut_sleep();
    exchange_sleep_drops_a_request_whose_client_left();
    return CHECK_DONE();
}
