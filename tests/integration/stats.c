/*
 * Cases on what the server reports about its work: /stats, /metrics and the access log.
 */
#include "itest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /stats counts what was asked, by route and status, and not itself or /healthz. */
static void stats_count_requests(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "0");
    for (int i = 0; i < 3; i++)
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
    http_request(s.port, "POST", "/echo", "abcde", NULL, &r);
    http_request(s.port, "GET", "/missing", NULL, NULL, &r);
    http_request(s.port, "GET", "/healthz", NULL, NULL, &r);
    cJSON *j = settled_stats(h1(&s));
    CHECK(j != NULL);
    CHECK_INT(json_number(j, "requests"), 5);
    CHECK_INT(json_number(j, "answered"), 5);
    CHECK_INT(json_number(j, "routes./test.status.200"), 3);
    CHECK_INT(json_number(j, "routes./echo.status.200"), 1);
    CHECK_INT(json_number(j, "routes.other.status.404"), 1);
    CHECK_INT(json_number(j, "routes./healthz.requests"), 0);
    CHECK_INT(json_number(j, "bytes_received"), 5);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* The value of the first /metrics sample line that starts with `prefix`, or -1. */
static double metric(const char *text, const char *prefix)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, strlen(prefix)) == 0 && p[strlen(prefix)] == ' ')
            return strtod(p + strlen(prefix) + 1, NULL);
    }
    return -1;
}

/* /stats and /metrics count faults and client cancels per route, and summarise each route's
 * intended delay, its overshoot and the service time. */
static void stats_count_faults_cancels_and_latency(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "50ms");
    for (int i = 0; i < 2; i++)
        http_request(s.port, "GET", "/test?fault=reset", NULL, NULL, &r);
    http_request(s.port, "GET", "/echo?fault=close", NULL, NULL, &r);
    CHECK_INT(r.status, 0);
    size_t sent = 0;
    int *fds = open_requests(s.port, "/echo?delay=300ms", 3, &sent);
    CHECK_INT(await_stat(h1(&s), "waiting", 3, 5), 3);
    close_requests(fds, 3);
    for (int i = 0; i < 4; i++)
        answers_within(s.port, "/test", "ok", 0.05, 0.05 + LONE_SLACK);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "faults"), 3);
    CHECK_INT(json_number(j, "cancels"), 3);
    CHECK_INT(json_number(j, "routes./test.faults"), 2);
    CHECK_INT(json_number(j, "routes./test.cancels"), 0);
    CHECK_INT(json_number(j, "routes./echo.faults"), 1);
    CHECK_INT(json_number(j, "routes./echo.cancels"), 3);
    /* The four answered /test requests (faults are not answers): intended 50 ms each, in the
     * 50 ms bucket; served in more than 50 ms, so in the next bucket (100 ms); an overshoot of a
     * lone request on an idle loop far below 25 ms. */
    CHECK_INT(json_number(j, "routes./test.delay_intended_ms.count"), 4);
    CHECK_INT(json_number(j, "routes./test.delay_intended_ms.mean"), 50);
    CHECK_INT(json_number(j, "routes./test.delay_intended_ms.p50_le"), 50);
    CHECK_INT(json_number(j, "routes./test.delay_intended_ms.p99_le"), 50);
    CHECK_INT(json_number(j, "routes./test.service_ms.count"), 4);
    CHECK(json_number(j, "routes./test.service_ms.mean") >= 50);
    CHECK_INT(json_number(j, "routes./test.service_ms.p50_le"), 100);
    CHECK_INT(json_number(j, "routes./test.delay_overshoot_ms.count"), 4);
    CHECK(json_number(j, "routes./test.delay_overshoot_ms.mean") >= 0);
    CHECK(json_number(j, "routes./test.delay_overshoot_ms.p99_le") <= 25);
    CHECK_INT(json_number(j, "routes./echo.delay_intended_ms.count"), 0);
    cJSON_Delete(j);
    http_request(s.port, "GET", "/metrics", NULL, NULL, &r);
    CHECK_INT(metric(r.body, "slowsrv_faults_total{route=\"/test\"}"), 2);
    CHECK_INT(metric(r.body, "slowsrv_faults_total{route=\"/echo\"}"), 1);
    CHECK_INT(metric(r.body, "slowsrv_cancels_total{route=\"/echo\"}"), 3);
    CHECK_INT(metric(r.body, "slowsrv_cancels_total{route=\"/test\"}"), 0);
    stop_expect_clean(&s);
}

/* /metrics: Prometheus text format that promtool accepts, counting a known sequence, with
 * latency histograms of the intended delay, its overshoot and the service time. */
static void metrics_follow_a_known_sequence(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[64], path[300], cmd[700];
    START(env, &s, "--delay", "30ms", "--workers", "4");
    for (int i = 0; i < 3; i++)
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
    http_request(s.port, "GET", "/missing", NULL, NULL, &r);
    cJSON_Delete(settled_stats(h1(&s)));
    http_request(s.port, "GET", "/metrics", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(reply_header(&r, "Content-Type", h, sizeof h), "text/plain; version=0.0.4");
    CHECK_INT(metric(r.body, "slowsrv_requests_total{route=\"/test\",status=\"200\"}"), 3);
    CHECK_INT(metric(r.body, "slowsrv_requests_total{route=\"other\",status=\"404\"}"), 1);
    CHECK_INT(metric(r.body, "slowsrv_delay_intended_seconds_count{route=\"/test\"}"), 3);
    CHECK_INT(metric(r.body, "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"0.025\"}"),
              0);
    CHECK_INT(metric(r.body, "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"0.05\"}"),
              3);
    CHECK_INT(metric(r.body, "slowsrv_delay_overshoot_seconds_count{route=\"/test\"}"), 3);
    CHECK_INT(metric(r.body, "slowsrv_service_seconds_count{route=\"/test\"}"), 3);
    CHECK_INT(metric(r.body, "slowsrv_workers"), 4);
    CHECK_INT(metric(r.body, "slowsrv_in_flight"), 0);
    /* The overshoot of a lone 30 ms delay on an idle server stays under 25 ms. */
    CHECK_INT(
        metric(r.body, "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"0.025\"}"), 3);
    snprintf(path, sizeof path, "%s/metrics.txt", env->tmpdir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(r.body, f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "promtool check metrics < '%s'", path);
    CHECK_INT(system(cmd), 0);
    stop_expect_clean(&s);
}

static int read_lines(const char *path, cJSON **lines, int max)
{
    char buf[2048];
    int n = 0;
    FILE *f = fopen(path, "r");
    while (f && n < max && fgets(buf, sizeof buf, f))
        lines[n++] = cJSON_Parse(buf);
    if (f)
        fclose(f);
    return n;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "(missing)";
}

/* --access-log: one JSON line per request; SIGHUP reopens the file after logrotate. */
static void access_log_lines_and_reopen(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char path[300], moved[320];
    cJSON *lines[8];
    snprintf(path, sizeof path, "%s/access.log", env->tmpdir);
    snprintf(moved, sizeof moved, "%s.1", path);
    const char *args[] = {"--delay", "50ms", "--access-log", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/test?x=1", NULL, NULL, &r);
    http_request(s.port, "POST", "/echo", "abc", NULL, &r);
    http_request(s.port, "GET", "/nope", NULL, NULL, &r);
    cJSON_Delete(settled_stats(h1(&s)));
    CHECK_INT(rename(path, moved), 0);
    kill(s.pid, SIGHUP);
    /* The reopen is seen as the file coming back under its name. */
    double t0 = now_seconds();
    while (access(path, F_OK) != 0 && now_seconds() - t0 < 5)
        usleep(5 * 1000);
    CHECK_INT(access(path, F_OK), 0);
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    stop_expect_clean(&s);

    int n = read_lines(moved, lines, 8);
    CHECK_INT(n, 3);
    /* A line is written when its request ends, so the order may differ between loops. */
    const cJSON *test = NULL, *echo = NULL, *nope = NULL;
    for (int i = 0; i < n; i++) {
        const char *path_i = jstr(lines[i], "path");
        if (strcmp(path_i, "/test?x=1") == 0)
            test = lines[i];
        else if (strcmp(path_i, "/echo") == 0)
            echo = lines[i];
        else if (strcmp(path_i, "/nope") == 0)
            nope = lines[i];
    }
    CHECK(test && echo && nope);
    if (test && echo && nope) {
        CHECK_STR(jstr(test, "method"), "GET");
        CHECK_INT(json_number(test, "status"), 200);
        CHECK_INT(json_number(test, "delay_ms"), 50);
        CHECK(json_number(test, "waited_ms") >= 50);
        CHECK(json_number(test, "service_ms") >= 50);
        CHECK(strncmp(jstr(test, "client"), "127.0.0.1:", 10) == 0);
        CHECK_STR(jstr(echo, "method"), "POST");
        CHECK_INT(json_number(echo, "bytes_in"), 3);
        CHECK_INT(json_number(echo, "bytes_out"), 2);
        CHECK_INT(json_number(nope, "status"), 404);
    }
    for (int i = 0; i < n; i++)
        cJSON_Delete(lines[i]);
    n = read_lines(path, lines, 8);
    CHECK_INT(n, 1);
    if (n == 1)
        CHECK_STR(jstr(lines[0], "path"), "/echo");
    for (int i = 0; i < n; i++)
        cJSON_Delete(lines[i]);
}

static const struct itest_case cases[] = {
    {"stats_count_requests", stats_count_requests, ITEST_PLAIN, 0},
    {"stats_count_faults_cancels_and_latency", stats_count_faults_cancels_and_latency, ITEST_PLAIN,
     0},
    {"metrics_follow_a_known_sequence", metrics_follow_a_known_sequence, ITEST_PLAIN, 0},
    {"access_log_lines_and_reopen", access_log_lines_and_reopen, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_stats = {"stats", cases, sizeof cases / sizeof cases[0]};
