/*
 * Cases on what each route answers: the built-in routes' exact bytes, per-request overrides,
 * drips and faults, routes from the config file, bodiless statuses on the wire, and both
 * binaries answering alike.
 */
#include "itest.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Every built-in route answers exact bytes, status, Content-Type and Content-Length. */
static void routes_answer_exact_bytes(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[256];
    START(env, &s, "--delay", "20ms");

    static const struct {
        const char *method, *path, *body;
        long status;
        const char *want, *ctype, *clen;
    } cases[] = {
        {"GET", "/test", NULL, 200, "ok", "text/plain", "2"},
        {"HEAD", "/test", NULL, 200, "", "text/plain", "2"},
        {"GET", "/echo", NULL, 200, "OK", "text/plain", "2"},
        {"POST", "/echo", "some body to discard", 200, "OK", "text/plain", "2"},
        {"PUT", "/", "x", 200, "OK", "text/plain", "2"},
        {"DELETE", "/", NULL, 200, "OK", "text/plain", "2"},
        {"GET", "/", NULL, 200, "OK", "text/plain", "2"},
        {"GET", "/healthz", NULL, 200, "ok", "text/plain", "2"},
        {"GET", "/test?x=1", NULL, 200, "ok", "text/plain", "2"},
        {"GET", "/nope", NULL, 404,
         "{\"error\": \"no such route; try /test, /write, /echo or /healthz\", \"status\": 404}",
         "application/json", "79"},
        {"GET", "/test/", NULL, 404,
         "{\"error\": \"no such route; try /test, /write, /echo or /healthz\", \"status\": 404}",
         "application/json", "79"},
        {"POST", "/test", "x", 405, "{\"error\": \"method not allowed; use GET\", \"status\": 405}",
         "application/json", "55"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_request(s.port, cases[i].method, cases[i].path, cases[i].body, NULL, &r);
        CHECK_INT(r.curl_code, CURLE_OK);
        CHECK_INT(r.status, cases[i].status);
        CHECK_STR(r.body, cases[i].want);
        CHECK_STR(reply_header(&r, "Content-Type", h, sizeof h), cases[i].ctype);
        CHECK_STR(reply_header(&r, "Content-Length", h, sizeof h), cases[i].clen);
    }
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=20");
    http_request(s.port, "POST", "/test", "x", NULL, &r);
    CHECK_STR(reply_header(&r, "Allow", h, sizeof h), "GET, HEAD");
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK(reply_timing(&r, h, sizeof h) == NULL);
    stop_expect_clean(&s);
}

/* Per-request overrides: query delay=, status=, size= and the X-Slowsrv-* headers. */
static void overrides_shape_each_request(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[64];
    START(env, &s, "--delay", "0", "--max-size", "200000");
    http_request(s.port, "GET", "/echo?delay=200ms", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=200");
    if (r.seconds < 0.2 || r.seconds > 0.2 + LONE_SLACK)
        CHECK_FAIL_("?delay=200ms took %.3f s", r.seconds);
    http_request(s.port, "GET", "/echo?status=418", NULL, NULL, &r);
    CHECK_INT(r.status, 418);
    CHECK_STR(r.body, "OK");
    http_request(s.port, "GET", "/test?size=150000", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.body_len, 150000);
    CHECK_STR(reply_header(&r, "Content-Length", h, sizeof h), "150000");
    const char *hdrs[] = {"X-Slowsrv-Delay: 100ms", "X-Slowsrv-Status: 503", NULL};
    http_request(s.port, "GET", "/", NULL, hdrs, &r);
    CHECK_INT(r.status, 503);
    CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=100");
    static const struct {
        const char *target, *body;
    } bad[] = {
        {"/echo?delay=61s",
         "{\"error\": \"delay: 61000 ms is over --max-delay 60000 ms\", \"status\": 400}"},
        {"/echo?status=700",
         "{\"error\": \"status: '700' is not an HTTP status from 200 to 599\", \"status\": 400}"},
        {"/echo?status=100",
         "{\"error\": \"status: '100' is not an HTTP status from 200 to 599\", \"status\": 400}"},
        {"/echo?size=200001", "{\"error\": \"size: '200001' is not a byte count from 0 to "
                              "--max-size 200000\", \"status\": 400}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_request(s.port, "GET", bad[i].target, NULL, NULL, &r);
        CHECK_INT(r.status, 400);
        CHECK_STR(r.body, bad[i].body);
    }
    stop_expect_clean(&s);

    START(env, &s, "--no-overrides");
    http_request(s.port, "GET", "/echo?delay=5s&status=500", NULL, hdrs, &r);
    CHECK_INT(r.status, 200);
    CHECK(r.seconds < 1.0);
    stop_expect_clean(&s);
}

/* ?drip= sends the body in chunks spread over its duration, after the delay; ?fault= breaks the
 * answer the way a failing server does, each seen by libcurl as its own error; bad values get a
 * 400 naming the parameter, and the server goes on. */
static void drip_and_faults(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[64];
    START(env, &s, "--delay", "100ms");
    http_request(s.port, "GET", "/test?size=1000&drip=5,1s", NULL, NULL, &r);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.body_len, 1000);
    CHECK_STR(reply_header(&r, "Content-Length", h, sizeof h), "1000");
    CHECK_INT(strncmp(r.body, "slowsrv filler", 14), 0);
    /* Headers after the delay, the first chunk 200 ms later, the last 1 s after the headers. */
    if (r.head_at < 0.1 || r.head_at > 0.1 + LONE_SLACK)
        CHECK_FAIL_("head after %.3f s, want it when the 100 ms delay ends", r.head_at);
    else
        check_passed++;
    if (r.first_body_at < 0.3 || r.first_body_at > 0.3 + LONE_SLACK)
        CHECK_FAIL_("first chunk after %.3f s, want about 0.3 s", r.first_body_at);
    if (r.seconds < 1.1 || r.seconds > 1.1 + LONE_SLACK)
        CHECK_FAIL_("drip=5,1s after 100 ms took %.3f s, want about 1.1 s", r.seconds);
    if (r.body_writes < 5)
        CHECK_FAIL_("body came in %u pieces, want 5 chunks", r.body_writes);
    const char *drip_hdr[] = {"X-Slowsrv-Drip: 2,400ms", NULL};
    http_request(s.port, "GET", "/echo", NULL, drip_hdr, &r);
    CHECK_STR(r.body, "OK");
    if (r.seconds < 0.4 || r.seconds > 0.4 + LONE_SLACK)
        CHECK_FAIL_("X-Slowsrv-Drip: 2,400ms took %.3f s", r.seconds);

    static const struct {
        const char *target;
        int curl_code; /* what libcurl reports */
        long status;
        size_t body_len;
    } faults[] = {
        {"/test?fault=close", CURLE_GOT_NOTHING, 0, 0},
        {"/test?fault=reset", CURLE_RECV_ERROR, 0, 0},
        {"/test?size=100&fault=truncate", CURLE_PARTIAL_FILE, 200, 50},
        {"/test?size=100&drip=4,400ms&fault=truncate", CURLE_PARTIAL_FILE, 200, 50},
    };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        http_request(s.port, "GET", faults[i].target, NULL, NULL, &r);
        if (r.curl_code != faults[i].curl_code)
            CHECK_FAIL_("%s: libcurl says %d (%s), want %d", faults[i].target, r.curl_code,
                        curl_easy_strerror((CURLcode)r.curl_code), faults[i].curl_code);
        else
            check_passed++;
        CHECK_INT(r.status, faults[i].status);
        CHECK_INT(r.body_len, faults[i].body_len);
        /* Faults come after the delay, as a server failing mid-work would. */
        if (r.seconds < 0.1 || r.seconds > 0.1 + LONE_SLACK + (i == 3 ? 0.2 : 0))
            CHECK_FAIL_("%s came after %.3f s, want the 100 ms delay (plus half the drip)",
                        faults[i].target, r.seconds);
    }

    static const struct {
        const char *method, *target, *body;
    } bad[] = {
        {"GET", "/test?drip=0",
         "{\"error\": \"drip: bad drip '0' (want CHUNKS,DURATION with 1 to 100000 chunks, e.g. "
         "10,2s)\", \"status\": 400}"},
        {"GET", "/test?drip=5,2s",
         "{\"error\": \"drip: 5 chunks need a body of at least 5 bytes (this one has 2); add "
         "size=\", \"status\": 400}"},
        {"GET", "/test?drip=1,61s",
         "{\"error\": \"drip: 61000 ms is over --max-delay 60000 ms\", \"status\": 400}"},
        {"GET", "/test?fault=explode",
         "{\"error\": \"fault: 'explode' is not close, reset, truncate or none\", "
         "\"status\": 400}"},
        {"GET", "/echo?size=0&fault=truncate",
         "{\"error\": \"fault: truncate needs a body to cut; add size=\", \"status\": 400}"},
        {"POST", "/write?fault=reset",
         "{\"error\": \"drip, fault: only on routes with a fixed answer (not /write)\", "
         "\"status\": 400}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_request(s.port, bad[i].method, bad[i].target, NULL, NULL, &r);
        CHECK_INT(r.status, 400);
        CHECK_STR(r.body, bad[i].body);
    }
    /* The server goes on, and counts the faults apart from client cancels. */
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_STR(r.body, "ok");
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "faults"), 4);
    CHECK_INT(json_number(j, "cancels"), 0);
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* Routes from the config file may drip, fail and have a worker pool of their own. */
static void config_routes_drip_fail_and_pool(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    long status[5];
    double secs[5];
    int ok[5];
    const char *path = write_file(
        env, "shaped.json",
        "{\"delay\": \"0\", \"routes\": [{\"path\": \"/slow-body\", \"body\": \"0123456789\", "
        "\"drip\": \"5,500ms\"}, {\"path\": \"/broken\", \"fault\": \"reset\", \"delay\": "
        "\"50ms\"}, {\"path\": \"/db\", \"body\": \"row\", \"delay\": \"300ms\", \"workers\": 2, "
        "\"queue\": 1}]}");
    const char *args[] = {"--config", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/slow-body", NULL, NULL, &r);
    CHECK_STR(r.body, "0123456789");
    if (r.seconds < 0.5 || r.seconds > 0.5 + LONE_SLACK || r.body_writes < 5)
        CHECK_FAIL_("drip 5,500ms: %.3f s in %u pieces", r.seconds, r.body_writes);
    http_request(s.port, "GET", "/broken", NULL, NULL, &r);
    CHECK_INT(r.curl_code, CURLE_RECV_ERROR);
    /* 5 at once on /db: 2 served, 1 queued then served, 2 refused; /test has no pool. */
    http_concurrent(s.port, "/db", 5, status, secs, ok, "row");
    unsigned served = 0, refused = 0;
    for (size_t i = 0; i < 5; i++) {
        served += status[i] == 200 && ok[i];
        refused += status[i] == 503;
    }
    CHECK_INT(served, 3);
    CHECK_INT(refused, 2);
    http_concurrent(s.port, "/test", 5, status, secs, ok, "ok");
    for (size_t i = 0; i < 5; i++)
        CHECK_INT(status[i], 200);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "workers.size"), 2);
    CHECK_INT(json_number(j, "workers.rejected"), 2);
    CHECK_INT(json_number(j, "faults"), 1);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* Routes from the config file replace and extend the built-ins. */
static void config_routes_are_served(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[64];
    const char *path = write_file(
        env, "routes.json",
        "{\"delay\": \"20ms\", \"routes\": [{\"path\": \"/echo\", \"status\": 202, \"body\": "
        "\"accepted\"}, {\"path\": \"/api/orders\", \"method\": \"POST\", \"status\": 201, "
        "\"body\": \"{\\\"id\\\": 7}\", \"headers\": {\"Content-Type\": \"application/json\", "
        "\"X-Backend\": \"slowsrv\"}, \"delay\": \"150ms\"}]}");
    const char *args[] = {"--config", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_INT(r.status, 202);
    CHECK_STR(r.body, "accepted");
    http_request(s.port, "POST", "/api/orders", "{}", NULL, &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(r.body, "{\"id\": 7}");
    CHECK_STR(reply_header(&r, "Content-Type", h, sizeof h), "application/json");
    CHECK_STR(reply_header(&r, "X-Backend", h, sizeof h), "slowsrv");
    CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=150");
    if (r.seconds < 0.15 || r.seconds > 0.15 + LONE_SLACK)
        CHECK_FAIL_("a 150 ms route answered in %.3f s", r.seconds);
    else
        check_passed++;
    http_request(s.port, "GET", "/api/orders", NULL, NULL, &r);
    CHECK_INT(r.status, 405);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=20");
    stop_expect_clean(&s);

    const char *bad = write_file(env, "bad.json",
                                 "{\"routes\": [{\"path\": \"/a\"}, {\"path\": "
                                 "\"/b\", \"delay\": \"soon\"}]}");
    struct bad_case c = {{"--config", NULL}, {NULL}, "bad.json: routes[1].delay: bad duration"};
    c.args[1] = bad;
    expect_refused(env, &c, 2);
}

/* Walks the pipelined answers in buf: fills status[], length[] (the Content-Length, -1 if none)
 * and body_len[] for at most max answers (HEAD answers and 1xx/204/304 carry no body), and
 * returns how many parsed. If `at` is not NULL it gets max + 1 entries: where each parsed answer
 * starts, and after the last one where the walk stopped. */
static int parse_answers(const char *buf, const int *is_head, long *status, long *length,
                         long *body_len, int max, const char **at)
{
    int n = 0;
    const char *p = buf;
    while (n < max && strncmp(p, "HTTP/1.1 ", 9) == 0) {
        const char *end = strstr(p, "\r\n\r\n");
        if (!end)
            break;
        if (at)
            at[n] = p;
        status[n] = strtol(p + 9, NULL, 10);
        length[n] = -1;
        long clen = 0;
        for (const char *h = strstr(p, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n")) {
            if (strncasecmp(h + 2, "Content-Length:", 15) == 0)
                length[n] = clen = strtol(h + 17, NULL, 10);
        }
        int bodiless = is_head[n] || status[n] == 204 || status[n] == 304 || status[n] < 200;
        body_len[n] = bodiless ? 0 : clen;
        p = end + 4 + body_len[n];
        n++;
    }
    if (at)
        at[n] = p;
    return n;
}

/* The value of header `name` in the raw answer that starts at `answer` (up to its blank line),
 * copied into buf, or NULL. */
static const char *answer_header(const char *answer, const char *name, char *buf, size_t len)
{
    const char *end = strstr(answer, "\r\n\r\n");
    size_t nlen = strlen(name);
    for (const char *h = strstr(answer, "\r\n"); h && end && h < end; h = strstr(h + 2, "\r\n")) {
        if (strncasecmp(h + 2, name, nlen) != 0 || h[2 + nlen] != ':')
            continue;
        const char *v = h + 3 + nlen;
        while (*v == ' ')
            v++;
        size_t n = strcspn(v, "\r");
        n = n < len - 1 ? n : len - 1;
        memcpy(buf, v, n);
        buf[n] = '\0';
        return buf;
    }
    return NULL;
}

/* 204 and 304 answers carry neither a body nor a Content-Length, on the wire, and the
 * connection goes on to the next pipelined request; a HEAD answer keeps its length. Also for a
 * configured route whose status is 304. libmicrohttpd 0.9.75 adds "Content-Length: 0" to every
 * 304 and cannot be told not to: slowsrv's 304s carry that (README, engine notes). */
static void bodiless_statuses_on_the_wire(const struct itest_env *env)
{
    struct server s;
    char buf[8192];
    int closed;
    const char *path = write_file(env, "bodiless.json",
                                  "{\"delay\": \"0\", \"routes\": [{\"path\": "
                                  "\"/cached\", \"status\": 304, \"body\": "
                                  "\"never sent\"}]}");
    const char *args[] = {"--config", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const char reqs[] = "GET /echo?status=304 HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /echo?status=204 HTTP/1.1\r\nHost: x\r\n\r\n"
                               "HEAD /test HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /cached HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /test?size=10&status=304 HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    static const int is_head[6] = {0, 0, 1, 0, 0, 0};
    static const long want_status[6] = {304, 204, 200, 304, 304, 200};
    long want_length[6] = {-1, -1, 2, -1, -1, 2};
    long status[6] = {0}, body_len[6] = {0}, length[6] = {0};
    if (itest_has(env, ENGINE_LENGTH_ON_304))
        want_length[0] = want_length[3] = want_length[4] = 0;
    int fd = raw_connect(s.port);
    send_all(fd, reqs, sizeof reqs - 1);
    read_until_close(fd, buf, sizeof buf, 3000, &closed);
    close(fd);
    CHECK_INT(parse_answers(buf, is_head, status, length, body_len, 6, NULL), 6);
    for (int i = 0; i < 6; i++) {
        CHECK_INT(status[i], want_status[i]);
        CHECK_INT(length[i], want_length[i]);
    }
    /* The last answer is the echo's "OK", right where the walk says it starts. */
    size_t len = strlen(buf);
    CHECK(len >= 2 && strcmp(buf + len - 2, "OK") == 0);
    stop_expect_clean(&s);
}

/* HEAD is accepted wherever GET is: on /healthz, /stats, /metrics, /echo, / and a configured GET
 * route it answers GET's status, Content-Type and Content-Length, and no body. On the wire: six
 * HEADs and a GET pipelined on one connection come back as exactly seven answers, the GET's "OK"
 * right where the walk over bodiless HEAD answers puts it, and nothing after it. */
static void head_answers_like_get_without_body(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char buf[16384], h[128];
    int closed;
    const char *path =
        write_file(env, "head.json",
                   "{\"delay\": \"0\", \"routes\": [{\"path\": \"/cfg\", \"method\": \"GET\", "
                   "\"body\": \"hello world\", \"headers\": {\"X-Cfg\": \"yes\"}}]}");
    const char *args[] = {"--config", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const struct {
        const char *path, *ctype;
        long length; /* GET's Content-Length; 0: a report, whose length changes with its figures */
    } routes[] = {
        {"/healthz", "text/plain", 2},
        {"/stats", "application/json", 0},
        {"/metrics", "text/plain; version=0.0.4", 0},
        {"/echo", "text/plain", 2},
        {"/", "text/plain", 2},
        {"/cfg", "text/plain", 11},
    };
    enum { N = sizeof routes / sizeof routes[0] };
    /* What GET answers, through libcurl. */
    for (size_t i = 0; i < N; i++) {
        http_request(s.port, "GET", routes[i].path, NULL, NULL, &r);
        CHECK_INT(r.status, 200);
        if (routes[i].length) {
            snprintf(h, sizeof h, "%ld", routes[i].length);
            CHECK_STR(reply_header(&r, "Content-Length", buf, sizeof buf), h);
            CHECK_INT(r.body_len, routes[i].length);
        }
    }

    char reqs[1024];
    size_t used = 0;
    for (size_t i = 0; i < N; i++)
        used += (size_t)snprintf(reqs + used, sizeof reqs - used,
                                 "HEAD %s HTTP/1.1\r\nHost: x\r\n\r\n", routes[i].path);
    used += (size_t)snprintf(reqs + used, sizeof reqs - used,
                             "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    int fd = raw_connect(s.port);
    CHECK_INT(send_all(fd, reqs, used), 0);
    size_t got = read_until_close(fd, buf, sizeof buf, 3000, &closed);
    close(fd);
    CHECK_INT(closed, 1);
    int is_head[N + 1] = {0};
    long status[N + 1], length[N + 1], body_len[N + 1];
    const char *at[N + 2];
    for (size_t i = 0; i < N; i++)
        is_head[i] = 1;
    int n = parse_answers(buf, is_head, status, length, body_len, N + 1, at);
    CHECK_INT(n, N + 1);
    if (n != N + 1) {
        fprintf(stderr, "the walk stopped at answer %d of:\n%s\n", n, buf);
        stop_expect_clean(&s);
        return;
    }
    for (size_t i = 0; i < N; i++) {
        if (status[i] != 200 || (routes[i].length && length[i] != routes[i].length) ||
            (!routes[i].length && length[i] <= 100))
            CHECK_FAIL_("HEAD %s: %ld with Content-Length %ld (want 200 and %ld, or over 100 for "
                        "a report)",
                        routes[i].path, status[i], length[i], routes[i].length);
        else
            check_passed++;
        CHECK_STR(answer_header(at[i], "Content-Type", h, sizeof h), routes[i].ctype);
    }
    CHECK_STR(answer_header(at[N - 1], "X-Cfg", h, sizeof h), "yes");
    CHECK_INT(status[N], 200);
    CHECK_INT(length[N], 2);
    /* The stream is exactly the seven answers: the walk ends at its last byte, on "OK". */
    CHECK_INT(at[N + 1] - buf, got);
    CHECK(got >= 2 && strcmp(buf + got - 2, "OK") == 0);
    stop_expect_clean(&s);
}

/* --no-overrides ignores every per-request override, in the query and in the X-Slowsrv-*
 * headers: delay, status, size, drip and fault, and values that would otherwise be refused.
 * Each request gets the route's plain answer, on time, and nothing is counted as a fault. */
static void no_overrides_ignores_every_override(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[64];
    START(env, &s, "--no-overrides", "--delay", "50ms");
    static const struct {
        const char *target, *header, *body;
    } reqs[] = {
        {"/test?delay=3s", NULL, "ok"},
        {"/test?status=503", NULL, "ok"},
        {"/test?size=1000", NULL, "ok"},
        {"/test?size=100&drip=4,2s", NULL, "ok"},
        {"/test?fault=reset", NULL, "ok"},
        {"/test?fault=close", NULL, "ok"},
        {"/test?size=100&fault=truncate", NULL, "ok"},
        {"/test", "X-Slowsrv-Delay: 3s", "ok"},
        {"/test", "X-Slowsrv-Status: 500", "ok"},
        {"/test", "X-Slowsrv-Drip: 2,2s", "ok"},
        {"/test", "X-Slowsrv-Fault: reset", "ok"},
        {"/echo?delay=soon&status=1&size=x&drip=0&fault=explode", NULL, "OK"},
        {"/echo?size=5000&drip=2,2s&fault=close", "X-Slowsrv-Delay: 3s", "OK"},
    };
    size_t tests = 0;
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        const char *hdrs[] = {reqs[i].header, NULL};
        int delayed = strncmp(reqs[i].target, "/test", 5) == 0;
        tests += delayed ? 1 : 0;
        http_request(s.port, "GET", reqs[i].target, NULL, hdrs, &r);
        if (r.curl_code != CURLE_OK || r.status != 200 || strcmp(r.body, reqs[i].body) != 0)
            CHECK_FAIL_("%s (%s): libcurl %d, %ld '%s', want 200 '%s'", reqs[i].target,
                        reqs[i].header ? reqs[i].header : "no header", r.curl_code, r.status,
                        r.body, reqs[i].body);
        else
            check_passed++;
        CHECK_STR(reply_header(&r, "Content-Length", h, sizeof h), "2");
        CHECK_STR(reply_header(&r, "Content-Type", h, sizeof h), "text/plain");
        if (delayed)
            CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=50");
        else
            CHECK(reply_timing(&r, h, sizeof h) == NULL);
        /* The route's 50 ms (or none), never an override's 2 s drip or 3 s delay. */
        if (r.seconds < (delayed ? 0.05 : 0) || r.seconds > 1.5)
            CHECK_FAIL_("%s took %.3f s", reqs[i].target, r.seconds);
        else
            check_passed++;
    }
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./test.status.200"), tests);
    CHECK_INT(json_number(j, "routes./echo.status.200"), sizeof reqs / sizeof reqs[0] - tests);
    CHECK_INT(json_number(j, "faults"), 0);
    CHECK_INT(json_number(j, "cancels"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* Both binaries give the same status, body and headers to the same requests. */
static void binaries_answer_alike(const struct itest_env *env)
{
    struct server a, b;
    const char *args[] = {"--delay", "30ms", "--max-body", "1M", NULL};
    if (!env->other_bin) {
        CHECK_FAIL_("%s", "needs the second binary as third argument");
        return;
    }
    if (server_start(&a, env->bin, args, NULL) != 0 ||
        server_start(&b, env->other_bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "a server did not start");
        return;
    }
    static const struct {
        const char *method, *path, *body, *hdr;
    } reqs[] = {
        {"GET", "/test", NULL, NULL},
        {"HEAD", "/test", NULL, NULL},
        {"GET", "/test?x=1", NULL, NULL},
        {"POST", "/test", "x", NULL},
        {"GET", "/echo", NULL, NULL},
        {"POST", "/echo", "abc", NULL},
        {"PUT", "/", "abc", NULL},
        {"GET", "/healthz", NULL, NULL},
        {"GET", "/nope", NULL, NULL},
        {"GET", "/write", NULL, NULL},
        {"POST", "/write", "x", "Content-Type: text/plain"},
        {"POST", "/write", "x", "Content-Type: multipart/form-data"},
        {"POST", "/write",
         "--B\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\nab\r\n--B--",
         "Content-Type: multipart/form-data; boundary=B"},
        {"POST", "/write", "--B\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\nab",
         "Content-Type: multipart/form-data; boundary=B"},
        {"POST", "/write", "--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nab\r\n--B--",
         "Content-Type: multipart/form-data; boundary=B"},
        /* Paths and query names as the core reads them, whatever each library hands over. */
        {"GET", "/%65cho", NULL, NULL},
        {"GET", "/test/../echo", NULL, NULL},
        {"GET", "/echo?%73tatus=503", NULL, NULL},
        {"GET", "/echo?delay", NULL, NULL},
        {"GET", "/echo?STATUS=503", NULL, NULL},
        {"GET", "/echo?status=201&status=202", NULL, NULL},
    };
    static const char *const compared[] = {"Content-Type", "Content-Length", "Server-Timing",
                                           "Allow"};
    /* The answers both must give to the path and query cases (the last six requests). */
    static const long decoded[] = {200, 200, 503, 400, 200, 201};
    const size_t nreqs = sizeof reqs / sizeof reqs[0],
                 ndecoded = sizeof decoded / sizeof decoded[0];
    for (size_t i = 0; i < nreqs; i++) {
        static struct reply ra, rb;
        const char *hdrs[] = {reqs[i].hdr, NULL};
        http_request(a.port, reqs[i].method, reqs[i].path, reqs[i].body, hdrs, &ra);
        http_request(b.port, reqs[i].method, reqs[i].path, reqs[i].body, hdrs, &rb);
        if (ra.status != rb.status || strcmp(ra.body, rb.body) != 0) {
            CHECK_FAIL_("%s %s: %ld '%s' vs %ld '%s'", reqs[i].method, reqs[i].path, ra.status,
                        ra.body, rb.status, rb.body);
            continue;
        }
        check_passed++;
        if (i >= nreqs - ndecoded && ra.status != decoded[i - (nreqs - ndecoded)])
            CHECK_FAIL_("%s %s: %ld, want %ld", reqs[i].method, reqs[i].path, ra.status,
                        decoded[i - (nreqs - ndecoded)]);
        for (size_t k = 0; k < sizeof compared / sizeof compared[0]; k++) {
            char ha[128], hb[128];
            /* Server-Timing's wait;dur is each answer's own: the plan's part is compared, and
             * that both carry one. */
            int timing = strcmp(compared[k], "Server-Timing") == 0;
            const char *va = timing ? reply_timing(&ra, ha, sizeof ha)
                                    : reply_header(&ra, compared[k], ha, sizeof ha);
            const char *vb = timing ? reply_timing(&rb, hb, sizeof hb)
                                    : reply_header(&rb, compared[k], hb, sizeof hb);
            if (timing && va && (reply_wait_ms(&ra) < 0) != (reply_wait_ms(&rb) < 0))
                CHECK_FAIL_("%s %s: wait;dur on one binary only", reqs[i].method, reqs[i].path);
            if ((va == NULL) != (vb == NULL) || (va && strcmp(va, vb) != 0))
                CHECK_FAIL_("%s %s: %s '%s' vs '%s'", reqs[i].method, reqs[i].path, compared[k],
                            va ? va : "(none)", vb ? vb : "(none)");
            else
                check_passed++;
        }
    }
    stop_expect_clean(&a);
    stop_expect_clean(&b);
}

/* Every answer of a delayed request carries Server-Timing: delay;dur=<intended ms> (README
 * §Shaping), drips and truncations included: the headers go out when the delay is over, before
 * the body is paced or cut. Delays from --delay, from ?delay= on an undelayed route and from a
 * config route's own delay; over HTTP/2 too where the engine speaks it. */
static void delayed_drips_and_truncations_carry_server_timing(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[64];
    const char *path = write_file(env, "timing.json",
                                  "{\"delay\": \"50ms\", \"routes\": [{\"path\": \"/slow-body\", "
                                  "\"body\": \"0123456789\", \"delay\": \"40ms\", \"drip\": "
                                  "\"2,100ms\"}, {\"path\": \"/cut\", \"body\": \"0123456789\", "
                                  "\"delay\": \"60ms\", \"fault\": \"truncate\"}]}");
    const char *args[] = {"--config", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const struct {
        const char *target, *timing;
        int curl_code;   /* CURLE_PARTIAL_FILE for a truncated body */
        size_t body_len; /* what arrives */
        double lo;       /* the delay, plus the whole drip when it is not cut */
    } reqs[] = {
        {"/test?size=100&drip=2,100ms", "delay;dur=50", CURLE_OK, 100, 0.15},
        {"/test?size=100&fault=truncate", "delay;dur=50", CURLE_PARTIAL_FILE, 50, 0.05},
        {"/test?size=100&drip=4,200ms&fault=truncate", "delay;dur=50", CURLE_PARTIAL_FILE, 50,
         0.05},
        {"/echo?delay=30ms&size=100&drip=2,100ms", "delay;dur=30", CURLE_OK, 100, 0.13},
        {"/echo?delay=30ms&size=100&fault=truncate", "delay;dur=30", CURLE_PARTIAL_FILE, 50, 0.03},
        {"/slow-body", "delay;dur=40", CURLE_OK, 10, 0.14},
        {"/cut", "delay;dur=60", CURLE_PARTIAL_FILE, 5, 0.06},
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        http_request(s.port, "GET", reqs[i].target, NULL, NULL, &r);
        if (r.curl_code != reqs[i].curl_code || r.status != 200 || r.body_len != reqs[i].body_len)
            CHECK_FAIL_("%s: libcurl %d, %ld with %zu bytes (want libcurl %d, 200 with %zu)",
                        reqs[i].target, r.curl_code, r.status, r.body_len, reqs[i].curl_code,
                        reqs[i].body_len);
        else
            check_passed++;
        CHECK_STR(reply_timing(&r, h, sizeof h), reqs[i].timing);
        if (r.seconds < reqs[i].lo || r.seconds > reqs[i].lo + 0.2 + LONE_SLACK)
            CHECK_FAIL_("%s took %.3f s, want at least %.2f s", reqs[i].target, r.seconds,
                        reqs[i].lo);
        else
            check_passed++;
    }
    /* HTTP/2 (h2c prior knowledge): the same header on a paced stream. A truncated stream is not
     * checked here: the server sends HEADERS, half the DATA and RST_STREAM together, and libcurl
     * 7.88 drops the headers it has not yet handed over when the reset comes in the same read. */
    if (itest_has(env, ENGINE_HTTP2)) {
        struct target t = {s.port, 0, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 0};
        long version = 0;
        http_request_to(&t, "GET", "/test?size=100&drip=2,100ms", NULL, NULL, &r, &version);
        CHECK_INT(version, CURL_HTTP_VERSION_2_0);
        CHECK_INT(r.body_len, 100);
        CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=50");
    }
    stop_expect_clean(&s);
}

/* /healthz, /stats and /metrics answer at once and as they are (README §Shaping): ?status=,
 * ?size=, ?fault=, ?drip= and the X-Slowsrv-* headers change nothing on the wire. Each answer is
 * 200 with the route's own type and body, no Server-Timing, in well under the 1 s drip asked for,
 * and nothing is counted as a fault. */
static void health_and_reports_ignore_overrides(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[128], clen[32];
    START(env, &s, "--delay", "0");
    static const struct {
        const char *path, *ctype;
    } routes[] = {
        {"/healthz", "text/plain"},
        {"/stats", "application/json"},
        {"/metrics", "text/plain; version=0.0.4"},
    };
    static const struct {
        const char *query, *header;
    } overrides[] = {
        {"?status=500&size=10&fault=reset&drip=2,1s", NULL},
        {"?status=503", NULL},
        {"?size=10", NULL},
        {"?size=100&fault=truncate", NULL},
        {"?fault=close", NULL},
        {"?fault=reset", NULL},
        {"?size=100&drip=2,1s", NULL},
        {"?status=700&size=-1&fault=explode&drip=0", NULL},
        {"", "X-Slowsrv-Status: 500"},
        {"", "X-Slowsrv-Fault: reset"},
        {"", "X-Slowsrv-Drip: 2,1s"},
        {"", "X-Slowsrv-Delay: 1s"},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        for (size_t k = 0; k < sizeof overrides / sizeof overrides[0]; k++) {
            char target[128];
            const char *hdrs[] = {overrides[k].header, NULL};
            snprintf(target, sizeof target, "%s%s", routes[i].path, overrides[k].query);
            http_request(s.port, "GET", target, NULL, hdrs, &r);
            const char *hdr = overrides[k].header ? overrides[k].header : "";
            if (r.curl_code != CURLE_OK || r.status != 200 || r.seconds > 0.6)
                CHECK_FAIL_("%s %s: libcurl %d, %ld in %.3f s (want 200 at once)", target, hdr,
                            r.curl_code, r.status, r.seconds);
            else
                check_passed++;
            CHECK_STR(reply_header(&r, "Content-Type", h, sizeof h), routes[i].ctype);
            CHECK(reply_timing(&r, h, sizeof h) == NULL);
            snprintf(clen, sizeof clen, "%zu", r.body_len);
            CHECK_STR(reply_header(&r, "Content-Length", h, sizeof h), clen);
            int plain;
            if (i == 0) {
                plain = strcmp(r.body, "ok") == 0;
            } else if (i == 1) {
                cJSON *j = cJSON_Parse(r.body);
                plain = json_number(j, "uptime_s") > 0 && json_number(j, "faults") == 0;
                cJSON_Delete(j);
            } else {
                /* The text is over the reply's 64 KiB: what was kept holds no NUL byte. */
                size_t kept = r.body_len < sizeof r.body ? r.body_len : sizeof r.body - 1;
                plain = strstr(r.body, "# TYPE slowsrv_uptime_seconds gauge\n") != NULL &&
                        strlen(r.body) == kept && r.body_len > 1000;
            }
            if (!plain)
                CHECK_FAIL_("%s %s: body is not the route's own (%zu bytes): '%.80s'", target, hdr,
                            r.body_len, r.body);
            else
                check_passed++;
        }
    }
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "requests"), 0);
    CHECK_INT(json_number(j, "faults"), 0);
    CHECK_INT(json_number(j, "cancels"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* Every built-in route can be redefined in the config file (SPEC §Routes; README: a config route
 * "replaces a built-in route of the same path"): /test, /write, /, /echo, /healthz, /stats and
 * /metrics each answer the configured method, status, body, headers and delay instead of their
 * own. /write no longer reads uploads; /stats and /metrics no longer report. */
static void config_redefines_every_builtin(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[128];
    const char *path = write_file(
        env, "redefine.json",
        "{\"delay\": \"20ms\", \"routes\": ["
        "{\"path\": \"/test\", \"status\": 201, \"body\": \"redefined test\", \"delay\": "
        "\"120ms\", \"headers\": {\"X-Route\": \"test\"}},"
        "{\"path\": \"/write\", \"method\": \"PUT\", \"status\": 201, \"body\": \"stored\"},"
        "{\"path\": \"/\", \"body\": \"root\", \"headers\": {\"Content-Type\": "
        "\"application/json\"}},"
        "{\"path\": \"/echo\", \"method\": \"POST\", \"status\": 202, \"body\": \"echoed\"},"
        "{\"path\": \"/healthz\", \"status\": 503, \"body\": \"draining\"},"
        "{\"path\": \"/stats\", \"body\": \"no stats\"},"
        "{\"path\": \"/metrics\", \"status\": 404, \"body\": \"no metrics\", \"delay\": "
        "\"30ms\"}]}");
    const char *args[] = {"--config", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const struct {
        const char *method, *path, *body;
        long status;
        const char *want, *ctype, *timing, *allow;
        double delay;
    } reqs[] = {
        {"GET", "/test", NULL, 201, "redefined test", "text/plain", "delay;dur=120", NULL, 0.12},
        {"PUT", "/write", "x", 201, "stored", "text/plain", NULL, NULL, 0},
        {"POST", "/write", "x", 405,
         "{\"error\": \"method not allowed; use PUT\", \"status\": 405}", "application/json", NULL,
         "PUT", 0},
        {"GET", "/", NULL, 200, "root", "application/json", NULL, NULL, 0},
        {"DELETE", "/", NULL, 200, "root", "application/json", NULL, NULL, 0},
        {"POST", "/echo", "x", 202, "echoed", "text/plain", NULL, NULL, 0},
        {"GET", "/echo", NULL, 405,
         "{\"error\": \"method not allowed; use POST\", \"status\": 405}", "application/json", NULL,
         "POST", 0},
        {"GET", "/healthz", NULL, 503, "draining", "text/plain", NULL, NULL, 0},
        {"GET", "/stats", NULL, 200, "no stats", "text/plain", NULL, NULL, 0},
        {"GET", "/metrics", NULL, 404, "no metrics", "text/plain", "delay;dur=30", NULL, 0.03},
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        http_request(s.port, reqs[i].method, reqs[i].path, reqs[i].body, NULL, &r);
        if (r.status != reqs[i].status || strcmp(r.body, reqs[i].want) != 0)
            CHECK_FAIL_("%s %s: %ld '%s', want %ld '%s'", reqs[i].method, reqs[i].path, r.status,
                        r.body, reqs[i].status, reqs[i].want);
        else
            check_passed++;
        CHECK_STR(reply_header(&r, "Content-Type", h, sizeof h), reqs[i].ctype);
        const char *timing = reply_timing(&r, h, sizeof h);
        if (reqs[i].timing)
            CHECK_STR(timing, reqs[i].timing);
        else
            CHECK(timing == NULL);
        const char *allow = reply_header(&r, "Allow", h, sizeof h);
        if (reqs[i].allow)
            CHECK_STR(allow, reqs[i].allow);
        else
            CHECK(allow == NULL);
        if (r.seconds < reqs[i].delay || r.seconds > reqs[i].delay + LONE_SLACK)
            CHECK_FAIL_("%s %s took %.3f s, want %.3f s", reqs[i].method, reqs[i].path, r.seconds,
                        reqs[i].delay);
        else
            check_passed++;
    }
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_STR(reply_header(&r, "X-Route", h, sizeof h), "test");
    /* The redefined /write is a fixed answer: a real upload is not counted. */
    struct part p[] = {{"data", "f", NULL, 5000}};
    struct target t = {s.port, 0, CURL_HTTP_VERSION_1_1, 0};
    http_upload(&t, "/write", p, 1, &r, 0);
    CHECK_INT(r.status, 405);
    stop_expect_clean(&s);
}

/* A 404 names the routes a client may call: the config's own first, then the built-in ones. */
static void not_found_names_the_config_routes(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    const char *cfg = write_file(env, "routes.json",
                                 "{\"routes\": [{\"path\": \"/api/orders\"}, "
                                 "{\"path\": \"/api/users\", \"status\": 201}]}");
    const char *args[] = {"--config", cfg, "--delay", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/api/nope", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    CHECK_STR(r.body, "{\"error\": \"no such route; try /api/orders, /api/users, /test, /write, "
                      "/echo or /healthz\", \"status\": 404}");
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"not_found_names_the_config_routes", not_found_names_the_config_routes, ITEST_PLAIN, 0},
    {"routes_answer_exact_bytes", routes_answer_exact_bytes, ITEST_PLAIN, 0},
    {"overrides_shape_each_request", overrides_shape_each_request, ITEST_PLAIN, 0},
    {"drip_and_faults", drip_and_faults, ITEST_PLAIN, 0},
    {"config_routes_drip_fail_and_pool", config_routes_drip_fail_and_pool, ITEST_PLAIN, 0},
    {"config_routes_are_served", config_routes_are_served, ITEST_PLAIN, 0},
    {"bodiless_statuses_on_the_wire", bodiless_statuses_on_the_wire, ITEST_PLAIN, 0},
    {"head_answers_like_get_without_body", head_answers_like_get_without_body, ITEST_PLAIN, 0},
    {"no_overrides_ignores_every_override", no_overrides_ignores_every_override, ITEST_PLAIN, 0},
    {"binaries_answer_alike", binaries_answer_alike, ITEST_BOTH, 0},
    {"delayed_drips_and_truncations_carry_server_timing",
     delayed_drips_and_truncations_carry_server_timing, ITEST_PLAIN, 0},
    {"health_and_reports_ignore_overrides", health_and_reports_ignore_overrides, ITEST_PLAIN, 0},
    {"config_redefines_every_builtin", config_redefines_every_builtin, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_routes = {"routes", cases, sizeof cases / sizeof cases[0]};
