#include <stdlib.h>

#include "../../common/route.h"
#include "check.h"

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
        {"GET", "/test?delay=5", 200, PLAN_RESPOND, 300000, "ok", "delay;dur=300"},
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
        route_plan(&t, cases[i].method, cases[i].path, strlen(cases[i].path), &p);
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
}

static void route_health_and_stats_are_not_counted(void)
{
    struct route_table t;
    struct plan p;
    route_table_init(&t, &config_defaults);
    route_plan(&t, "GET", "/healthz", 8, &p);
    CHECK(p.stats_id == STATS_UNCOUNTED);
    route_plan(&t, "GET", "/stats", 6, &p);
    CHECK(p.stats_id == STATS_UNCOUNTED);
    route_plan(&t, "GET", "/zzz", 4, &p);
    CHECK_INT(p.stats_id, ROUTE_STATS_OTHER(&t));
    route_plan(&t, "GET", "/test", 5, &p);
    CHECK_INT(p.stats_id, 0);
    CHECK_INT(p.cacheable, 1);
}

static void route_405_names_the_allowed_methods(void)
{
    struct route_table t;
    struct plan p;
    route_table_init(&t, &config_defaults);
    route_plan(&t, "PUT", "/test", 5, &p);
    CHECK_STR(p.allow, "GET, HEAD");
    route_plan(&t, "GET", "/write", 6, &p);
    CHECK_STR(p.allow, "POST");
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
        route_plan(&a, "GET", "/test", 5, &p);
        route_plan(&b, "GET", "/test", 5, &q);
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
}

int main(void)
{
    route_plans_every_builtin();
    route_health_and_stats_are_not_counted();
    route_405_names_the_allowed_methods();
    route_random_delays_number_requests_per_route();
    return CHECK_DONE();
}
