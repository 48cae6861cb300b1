#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "plan/route.h"
#include "check.h"
#include "engines.h"

/* Request headers for the lookup below: "Name: value" strings, NULL-terminated. */
static const char *const *test_headers;

static long lookup(void *ctx, const char *name, char *buf, size_t len)
{
    (void)ctx;
    for (size_t i = 0; test_headers && test_headers[i]; i++) {
        size_t n = strlen(name);
        if (strncasecmp(test_headers[i], name, n) == 0 && test_headers[i][n] == ':') {
            snprintf(buf, len, "%s", test_headers[i] + n + 2);
            return (long)strlen(buf);
        }
    }
    return -1;
}

static void plan(struct route_table *t, const char *method, const char *target, struct plan *p)
{
    struct route_request rq = {.method = method,
                               .target = target,
                               .target_len = strlen(target),
                               .lookup = lookup,
                               .ctx = (void *)(uintptr_t)target};
    route_plan(t, &rq, p);
}

static void route_plans_every_builtin(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    delay_spec_fixed(&cfg.delay, 300000);
    route_table_init(&t, &cfg);

    static const struct {
        const char *method, *path;
        unsigned status;
        enum plan_action action;
        uint64_t delay_us;
        const char *body, *timing;
    } cases[] = {
        {"GET", "/test", 200, PLAN_RESPOND, 300000, "ok", "delay;dur=300"},
        {"HEAD", "/test", 200, PLAN_RESPOND, 300000, "ok", "delay;dur=300"},
        {"GET", "/test?x=5", 200, PLAN_RESPOND, 300000, "ok", "delay;dur=300"},
        {"POST", "/write", 200, PLAN_UPLOAD, 0, NULL, NULL},
        {"PATCH", "/", 200, PLAN_RESPOND, 0, "OK", NULL},
        {"GET", "/echo", 200, PLAN_RESPOND, 0, "OK", NULL},
        {"GET", "/healthz", 200, PLAN_RESPOND, 0, "ok", NULL},
        {"GET", "/stats", 200, PLAN_STATS, 0, NULL, NULL},
        {"GET", "/tes", 404, PLAN_RESPOND, 0,
         "{\"error\": \"no such route; try /test, /write, /echo or /healthz\", \"status\": 404}",
         NULL},
        {"GET", "/write", 405, PLAN_RESPOND, 0,
         "{\"error\": \"method not allowed; use POST\", \"status\": 405}", NULL},
        {"DELETE", "/test", 405, PLAN_RESPOND, 0,
         "{\"error\": \"method not allowed; use GET\", \"status\": 405}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plan(&t, cases[i].method, cases[i].path, &p);
        CHECK_INT(p.status, cases[i].status);
        CHECK_INT(p.action, cases[i].action);
        CHECK_U64(p.delay_us, cases[i].delay_us);
        if (cases[i].body) {
            CHECK_INT(p.body_len, strlen(cases[i].body));
            CHECK_STR(p.body, cases[i].body);
        }
        if (cases[i].timing)
            CHECK_STR(p.timing, cases[i].timing);
        else
            CHECK(p.timing == NULL);
    }
    route_table_cleanup(&t);
}

static void route_health_and_stats_are_not_counted(void)
{
    struct route_table t;
    struct plan p;
    route_table_init(&t, &config_defaults);
    plan(&t, "GET", "/healthz", &p);
    CHECK(p.stats_id == STATS_UNCOUNTED);
    plan(&t, "GET", "/stats", &p);
    CHECK(p.stats_id == STATS_UNCOUNTED);
    plan(&t, "GET", "/zzz", &p);
    CHECK_INT(p.stats_id, ROUTE_STATS_OTHER(&t));
    plan(&t, "GET", "/test", &p);
    CHECK_INT(p.stats_id, 0);
    CHECK_INT(p.cacheable, 1);
    route_table_cleanup(&t);
}

static void route_405_names_the_allowed_methods(void)
{
    struct route_table t;
    struct plan p;
    route_table_init(&t, &config_defaults);
    plan(&t, "PUT", "/test", &p);
    CHECK_STR(p.allow, "GET, HEAD");
    plan(&t, "GET", "/write", &p);
    CHECK_STR(p.allow, "POST");
    route_table_cleanup(&t);
}

static void route_random_delays_number_requests_per_route(void)
{
    struct config cfg = config_defaults;
    struct route_table a, b;
    struct plan p, q;
    char err[128];
    CHECK_INT(delay_spec_parse(&cfg.delay, "100ms..900ms", err, sizeof err), 0);
    cfg.seed = 5;
    route_table_init(&a, &cfg);
    route_table_init(&b, &cfg);
    int differ = 0;
    for (uint64_t i = 0; i < 50; i++) {
        plan(&a, "GET", "/test", &p);
        plan(&b, "GET", "/test", &q);
        CHECK_U64(p.delay_us, q.delay_us);
        CHECK_U64(p.delay_us, delay_spec_draw(&cfg.delay, 5, 0, i));
        CHECK_INT(p.cacheable, 0);
        char want[48], ms[32];
        delay_format_ms(p.delay_us, ms, sizeof ms);
        snprintf(want, sizeof want, "delay;dur=%s", ms);
        CHECK_STR(p.timing, want);
        differ += p.delay_us != delay_spec_draw(&cfg.delay, 5, 0, 0);
    }
    CHECK(differ > 40);
    route_table_cleanup(&a);
    route_table_cleanup(&b);
}

/* Loads a config from flags as the servers do (no environment, no file). */
static int load_flags(struct config *cfg, int argc, const char *const *argv)
{
    enum config_action action;
    char err[256] = "";
    int rc = config_load(cfg, &all_models, argc, (char **)(uintptr_t)argv, NULL, 1, &action, err,
                         sizeof err);
    if (rc != 0)
        CHECK_FAIL_("config_load: %s", err);
    else
        check_passed++;
    return rc;
}

/*
 * The Server-Timing values a seed prints, through config_load, route_table_init and route_plan
 * as the servers call them: frozen golden values (see test_delay.c). The README promises
 * "--delay lognormal:200ms,0.5 --seed 7" gives delay;dur=324.674 on the first /test, on every
 * run; changing any of these breaks that promise and must be a deliberate, documented change.
 */
static void route_seeded_server_timing_matches_the_readme(void)
{
    struct config cfg;
    struct route_table t;
    struct plan p;
    static const char *const readme[] = {"slowsrv", "--delay", "lognormal:200ms,0.5", "--seed",
                                         "7"};
    if (load_flags(&cfg, 5, readme) != 0)
        return;
    route_table_init(&t, &cfg);
    static const struct {
        const char *target;
        const char *timing;
    } cases[] = {
        /* Request i of /test draws (seed 7, route 0, i). */
        {"/test", "delay;dur=324.674"},
        {"/test", "delay;dur=376.993"},
        /* Other routes do not advance /test's numbering. */
        {"/echo", NULL},
        {"/test", "delay;dur=214.798"},
        {"/test", "delay;dur=117.003"},
        /* An override draws from its own stream: (seed 7, 1 << 32 | 3, i) on /echo. */
        {"/echo?delay=lognormal:200ms,0.5", "delay;dur=362.042"},
        {"/echo?delay=lognormal:200ms,0.5", "delay;dur=136.358"},
        {"/echo?delay=lognormal:200ms,0.5", "delay;dur=75.246"},
        /* On /test the override takes the request's number (4, then 5). */
        {"/test?delay=800ms..1200ms", "delay;dur=1089.028"},
        {"/test?delay=800ms..1200ms", "delay;dur=911.461"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plan(&t, "GET", cases[i].target, &p);
        CHECK_INT(p.status, 200);
        if (cases[i].timing)
            CHECK_STR(p.timing, cases[i].timing);
        else
            CHECK(p.timing == NULL);
    }
    route_table_cleanup(&t);
    config_cleanup(&cfg);

    /* The README's default: curl /test | grep Server-Timing gives delay;dur=1000. */
    static const char *const plain[] = {"slowsrv"};
    if (load_flags(&cfg, 1, plain) != 0)
        return;
    route_table_init(&t, &cfg);
    plan(&t, "GET", "/test", &p);
    CHECK_STR(p.timing, "delay;dur=1000");
    CHECK_U64(p.delay_us, 1000000);
    route_table_cleanup(&t);
    config_cleanup(&cfg);
}

/* --error-rate's coin is seeded too: the same requests fail on every run (frozen values). */
static void route_seeded_error_rate_fails_the_same_requests(void)
{
    struct config cfg;
    struct route_table t;
    struct plan p;
    static const char *const argv[] = {"slowsrv", "--error-rate", "0.25", "--seed", "77"};
    static const unsigned want[16] = {503, 503, 200, 503, 200, 200, 200, 200,
                                      200, 200, 200, 200, 200, 200, 200, 200};
    if (load_flags(&cfg, 5, argv) != 0)
        return;
    route_table_init(&t, &cfg);
    for (size_t i = 0; i < 16; i++) {
        plan(&t, "GET", "/echo", &p);
        if (p.status != want[i])
            CHECK_FAIL_("request %zu: got %u, want %u", i, p.status, want[i]);
        else
            check_passed++;
    }
    route_table_cleanup(&t);
    config_cleanup(&cfg);
}

/* Normal and log-normal draws are truncated at --max-delay: never above, and the cap itself is
 * reached, for the route's delay and for an override. */
static void route_unbounded_draws_stop_at_max_delay(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    char err[128];
    CHECK_INT(delay_spec_parse(&cfg.delay, "normal:1s,5s", err, sizeof err), 0);
    cfg.max_delay_us = 2000000;
    cfg.seed = 3;
    route_table_init(&t, &cfg);
    static const char *const targets[] = {"/test", "/echo?delay=normal:1s,5s",
                                          "/echo?delay=lognormal:1s,2"};
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        unsigned over = 0, capped = 0, zero = 0;
        for (int i = 0; i < 1000; i++) {
            plan(&t, "GET", targets[k], &p);
            over += p.delay_us > 2000000;
            capped += p.delay_us == 2000000;
            zero += p.delay_us == 0;
            if (p.delay_us == 2000000)
                CHECK_STR(p.timing, "delay;dur=2000");
        }
        if (over != 0 || capped < 100)
            CHECK_FAIL_("%s: %u draws over --max-delay, %u at it", targets[k], over, capped);
        else
            check_passed++;
        /* normal:1s,5s goes below 0 about 42% of the time: those are 0, not huge. */
        if (k < 2)
            CHECK(zero > 300);
    }
    route_table_cleanup(&t);
}

/* No body where the status forbids one (1xx, 204, 304); HEAD keeps the length of its GET. */
static void route_bodiless_statuses_carry_no_body(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    cfg.max_size = 1000;
    route_table_init(&t, &cfg);
    static const struct {
        const char *method, *target;
        unsigned status;
        size_t body_len;
    } cases[] = {
        {"GET", "/echo?status=204", 204, 0},         {"GET", "/echo?status=304", 304, 0},
        {"GET", "/echo?status=304&size=10", 304, 0}, {"GET", "/echo?status=100", 400, 79},
        {"GET", "/echo?status=199&size=5", 400, 79}, {"HEAD", "/echo?status=304", 304, 0},
        {"GET", "/echo?status=200", 200, 2},         {"GET", "/echo?status=205&size=7", 205, 7},
        {"GET", "/echo?status=303", 303, 2},         {"GET", "/echo?status=305", 305, 2},
        {"HEAD", "/test?delay=0", 200, 2},           {"HEAD", "/echo?size=10", 200, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plan(&t, cases[i].method, cases[i].target, &p);
        CHECK_INT(p.status, cases[i].status);
        if (p.body_len != cases[i].body_len)
            CHECK_FAIL_("%s %s: body_len %zu, want %zu", cases[i].method, cases[i].target,
                        p.body_len, cases[i].body_len);
        else
            check_passed++;
    }
    plan(&t, "HEAD", "/test", &p);
    CHECK_INT(p.body_len, 2);
    CHECK_STR(p.body, "ok");
    route_table_cleanup(&t);
}

static void route_overrides_change_delay_status_and_size(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    cfg.max_size = 1000;
    route_table_init(&t, &cfg);
    static const struct {
        const char *target;
        const char *header;
        unsigned status;
        uint64_t delay_us;
        size_t body_len;
        const char *timing;
    } cases[] = {
        {"/echo?delay=250ms", NULL, 200, 250000, 2, "delay;dur=250"},
        {"/echo?status=503", NULL, 503, 0, 2, NULL},
        {"/echo?size=1000", NULL, 200, 0, 1000, NULL},
        {"/echo?size=0", NULL, 200, 0, 0, NULL},
        {"/test?delay=5&status=201", NULL, 201, 5000, 2, "delay;dur=5"},
        {"/echo?status=204", NULL, 204, 0, 0, NULL},
        {"/echo", "X-Slowsrv-Delay: 40ms", 200, 40000, 2, "delay;dur=40"},
        {"/echo", "x-slowsrv-status: 418", 418, 0, 2, NULL},
        {"/echo?delay=10ms", "X-Slowsrv-Delay: 40ms", 200, 10000, 2, "delay;dur=10"},
        {"/echo?delay=1%30ms", NULL, 200, 10000, 2, "delay;dur=10"},
        /* Percentiles: the '=' after the first one belongs to the value, encoded or not. */
        {"/echo?delay=min=30ms,p50=30ms", NULL, 200, 30000, 2, "delay;dur=30"},
        {"/echo?delay=min%3D25ms%2Cp50%3D25ms", NULL, 200, 25000, 2, "delay;dur=25"},
        {"/echo", "X-Slowsrv-Delay: min=40ms,p99=40ms", 200, 40000, 2, "delay;dur=40"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *hdrs[] = {cases[i].header, NULL};
        test_headers = hdrs;
        plan(&t, "GET", cases[i].target, &p);
        CHECK_INT(p.status, cases[i].status);
        CHECK_U64(p.delay_us, cases[i].delay_us);
        CHECK_INT(p.body_len, cases[i].body_len);
        CHECK_INT(p.cacheable, 0);
        if (cases[i].timing)
            CHECK_STR(p.timing, cases[i].timing);
        else
            CHECK(p.timing == NULL);
    }
    test_headers = NULL;
    plan(&t, "GET", "/echo?size=3", &p);
    CHECK_INT(memcmp(p.body, "slo", 3), 0);
    route_table_cleanup(&t);
}

static void route_overrides_out_of_range_get_400_naming_the_parameter(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    cfg.max_size = 1000;
    route_table_init(&t, &cfg);
    static const struct {
        const char *target, *header, *body;
    } cases[] = {
        {"/echo?delay=61s", NULL,
         "{\"error\": \"delay: 61000 ms is over --max-delay 60000 ms\", \"status\": 400}"},
        {"/echo?delay=abc", NULL,
         "{\"error\": \"delay: bad duration 'abc' (want a number with us, ms, s, m or h, e.g. "
         "250ms or 1.5s)\", \"status\": 400}"},
        {"/echo?delay=normal:70s,1s", NULL,
         "{\"error\": \"delay: 70000 ms is over --max-delay 60000 ms\", \"status\": 400}"},
        {"/echo?delay=p50=20ms,max=61s", NULL,
         "{\"error\": \"delay: 61000 ms is over --max-delay 60000 ms\", \"status\": 400}"},
        {"/echo?delay=p90=1s,p50=2s", NULL,
         "{\"error\": \"delay: percentiles must increase: p50 after p90 in 'p90=1s,p50=2s'\", "
         "\"status\": 400}"},
        {"/echo?status=600", NULL,
         "{\"error\": \"status: '600' is not an HTTP status from 200 to 599\", \"status\": 400}"},
        {"/echo?status=", NULL,
         "{\"error\": \"status: '' is not an HTTP status from 200 to 599\", \"status\": 400}"},
        {"/echo", "X-Slowsrv-Status: 99",
         "{\"error\": \"status: '99' is not an HTTP status from 200 to 599\", \"status\": 400}"},
        {"/echo?status=101", NULL,
         "{\"error\": \"status: '101' is not an HTTP status from 200 to 599\", \"status\": 400}"},
        {"/echo", "X-Slowsrv-Status: 199",
         "{\"error\": \"status: '199' is not an HTTP status from 200 to 599\", \"status\": 400}"},
        {"/echo?size=1001", NULL,
         "{\"error\": \"size: '1001' is not a byte count from 0 to --max-size 1000\", "
         "\"status\": 400}"},
        {"/echo?size=-1", NULL,
         "{\"error\": \"size: '-1' is not a byte count from 0 to --max-size 1000\", "
         "\"status\": 400}"},
        {"/echo?drip=3,1s", NULL,
         "{\"error\": \"drip: 3 chunks need a body of at least 3 bytes (this one has 2); add "
         "size=\", \"status\": 400}"},
        {"/echo?drip=0", NULL,
         "{\"error\": \"drip: bad drip '0' (want CHUNKS,DURATION with 1 to 100000 chunks, e.g. "
         "10,2s)\", \"status\": 400}"},
        {"/echo?size=10&drip=2,61s", NULL,
         "{\"error\": \"drip: 61000 ms is over --max-delay 60000 ms\", \"status\": 400}"},
        {"/echo", "X-Slowsrv-Drip: 2,1sec",
         "{\"error\": \"drip: bad duration '1sec' (want a number with us, ms, s, m or h, e.g. "
         "250ms or 1.5s)\", \"status\": 400}"},
        {"/echo?fault=explode", NULL,
         "{\"error\": \"fault: 'explode' is not close, reset, truncate or none\", "
         "\"status\": 400}"},
        {"/echo?size=0&fault=truncate", NULL,
         "{\"error\": \"fault: truncate needs a body to cut; add size=\", \"status\": 400}"},
        {"/echo?status=204&fault=truncate", NULL,
         "{\"error\": \"fault: truncate needs a body to cut; add size=\", \"status\": 400}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *hdrs[] = {cases[i].header, NULL};
        test_headers = hdrs;
        plan(&t, "GET", cases[i].target, &p);
        CHECK_INT(p.status, 400);
        CHECK_STR(p.body, cases[i].body);
        CHECK_U64(p.delay_us, 0);
    }
    test_headers = NULL;
    route_table_cleanup(&t);
}

/* ?drip= and ?fault= (and their headers) shape the plan; a fault keeps the delay; /write and
 * /healthz take neither. */
static void route_drip_and_fault_shape_the_plan(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    delay_spec_fixed(&cfg.delay, 100000);
    route_table_init(&t, &cfg);
    plan(&t, "GET", "/test?drip=2,1s", &p);
    CHECK_INT(p.action, PLAN_RESPOND);
    CHECK_INT(p.drip.chunks, 2);
    CHECK_U64(p.drip.over_us, 1000000);
    CHECK_U64(p.delay_us, 100000);
    CHECK_INT(p.cacheable, 0);
    CHECK_INT(p.truncate, 0);
    static const char *const close_hdr[] = {"X-Slowsrv-Fault: close", NULL};
    test_headers = close_hdr;
    plan(&t, "GET", "/test", &p);
    CHECK_INT(p.action, PLAN_CLOSE);
    CHECK_U64(p.delay_us, 100000);
    test_headers = NULL;
    plan(&t, "GET", "/test?fault=reset", &p);
    CHECK_INT(p.action, PLAN_RESET);
    plan(&t, "GET", "/test?fault=truncate&size=9", &p);
    CHECK_INT(p.action, PLAN_RESPOND);
    CHECK_INT(p.truncate, 1);
    CHECK_INT(p.body_len, 9);
    plan(&t, "GET", "/test?fault=none", &p);
    CHECK_INT(p.action, PLAN_RESPOND);
    CHECK_INT(p.truncate, 0);
    plan(&t, "POST", "/write?fault=reset", &p);
    CHECK_INT(p.status, 400);
    CHECK_STR(p.body, "{\"error\": \"drip, fault: only on routes with a fixed answer (not "
                      "/write)\", \"status\": 400}");
    plan(&t, "GET", "/healthz?fault=reset", &p);
    CHECK_INT(p.action, PLAN_RESPOND);
    CHECK_INT(p.status, 200);
    route_table_cleanup(&t);
}

/* A config route's drip, fault and worker pool; the global pool stays for the others. */
static void route_config_shapes_and_pools(void)
{
    struct config cfg = config_defaults;
    struct config_route routes[2];
    struct route_table t;
    struct plan p;
    char slow[] = "/slow", body[] = "0123456789", broken[] = "/broken";
    memset(routes, 0, sizeof routes);
    routes[0].path = slow;
    routes[0].status = 200;
    routes[0].body = body;
    routes[0].body_len = 10;
    routes[0].drip.chunks = 5;
    routes[0].drip.over_us = 500000;
    routes[0].workers = 2;
    routes[0].queue = 1;
    routes[1].path = broken;
    routes[1].status = 200;
    routes[1].fault = CONFIG_FAULT_RESET;
    cfg.routes = routes;
    cfg.nroutes = 2;
    cfg.workers = 7;
    route_table_init(&t, &cfg);
    plan(&t, "GET", "/slow", &p);
    CHECK_INT(p.drip.chunks, 5);
    CHECK_INT(p.cacheable, 0);
    CHECK_INT(p.route->workers, 2); /* its own pool: made by the service (test_service.c) */
    CHECK_INT(p.route->queue, 1);
    plan(&t, "GET", "/slow?drip=none", &p);
    CHECK_INT(p.status, 400);
    plan(&t, "GET", "/broken", &p);
    CHECK_INT(p.action, PLAN_RESET);
    plan(&t, "GET", "/broken?fault=none", &p);
    CHECK_INT(p.action, PLAN_RESPOND);
    plan(&t, "GET", "/test", &p);
    CHECK_INT(p.route->workers, 0);
    route_table_cleanup(&t);
}

static void route_no_overrides_ignores_them(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    cfg.no_overrides = 1;
    route_table_init(&t, &cfg);
    plan(&t, "GET", "/echo?delay=1s&status=500&size=5", &p);
    CHECK_INT(p.status, 200);
    CHECK_U64(p.delay_us, 0);
    CHECK_STR(p.body, "OK");
    CHECK_INT(p.cacheable, 1);
    route_table_cleanup(&t);
}

static void route_error_rate_follows_the_seed(void)
{
    struct config cfg = config_defaults;
    struct route_table a, b;
    struct plan p, q;
    cfg.error_rate = 0.1;
    cfg.error_status = 502;
    cfg.seed = 77;
    delay_spec_fixed(&cfg.delay, 0);
    route_table_init(&a, &cfg);
    route_table_init(&b, &cfg);
    unsigned errors = 0;
    for (int i = 0; i < 10000; i++) {
        plan(&a, "GET", "/echo", &p);
        plan(&b, "GET", "/echo", &q);
        CHECK_INT(p.status, q.status);
        errors += p.status == 502;
    }
    CHECK(errors > 850 && errors < 1150);
    plan(&a, "GET", "/healthz", &p);
    CHECK_INT(p.status, 200);
    route_table_cleanup(&a);
    route_table_cleanup(&b);
}

/* An injected error keeps the delay it drew and says so in Server-Timing, and answers its
 * route's own error body: a plan holds its drawn Server-Timing and an error text in the same
 * storage (issue 16), so an injected error must not write the text. */
static void route_injected_error_keeps_its_drawn_timing(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    char err[128];
    cfg.error_rate = 1;
    cfg.error_status = 503;
    cfg.seed = 5;
    CHECK_INT(delay_spec_parse(&cfg.delay, "10ms..20ms", err, sizeof err), 0);
    route_table_init(&t, &cfg);
    for (int i = 0; i < 100; i++) {
        plan(&t, "GET", "/test", &p);
        CHECK_INT(p.status, 503);
        CHECK(p.delay_us >= 10000 && p.delay_us <= 20000);
        char want[64];
        char ms[32];
        delay_format_ms(p.delay_us, ms, sizeof ms);
        snprintf(want, sizeof want, "delay;dur=%s", ms);
        CHECK_STR(p.timing ? p.timing : "(none)", want);
        CHECK_STR(p.body, "{\"error\": \"injected by --error-rate\", \"status\": 503}");
    }
    route_table_cleanup(&t);
}

static void route_config_routes_replace_and_add(void)
{
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    struct config_route routes[2];
    memset(routes, 0, sizeof routes);
    routes[0].path = (char *)(uintptr_t) "/echo";
    routes[0].status = 201;
    routes[0].body = (char *)(uintptr_t) "made";
    routes[0].body_len = 4;
    routes[1].path = (char *)(uintptr_t) "/api/items";
    routes[1].method = (char *)(uintptr_t) "PUT";
    routes[1].status = 202;
    routes[1].has_delay = 1;
    delay_spec_fixed(&routes[1].delay, 120000);
    routes[1].nheaders = 2;
    routes[1].headers[0].name = (char *)(uintptr_t) "Content-Type";
    routes[1].headers[0].value = (char *)(uintptr_t) "application/json";
    routes[1].headers[1].name = (char *)(uintptr_t) "X-Thing";
    routes[1].headers[1].value = (char *)(uintptr_t) "1";
    cfg.routes = routes;
    cfg.nroutes = 2;
    route_table_init(&t, &cfg);
    plan(&t, "POST", "/echo", &p);
    CHECK_INT(p.status, 201);
    CHECK_STR(p.body, "made");
    plan(&t, "PUT", "/api/items", &p);
    CHECK_INT(p.status, 202);
    CHECK_U64(p.delay_us, 120000);
    CHECK_STR(p.timing, "delay;dur=120");
    CHECK_STR(p.content_type, "application/json");
    CHECK_INT(p.nheaders, 1);
    CHECK_STR(p.headers[0].name, "X-Thing");
    CHECK_INT(p.body_len, 0);
    plan(&t, "GET", "/api/items", &p);
    CHECK_INT(p.status, 405);
    CHECK_STR(p.allow, "PUT");
    plan(&t, "GET", "/test", &p);
    CHECK_INT(p.status, 200);
    route_table_cleanup(&t);
}

/* A table of 10 000 config routes plans each one's own answer, misses every other path (a
 * prefix, an extension, one past the last) with the 404, and keeps the built-in routes; the
 * table is sized to its routes and refuses more than CONFIG_ROUTES_MAX. */
static void route_table_of_10000_routes_finds_each_and_misses_the_rest(void)
{
    enum { N = 10000 };
    static char paths[N][16], bodies[N][16];
    static struct config_route routes[N];
    struct config cfg = config_defaults;
    struct route_table t;
    struct plan p;
    memset(routes, 0, sizeof routes);
    for (size_t i = 0; i < N; i++) {
        snprintf(paths[i], sizeof paths[i], "/r/%05zu", i);
        routes[i].path = paths[i];
        routes[i].status = 200 + (unsigned)(i % 3);
        routes[i].body_len = (size_t)snprintf(bodies[i], sizeof bodies[i], "answer %zu", i);
        routes[i].body = bodies[i];
    }
    cfg.routes = routes;
    cfg.nroutes = N;
    CHECK_INT(route_table_init(&t, &cfg), 0);
    CHECK_INT(t.count, N + ROUTE_BUILTINS);
    size_t right = 0, missed = 0;
    for (size_t i = 0; i < N; i++) {
        char miss[32];
        plan(&t, "GET", paths[i], &p);
        right += p.status == 200 + i % 3 && p.body_len == strlen(bodies[i]) &&
                 memcmp(p.body, bodies[i], p.body_len) == 0 && p.route &&
                 strcmp(p.route->path, paths[i]) == 0 &&
                 route_find(&t, paths[i]) == (long)p.route_id;
        snprintf(miss, sizeof miss, "/r/%05zu", i + N);
        plan(&t, "GET", miss, &p);
        missed += p.status == 404 && route_find(&t, miss) == -1;
    }
    CHECK_INT(right, N);
    CHECK_INT(missed, N);
    static const char *const others[] = {"/r/0000", "/r/000001", "/r/", "/r", "/r/00000/"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        plan(&t, "GET", others[i], &p);
        CHECK_INT(p.status, 404);
    }
    plan(&t, "GET", "/r/09999?x=1", &p);
    CHECK_STR(p.body, "answer 9999");
    /* The 404 names as many routes as fit, and how many more there are. */
    plan(&t, "GET", "/nowhere", &p);
    CHECK(strstr(p.body, "no such route; try /r/00000, /r/00001, ") != NULL);
    CHECK(strstr(p.body, " more)") != NULL);
    plan(&t, "GET", "/healthz", &p);
    CHECK_STR(p.body, "ok");
    plan(&t, "GET", "/stats", &p);
    CHECK_INT(p.action, PLAN_STATS);
    plan(&t, "GET", "/ui/app.js", &p);
    CHECK_INT(p.status, 200);
    route_table_cleanup(&t);

    /* One past the limit is refused with nothing made. */
    struct config_route *many = calloc(CONFIG_ROUTES_MAX + 1, sizeof *many);
    for (size_t i = 0; many && i <= CONFIG_ROUTES_MAX; i++)
        many[i] = routes[i % N];
    CHECK_INT(route_table_init_routes(&t, &cfg, many, CONFIG_ROUTES_MAX + 1, 2), -ENOSPC);
    free(many);
}

/* An override value too long for the route's buffer is refused, never read cut short: from the
 * query and from its header alike. */
static void route_overlong_override_is_refused(void)
{
    struct route_table t;
    struct plan p;
    static char target[400];
    route_table_init(&t, &config_defaults);
    int n = snprintf(target, sizeof target, "/echo?delay=");
    memset(target + n, '1', 200);
    snprintf(target + n + 200, sizeof target - (size_t)n - 200, "us");
    plan(&t, "GET", target, &p);
    CHECK_INT(p.status, 400);
    CHECK_STR(p.body, "{\"error\": \"delay: value over 127 bytes\", \"status\": 400}");
    plan(&t, "GET",
         "/echo?status=2000000000000000000000000000000000000000000000000000000000000000"
         "000000000000000000000000000000000000000000000000000000000000000000000000",
         &p);
    CHECK_INT(p.status, 400);
    CHECK_STR(p.body, "{\"error\": \"status: value over 127 bytes\", \"status\": 400}");
    /* Exactly one byte too many (128) is refused too; 127 is read whole. */
    n = snprintf(target, sizeof target, "/echo?size=");
    memset(target + n, '0', 128);
    target[n + 128] = '\0';
    plan(&t, "GET", target, &p);
    CHECK_STR(p.body, "{\"error\": \"size: value over 127 bytes\", \"status\": 400}");
    target[n + 127] = '\0';
    plan(&t, "GET", target, &p);
    CHECK_INT(p.status, 200);
    CHECK_INT(p.body_len, 0);
    route_table_cleanup(&t);
}

static void route_error_bodies_stay_valid_json_whatever_the_input(void)
{
    struct route_table t;
    struct plan p;
    route_table_init(&t, &config_defaults);
    static const char *const targets[] = {"/echo?status=%22", "/echo?status=%5C",
                                          "/echo?status=%01%0A", "/echo?delay=%22%5C%7F",
                                          "/echo?size=12345678901234567890123456789012345678901"
                                          "234567890"};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        plan(&t, "GET", targets[i], &p);
        CHECK_INT(p.status, 400);
        cJSON *j = cJSON_ParseWithLength(p.body, p.body_len);
        if (!j)
            CHECK_FAIL_("%s: body is not JSON: %s", targets[i], p.body);
        else
            check_passed++;
        CHECK_INT(cJSON_GetObjectItem(j, "status") ? cJSON_GetObjectItem(j, "status")->valueint
                                                   : -1,
                  400);
        cJSON_Delete(j);
    }
    char buf[64];
    size_t n = route_error_json(buf, sizeof buf, 404, "a long message that cannot fit in full");
    CHECK_INT(n, strlen(buf));
    CHECK_STR(buf, "{\"error\": \"a long message that cannot fit in f\", \"status\": 404}");
    route_table_cleanup(&t);
}

static void route_refuses_oversized_targets_and_headers(void)
{
    struct route_table t;
    struct plan p;
    static char target[20000];
    route_table_init(&t, &config_defaults);
    memset(target, 'a', sizeof target - 1);
    target[0] = '/';
    struct route_request rq = {.method = "GET", .target = target, .target_len = 8192};
    route_plan(&t, &rq, &p);
    CHECK_INT(p.status, 404);
    rq.target_len = 8193;
    route_plan(&t, &rq, &p);
    CHECK_INT(p.status, 414);
    CHECK_STR(p.body, "{\"error\": \"request target over 8192 bytes (--max-request-line)\", "
                      "\"status\": 414}");
    struct route_request big = {
        .method = "GET", .target = "/echo", .target_len = 5, .header_bytes = 8193};
    route_plan(&t, &big, &p);
    CHECK_INT(p.status, 431);
    CHECK_STR(p.body, "{\"error\": \"request headers over 8192 bytes (--max-header-size)\", "
                      "\"status\": 431}");
    big.header_bytes = 8192;
    route_plan(&t, &big, &p);
    CHECK_INT(p.status, 200);
    route_table_cleanup(&t);

    /* The limits follow --max-request-line and --max-header-size. */
    struct config cfg = config_defaults;
    cfg.max_request_line = 16384;
    cfg.max_header_size = 2048;
    route_table_init(&t, &cfg);
    rq.target_len = 16384;
    route_plan(&t, &rq, &p);
    CHECK_INT(p.status, 404);
    rq.target_len = 16385;
    route_plan(&t, &rq, &p);
    CHECK_INT(p.status, 414);
    big.header_bytes = 2049;
    route_plan(&t, &big, &p);
    CHECK_INT(p.status, 431);
    route_table_cleanup(&t);
}

/* ?size=N answers N bytes of one 64-byte line over and over, the same bytes at every offset
 * (also across the blocks the filler is mapped in), up to --max-size, at its default and at
 * the 1 GiB ceiling. */
static void route_size_bodies_repeat_one_line_to_the_last_byte(void)
{
    static const char line[] = "slowsrv filler 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ\n";
    static const uint64_t maxes[] = {16ULL << 20, 1ULL << 30, 100};
    for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
        struct config cfg = config_defaults;
        struct route_table t;
        struct plan p;
        char target[64];
        cfg.max_size = maxes[m];
        route_table_init(&t, &cfg);
        snprintf(target, sizeof target, "/echo?size=%llu", (unsigned long long)maxes[m]);
        plan(&t, "GET", target, &p);
        CHECK_INT(p.status, 200);
        CHECK_U64(p.body_len, maxes[m]);
        size_t bad = 0;
        /* Every byte of the first 300 KiB, then a sample across the whole span. */
        for (uint64_t i = 0; i < p.body_len; i += i < 300 * 1024 ? 1 : 4093)
            bad += p.body[i] != line[i % 64];
        bad += p.body[p.body_len - 1] != line[(p.body_len - 1) % 64];
        CHECK_INT(bad, 0);
        route_table_cleanup(&t);
    }
}

/* A lookup's copy keeps what fits and returns the whole length. */
static void route_value_copy_keeps_whole_length(void)
{
    char small[2];
    CHECK_INT(route_value_copy("abcdef", 6, small, sizeof small), 6);
    CHECK_STR(small, "a");
}

/* A target with dot segments is routed by its resolved path. */
static void route_paths_resolve(void)
{
    struct route_table t;
    struct plan p;
    struct config cfg = config_defaults;
    route_table_init(&t, &cfg);
    plan(&t, "GET", "/test/../echo", &p);
    CHECK_INT(p.status, 200);
    CHECK_STR(p.route ? p.route->path : "", "/echo");
    route_table_cleanup(&t);
}

/* Config routes of the given paths, each answering its own path as body. */
static void path_routes(struct config_route *routes, const char *const *paths, size_t n)
{
    memset(routes, 0, n * sizeof *routes);
    for (size_t i = 0; i < n; i++) {
        routes[i].path = (char *)(uintptr_t)paths[i];
        routes[i].status = 200;
        routes[i].body = (char *)(uintptr_t)paths[i];
        routes[i].body_len = strlen(paths[i]);
    }
}

/* Each request path is answered by the route that the precedence names (doc/options.md §Path
 * templates): an exact path, else the template with the longest literal prefix (on a tie, the
 * literal at the first segment where they part), else the wildcard by the same rule; {name}
 * matches one non-empty segment, a trailing * zero or more. */
static void route_templates_match_by_precedence(void)
{
    static const char *const paths[] = {
        "/api/orders/{id}",
        "/api/orders/recent",
        "/api/orders/{id}/items",
        "/api/{kind}/7",
        "/api/*",
        "/api/orders/*",
        "/files/*",
        "/{a}/{b}/c",
        "/{a}/b/{c}",
        "/api/{kind}/{id}/x",
        "/api/orders/{id}/x",
        "/api/{kind}",
    };
    enum { N = sizeof paths / sizeof paths[0] };
    struct config_route routes[N];
    path_routes(routes, paths, N);
    struct config cfg = config_defaults;
    cfg.routes = routes;
    cfg.nroutes = N;
    struct route_table t;
    CHECK_INT(route_table_init(&t, &cfg), 0);
    static const struct {
        const char *target, *route;
    } cases[] = {
        {"/api/orders/7", "/api/orders/{id}"},
        {"/api/orders/7?x=1", "/api/orders/{id}"},
        {"/api/orders/recent", "/api/orders/recent"},
        {"/api/orders/7/items", "/api/orders/{id}/items"},
        {"/api/users/7", "/api/{kind}/7"},
        {"/api/orders/7/x", "/api/orders/{id}/x"},
        {"/api/users/7/x", "/api/{kind}/{id}/x"},
        {"/api/users/8", "/api/*"},
        {"/api/orders/", "/api/orders/*"},
        {"/api/orders", "/api/{kind}"}, /* a template beats a wildcard */
        {"/api/orders/7/items/9", "/api/orders/*"},
        {"/api", "/api/*"},
        {"/api/", "/api/*"},
        {"/files", "/files/*"},
        {"/files/a/b/c", "/files/*"},
        {"/x/b/c", "/{a}/b/{c}"},
        {"/x/y/c", "/{a}/{b}/c"},
        {"/x//c", NULL},
        {"/apix", NULL},
        {"/api/orders/{id}", "/api/orders/{id}"},
        {"/api/users", "/api/{kind}"},
        {"/api/*", "/api/{kind}"},
        {"/*/a", NULL},
        {"/test", "/test"},
        {"/", "/"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct plan p;
        plan(&t, "GET", cases[i].target, &p);
        if (!cases[i].route) {
            CHECK_INT(p.status, 404);
            CHECK(p.route == NULL);
            continue;
        }
        CHECK_STR(p.route ? p.route->path : "(none)", cases[i].route);
        CHECK_INT(p.status, 200);
    }
    /* The control API finds a template by its text, never by a path it matches. */
    CHECK(route_find(&t, "/api/orders/{id}") >= 0);
    CHECK_INT(route_find(&t, "/api/orders/7"), -1);
    CHECK_INT(route_match(&t, "/api/orders/7", 13), route_find(&t, "/api/orders/{id}"));
    route_table_cleanup(&t);
}

/* A template is one route: every id it matches plans with the template's stats id, and its
 * seeded draws run in one sequence, numbered across ids: the same delays as an exact route in
 * its place asked the same number of times. */
static void route_template_keeps_one_slot_and_one_draw_sequence(void)
{
    static const char *const tpl[] = {"/a", "/api/orders/{id}"};
    static const char *const exact[] = {"/a", "/api/orders/one"};
    struct config_route rt[2], re[2];
    path_routes(rt, tpl, 2);
    path_routes(re, exact, 2);
    struct delay_spec d;
    char why[128];
    CHECK_INT(delay_spec_parse(&d, "10ms..900ms", why, sizeof why), 0);
    rt[1].has_delay = re[1].has_delay = 1;
    rt[1].delay = re[1].delay = d;
    struct config ct = config_defaults, ce = config_defaults;
    ct.seed = ce.seed = 7;
    ct.routes = rt;
    ce.routes = re;
    ct.nroutes = ce.nroutes = 2;
    struct route_table tt, te;
    CHECK_INT(route_table_init(&tt, &ct), 0);
    CHECK_INT(route_table_init(&te, &ce), 0);
    static const char *const ids[] = {"/api/orders/1", "/api/orders/2", "/api/orders/77",
                                      "/api/orders/1", "/api/orders/abc"};
    size_t slot = SIZE_MAX;
    int distinct = 0;
    uint64_t first = 0;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        struct plan pt, pe;
        plan(&tt, "GET", ids[i], &pt);
        plan(&te, "GET", "/api/orders/one", &pe);
        CHECK_U64(pt.delay_us, pe.delay_us);
        CHECK_INT(pt.stats_id, pe.stats_id);
        if (slot == SIZE_MAX)
            slot = pt.stats_id, first = pt.delay_us;
        CHECK_INT(pt.stats_id, slot);
        distinct += pt.delay_us != first;
    }
    CHECK(distinct > 0); /* a sequence, not one draw repeated per id */
    route_table_cleanup(&tt);
    route_table_cleanup(&te);
}

/* Paths that no precedence orders are refused, naming both; those it orders are not. The
 * syntax: braces only around a whole segment {name}, * only as the whole last segment. */
static void route_templates_refuse_ambiguous_pairs_and_bad_syntax(void)
{
    static const struct {
        const char *a, *b;
        int clash;
    } pairs[] = {
        {"/a/{x}", "/a/{y}", 1},     {"/a/{x}/*", "/a/{y}/*", 1}, {"/{p}/b/{x}", "/{q}/b/{y}", 1},
        {"/a/{x}/b", "/a/b/{y}", 0}, {"/a/{x}", "/a/*", 0},       {"/a/{x}", "/a/{x}/b", 0},
        {"/{x}/b", "/a/{y}", 0},     {"/a/*", "/a/b/*", 0},       {"/a/{x}", "/a/b", 0},
        {"/a/{x}/c", "/a/{y}/d", 0},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *const paths[] = {"/z", pairs[i].a, pairs[i].b};
        struct config_route routes[3];
        path_routes(routes, paths, 3);
        size_t first = 0, second = 0;
        CHECK_INT(config_routes_clash(routes, 3, &first, &second), pairs[i].clash);
        if (pairs[i].clash) {
            CHECK_INT(first, 1);
            CHECK_INT(second, 2);
        }
        struct config cfg = config_defaults;
        struct route_table t;
        cfg.routes = routes;
        cfg.nroutes = 3;
        int rc = route_table_init(&t, &cfg);
        CHECK_INT(rc, pairs[i].clash ? -EEXIST : 0);
        if (rc == 0)
            route_table_cleanup(&t);
    }
    static const struct {
        const char *path;
        int kind;
    } kinds[] = {
        {"/", PATHTRIE_EXACT},
        {"/a/*b", PATHTRIE_EXACT},
        {"/a/b*", PATHTRIE_EXACT},
        {"/a/{x}", PATHTRIE_TEMPLATE},
        {"/{x}/{y-1_Z}/", PATHTRIE_TEMPLATE},
        {"/*", PATHTRIE_WILDCARD},
        {"/a/{x}/*", PATHTRIE_WILDCARD},
        {"/a/{x", -EINVAL},
        {"/a/x}", -EINVAL},
        {"/a/{}", -EINVAL},
        {"/a/{x y}", -EINVAL},
        {"/a/b{x}", -EINVAL},
        {"/a/{x}b", -EINVAL},
        {"/a/*/b", -EINVAL},
        {"/*/", -EINVAL},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char why[160] = "";
        CHECK_INT(pathtrie_kind_of(kinds[i].path, why, sizeof why), kinds[i].kind);
        if (kinds[i].kind < 0)
            CHECK(strncmp(why, "path: ", 6) == 0);
    }
    char why[160];
    char deep[4 * PATHTRIE_SEGMENTS_MAX + 16];
    size_t len = 0;
    for (size_t i = 0; i < PATHTRIE_SEGMENTS_MAX; i++)
        len += (size_t)snprintf(deep + len, sizeof deep - len, "/{x}");
    CHECK_INT(pathtrie_kind_of(deep, why, sizeof why), PATHTRIE_TEMPLATE);
    snprintf(deep + len, sizeof deep - len, "/a");
    CHECK_INT(pathtrie_kind_of(deep, why, sizeof why), -EINVAL);
    CHECK_STR(why, "path: a template has at most 64 segments");
}

/* 10 000 templates: each id under each is answered by its own template, and the trie holds one
 * node a distinct prefix. */
static void route_table_of_10000_templates_finds_each(void)
{
    enum { N = 10000 };
    static char paths[N][32];
    static const char *ptrs[N];
    static struct config_route routes[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(paths[i], sizeof paths[i], "/t/%05zu/{id}", i);
        ptrs[i] = paths[i];
    }
    path_routes(routes, ptrs, N);
    struct config cfg = config_defaults;
    struct route_table t;
    cfg.routes = routes;
    cfg.nroutes = N;
    CHECK_INT(route_table_init(&t, &cfg), 0);
    CHECK_INT(t.templates.routes, N);
    CHECK_INT(t.templates.count, 1 + 1 + 2 * N);
    size_t right = 0, missed = 0;
    for (size_t i = 0; i < N; i++) {
        char path[48];
        struct plan p;
        snprintf(path, sizeof path, "/t/%05zu/%zu", i, i * 7919);
        plan(&t, "GET", path, &p);
        right += p.route && strcmp(p.route->path, paths[i]) == 0;
        snprintf(path, sizeof path, "/t/%05zu/", i);
        plan(&t, "GET", path, &p);
        missed += p.status == 404;
    }
    CHECK_INT(right, N);
    CHECK_INT(missed, N);
    route_table_cleanup(&t);
}

int main(void)
{
    route_templates_match_by_precedence();
    route_template_keeps_one_slot_and_one_draw_sequence();
    route_templates_refuse_ambiguous_pairs_and_bad_syntax();
    route_table_of_10000_templates_finds_each();
    route_paths_resolve();
    route_value_copy_keeps_whole_length();
    route_overlong_override_is_refused();
    route_size_bodies_repeat_one_line_to_the_last_byte();
    route_drip_and_fault_shape_the_plan();
    route_config_shapes_and_pools();
    route_refuses_oversized_targets_and_headers();
    route_error_bodies_stay_valid_json_whatever_the_input();
    route_overrides_change_delay_status_and_size();
    route_overrides_out_of_range_get_400_naming_the_parameter();
    route_no_overrides_ignores_them();
    route_error_rate_follows_the_seed();
    route_injected_error_keeps_its_drawn_timing();
    route_config_routes_replace_and_add();
    route_table_of_10000_routes_finds_each_and_misses_the_rest();
    route_plans_every_builtin();
    route_health_and_stats_are_not_counted();
    route_405_names_the_allowed_methods();
    route_random_delays_number_requests_per_route();
    route_seeded_server_timing_matches_the_readme();
    route_seeded_error_rate_fails_the_same_requests();
    route_unbounded_draws_stop_at_max_delay();
    route_bodiless_statuses_carry_no_body();
    return CHECK_DONE();
}
