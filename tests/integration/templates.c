/*
 * Cases on path templates in config routes ("/api/orders/{id}", "/api/\*"): which route answers a
 * path by the precedence (doc/options.md §Path templates), ambiguous pairs refused by the config
 * file and the control API, a template's counters, series and access-log lines named by the
 * template, its seeded draws as one route's, and 10 000 templates served.
 */
#include "itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sends a request to the control API; returns the status, the "error" of its body in err. */
static long api(unsigned port, const char *method, const char *path, const char *body, char *err,
                size_t errlen)
{
    static struct reply r;
    static const char *const headers[] = {"Content-Type: application/json", NULL};
    http_request(port, method, path, body, headers, &r);
    if (err) {
        cJSON *j = cJSON_Parse(r.body);
        const char *e = cJSON_GetStringValue(cJSON_GetObjectItem(j, "error"));
        snprintf(err, errlen, "%s", e ? e : "");
        cJSON_Delete(j);
    }
    return r.status;
}

/* Starts env->bin with args into s; fails the case (and returns 0) if it does not start. */
static int start(const struct itest_env *env, struct server *s, const char *const *args)
{
    if (server_start(s, env->bin, args, NULL) == 0)
        return 1;
    CHECK_FAIL_("%s", "server did not start");
    return 0;
}

/* A config whose routes each answer their own path as body. */
static const char precedence_cfg[] =
    "{\"delay\": \"0\", \"routes\": ["
    "{\"path\": \"/api/orders/{id}\", \"body\": \"/api/orders/{id}\"},"
    "{\"path\": \"/api/orders/recent\", \"body\": \"/api/orders/recent\"},"
    "{\"path\": \"/api/orders/{id}/items\", \"body\": \"/api/orders/{id}/items\"},"
    "{\"path\": \"/api/{kind}/7\", \"body\": \"/api/{kind}/7\"},"
    "{\"path\": \"/api/{kind}\", \"body\": \"/api/{kind}\"},"
    "{\"path\": \"/api/*\", \"body\": \"/api/*\"},"
    "{\"path\": \"/api/orders/*\", \"body\": \"/api/orders/*\"},"
    "{\"path\": \"/{a}/b/{c}\", \"body\": \"/{a}/b/{c}\"},"
    "{\"path\": \"/{a}/{b}/c\", \"body\": \"/{a}/{b}/c\"},"
    "{\"path\": \"/files/*\", \"method\": \"GET\", \"body\": \"/files/*\"}]}";

/* Each path on the wire is answered by the route the precedence names: an exact path, then the
 * template with the longest literal prefix (then the literal at the first segment where two
 * part), then the wildcard; {name} takes one non-empty segment, a trailing * zero or more. */
static void templates_match_by_precedence(const struct itest_env *env)
{
    static const struct {
        const char *target, *route; /* route NULL: 404 */
    } cases[] = {
        {"/api/orders/7", "/api/orders/{id}"},
        {"/api/orders/%37?delay=0", "/api/orders/{id}"},
        {"/api/orders/recent", "/api/orders/recent"},
        {"/api/orders/7/items", "/api/orders/{id}/items"},
        {"/api/users/7", "/api/{kind}/7"},
        {"/api/orders", "/api/{kind}"},
        {"/api/users/8", "/api/*"},
        {"/api", "/api/*"},
        {"/api/orders/", "/api/orders/*"},
        {"/api/orders/7/items/9", "/api/orders/*"},
        {"/x/b/c", "/{a}/b/{c}"},
        {"/x/y/c", "/{a}/{b}/c"},
        {"/x//c", NULL},
        {"/files", "/files/*"},
        {"/files/a/b", "/files/*"},
        {"/apix", NULL},
        {"/echo", NULL}, /* the built-in route: "OK" */
    };
    struct server s;
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s", write_file(env, "tpl.json", precedence_cfg));
    const char *args[] = {"--config", cfg, NULL};
    if (!start(env, &s, args))
        return;
    static struct reply r;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_request(s.port, "GET", cases[i].target, NULL, NULL, &r);
        if (strcmp(cases[i].target, "/echo") == 0) {
            CHECK_STR(r.body, "OK");
        } else if (!cases[i].route) {
            CHECK_INT(r.status, 404);
        } else {
            CHECK_INT(r.status, 200);
            CHECK_STR(r.body, cases[i].route);
        }
    }
    /* A template's method holds for every path it matches. */
    http_request(s.port, "POST", "/files/a", "x", NULL, &r);
    CHECK_INT(r.status, 405);
    stop_expect_clean(&s);
}

/* Pairs that no precedence orders are refused naming both: the config file with exit 2 and one
 * line, the control API with 409 and nothing changed; a bad template is refused naming the rule.
 * The API addresses a template by its text, percent-encoded segment by segment or whole. */
static void ambiguous_templates_are_refused(const struct itest_env *env)
{
    char out[4096], err[4096], want[1024], cfg[512];
    static const struct {
        const char *routes, *line;
    } bad[] = {
        {"[{\"path\": \"/a/{x}\"}, {\"path\": \"/z\"}, {\"path\": \"/a/{y}\"}]",
         "routes[2].path: '/a/{y}' and routes[0] '/a/{x}' match the same paths and neither is "
         "more precise; keep one"},
        {"[{\"path\": \"/a/{x}/*\"}, {\"path\": \"/a/{y}/*\"}]",
         "routes[1].path: '/a/{y}/*' and routes[0] '/a/{x}/*' match the same paths and neither "
         "is more precise; keep one"},
        {"[{\"path\": \"/a/{x\"}]", "routes[0].path: braces go around a whole segment, {name} of "
                                    "letters, digits, _ or -, as in /api/orders/{id}"},
        {"[{\"path\": \"/a/*/b\"}]",
         "routes[0].path: * matches the rest, so only as the last segment, as in /api/*"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"routes\": %s}", bad[i].routes);
        snprintf(cfg, sizeof cfg, "%s", write_file(env, "bad.json", text));
        const char *check[] = {"--check-config", cfg, NULL};
        CHECK_INT(run_to_exit(env->bin, check, NULL, out, sizeof out, err, sizeof err), 2);
        snprintf(want, sizeof want, "%s: %s\n", cfg, bad[i].line);
        CHECK(strstr(err, want) != NULL && strchr(err, '\n') == strrchr(err, '\n'));
        if (!strstr(err, want))
            fprintf(stderr, "stderr: %s", err);
    }
    /* Orderable pairs load. */
    snprintf(cfg, sizeof cfg, "%s",
             write_file(env, "ok.json",
                        "{\"routes\": [{\"path\": \"/a/{x}/b\"}, {\"path\": \"/a/b/{y}\"}, "
                        "{\"path\": \"/a/{x}\", \"body\": \"x\"}, {\"path\": \"/a/*\"}]}"));
    const char *check[] = {"--check-config", cfg, NULL};
    CHECK_INT(run_to_exit(env->bin, check, NULL, out, sizeof out, err, sizeof err), 0);

    struct server s;
    const char *args[] = {"--config", cfg, "--control", "0", NULL};
    if (!start(env, &s, args))
        return;
    unsigned cp = control_port_of(&s);
    char msg[512];
    CHECK_INT(api(cp, "POST", "/routes", "{\"path\": \"/a/{other}\"}", msg, sizeof msg), 409);
    CHECK_STR(msg, "path: '/a/{other}' and the route '/a/{x}' match the same paths and neither "
                   "is more precise; PATCH or DELETE that one");
    CHECK_INT(api(cp, "PUT", "/routes",
                  "[{\"path\": \"/p/{q}\"}, {\"path\": \"/c\"}, {\"path\": \"/p/{r}\"}]", msg,
                  sizeof msg),
              409);
    CHECK_STR(msg, "routes[2].path: '/p/{r}' and routes[0] '/p/{q}' match the same paths and "
                   "neither is more precise; keep one");
    CHECK_INT(api(cp, "POST", "/routes", "{\"path\": \"/a/{x\"}", msg, sizeof msg), 400);
    CHECK_STR(msg, "path: braces go around a whole segment, {name} of letters, digits, _ or -, "
                   "as in /api/orders/{id}");
    static struct reply r;
    http_request(s.port, "GET", "/a/5", NULL, NULL, &r);
    CHECK_STR(r.body, "x"); /* nothing changed */
    http_request(s.port, "GET", "/p/1", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    /* The template by its text: each segment encoded, or the whole path as one component. */
    CHECK_INT(api(cp, "GET", "/routes/a/%7Bx%7D", NULL, NULL, 0), 200);
    CHECK_INT(api(cp, "GET", "/routes/a/5", NULL, NULL, 0), 404);
    CHECK_INT(api(cp, "PATCH", "/routes/%2Fa%2F%7Bx%7D", "{\"body\": \"patched\"}", NULL, 0), 200);
    http_request(s.port, "GET", "/a/6", NULL, NULL, &r);
    CHECK_STR(r.body, "patched");
    CHECK_INT(api(cp, "POST", "/routes", "{\"path\": \"/n/{id}\", \"body\": \"n\"}", NULL, 0), 201);
    http_request(s.port, "GET", "/n/42", NULL, NULL, &r);
    CHECK_STR(r.body, "n");
    CHECK_INT(api(cp, "DELETE", "/routes/n/%7Bid%7D", NULL, NULL, 0), 200);
    http_request(s.port, "GET", "/n/42", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    stop_expect_clean(&s);
}

/* A percent-encoded path is decoded once, on both binaries: a route whose path holds "%20"
 * answers "/c%2520d"; "/c%20d" is the path "/c d" (a 404, no 400: an encoded space is no bare
 * space); the control API finds the route by "/routes/c%2520d". */
static void percent_encoded_paths_are_decoded_once(const struct itest_env *env)
{
    struct server s;
    const char *cfg =
        write_file(env, "pct.json", "{\"routes\": [{\"path\": \"/c%20d\", \"body\": \"y\"}]}");
    const char *args[] = {"--config", cfg, "--control", "0", NULL};
    if (!start(env, &s, args))
        return;
    static struct reply r;
    http_request(s.port, "GET", "/c%2520d", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "y");
    http_request(s.port, "GET", "/c%20d", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    CHECK_STR(r.body, "{\"error\": \"no such route; try /c%20d, /test, /write, /echo or "
                      "/healthz\", \"status\": 404}");
    unsigned cp = control_port_of(&s);
    CHECK_INT(api(cp, "GET", "/routes/c%2520d", NULL, NULL, 0), 200);
    CHECK_INT(api(cp, "PATCH", "/routes/c%2520d", "{\"body\": \"z\"}", NULL, 0), 200);
    http_request(s.port, "GET", "/c%2520d", NULL, NULL, &r);
    CHECK_STR(r.body, "z");
    CHECK_INT(api(cp, "GET", "/routes/c%20d", NULL, NULL, 0), 404);
    stop_expect_clean(&s);
}

/* A scenario's phase changes a template by its text, for every id it matches. */
static void scenario_changes_a_template(const struct itest_env *env)
{
    struct server s;
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s",
             write_file(env, "scenario.json",
                        "{\"routes\": [{\"path\": \"/a/{x}\", \"body\": \"x\"}], \"scenario\": ["
                        "{\"at\": \"0s\", \"name\": \"start\"},"
                        "{\"at\": \"300ms\", \"name\": \"down\", \"routes\": "
                        "{\"/a/{x}\": {\"status\": 503, \"body\": \"down\"}}}]}"));
    const char *args[] = {"--config", cfg, NULL};
    if (!start(env, &s, args))
        return;
    static struct reply r;
    http_request(s.port, "GET", "/a/1", NULL, NULL, &r);
    CHECK_STR(r.body, "x");
    double t0 = now_seconds();
    do
        http_request(s.port, "GET", "/a/2", NULL, NULL, &r);
    while (r.status != 503 && now_seconds() - t0 < 3);
    CHECK_INT(r.status, 503);
    CHECK_STR(r.body, "down");
    http_request(s.port, "GET", "/a/3", NULL, NULL, &r);
    CHECK_INT(r.status, 503);
    stop_expect_clean(&s);
}

/* The lines of the file at path, parsed; returns how many (at most max). */
static int json_lines(const char *path, cJSON **lines, int max)
{
    static char text[65536];
    if (read_text(path, text, sizeof text) < 0)
        return -1;
    int n = 0;
    for (char *line = strtok(text, "\n"); line && n < max; line = strtok(NULL, "\n"))
        lines[n++] = cJSON_Parse(line);
    return n;
}

/* A template is one route in the reports: /stats, /metrics and the access log's "route" name the
 * template, never an id (its "path" is what the client asked). */
static void template_counters_name_the_template(const struct itest_env *env)
{
    struct server s;
    char cfg[512], log[300];
    snprintf(cfg, sizeof cfg, "%s", write_file(env, "tpl.json", precedence_cfg));
    snprintf(log, sizeof log, "%s/access.log", env->tmpdir);
    const char *args[] = {"--config", cfg, "--access-log", log, "--max-body", "1K", NULL};
    if (!start(env, &s, args))
        return;
    static struct reply r;
    static const char *const asked[] = {"/api/orders/1", "/api/orders/2", "/api/orders/3",
                                        "/api/orders/recent", "/files/a/b"};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        http_request(s.port, "GET", asked[i], NULL, NULL, &r);
        CHECK_INT(r.status, 200);
    }
    /* A body over --max-body: answered by the core (slowsrv) or by libh2o before the core sees
     * the request (slowsrv-h2o), counted under the template either way. */
    static char big[2048];
    memset(big, 'x', sizeof big - 1);
    http_request(s.port, "POST", "/api/orders/9", big, NULL, &r);
    CHECK_INT(r.status, 413);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./api/orders/{id}.requests"), 4);
    CHECK_INT(json_number(j, "routes./api/orders/{id}.status.200"), 3);
    CHECK_INT(json_number(j, "routes./api/orders/{id}.status.413"), 1);
    CHECK_INT(json_number(j, "routes./api/orders/recent.requests"), 1);
    CHECK_INT(json_number(j, "routes./files/*.requests"), 1);
    CHECK_INT(json_number(j, "routes./api/orders/1.requests"), -1);
    cJSON_Delete(j);
    http_request(s.port, "GET", "/metrics", NULL, NULL, &r);
    CHECK(strstr(r.body, "slowsrv_requests_total{route=\"/api/orders/{id}\",status=\"200\"} 3\n") !=
          NULL);
    CHECK(strstr(r.body, "slowsrv_requests_total{route=\"/files/*\",status=\"200\"} 1\n") != NULL);
    CHECK(strstr(r.body, "route=\"/api/orders/1\"") == NULL);
    stop_expect_clean(&s);
    /* Each loop writes its own lines: matched by path, not by order. */
    cJSON *lines[8];
    int n = json_lines(log, lines, 8), seen = 0;
    CHECK_INT(n, 6);
    for (int k = 0; k < n; k++) {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(lines[k], "path"));
        const char *route = cJSON_GetStringValue(cJSON_GetObjectItem(lines[k], "route"));
        size_t i = 0;
        while (i < sizeof asked / sizeof asked[0] && (!path || strcmp(path, asked[i]) != 0))
            i++;
        const char *want = i < 3 ? "/api/orders/{id}" : i == 3 ? "/api/orders/recent" : "/files/*";
        if (path && strcmp(path, "/api/orders/9") == 0)
            want = "/api/orders/{id}"; /* the 413 */
        else if (i == sizeof asked / sizeof asked[0])
            want = NULL;
        if (!want || !route || strcmp(route, want) != 0)
            CHECK_FAIL_("access log line %d: path %s, route %s", k, path ? path : "-",
                        route ? route : "null");
        else
            seen++;
        cJSON_Delete(lines[k]);
    }
    CHECK_INT(seen, 6);
}

/* The intended delays of n GETs of paths[i % npaths] on a server with `cfg` and --seed 7, as
 * Server-Timing says them; returns 0, or -1 if the server did not start. */
static int draws(const char *bin, const char *cfg, const char *const *paths, size_t npaths,
                 double *ms, size_t n)
{
    struct server s;
    const char *args[] = {"--config", cfg, "--seed", "7", NULL};
    if (server_start(&s, bin, args, NULL) != 0)
        return -1;
    static struct reply r;
    for (size_t i = 0; i < n; i++) {
        char v[200];
        http_request(s.port, "GET", paths[i % npaths], NULL, NULL, &r);
        ms[i] =
            reply_timing(&r, v, sizeof v) && sscanf(v, "delay;dur=%lf", &ms[i]) == 1 ? ms[i] : -1;
    }
    stop_expect_clean(&s);
    return 0;
}

/* Seeded draws follow the template route and the request's index in it, never the id: any ids,
 * in any order, draw the delays that an exact route in the template's place draws, on both
 * binaries alike. */
static void template_draws_repeat_per_route(const struct itest_env *env)
{
    enum { N = 6 };
    static const char tpl[] = "{\"routes\": [{\"path\": \"/other\", \"delay\": \"1ms..40ms\"}, "
                              "{\"path\": \"/api/orders/{id}\", \"delay\": \"1ms..40ms\"}]}";
    static const char exact[] = "{\"routes\": [{\"path\": \"/other\", \"delay\": \"1ms..40ms\"}, "
                                "{\"path\": \"/api/orders/x\", \"delay\": \"1ms..40ms\"}]}";
    static const char *const ids_a[] = {"/api/orders/1", "/api/orders/2", "/api/orders/3"};
    static const char *const ids_b[] = {"/api/orders/9", "/api/orders/abc"};
    static const char *const fixed[] = {"/api/orders/x"};
    char tpl_cfg[512], exact_cfg[512];
    snprintf(tpl_cfg, sizeof tpl_cfg, "%s", write_file(env, "tpl.json", tpl));
    snprintf(exact_cfg, sizeof exact_cfg, "%s", write_file(env, "exact.json", exact));
    const char *binaries[2] = {env->bin, env->other_bin};
    double want[N], got[N];
    CHECK_INT(draws(env->bin, exact_cfg, fixed, 1, want, N), 0);
    int distinct = 0;
    for (size_t i = 0; i < N; i++)
        distinct += want[i] != want[0];
    CHECK(distinct > 0 && want[0] >= 1 && want[0] <= 40);
    for (int b = 0; b < 2 && binaries[b]; b++) {
        for (int k = 0; k < 2; k++) {
            CHECK_INT(draws(binaries[b], tpl_cfg, k ? ids_b : ids_a, k ? 2 : 3, got, N), 0);
            for (size_t i = 0; i < N; i++)
                CHECK(got[i] == want[i]);
        }
    }
}

struct whole {
    char *buf;
    size_t len, cap;
};

static size_t on_whole(char *p, size_t size, size_t n, void *arg)
{
    struct whole *w = arg;
    if (w->len + size * n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 1 << 20;
        while (cap < w->len + size * n + 1)
            cap *= 2;
        char *b = realloc(w->buf, cap);
        if (!b)
            return 0;
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, p, size * n);
    w->len += size * n;
    w->buf[w->len] = '\0';
    return size * n;
}

/* GET /stats whole (10 000 routes make it larger than a struct reply holds), parsed. */
static cJSON *whole_stats(unsigned port)
{
    char url[128];
    struct whole w = {NULL, 0, 0};
    snprintf(url, sizeof url, "http://127.0.0.1:%u/stats", port);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_whole);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    cJSON *j = rc == CURLE_OK && w.buf ? cJSON_Parse(w.buf) : NULL;
    free(w.buf);
    return j;
}

/* 10 000 templates, on both binaries: any id under the first, the middle and the last is
 * answered by its own template, one segment more or an empty id is a 404, and /stats counts the
 * ids of one template as one route. */
static void ten_thousand_template_routes_are_served(const struct itest_env *env)
{
    enum { N = 10000 };
    size_t cap = 64 + N * 80, len = 0;
    char *text = malloc(cap);
    if (!text) {
        CHECK_FAIL_("%s", "out of memory");
        return;
    }
    len += (size_t)snprintf(text, cap, "{\"delay\": \"0\", \"routes\": [");
    for (size_t i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"path\": \"/t/%05zu/{id}\", \"body\": \"template %zu\"}",
                                i ? ", " : "", i, i);
    snprintf(text + len, cap - len, "]}");
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s", write_file(env, "templates.json", text));
    free(text);
    const char *binaries[2] = {env->bin, env->other_bin};
    for (int b = 0; b < 2 && binaries[b]; b++) {
        struct server s;
        const char *args[] = {"--config", cfg, NULL};
        if (server_start(&s, binaries[b], args, NULL) != 0) {
            CHECK_FAIL_("%s did not start with %d templates", binaries[b], N);
            continue;
        }
        static struct reply r;
        static const size_t ends[] = {0, N / 2, N - 1};
        for (size_t k = 0; k < 3; k++) {
            char path[64], want[64];
            snprintf(want, sizeof want, "template %zu", ends[k]);
            for (int id = 0; id < 2; id++) {
                snprintf(path, sizeof path, "/t/%05zu/%s", ends[k], id ? "order-77" : "1");
                http_request(s.port, "GET", path, NULL, NULL, &r);
                CHECK_INT(r.status, 200);
                CHECK_STR(r.body, want);
            }
        }
        static const char *const misses[] = {"/t/10000/1", "/t/09999/", "/t/09999/1/2",
                                             "/t/9999/1"};
        for (size_t k = 0; k < sizeof misses / sizeof misses[0]; k++) {
            http_request(s.port, "GET", misses[k], NULL, NULL, &r);
            CHECK_INT(r.status, 404);
        }
        cJSON *j = whole_stats(s.port);
        CHECK(j != NULL);
        CHECK_INT(json_number(j, "routes./t/09999/{id}.requests"), 2);
        CHECK_INT(json_number(j, "routes./t/00001/{id}.requests"), 0);
        cJSON_Delete(j);
        stop_expect_clean(&s);
    }
}

static const struct itest_case cases[] = {
    {"templates_match_by_precedence", templates_match_by_precedence, ITEST_PLAIN, 0},
    {"ambiguous_templates_are_refused", ambiguous_templates_are_refused, ITEST_PLAIN, 0},
    {"template_counters_name_the_template", template_counters_name_the_template, ITEST_PLAIN, 0},
    {"scenario_changes_a_template", scenario_changes_a_template, ITEST_PLAIN, 0},
    {"percent_encoded_paths_are_decoded_once", percent_encoded_paths_are_decoded_once, ITEST_PLAIN,
     0},
    {"template_draws_repeat_per_route", template_draws_repeat_per_route, ITEST_BOTH, 0},
    {"ten_thousand_template_routes_are_served", ten_thousand_template_routes_are_served, ITEST_BOTH,
     0},
};

const struct itest_suite itest_suite_templates = {"templates", cases,
                                                  sizeof cases / sizeof cases[0]};
