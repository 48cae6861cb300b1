#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control/api.h"
#include "run/exchange_impl.h"
#include "run/service.h"
#include "report/report.h"
#include "check.h"

struct fixture {
    struct config cfg;
    struct service svc;
    struct control ctl;
    struct log lg;
};

static void setup(struct fixture *f, const char *token)
{
    f->cfg = config_defaults;
    snprintf(f->cfg.control_host, sizeof f->cfg.control_host, "127.0.0.1");
    snprintf(f->cfg.control_bearer, sizeof f->cfg.control_bearer, "%s", token ? token : "");
    f->cfg.seed = 42;
    log_init(&f->lg, "test", LOG_LEVEL_ERROR, stderr);
    CHECK_INT(service_init(&f->svc, &f->cfg, 2, NULL), 0);
    f->svc.report = report_text;
    service_set_endpoints(&f->svc, 8080, "http://127.0.0.1:9090", 9090);
    char err[256];
    CHECK_INT(control_init(&f->ctl, &f->svc, &f->cfg, &f->lg, err, sizeof err), 0);
}

static void teardown(struct fixture *f)
{
    control_cleanup(&f->ctl);
    service_cleanup(&f->svc);
}

/* The Origin of the next calls (a browser's page), or NULL. */
static const char *origin_hdr;
static struct control_answer last;
/* The Host of the next calls, or NULL (none sent). */
static const char *host_hdr;

/* Sends one API request; returns the status and leaves the parsed body in *json (or NULL). */
static unsigned call(struct fixture *f, const char *method, const char *target, const char *body,
                     const char *auth, cJSON **json)
{
    struct control_request rq = {method,
                                 target,
                                 strlen(target),
                                 body,
                                 body ? strlen(body) : 0,
                                 auth,
                                 auth ? strlen(auth) : 0,
                                 "unit",
                                 origin_hdr,
                                 origin_hdr ? strlen(origin_hdr) : 0,
                                 host_hdr,
                                 host_hdr ? strlen(host_hdr) : 0};
    free(last.body);
    last.body = NULL;
    control_handle(&f->ctl, &rq, &last);
    if (json)
        *json = last.body ? cJSON_Parse(last.body) : NULL;
    return last.status;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(it) ? it->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(it) ? it->valuestring : "";
}

/* Plans GET target on the live table, as a request begun on loop 0 would. */
static void plan(struct fixture *f, const char *target, struct plan *p)
{
    struct route_request rq = {.method = "GET", .target = target, .target_len = strlen(target)};
    struct route_table *t = service_table_acquire(&f->svc, 0);
    route_plan(t, &rq, p);
    service_table_release(&f->svc, t, 0);
}

/* PATCH changes the live table for the next request, names its generation, and a request begun
 * before keeps the plan of its own generation. */
static void patch_makes_the_next_generation(void)
{
    struct fixture f;
    cJSON *j;
    struct plan p;
    setup(&f, NULL);
    plan(&f, "/test", &p);
    CHECK_U64(p.delay_us, 1000000);
    CHECK_U64(p.generation, 1);
    CHECK_STR(p.timing, "delay;dur=1000, gen;desc=1");

    /* A request begun now holds generation 1 across the change. */
    struct route_table *held = service_table_acquire(&f.svc, 1);
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"delay\": \"2s\", \"status\": 201}", NULL, &j),
              200);
    CHECK_INT(num(j, "generation"), 2);
    CHECK_STR(str(cJSON_GetObjectItem(j, "route"), "delay"), "2000ms");
    cJSON_Delete(j);
    plan(&f, "/test", &p);
    CHECK_U64(p.delay_us, 2000000);
    CHECK_INT(p.status, 201);
    CHECK_U64(p.generation, 2);
    CHECK_STR(p.timing, "delay;dur=2000, gen;desc=2");
    struct route_request rq = {.method = "GET", .target = "/test", .target_len = 5};
    route_plan(held, &rq, &p);
    CHECK_U64(p.delay_us, 1000000);
    CHECK_U64(p.generation, 1);
    /* The held generation is not freed while held, and is once let go. */
    CHECK(f.svc.tables[held->holder] == held);
    unsigned h = held->holder;
    service_table_release(&f.svc, held, 1);
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"delay\": \"3s\"}", NULL, NULL), 200);
    CHECK(f.svc.tables[h] == NULL || f.svc.tables[h]->generation == 3);
    CHECK_U64(atomic_load(&f.svc.changes), 2);
    teardown(&f);
}

/* A bad value gets 400 naming the field, and nothing changes. */
static void bad_values_change_nothing(void)
{
    static const struct {
        const char *body;
        const char *field;
    } cases[] = {
        {"{\"delay\": \"1sec\"}", "delay"},
        {"{\"status\": 99}", "status"},
        {"{\"error-rate\": 1.5}", "error-rate"},
        {"{\"drip\": \"10,1s\"}", "drip"}, /* "ok" has 2 bytes: 10 chunks cannot be */
        {"{\"delay\": \"2h\"}", "delay"},  /* over --max-delay */
        {"{\"nope\": 1}", "nope"},
        {"{\"path\": \"/x\"}", "path"},
        {"{\"queue\": 3}", "queue"}, /* a queue needs workers */
    };
    struct fixture f;
    setup(&f, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j;
        CHECK_INT(call(&f, "PATCH", "/routes/test", cases[i].body, NULL, &j), 400);
        CHECK_STR(str(j, "field"), cases[i].field);
        cJSON_Delete(j);
    }
    cJSON *j;
    CHECK_INT(call(&f, "PATCH", "/routes/test", "[1]", NULL, NULL), 400);
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{bad", NULL, NULL), 400);
    CHECK_INT(call(&f, "PATCH", "/routes/nowhere", "{}", NULL, NULL), 404);
    CHECK_INT(call(&f, "PATCH", "/routes/write", "{\"status\": 500}", NULL, NULL), 409);
    CHECK_INT(call(&f, "PATCH", "/routes/healthz", "{\"status\": 500}", NULL, NULL), 409);
    CHECK_INT(call(&f, "GET", "/routes", NULL, NULL, &j), 200);
    CHECK_INT(num(j, "generation"), 1);
    cJSON_Delete(j);
    CHECK_U64(atomic_load(&f.svc.changes), 0);
    teardown(&f);
}

/* POST adds a route, DELETE removes it (only one added at runtime), PUT replaces the config's
 * routes and keeps the built-in ones; a route keeps its counters (slot) by path. */
static void routes_come_and_go(void)
{
    struct fixture f;
    cJSON *j;
    struct plan p;
    setup(&f, NULL);
    CHECK_INT(call(&f, "POST", "/routes",
                   "{\"path\": \"/api/orders\", \"delay\": \"5ms\", \"body\": \"[]\"}", NULL, &j),
              201);
    cJSON_Delete(j);
    CHECK_INT(call(&f, "POST", "/routes", "{\"path\": \"/api/orders\"}", NULL, NULL), 409);
    /* A path no request could reach (routing resolves dot segments): refused, said why. */
    CHECK_INT(call(&f, "POST", "/routes", "{\"path\": \"/api/./x\"}", NULL, &j), 400);
    cJSON *e = cJSON_GetObjectItem(j, "error");
    CHECK(cJSON_IsString(e) && strstr(e->valuestring, "segment never matches") != NULL);
    cJSON_Delete(j);
    plan(&f, "/api/orders", &p);
    CHECK_INT(p.status, 200);
    CHECK_U64(p.delay_us, 5000);
    size_t slot = p.stats_id;
    CHECK_INT(call(&f, "PATCH", "/routes/api/orders", "{\"status\": 503}", NULL, NULL), 200);
    plan(&f, "/api/orders", &p);
    CHECK_INT(p.status, 503);
    CHECK_INT(p.stats_id, slot);
    /* The path after /routes is percent-decoded: %2F is a slash of the route path. */
    CHECK_INT(call(&f, "GET", "/routes/api%2Forders", NULL, NULL, &j), 200);
    cJSON_Delete(j);
    CHECK_INT(call(&f, "GET", "/routes/api%2", NULL, NULL, &j), 400);
    cJSON_Delete(j);
    CHECK_INT(call(&f, "GET", "/routes/api/orders", NULL, NULL, &j), 200);
    CHECK_INT(num(j, "status"), 503);
    cJSON_Delete(j);
    CHECK_INT(call(&f, "DELETE", "/routes/test", NULL, NULL, NULL), 409);
    CHECK_INT(call(&f, "DELETE", "/routes/api/orders", NULL, NULL, NULL), 200);
    plan(&f, "/api/orders", &p);
    CHECK_INT(p.status, 404);
    CHECK_INT(call(&f, "DELETE", "/routes/api/orders", NULL, NULL, NULL), 404);
    CHECK_INT(call(&f, "PUT", "/routes",
                   "[{\"path\": \"/a\", \"status\": 202}, {\"path\": \"/b\"}]", NULL, &j),
              200);
    cJSON_Delete(j);
    plan(&f, "/a", &p);
    CHECK_INT(p.status, 202);
    plan(&f, "/test", &p);
    CHECK_U64(p.delay_us, 1000000);
    CHECK_INT(call(&f, "PUT", "/routes", "[{\"path\": \"/a\"}, {\"path\": \"/a\"}]", NULL, &j),
              400);
    CHECK_STR(str(j, "field"), "routes[1].path");
    cJSON_Delete(j);
    CHECK_INT(call(&f, "PUT", "/routes", "[{\"status\": 200}]", NULL, &j), 400);
    CHECK_STR(str(j, "field"), "routes[0].path");
    cJSON_Delete(j);
    CHECK_INT(call(&f, "GET", "/nowhere", NULL, NULL, NULL), 404);
    CHECK_INT(call(&f, "DELETE", "/routes", NULL, NULL, NULL), 405);
    CHECK_INT(call(&f, "GET", "/reset", NULL, NULL, NULL), 405);
    CHECK_INT(call(&f, "POST", "/scenario/start", NULL, NULL, NULL), 409);
    teardown(&f);
}

/* With a token, every request must carry it. */
/* A drip and a fault come off again: "none", null and false remove them; "" is no drip. */
static void drip_and_fault_can_be_removed(void)
{
    struct fixture f;
    struct plan p;
    cJSON *j = NULL;
    setup(&f, NULL);
    CHECK_INT(call(&f, "PATCH", "/routes/test",
                   "{\"drip\": \"2,100ms\", \"fault\": \"truncate\", \"body\": \"0123456789\"}",
                   NULL, NULL),
              200);
    plan(&f, "/test", &p);
    CHECK_INT(p.drip.chunks, 2);
    static const char *const off[] = {"\"none\"", "null", "false"};
    for (size_t i = 0; i < 3; i++) {
        char body[96];
        snprintf(body, sizeof body, "{\"drip\": %s, \"fault\": %s}", off[i], off[i]);
        CHECK_INT(call(&f, "PATCH", "/routes/test", body, NULL, &j), 200);
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "route"), "drip") == NULL);
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "route"), "fault") == NULL);
        cJSON_Delete(j);
        plan(&f, "/test", &p);
        CHECK_INT(p.drip.chunks, 0);
        CHECK_INT(p.truncate, 0);
        CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"drip\": \"2,100ms\"}", NULL, NULL), 200);
    }
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"drip\": \"\"}", NULL, &j), 400);
    CHECK_STR(str(j, "field"), "drip");
    cJSON_Delete(j);
    /* A key given twice is refused, naming it: the last would silently win. */
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"delay\": \"1s\", \"delay\": \"2s\"}", NULL, &j),
              400);
    CHECK_STR(str(j, "field"), "delay");
    CHECK_STR(str(j, "error"), "delay: given twice; keep one");
    cJSON_Delete(j);
    /* So is one among many keys (sorted, not compared pairwise), before any key is read. */
    char many[512];
    int n = snprintf(many, sizeof many, "{");
    for (int i = 0; i < 20; i++)
        n += snprintf(many + n, sizeof many - (size_t)n, "\"k%02d\": 1, ", i);
    snprintf(many + n, sizeof many - (size_t)n, "\"k07\": 2}");
    CHECK_INT(call(&f, "PATCH", "/routes/test", many, NULL, &j), 400);
    CHECK_STR(str(j, "error"), "k07: given twice; keep one");
    cJSON_Delete(j);
    teardown(&f);
}

static void the_token_guards_every_endpoint(void)
{
    struct fixture f;
    setup(&f, "s3cret");
    CHECK_INT(call(&f, "GET", "/routes", NULL, NULL, NULL), 401);
    CHECK_INT(call(&f, "GET", "/routes", NULL, "Bearer s3cre", NULL), 401);
    CHECK_INT(call(&f, "GET", "/routes", NULL, "Bearer s3cret2", NULL), 401);
    CHECK_INT(call(&f, "GET", "/routes", NULL, "Basic s3cret", NULL), 401);
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"delay\": \"2s\"}", NULL, NULL), 401);
    CHECK_INT(call(&f, "POST", "/reset", NULL, NULL, NULL), 401);
    CHECK_U64(atomic_load(&f.svc.changes), 0);
    CHECK_INT(call(&f, "GET", "/routes", NULL, "Bearer s3cret", NULL), 200);
    CHECK_INT(call(&f, "GET", "/routes", NULL, "bearer s3cret", NULL), 200);
    teardown(&f);
}

/* POST /reset: /stats counts from zero, /metrics stays monotonic with the reset count. */
static void reset_starts_a_run(void)
{
    struct fixture f;
    setup(&f, NULL);
    struct stats_shard *sh = service_shard(&f.svc, 0);
    for (int i = 0; i < 3; i++) {
        stats_request_begin(sh, 0);
        for (int h = 0; h < STATS_HIST_COUNT; h++)
            stats_observe(sh, 0, (enum stats_hist)h, 1000);
        stats_request_end(sh, 0, 200);
    }
    stats_cancel(sh, 0);
    stats_fault(sh, 0);
    stats_bytes_in(sh, 77);
    stats_request_begin(sh, 0); /* one in flight across the reset */
    cJSON *j;
    CHECK_INT(call(&f, "POST", "/reset", NULL, NULL, &j), 200);
    CHECK_INT(num(j, "resets"), 1);
    cJSON_Delete(j);
    stats_request_end(sh, 0, 200);
    char *text = service_report(&f.svc, PLAN_STATS);
    cJSON *st = cJSON_Parse(text);
    free(text);
    /* Every counter it promises starts again from zero; what ended after it counts. */
    CHECK_INT(num(st, "requests"), 0);
    CHECK_INT(num(st, "answered"), 1);
    CHECK_INT(num(st, "in_flight"), 0);
    CHECK_INT(num(st, "resets"), 1);
    CHECK_INT(num(st, "cancels"), 0);
    CHECK_INT(num(st, "faults"), 0);
    CHECK_INT(num(st, "bytes_received"), 0);
    const cJSON *test = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "routes"), "/test");
    CHECK_INT(num(test, "requests"), 0);
    CHECK_INT(num(test, "cancels"), 0);
    CHECK_INT(num(test, "faults"), 0);
    CHECK_INT(num(cJSON_GetObjectItem(test, "status"), "200"), 1);
    static const char *const hists[] = {"delay_intended_ms", "delay_overshoot_ms", "service_ms"};
    for (int h = 0; h < 3; h++) {
        CHECK_INT(num(cJSON_GetObjectItem(test, hists[h]), "count"), 0);
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(test, hists[h]), "max") == NULL);
    }
    cJSON_Delete(st);
    text = service_report(&f.svc, PLAN_METRICS);
    CHECK(strstr(text, "slowsrv_requests_total{route=\"/test\",status=\"200\"} 4\n") != NULL);
    CHECK(strstr(text, "slowsrv_resets_total 1\n") != NULL);
    CHECK(strstr(text, "slowsrv_generation 1\n") != NULL);
    free(text);
    teardown(&f);
}

static const char *last_header(const char *name)
{
    for (size_t i = 0; i < last.nheaders; i++)
        if (strcmp(last.headers[i].name, name) == 0)
            return last.headers[i].value;
    return NULL;
}

/* CORS: the /ui page's origin (the bind address, or another name of a loopback bind, and the
 * main port) may call the API from a browser, with a preflight; any other origin gets 403, and
 * the token is still needed. */
static void only_the_pages_origin_may_call(void)
{
    static const struct {
        const char *origin;
        int ok;
    } cases[] = {
        {"http://127.0.0.1:8080", 1},      {"http://localhost:8080", 1},
        {"http://[::1]:8080", 1},          {"http://127.0.0.1:8081", 0},
        {"https://127.0.0.1:8080", 0},     {"http://evil.example:8080", 0},
        {"http://127.0.0.1:80800", 0},     {"null", 0},
        {"http://127.0.0.1.evil:8080", 0}, {"http://user@127.0.0.1:8080", 0},
    };
    struct fixture f;
    setup(&f, "tok");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        origin_hdr = cases[i].origin;
        unsigned st = call(&f, "OPTIONS", "/routes/test", NULL, NULL, NULL);
        CHECK_INT(st, cases[i].ok ? 204 : 403);
        CHECK_INT(last.close, 1);
        /* A 204 has no body and no Content-Type; every other answer is JSON. */
        if (cases[i].ok)
            CHECK(last_header("Content-Type") == NULL);
        else
            CHECK_STR(last_header("Content-Type"), "application/json");
        const char *allow = last_header("Access-Control-Allow-Origin");
        if (cases[i].ok) {
            CHECK_STR(allow ? allow : "(none)", cases[i].origin);
            CHECK_STR(last_header("Access-Control-Allow-Headers"), "Authorization, Content-Type");
        } else {
            CHECK(allow == NULL);
        }
        st = call(&f, "PATCH", "/routes/test", "{\"status\": 201}", "Bearer tok", NULL);
        CHECK_INT(st, cases[i].ok ? 200 : 403);
    }
    origin_hdr = "http://localhost:8080";
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"status\": 202}", NULL, NULL), 401);
    CHECK_STR(last_header("Access-Control-Allow-Origin"), "http://localhost:8080");
    origin_hdr = NULL;
    CHECK_U64(atomic_load(&f.svc.changes), 3);
    teardown(&f);
    /* --bind 0.0.0.0: any name of the host, on the main port only; the token still counts. */
    struct fixture g;
    setup(&g, "tok");
    snprintf(g.cfg.bind, sizeof g.cfg.bind, "0.0.0.0");
    origin_hdr = "http://box.lan:8080";
    CHECK_INT(call(&g, "OPTIONS", "/routes", NULL, NULL, NULL), 204);
    CHECK_INT(call(&g, "PATCH", "/routes/test", "{\"status\": 201}", NULL, NULL), 401);
    origin_hdr = "http://box.lan:9999";
    CHECK_INT(call(&g, "OPTIONS", "/routes", NULL, NULL, NULL), 403);
    origin_hdr = NULL;
    teardown(&g);
    free(last.body);
    last.body = NULL;
}

/* Without a token, the Host must name the listener: an address, localhost or the --control
 * address, with its port or none; any other name is a DNS-rebinding page's (403). With a token,
 * any Host is taken. */
static void the_host_must_name_the_listener(void)
{
    static const struct {
        const char *host;
        unsigned want;
    } cases[] = {
        {"127.0.0.1:9090", 200},
        {"127.0.0.1", 200},
        {"localhost:9090", 200},
        {"LOCALHOST", 200},
        {"[::1]:9090", 200},
        {"10.1.2.3:9090", 200},
        {"evil.example", 403},
        {"evil.example:9090", 403},
        {"127.0.0.1:9091", 403},
        {"127.0.0.1:", 403},
        {"[::1", 403},
        {"localhost.evil:9090", 403},
        {"", 403},
    };
    struct fixture f;
    setup(&f, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        host_hdr = cases[i].host;
        CHECK_INT(call(&f, "GET", "/routes", NULL, NULL, NULL), cases[i].want);
        CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"delay\": \"2s\"}", NULL, NULL) == 403,
                  cases[i].want == 403);
    }
    host_hdr = NULL;
    CHECK_INT(call(&f, "GET", "/routes", NULL, NULL, NULL), 200);
    teardown(&f);
    setup(&f, "s3cret");
    host_hdr = "slowsrv.test.example:9090";
    CHECK_INT(call(&f, "GET", "/routes", NULL, "Bearer s3cret", NULL), 200);
    CHECK_INT(call(&f, "GET", "/routes", NULL, NULL, NULL), 401);
    host_hdr = NULL;
    teardown(&f);
}

/* Bodies that are not UTF-8, or hold a NUL (sent or escaped), change nothing: 400. */
static void bodies_must_be_utf8_without_nul(void)
{
    static const char *const bad[] = {
        "{\"delay\": \"2s\", \"x\": \"\xff\"}",
        "{\"delay\": \"2s\", \"x\": \"\xc0\xaf\"}",
        "{\"delay\": \"2s\", \"x\": \"\\u0000\"}",
    };
    struct fixture f;
    setup(&f, NULL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(call(&f, "PATCH", "/routes/test", bad[i], NULL, NULL), 400);
    struct control_request rq = {.method = "PATCH",
                                 .target = "/routes/test",
                                 .target_len = 12,
                                 .body = "{\"delay\": \"2s\"}\0",
                                 .body_len = 17,
                                 .who = "unit"};
    free(last.body);
    last.body = NULL;
    control_handle(&f.ctl, &rq, &last);
    CHECK_INT(last.status, 400);
    CHECK_U64(atomic_load(&f.svc.changes), 0);
    CHECK_INT(
        call(&f, "PATCH", "/routes/test", "{\"delay\": \"2s\", \"x\": \"\xc3\xa9\"}", NULL, NULL),
        400); /* well-formed, but x is not a route key */
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"body\": \"caf\xc3\xa9\"}", NULL, NULL), 200);
    teardown(&f);
}

/* No verb replaces a built-in route; a route's headers hold no control character and no framing
 * header. */
static void built_ins_and_framing_stay_the_servers(void)
{
    static const char *const builtins[] = {"/healthz", "/stats", "/metrics", "/ui", "/write"};
    char body[256];
    struct fixture f;
    setup(&f, NULL);
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        snprintf(body, sizeof body, "[{\"path\": \"%s\", \"body\": \"x\"}]", builtins[i]);
        CHECK_INT(call(&f, "PUT", "/routes", body, NULL, NULL), 409);
        snprintf(body, sizeof body, "{\"path\": \"%s\", \"body\": \"x\"}", builtins[i]);
        CHECK_INT(call(&f, "POST", "/routes", body, NULL, NULL), 409);
    }
    static const char *const headers[] = {
        "{\"X-A\": \"a\\rb\"}",
        "{\"X-A\": \"a\\nb\"}",
        "{\"X-A\": \"a\\u000bb\"}",
        "{\"X-A\": \"a\\u007fb\"}",
        "{\"Content-Length\": \"5\"}",
        "{\"transfer-encoding\": \"chunked\"}",
        "{\"Connection\": \"close\"}",
        "{\"Keep-Alive\": \"1\"}",
        "{\"X A\": \"v\"}",
        "{\"Upgrade\": \"h2c\"}",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        snprintf(body, sizeof body, "{\"headers\": %s}", headers[i]);
        CHECK_INT(call(&f, "PATCH", "/routes/test", body, NULL, NULL), 400);
    }
    CHECK_U64(atomic_load(&f.svc.changes), 0);
    CHECK_INT(call(&f, "PATCH", "/routes/test", "{\"headers\": {\"X-A\": \"a\\tb\"}}", NULL, NULL),
              200);
    CHECK_INT(call(&f, "PUT", "/routes", "[{\"path\": \"/test\", \"body\": \"x\"}]", NULL, NULL),
              200);
    teardown(&f);
}

int main(void)
{
    the_host_must_name_the_listener();
    bodies_must_be_utf8_without_nul();
    built_ins_and_framing_stay_the_servers();
    drip_and_fault_can_be_removed();
    only_the_pages_origin_may_call();
    patch_makes_the_next_generation();
    bad_values_change_nothing();
    routes_come_and_go();
    the_token_guards_every_endpoint();
    reset_starts_a_run();
    return CHECK_DONE();
}
