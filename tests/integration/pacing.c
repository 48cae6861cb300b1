/*
 * Bandwidth and mid-body faults: rate= paces an answer's body, read-rate= the reading of a
 * request's body, and reset-after=, stall= and slow-close= break a body part-way, each seen by
 * libcurl as its own outcome (doc/options.md).
 */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

/* One request in a thread of its own, so that 10 s transfers run side by side. */
struct timed {
    struct target t;
    const char *path;
    struct part part; /* with a size: POSTed to path as a multipart upload */
    struct reply r;
};

static void *run_timed(void *arg)
{
    struct timed *q = arg;
    if (q->part.size)
        http_upload(&q->t, q->path, &q->part, 1, &q->r, 0);
    else
        http_request_to(&q->t, "GET", q->path, NULL, NULL, &q->r, NULL);
    return NULL;
}

/* Checks that `secs` is within 2 % of `want`. */
static void within_2pct(const char *what, double secs, double want)
{
    if (secs < want * 0.98 || secs > want * 1.02)
        CHECK_FAIL_("%s: %.3f s, want %.3f s within 2 %%", what, secs, want);
    else
        check_passed++;
    fprintf(stderr, "%s: %.3f s (want %.3f s, %+.2f %%)\n", what, secs, want,
            (secs / want - 1) * 100);
}

/* rate= holds an answer's body to its rate within 2 % over 10 s, at 1 MB/s and at 100 KB/s,
 * over HTTP/1.1 and, where the engine speaks it, HTTP/2; BURST (one 10 ms step of the rate by
 * default) leaves with the head, the rest at the rate. */
static void rate_holds_within_2pct_over_10s(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0");
    static struct timed q[4];
    size_t n = itest_has(env, ENGINE_HTTP2) ? 4 : 2;
    for (size_t i = 0; i < n; i++) {
        memset(&q[i], 0, sizeof q[i]);
        q[i].t = (struct target){
            s.port, 0, i < 2 ? CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 30000};
        q[i].path = i % 2 ? "/echo?size=1000000&rate=100K" : "/echo?size=10000000&rate=1M";
    }
    pthread_t th[4];
    double cpu0 = proc_cpu_seconds(s.pid);
    for (size_t i = 0; i < n; i++)
        pthread_create(&th[i], NULL, run_timed, &q[i]);
    for (size_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    for (size_t i = 0; i < n; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s %s", i < 2 ? "HTTP/1.1" : "HTTP/2", q[i].path);
        CHECK_INT(q[i].r.curl_code, 0);
        CHECK_INT(q[i].r.status, 200);
        CHECK_INT(q[i].r.body_len, i % 2 ? 1000000 : 10000000);
        /* The last byte leaves (size - burst) / rate after the head. Measured to the last
         * byte: libcurl 7.88 over HTTP/2 sometimes ends a transfer a second after it
         * (doc/engines.md). */
        within_2pct(what, q[i].r.last_body_at - q[i].r.head_at, 9.99);
    }
    /* Timers only, no busy loop: the bodies leave in steps of 10 ms of their rate, about 100
     * writes a second each (about 0.03 s of CPU for the whole run; a pacer handing out the few
     * bytes due at each write used 1.9 s for 5 s of one 1 MB/s body). */
    double cpu = proc_cpu_seconds(s.pid) - cpu0;
    if (cpu < 0 || cpu > 1.0)
        CHECK_FAIL_("the server used %.2f s of CPU for %zu paced bodies over 10 s, want < 1 s", cpu,
                    n);
    else
        check_passed++;
    stop_expect_clean(&s);
}

/* A burst leaves with the head; the header and a config route give the same rate; bad values
 * get a 400 naming the key. */
static void rate_burst_header_route_and_bad_values(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    const char *cfg = write_file(env, "rate.json",
                                 "{\"routes\": [{\"path\": \"/slow\", \"body\": \""
                                 "0123456789012345678901234567890123456789\", \"rate\": 100}]}");
    const char *args[] = {"--delay", "0", "--config", cfg, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    const char *hdr[] = {"X-Slowsrv-Rate: 100K,burst=50K", NULL};
    http_request(s.port, "GET", "/echo?size=100000", NULL, hdr, &r);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.body_len, 100000);
    /* 50 000 bytes at once, the other 50 000 at 100 KB/s: 0.5 s. */
    if (r.first_body_at > 0.1 || r.seconds < 0.49 || r.seconds > 0.5 + LONE_SLACK)
        CHECK_FAIL_("burst=50K: first byte after %.3f s, all after %.3f s, want at once and 0.5 s",
                    r.first_body_at, r.seconds);
    else
        check_passed++;
    /* A config route's "rate": 40 bytes at 100 bytes a second, one byte with the head. */
    http_request(s.port, "GET", "/slow", NULL, NULL, &r);
    CHECK_INT(r.body_len, 40);
    if (r.seconds < 0.39 || r.seconds > 0.39 + LONE_SLACK)
        CHECK_FAIL_("route rate 100: %.3f s, want 0.39 s", r.seconds);
    else
        check_passed++;
    static const struct {
        const char *method, *target, *body;
    } bad[] = {
        {"GET", "/echo?rate=fast",
         "{\"error\": \"rate: bad byte count 'fast' (want a whole number with an optional unit K, "
         "M, G, Ki, Mi or Gi, e.g. 100K or 1MiB)\", \"status\": 400}"},
        {"GET", "/echo?rate=1M,burst=0",
         "{\"error\": \"rate: burst must be at least 1 byte\", \"status\": 400}"},
        {"GET", "/echo?rate=11G",
         "{\"error\": \"rate: '11G' is over 10000000000\", \"status\": 400}"},
        {"GET", "/echo?size=100&drip=2,1s&rate=10",
         "{\"error\": \"drip: cannot be paced by rate or stall too; keep one\", \"status\": 400}"},
        {"POST", "/write?rate=1M",
         "{\"error\": \"rate, reset-after, stall, slow-close: only on routes with a fixed answer "
         "(not /write)\", \"status\": 400}"},
        {"GET", "/echo?reset-after=2",
         "{\"error\": \"reset-after: 2 bytes is not inside the body of 2 bytes; add size=\", "
         "\"status\": 400}"},
        {"GET", "/echo?size=100&stall=50",
         "{\"error\": \"stall: bad stall '50' (want BYTES,DURATION, e.g. 64K,5s)\", "
         "\"status\": 400}"},
        {"GET", "/echo?size=100&stall=50,1s&reset-after=40",
         "{\"error\": \"stall: at 50 bytes it would come after reset-after's 40; stall earlier\", "
         "\"status\": 400}"},
        {"GET", "/echo?size=100&stall=5,61s",
         "{\"error\": \"stall: 61000 ms is over --max-delay 60000 ms\", \"status\": 400}"},
        {"GET", "/echo?size=0&slow-close=1s",
         "{\"error\": \"slow-close: needs a body to hold the end of; add size=\", \"status\": "
         "400}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_request(s.port, bad[i].method, bad[i].target, NULL, NULL, &r);
        CHECK_INT(r.status, 400);
        CHECK_STR(r.body, bad[i].body);
    }
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    stop_expect_clean(&s);
}

/* Reads from fd until the end of the stream (at most `limit` s). Returns the seconds it took
 * and the bytes read in *got, or -1 if the stream did not end. */
static double read_to_end(int fd, double limit, size_t *got)
{
    char buf[65536];
    double t0 = now_seconds();
    *got = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        double left = limit - (now_seconds() - t0);
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            return -1;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            return n == 0 ? now_seconds() - t0 : -1;
        *got += (size_t)n;
    }
}

/* Each mid-body fault as libcurl sees it over HTTP/1.1: reset-after is "recv failure" (56) with
 * that many body bytes, stall a whole body that came late (or "timeout" (28) for a client that
 * gives up first), slow-close a whole body that libcurl finishes at Content-Length while a
 * client that reads to the end of the stream waits for the FIN. Each counts as a fault, none as
 * a cancel. */
static void mid_body_faults_as_libcurl_sees_them(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "0");
    http_request(s.port, "GET", "/echo?size=100000&reset-after=64K", NULL, NULL, &r);
    CHECK_INT(r.curl_code, CURLE_RECV_ERROR);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.body_len, 64000);
    const char *reset_hdr[] = {"X-Slowsrv-Reset-After: 64KiB", NULL};
    http_request(s.port, "GET", "/echo?size=100000&rate=1M", NULL, reset_hdr, &r);
    CHECK_INT(r.curl_code, CURLE_RECV_ERROR);
    CHECK_INT(r.body_len, 65536);

    http_request(s.port, "GET", "/echo?size=100000&stall=64K,500ms", NULL, NULL, &r);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.body_len, 100000);
    if (r.seconds < 0.5 || r.seconds > 0.5 + LONE_SLACK)
        CHECK_FAIL_("stall=64K,500ms: %.3f s, want 0.5 s", r.seconds);
    else
        check_passed++;
    struct target impatient = {s.port, 0, CURL_HTTP_VERSION_1_1, 250};
    http_request_to(&impatient, "GET", "/echo?size=100000&stall=64K,2s", NULL, NULL, &r, NULL);
    CHECK_INT(r.curl_code, CURLE_OPERATION_TIMEDOUT);
    CHECK_INT(r.body_len, 64000);

    http_request(s.port, "GET", "/echo?size=1000&slow-close=1s", NULL, NULL, &r);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.body_len, 1000);
    CHECK(r.seconds < LONE_SLACK);
    char h[32];
    CHECK_STR(reply_header(&r, "Connection", h, sizeof h), "close");
    int fd = raw_connect(s.port);
    static const char req[] = "GET /echo?size=1000&slow-close=1s HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK_INT(send_all(fd, req, sizeof req - 1), 0);
    size_t got;
    double end = read_to_end(fd, 5, &got);
    if (end < 1.0 || end > 1.0 + LONE_SLACK)
        CHECK_FAIL_("slow-close=1s: the end of the stream after %.3f s, want 1 s", end);
    else
        check_passed++;
    CHECK(got > 1000);
    close(fd);

    /* HEAD has no body to break: GET's head at once, no fault. */
    http_request(s.port, "HEAD", "/echo?size=1000&reset-after=10&stall=5,1s", NULL, NULL, &r);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.status, 200);
    CHECK_STR(reply_header(&r, "Content-Length", h, sizeof h), "1000");
    CHECK(r.seconds < LONE_SLACK);

    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "faults"), 6);
    CHECK_INT(json_number(j, "cancels"), 0);
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* Over HTTP/2: reset-after resets the stream (libcurl: "stream error", 92) after its bytes, and
 * the connection serves on; stall pauses the stream; slow-close holds END_STREAM (libcurl
 * finishes at Content-Length). */
static void h2_mid_body_faults(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "0");
    struct target t = {s.port, 0, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 0};
    long version = 0;
    http_request_to(&t, "GET", "/echo?size=100000&reset-after=64K", NULL, NULL, &r, &version);
    CHECK_INT(version, CURL_HTTP_VERSION_2_0);
    CHECK_INT(r.curl_code, CURLE_HTTP2_STREAM);
    CHECK_INT(r.body_len, 64000);
    http_request_to(&t, "GET", "/echo?size=100000&stall=64K,500ms", NULL, NULL, &r, NULL);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.body_len, 100000);
    if (r.seconds < 0.5 || r.seconds > 0.5 + LONE_SLACK)
        CHECK_FAIL_("h2 stall=64K,500ms: %.3f s, want 0.5 s", r.seconds);
    else
        check_passed++;
    http_request_to(&t, "GET", "/echo?size=1000&slow-close=1s", NULL, NULL, &r, NULL);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.body_len, 1000);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "faults"), 3);
    CHECK_INT(json_number(j, "cancels"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* read-rate holds the reading of a request body to its rate within 2 % over 10 s, at 1 MB/s
 * (an upload to /write, counted exactly) and at 100 KB/s: the client's own transfer takes that
 * long, as TCP's window pushes back on it. */
static void read_rate_holds_within_2pct_over_10s(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0");
    static struct timed q[2];
    for (size_t i = 0; i < 2; i++) {
        memset(&q[i], 0, sizeof q[i]);
        q[i].t = (struct target){s.port, 0, CURL_HTTP_VERSION_1_1, 30000};
        q[i].path = i ? "/write?read-rate=100K" : "/write?read-rate=1M";
        q[i].part = (struct part){"data", "d.bin", NULL, i ? 1000000 : 10000000};
    }
    pthread_t th[2];
    for (size_t i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, run_timed, &q[i]);
    for (size_t i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (size_t i = 0; i < 2; i++) {
        CHECK_INT(q[i].r.status, 200);
        CHECK_STR(q[i].r.body, i ? "1000000" : "10000000");
        /* One 10 ms step of the rate is read at once, the rest at the rate; the multipart
         * framing adds some 200 bytes. */
        within_2pct(q[i].path, q[i].r.seconds, 9.99);
    }
    stop_expect_clean(&s);
}

/* A 1 GiB upload read at 10 MB/s (107 s) keeps the server under 32 MiB of RSS: what it holds
 * is one read buffer of libmicrohttpd's and the socket's, whatever the size. */
static void read_rate_upload_memory_stays_flat(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0", "--max-body", "2G"); /* the form is a little over 1 GiB */
    struct timed q = {.t = {s.port, 0, CURL_HTTP_VERSION_1_1, 150000},
                      .path = "/write?read-rate=10M",
                      .part = {"data", "d.bin", NULL, 1u << 30}};
    pthread_t th;
    pthread_create(&th, NULL, run_timed, &q);
    pthread_join(th, NULL);
    CHECK_INT(q.r.status, 200);
    CHECK_STR(q.r.body, "1073741824");
    within_2pct("1 GiB at read-rate=10M", q.r.seconds, 1073741824.0 / 10e6 - 0.01);
    long hwm = proc_status_kb(s.pid, "VmHWM");
#ifndef SLOWSRV_SANITIZED
    if (hwm > 32 * 1024)
        CHECK_FAIL_("peak RSS %ld KiB, want under 32 MiB", hwm);
    else
        check_passed++;
#endif
    fprintf(stderr, "1 GiB at read-rate=10M: %.2f s, VmHWM %ld KiB\n", q.r.seconds, hwm);
    stop_expect_clean(&s);
}

/* slowsrv-h2o cannot read a body slowly (libh2o 2.2.5 reads it whole first): read-rate gets a
 * 400 that says so, from a request, the control API's PATCH and POST alike, and a config route
 * with it is refused before anything is bound. slowsrv takes them all. */
static void read_rate_refused_where_bodies_come_whole(const struct itest_env *env)
{
    struct server s;
    struct reply r, patch, post;
    START(env, &s, "--delay", "0", "--control", "0");
    unsigned cport = control_port_of(&s);
    http_request(s.port, "POST", "/echo?read-rate=1M", "abc", NULL, &r);
    http_request(cport, "PATCH", "/routes/echo", "{\"read-rate\": \"1M\"}", NULL, &patch);
    http_request(cport, "POST", "/routes", "{\"path\": \"/in\", \"read-rate\": \"1M\"}", NULL,
                 &post);
    const char *cfg = write_file(env, "read.json",
                                 "{\"routes\": [{\"path\": \"/in\", \"read-rate\": \"256K\"}]}");
    if (itest_has(env, ENGINE_STREAMS_UPLOADS)) {
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body, "OK");
        CHECK_INT(patch.status, 200);
        CHECK_INT(post.status, 201);
        stop_expect_clean(&s);
        return;
    }
    static const char why[] = "read-rate: slowsrv-h2o cannot read a body slowly (libh2o 2.2.5 "
                              "reads it whole before slowsrv sees the request); use slowsrv";
    CHECK_INT(r.status, 400);
    CHECK_STR(r.body, "{\"error\": \"read-rate: slowsrv-h2o cannot read a body slowly (libh2o "
                      "2.2.5 reads it whole before slowsrv sees the request); use slowsrv\", "
                      "\"status\": 400}");
    CHECK_INT(patch.status, 400);
    CHECK(strstr(patch.body, why) != NULL);
    CHECK_INT(post.status, 400);
    CHECK(strstr(post.body, why) != NULL);
    /* Nothing changed: /echo reads and answers as before. */
    http_request(s.port, "POST", "/echo", "abc", NULL, &r);
    CHECK_STR(r.body, "OK");
    stop_expect_clean(&s);
    struct bad_case c = {{"--check-config", cfg}, {NULL}, "routes[0].read-rate: slowsrv-h2o"};
    expect_refused(env, &c, 2);
    /* A scenario's phase is checked the same way. */
    const char *sc = write_file(env, "read-scenario.json",
                                "{\"scenario\": [{\"at\": \"1s\", \"routes\": {\"/echo\": "
                                "{\"read-rate\": \"256K\"}}}]}");
    struct bad_case d = {
        {"--check-config", sc}, {NULL}, "scenario[0].routes./echo.read-rate: slowsrv-h2o cannot"};
    expect_refused(env, &d, 2);
}

/* The control API changes a route's rate; its listing shows the keys as a config gives them. */
static void control_patches_a_route_rate(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "0", "--control", "0");
    unsigned cport = control_port_of(&s);
    if (!cport) {
        CHECK_FAIL_("no control port in '%s'", s.startup);
        stop_expect_clean(&s);
        return;
    }
    http_request(cport, "PATCH", "/routes/echo",
                 "{\"rate\": \"100,burst=1\", \"stall\": \"1,100ms\", \"slow-close\": \"50ms\"}",
                 NULL, &r);
    CHECK_INT(r.status, 200);
    http_request(cport, "GET", "/routes/echo", NULL, NULL, &r);
    cJSON *j = cJSON_Parse(r.body);
    cJSON *o = j && cJSON_GetObjectItem(j, "route") ? cJSON_GetObjectItem(j, "route") : j;
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "rate")), "100,burst=1");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "stall")), "1,100ms");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "slow-close")), "50ms");
    cJSON_Delete(j);
    /* "OK": one byte with the head, the stall, the other 10 ms later. */
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    if (r.seconds < 0.1 || r.seconds > 0.11 + LONE_SLACK)
        CHECK_FAIL_("patched /echo: %.3f s, want 0.11 s", r.seconds);
    else
        check_passed++;
    http_request(cport, "PATCH", "/routes/echo", "{\"rate\": \"fast\"}", NULL, &r);
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "rate: bad byte count 'fast'") != NULL);
    stop_expect_clean(&s);
}

/* Every thread model paces and breaks bodies alike: a rate, a reset after its bytes, a
 * slow-close's late end of stream and (slowsrv) a read-rate, each timed. */
static void pacing_on_every_model(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    const char *args[] = {"--delay", "0", "--model", env->model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/echo?size=100000&rate=100K", NULL, NULL, &r);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.body_len, 100000);
    if (r.seconds < 0.98 || r.seconds > 0.99 + LONE_SLACK)
        CHECK_FAIL_("%s: 100 000 bytes at 100K took %.3f s, want 0.99 s", env->model, r.seconds);
    else
        check_passed++;
    http_request(s.port, "GET", "/echo?size=100000&reset-after=64K", NULL, NULL, &r);
    CHECK_INT(r.curl_code, CURLE_RECV_ERROR);
    CHECK_INT(r.body_len, 64000);
    int fd = raw_connect(s.port);
    static const char req[] = "GET /echo?size=1000&slow-close=500ms HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK_INT(send_all(fd, req, sizeof req - 1), 0);
    size_t got;
    double end = read_to_end(fd, 5, &got);
    if (end < 0.5 || end > 0.5 + LONE_SLACK)
        CHECK_FAIL_("%s: slow-close=500ms: the end of the stream after %.3f s", env->model, end);
    else
        check_passed++;
    close(fd);
    if (itest_has(env, ENGINE_STREAMS_UPLOADS)) {
        struct part p = {"data", "d.bin", NULL, 100000};
        http_upload(h1(&s), "/write?read-rate=100K", &p, 1, &r, 0);
        CHECK_STR(r.body, "100000");
        if (r.seconds < 0.98 || r.seconds > 1.0 + LONE_SLACK)
            CHECK_FAIL_("%s: 100 000 bytes read at 100K took %.3f s", env->model, r.seconds);
        else
            check_passed++;
    }
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "faults"), 2);
    CHECK_INT(json_number(j, "cancels"), 0);
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"rate_holds_within_2pct_over_10s", rate_holds_within_2pct_over_10s, ITEST_PLAIN, 0},
    {"rate_burst_header_route_and_bad_values", rate_burst_header_route_and_bad_values, ITEST_PLAIN,
     0},
    {"mid_body_faults_as_libcurl_sees_them", mid_body_faults_as_libcurl_sees_them, ITEST_PLAIN, 0},
    {"h2_mid_body_faults", h2_mid_body_faults, ITEST_PLAIN, ENGINE_HTTP2},
    {"read_rate_holds_within_2pct_over_10s", read_rate_holds_within_2pct_over_10s, ITEST_PLAIN,
     ENGINE_STREAMS_UPLOADS},
    {"read_rate_upload_memory_stays_flat", read_rate_upload_memory_stays_flat, ITEST_PLAIN,
     ENGINE_STREAMS_UPLOADS},
    {"read_rate_refused_where_bodies_come_whole", read_rate_refused_where_bodies_come_whole,
     ITEST_PLAIN, 0},
    {"control_patches_a_route_rate", control_patches_a_route_rate, ITEST_PLAIN, 0},
    {"pacing_on_every_model", pacing_on_every_model, ITEST_PER_MODEL, 0},
};

const struct itest_suite itest_suite_pacing = {"pacing", cases, sizeof cases / sizeof cases[0]};
