/*
 * Cases on changing the target while it runs: the control API (--control), its token, the
 * config's scenario, per-run counters (POST /reset), and changes under load.
 */
#include "itest.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Sends a request to the control API; returns the status, the parsed body in *json if asked. */
static long api(unsigned port, const char *method, const char *path, const char *body,
                const char *auth, cJSON **json)
{
    static struct reply r;
    char h[300];
    const char *headers[] = {"Content-Type: application/json", auth ? h : NULL, NULL};
    if (auth)
        snprintf(h, sizeof h, "Authorization: %s", auth);
    http_request(port, method, path, body, headers, &r);
    if (json)
        *json = cJSON_Parse(r.body);
    return r.status;
}

/* The generation and delay an answer names in Server-Timing ("delay;dur=X, gen;desc=N"). */
static int answer_plan(const struct reply *r, double *dur_ms, unsigned long long *gen)
{
    char v[200];
    if (!reply_timing(r, v, sizeof v))
        return -1;
    return sscanf(v, "delay;dur=%lf, gen;desc=%llu", dur_ms, gen) == 2 ? 0 : -1;
}

/* The API answers the same requests alike on both binaries: the same statuses and bodies. */
static void control_api_answers_alike(const struct itest_env *env)
{
    static const struct {
        const char *method, *path, *body;
        long status;
        int same_body; /* 0 where the body holds a time */
    } calls[] = {
        {"GET", "/routes", NULL, 200, 1},
        {"GET", "/routes/test", NULL, 200, 1},
        {"PATCH", "/routes/test", "{\"delay\": \"20ms\", \"status\": 202}", 200, 1},
        {"PATCH", "/routes/test", "{\"delay\": \"1sec\"}", 400, 1},
        {"PATCH", "/routes/test", "{\"error-rate\": 2}", 400, 1},
        {"PATCH", "/routes/test", "{\"colour\": \"red\"}", 400, 1},
        {"PATCH", "/routes/test", "{nope", 400, 1},
        {"PATCH", "/routes/nowhere", "{\"status\": 500}", 404, 1},
        {"PATCH", "/routes/write", "{\"status\": 500}", 409, 1},
        {"POST", "/routes", "{\"path\": \"/api/orders\", \"delay\": \"p50=5ms,p99=20ms\"}", 201, 1},
        {"POST", "/routes", "{\"path\": \"/api/orders\"}", 409, 1},
        {"PATCH", "/routes/api/orders", "{\"error-rate\": 0.5, \"error-status\": 500}", 200, 1},
        {"GET", "/routes/api/orders", NULL, 200, 1},
        {"DELETE", "/routes/test", NULL, 409, 1},
        {"DELETE", "/routes/api/orders", NULL, 200, 1},
        {"DELETE", "/routes/api/orders", NULL, 404, 1},
        {"PUT", "/routes", "[{\"path\": \"/a\", \"status\": 201, \"body\": \"A\"}]", 200, 1},
        {"PUT", "/routes", "[{\"path\": \"/a\"}, {\"path\": \"/a\"}]", 400, 1},
        {"GET", "/routes", NULL, 200, 1},
        {"POST", "/reset", NULL, 200, 0},
        {"GET", "/scenario", NULL, 200, 1},
        {"POST", "/scenario/start", NULL, 409, 1},
        {"GET", "/nowhere", NULL, 404, 1},
        {"DELETE", "/routes", NULL, 405, 1},
    };
    struct server a, b;
    const char *args[] = {"--delay", "0", "--control", "0", "--seed", "3", NULL};
    if (server_start(&a, env->bin, args, NULL) != 0 ||
        server_start(&b, env->other_bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "servers did not start");
        return;
    }
    unsigned pa = control_port_of(&a), pb = control_port_of(&b);
    CHECK(pa != 0 && pb != 0);
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        static struct reply ra, rb;
        const char *h[] = {"Content-Type: application/json", NULL};
        http_request(pa, calls[i].method, calls[i].path, calls[i].body, h, &ra);
        http_request(pb, calls[i].method, calls[i].path, calls[i].body, h, &rb);
        if (ra.status != calls[i].status || rb.status != calls[i].status)
            CHECK_FAIL_("%s %s: %ld and %ld, want %ld", calls[i].method, calls[i].path, ra.status,
                        rb.status, calls[i].status);
        else
            check_passed++;
        if (calls[i].same_body && strcmp(ra.body, rb.body) != 0)
            CHECK_FAIL_("%s %s: the bodies differ:\n  %.300s\n  %.300s", calls[i].method,
                        calls[i].path, ra.body, rb.body);
        char ct[64];
        CHECK_STR(reply_header(&ra, "Content-Type", ct, sizeof ct), "application/json");
        CHECK_STR(reply_header(&rb, "Content-Type", ct, sizeof ct), "application/json");
        CHECK_STR(reply_header(&ra, "Connection", ct, sizeof ct), "close");
        CHECK_STR(reply_header(&rb, "Connection", ct, sizeof ct), "close");
        cJSON *parsed = cJSON_Parse(ra.body);
        CHECK(parsed != NULL);
        cJSON_Delete(parsed);
    }
    /* A body over 16 MiB: 413 on both (the core's JSON one on slowsrv, libh2o's own from the
     * Content-Length on slowsrv-h2o). */
    size_t big = 17 * 1024 * 1024;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[0] = '{';
    huge[big - 1] = '}';
    huge[big] = '\0';
    for (int k = 0; k < 2; k++) {
        static struct reply r;
        const char *h[] = {"Content-Type: application/json", NULL};
        http_request(k ? pb : pa, "PATCH", "/routes/test", huge, h, &r);
        CHECK_INT(r.status, 413);
    }
    free(huge);
    /* The data plane saw the changes, on both: PUT kept the built-in /test as PATCHed. */
    for (int k = 0; k < 2; k++) {
        struct reply r;
        double dur;
        unsigned long long gen;
        http_request(k ? b.port : a.port, "GET", "/test", NULL, NULL, &r);
        /* PUT replaced the config's routes: the built-in /test is as at the start again. */
        CHECK_INT(r.status, 200);
        CHECK_INT(answer_plan(&r, &dur, &gen), 0);
        CHECK_INT(dur, 0);
        CHECK_INT(gen, 6);
        http_request(k ? b.port : a.port, "GET", "/a", NULL, NULL, &r);
        CHECK_INT(r.status, 201);
        CHECK_STR(r.body, "A");
        cJSON *j = settled_stats(h1(k ? &b : &a));
        CHECK_INT(json_number(j, "control.generation"), 6);
        CHECK_INT(json_number(j, "control.changes"), 5);
        CHECK_INT(json_number(j, "resets"), 1);
        cJSON_Delete(j);
    }
    /* The main port does not serve the API, nor the API the routes. */
    struct reply r;
    http_request(a.port, "GET", "/routes", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    http_request(pa, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    stop_expect_clean(&a);
    stop_expect_clean(&b);
}

/* The control listener keeps the limits of the main port: 70 clients that trickle a head, a
 * byte at a time, lock no one out (a token holder is answered at once beside them), and
 * --header-timeout cuts them. With --control-token, a request without the token is refused from
 * its head, its body never waited for. */
static void control_port_outlasts_trickling_clients(const struct itest_env *env)
{
    enum { TRICKLERS = 70 };
    struct server s;
    const char *file = write_file(env, "token", "s3cret-t0ken\n");
    const char *args[] = {"--delay",          "0",  "--control", "0", "--control-token", file,
                          "--header-timeout", "1s", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    int fds[TRICKLERS];
    static const char head[] = "GET /routes HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    for (int i = 0; i < TRICKLERS; i++) {
        fds[i] = raw_connect(cp);
        CHECK(fds[i] >= 0 && send_all(fds[i], head, 1) == 0);
    }
    /* A byte each, every 100 ms, for 400 ms: the API answers a token holder meanwhile. */
    double worst = 0;
    for (size_t k = 1; k < 5; k++) {
        usleep(100000);
        for (int i = 0; i < TRICKLERS; i++)
            send_all(fds[i], head + k, 1);
        double t0 = now_seconds();
        CHECK_INT(api(cp, "GET", "/routes", NULL, "Bearer s3cret-t0ken", NULL), 200);
        double took = now_seconds() - t0;
        worst = took > worst ? took : worst;
    }
    if (worst > 0.5)
        CHECK_FAIL_("a control request beside %d trickling clients took %.3f s", TRICKLERS, worst);
    else
        check_passed++;
    /* --header-timeout 1s: none of them has its head done after 1.5 s; each is closed. */
    char buf[512];
    int closed = 0, all = 1;
    usleep(1100000);
    for (int i = 0; i < TRICKLERS; i++) {
        read_until_close(fds[i], buf, sizeof buf, 1000, &closed);
        all &= closed;
        close(fds[i]);
    }
    CHECK_INT(all, 1);
    /* No token: 401 from the head; the body announced is never sent, the answer comes anyway. */
    int fd = raw_connect(cp);
    static const char small[] =
        "PUT /routes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n[";
    send_all(fd, small, sizeof small - 1);
    size_t n = read_until_text(fd, buf, sizeof buf - 1, "\r\n\r\n", 2000);
    buf[n] = '\0';
    CHECK(strncmp(buf, "HTTP/1.1 401 ", 13) == 0);
    close(fd);
    stop_expect_clean(&s);
}

/* Sends a body of `total` bytes on fd, 16 KiB a time, looking for an answer between the pieces
 * (at most 2 ms each); stops once one came. Returns the bytes sent by then; sets *answered. */
static size_t send_until_answered(int fd, size_t total, int chunked, int *answered)
{
    static char piece[16 * 1024 + 32];
    size_t sent = 0, data = 16 * 1024;
    size_t len = data;
    if (chunked) {
        int h = snprintf(piece, sizeof piece, "%zx\r\n", data);
        memset(piece + h, '[', data);
        memcpy(piece + (size_t)h + data, "\r\n", 2);
        len = (size_t)h + data + 2;
    } else {
        memset(piece, '[', data);
    }
    *answered = 0;
    while (sent < total) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 2) > 0) {
            *answered = 1;
            break;
        }
        if (send_all(fd, piece, len) != 0)
            break;
        sent += len;
    }
    if (!*answered) {
        struct pollfd p = {fd, POLLIN, 0};
        *answered = poll(&p, 1, 3000) > 0;
    }
    return sent;
}

/* With --control-token, a request without the token is refused from its head, before its body:
 * a 100 MB body, announced by Content-Length or chunked, gets the core's JSON 401 while the
 * client has sent under 1 MB of it (paced, 16 KiB every 2 ms: libh2o, reading the body first,
 * answered only past its 16 MiB limit), and the API serves the token holder after. */
static void control_token_refuses_before_body(const struct itest_env *env)
{
    struct server s;
    const char *file = write_file(env, "token", "s3cret-t0ken\n");
    const char *args[] = {"--delay", "0", "--control", "0", "--control-token", file, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    static const char *const heads[] = {
        "PUT /routes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 104857600\r\n\r\n",
        "PATCH /routes/test HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n"
        "Transfer-Encoding: chunked\r\n\r\n",
    };
    for (size_t i = 0; i < 2; i++) {
        int fd = raw_connect(cp);
        CHECK(fd >= 0 && send_all(fd, heads[i], strlen(heads[i])) == 0);
        int answered;
        size_t sent = send_until_answered(fd, 100u * 1024 * 1024, i == 1, &answered);
        char buf[1024];
        int closed = 0;
        size_t n = read_until_close(fd, buf, sizeof buf, 2000, &closed);
        CHECK_INT(answered, 1);
        if (sent >= 1024 * 1024)
            CHECK_FAIL_("case %zu: the answer came after %zu bytes of the body", i, sent);
        else
            check_passed++;
        CHECK(n > 13 && strncmp(buf, "HTTP/1.1 401 ", 13) == 0);
        CHECK(strstr(buf, "\"missing or wrong token") != NULL);
        close(fd);
    }
    CHECK_INT(api(cp, "GET", "/routes", NULL, "Bearer s3cret-t0ken", NULL), 200);
    stop_expect_clean(&s);
}

/* With --control-token, a request without the token gets 401 and changes nothing. */
static void control_token_is_required(const struct itest_env *env)
{
    struct server s;
    const char *file = write_file(env, "token", "s3cret-t0ken\n");
    const char *args[] = {"--delay", "0", "--control", "0", "--control-token", file, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    static struct reply r;
    const char *none[] = {NULL};
    http_request(cp, "PATCH", "/routes/test", "{\"status\": 500}", none, &r);
    CHECK_INT(r.status, 401);
    char v[128];
    CHECK_STR(reply_header(&r, "WWW-Authenticate", v, sizeof v),
              "Bearer realm=\"slowsrv control\"");
    CHECK_INT(api(cp, "GET", "/routes", NULL, "Bearer wrong", NULL), 401);
    CHECK_INT(api(cp, "POST", "/reset", NULL, "Bearer s3cret-t0ke", NULL), 401);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(api(cp, "PATCH", "/routes/test", "{\"status\": 500}", "Bearer s3cret-t0ken", NULL),
              200);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 500);
    stop_expect_clean(&s);
}

/* The control plane cannot be turned against the server: a Host that does not name the listener
 * (a DNS-rebinding page) gets 403; no verb replaces a built-in route; a body that is not UTF-8 or
 * holds a NUL, a route header with a control character or one that frames the answer get 400;
 * and GET /routes still parses afterwards. */
static void control_plane_is_locked_down(const struct itest_env *env)
{
    struct server s;
    const char *args[] = {"--delay", "0", "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    static struct reply r;
    char host[64];
    snprintf(host, sizeof host, "Host: localhost:%u", cp);
    const char *evil[] = {"Host: rebind.example:1", NULL};
    const char *evil_port[] = {NULL, NULL};
    char ep[64];
    snprintf(ep, sizeof ep, "Host: rebind.example:%u", cp);
    evil_port[0] = ep;
    const char *local[] = {host, NULL};
    http_request(cp, "GET", "/routes", NULL, evil, &r);
    CHECK_INT(r.status, 403);
    CHECK(strstr(r.body, "Host does not name the control listener") != NULL);
    http_request(cp, "GET", "/routes", NULL, evil_port, &r);
    CHECK_INT(r.status, 403);
    http_request(cp, "GET", "/routes", NULL, local, &r);
    CHECK_INT(r.status, 200);
    /* HTTP/1.0 without Host: no browser sends that, and it is served. */
    int fd = raw_connect(cp);
    static const char h10[] = "GET /routes HTTP/1.0\r\n\r\n";
    char buf[256];
    int closed;
    CHECK(fd >= 0 && send_all(fd, h10, sizeof h10 - 1) == 0);
    size_t got = fd >= 0 ? read_until_close(fd, buf, sizeof buf - 1, 2000, &closed) : 0;
    buf[got] = '\0';
    CHECK(strncmp(buf, "HTTP/1.1 200 ", 13) == 0);
    if (fd >= 0)
        close(fd);

    static const char *const builtins[] = {"/healthz", "/stats", "/metrics", "/ui", "/write"};
    char body[200];
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        snprintf(body, sizeof body, "[{\"path\": \"%s\", \"status\": 503}]", builtins[i]);
        CHECK_INT(api(cp, "PUT", "/routes", body, NULL, NULL), 409);
    }
    http_request(s.port, "GET", "/healthz", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    http_request(s.port, "GET", "/ui", NULL, NULL, &r);
    CHECK(reply_header(&r, "Content-Security-Policy", body, sizeof body) != NULL);

    static const char *const bad[] = {
        "{\"body\": \"\xff\xfe\"}",
        "{\"body\": \"cut\\u0000here\"}",
        "{\"headers\": {\"X-A\": \"a\\r\\nSet-Cookie: x=1\"}}",
        "{\"headers\": {\"X-A\": \"a\\u000bb\"}}",
        "{\"headers\": {\"X-A\": \"a\\u007f\"}}",
        "{\"headers\": {\"Content-Length\": \"0\"}}",
        "{\"headers\": {\"Transfer-Encoding\": \"chunked\"}}",
        "{\"headers\": {\"Connection\": \"close\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(api(cp, "PATCH", "/routes/test", bad[i], NULL, NULL), 400);
    cJSON *j = NULL;
    CHECK_INT(api(cp, "GET", "/routes", NULL, NULL, &j), 200);
    CHECK(j != NULL);
    CHECK_INT((long)json_number(j, "generation"), 1);
    cJSON_Delete(j);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "ok");
    stop_expect_clean(&s);
}

/* What one PATCH thread does while the load runs. */
struct churn {
    unsigned port;
    size_t changes;
    double delay_of[1200]; /* ms, by generation */
    int done;
    size_t refused; /* 503: too many generations alive (retried) */
};

static void *churn_main(void *arg)
{
    struct churn *c = arg;
    static struct reply r;
    const char *h[] = {"Content-Type: application/json", NULL};
    for (size_t i = 0; i < c->changes;) {
        char body[64];
        int ms = 100 + (int)((i * 37) % 200);
        snprintf(body, sizeof body, "{\"delay\": \"%dms\"}", ms);
        http_request(c->port, "PATCH", "/routes/test", body, h, &r);
        if (r.status == 503) {
            c->refused++;
            continue;
        }
        cJSON *j = cJSON_Parse(r.body);
        double gen = json_number(j, "generation");
        cJSON_Delete(j);
        if (r.status != 200 || gen < 2 || gen >= 1200) {
            fprintf(stderr, "  PATCH %zu: %ld %.200s\n", i, r.status, r.body);
            break;
        }
        c->delay_of[(size_t)gen] = ms;
        i++;
        usleep(1000); /* spread over the requests' lives */
    }
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* 1000 changes of /test while 1000 delayed requests are in flight: every answer carries the
 * plan of one generation (its delay and its number agree with what that change set), and took
 * at least that delay; nothing is lost, and every retired generation is freed (ASan). */
static void changes_under_load_keep_each_plan(const struct itest_env *env)
{
    enum { INFLIGHT = 1000, MAXREQ = 6000 };
    struct server s;
    /* --log-level warn: a line per change would fill the harness's stderr pipe, unread here. */
    START(env, &s, "--delay", "200ms", "--control", "0", "--max-connections", "5000", "--log-level",
          "warn");
    struct churn *c = calloc(1, sizeof *c);
    struct reply *replies = calloc(MAXREQ, sizeof *replies);
    CURL **easies = calloc(MAXREQ, sizeof *easies);
    double *began = calloc(MAXREQ, sizeof *began);
    c->port = control_port_of(&s);
    c->changes = 1000;
    c->delay_of[1] = 200;
    CURLM *m = curl_multi_init();
    const struct target *t = h1(&s);
    size_t started = 0, finished = 0;
    for (; started < INFLIGHT; started++) {
        easies[started] = http_easy(t, "GET", "/test", &replies[started]);
        curl_easy_setopt(easies[started], CURLOPT_PRIVATE, (void *)(uintptr_t)started);
        began[started] = now_seconds();
        curl_multi_add_handle(m, easies[started]);
    }
    pthread_t th;
    pthread_create(&th, NULL, churn_main, c);
    int running = 1;
    double t0 = now_seconds();
    while ((running || started < MAXREQ) && now_seconds() - t0 < 120) {
        curl_multi_perform(m, &running);
        for (CURLMsg *msg; (msg = curl_multi_info_read(m, &(int){0})) != NULL;) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            char *priv;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
            size_t i = (size_t)(uintptr_t)priv;
            replies[i].seconds = now_seconds() - began[i];
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &replies[i].status);
            curl_multi_remove_handle(m, msg->easy_handle);
            finished++;
            /* Keep INFLIGHT waiting while the changes go on. */
            if (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) && started < MAXREQ) {
                easies[started] = http_easy(t, "GET", "/test", &replies[started]);
                curl_easy_setopt(easies[started], CURLOPT_PRIVATE, (void *)(uintptr_t)started);
                began[started] = now_seconds();
                curl_multi_add_handle(m, easies[started]);
                started++;
                running = 1;
            }
        }
        if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) && !running)
            break;
        curl_multi_poll(m, NULL, 0, 20, NULL);
    }
    pthread_join(th, NULL);
    CHECK_INT(finished, started);
    size_t bad = 0, gens_seen = 0;
    static unsigned char seen[1200];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < started; i++) {
        double dur;
        unsigned long long gen;
        if (replies[i].status != 200 || answer_plan(&replies[i], &dur, &gen) != 0 || gen >= 1200 ||
            c->delay_of[gen] != dur || replies[i].seconds < dur / 1000 - 0.002) {
            if (bad++ < 5)
                CHECK_FAIL_("answer %zu: status %ld, Server-Timing of generation %llu says %.1f "
                            "ms (that generation set %.1f ms), took %.3f s",
                            i, replies[i].status, answer_plan(&replies[i], &dur, &gen) ? 0 : gen,
                            dur, gen < 1200 ? c->delay_of[gen] : -1, replies[i].seconds);
            continue;
        }
        gens_seen += !seen[gen];
        seen[gen] = 1;
    }
    CHECK_INT(bad, 0);
    /* The answers came from many generations, not one before and one after (a sanitized build,
     * ten times slower, still shows more than 18). */
    if (gens_seen < 10)
        CHECK_FAIL_("answers came from %zu generations only", gens_seen);
    cJSON *j = settled_stats(t);
    CHECK_INT(json_number(j, "control.changes"), 1000);
    CHECK_INT(json_number(j, "control.generation"), 1001);
    CHECK_INT(json_number(j, "in_flight"), 0);
    CHECK_INT(json_number(j, "routes./test.status.200"), (double)started);
    cJSON_Delete(j);
    fprintf(stderr, "  %zu answers from %zu generations over 1000 changes (%zu refused, retried)\n",
            started, gens_seen, c->refused);
    for (size_t i = 0; i < started; i++)
        curl_easy_cleanup(easies[i]);
    curl_multi_cleanup(m);
    free(easies);
    free(replies);
    free(began);
    free(c);
    stop_expect_clean(&s);
}

/* The config's scenario changes the answers at its offsets; "scenario-start": "api" waits for
 * POST /scenario/start; /metrics and /stats show the phase. */
static void scenario_changes_answers_on_time(const struct itest_env *env)
{
    const char *cfg = write_file(
        env, "scenario.json",
        "{\"delay\": \"10ms\", \"scenario-start\": \"api\", \"scenario\": ["
        " {\"at\": \"300ms\", \"name\": \"brownout\", \"routes\": {\"/test\": {\"delay\": "
        "\"60ms\"}}},"
        " {\"at\": \"600ms\", \"name\": \"errors\", \"routes\": {\"/test\": {\"error-rate\": 1, "
        "\"error-status\": 502}}},"
        " {\"at\": \"1500ms\", \"name\": \"recovered\", \"restore\": true}]}");
    struct server s;
    const char *args[] = {"--config", cfg, "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    struct reply r;
    double dur;
    unsigned long long gen;
    usleep(400000); /* waits for its start: nothing changed */
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 10);
    cJSON *j;
    CHECK_INT(api(cp, "POST", "/scenario/start", NULL, NULL, &j), 200);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "scenario"), "running")));
    cJSON_Delete(j);
    double t0 = now_seconds();
    while (now_seconds() - t0 < 0.45)
        usleep(5000);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 60);
    while (now_seconds() - t0 < 0.75)
        usleep(5000);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 502);
    http_request(s.port, "GET", "/metrics", NULL, NULL, &r);
    CHECK(strstr(r.body, "slowsrv_scenario_phase 1\n") != NULL);
    while (now_seconds() - t0 < 1.65)
        usleep(5000);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 10);
    j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "scenario.phase"), 2);
    const cJSON *phases = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "scenario"), "phases");
    double b0 = json_number(cJSON_GetArrayItem(phases, 0), "began_at");
    double b1 = json_number(cJSON_GetArrayItem(phases, 1), "began_at");
    CHECK(b0 > 1.7e9 && b1 - b0 > 0.25 && b1 - b0 < 0.35);
    CHECK_INT(json_number(j, "control.changes"), 3);
    cJSON_Delete(j);
    CHECK_INT(api(cp, "POST", "/scenario/stop", NULL, NULL, NULL), 200);
    char log[8192];
    server_stop(&s, 5000, log, sizeof log);
    CHECK(strstr(log, "control: scenario phase 0 (brownout): at 0.300 s: generation 1 -> 2") !=
          NULL);
}

/* One run of a seeded scenario under a sequential load: the (status, delay) of 30 requests. */
static void seeded_run(const struct itest_env *env, const char *cfg, const char *seed, char *out,
                       size_t len)
{
    struct server s;
    const char *args[] = {"--config", cfg, "--seed", seed, NULL};
    out[0] = '\0';
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    struct reply r;
    /* Phase 0 is in force once /stats says it began. */
    double t0 = now_seconds();
    cJSON *j = NULL;
    do {
        cJSON_Delete(j);
        usleep(10000);
        http_request(s.port, "GET", "/stats", NULL, NULL, &r);
        j = cJSON_Parse(r.body);
    } while (json_number(j, "scenario.phase") != 0 && now_seconds() - t0 < 5);
    cJSON_Delete(j);
    size_t n = 0;
    for (int i = 0; i < 30; i++) {
        char v[128] = "";
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
        reply_timing(&r, v, sizeof v);
        n += (size_t)snprintf(out + n, len - n, "%ld %s\n", r.status, v);
    }
    stop_expect_clean(&s);
}

/* With --seed, a run of the same scenario under the same load draws the same delays and the
 * same errors; another seed draws others. */
static void seeded_scenarios_repeat(const struct itest_env *env)
{
    const char *cfg = write_file(env, "seeded.json",
                                 "{\"delay\": \"1ms\", \"scenario\": [{\"at\": \"0s\", "
                                 "\"routes\": {\"/test\": {\"delay\": \"normal:8ms,3ms\", "
                                 "\"error-rate\": 0.3}}}]}");
    static char a[8192], b[8192], c[8192];
    seeded_run(env, cfg, "11", a, sizeof a);
    seeded_run(env, cfg, "11", b, sizeof b);
    seeded_run(env, cfg, "12", c, sizeof c);
    CHECK(strstr(a, "503 ") != NULL && strstr(a, "200 ") != NULL);
    CHECK_STR(b, a);
    CHECK(strcmp(a, c) != 0);
}

/* POST /reset: /stats starts a new run, /metrics stays monotonic and counts the reset. */
static void reset_starts_a_new_run(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0", "--control", "0");
    struct reply r;
    for (int i = 0; i < 4; i++)
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
    /* A request is counted when the server has finished with it, which can be just after the
     * client has read its answer: the reset must come after all four, not between. The /stats
     * read that shows it can itself be counted just after the reset, in the new run. */
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./test.service_ms.count"), 4);
    cJSON_Delete(j);
    CHECK_INT(api(control_port_of(&s), "POST", "/reset", NULL, NULL, &j), 200);
    CHECK_INT(json_number(j, "resets"), 1);
    cJSON_Delete(j);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    j = settled_stats(h1(&s));
    double late = json_number(j, "routes./stats.requests");
    CHECK(late == 0 || late == 1);
    CHECK_INT(json_number(j, "requests"), 1 + late);
    CHECK_INT(json_number(j, "routes./test.status.200"), 1);
    CHECK_INT(json_number(j, "routes./test.service_ms.count"), 1);
    CHECK_INT(json_number(j, "resets"), 1);
    CHECK(json_number(j, "reset_at") > 1.7e9);
    cJSON_Delete(j);
    http_request(s.port, "GET", "/metrics", NULL, NULL, &r);
    CHECK(strstr(r.body, "slowsrv_requests_total{route=\"/test\",status=\"200\"} 5\n") != NULL);
    CHECK(strstr(r.body, "slowsrv_resets_total 1\n") != NULL);
    stop_expect_clean(&s);
}

struct fetch {
    unsigned port;
    double after; /* seconds to wait before sending */
    struct reply r;
    double at; /* when the answer was read, from t0 */
    double t0;
};

static void *fetch_main(void *arg)
{
    struct fetch *f = arg;
    usleep((useconds_t)(f->after * 1e6));
    http_request(f->port, "GET", "/slow", NULL, NULL, &f->r);
    f->at = now_seconds() - f->t0;
    return NULL;
}

/* A drip in flight keeps its body across a change, and a request queued for the route's one
 * worker keeps its plan and its place; the pool grown to 2 by the change admits it at once. */
static void drips_and_queued_requests_keep_their_plan(const struct itest_env *env)
{
    const char *cfg = write_file(env, "slow.json",
                                 "{\"routes\": [{\"path\": \"/slow\", \"body\": \"0123456789\", "
                                 "\"drip\": \"5,600ms\", \"workers\": 1, \"queue\": 5}]}");
    struct server s;
    const char *args[] = {"--config", cfg, "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static struct fetch f[2];
    pthread_t th[2];
    double t0 = now_seconds();
    for (int i = 0; i < 2; i++) {
        f[i] = (struct fetch){s.port, i * 0.05, {0}, 0, t0};
        pthread_create(&th[i], NULL, fetch_main, &f[i]);
    }
    usleep(200000);
    CHECK_INT(api(control_port_of(&s), "PATCH", "/routes/slow",
                  "{\"body\": \"abcdefghij\", \"workers\": 2}", NULL, NULL),
              200);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_INT(f[i].r.status, 200);
        CHECK_STR(f[i].r.body, "0123456789");
    }
    /* The first drips 600 ms; the second, queued behind it, got the new second worker at the
     * change (200 ms) and dripped its own 600 ms: done near 0.8 s, not 1.2 s. */
    CHECK(f[0].at >= 0.6 && f[0].at < 0.75);
    CHECK(f[1].at >= 0.75 && f[1].at < 1.05);
    struct reply r;
    http_request(s.port, "GET", "/slow", NULL, NULL, &r);
    CHECK_STR(r.body, "abcdefghij");
    stop_expect_clean(&s);
}

/* A scenario that would not run is a config error found before the start: exit 2, one line
 * naming the phase and key, for --check-config and a start alike. */
static void bad_scenarios_are_config_errors(const struct itest_env *env)
{
    static const struct {
        const char *json, *says;
    } cases[] = {
        {"{\"scenario\": [{\"at\": \"1s\", \"routes\": {\"/test\": {\"delay\": \"9h\"}}}]}",
         "scenario[0].routes./test.delay: up to 32400000 ms is over --max-delay 60000 ms"},
        {"{\"scenario\": [{\"at\": \"1s\", \"routes\": {\"/nope\": {}}}]}",
         "scenario[0].routes./nope: no such route"},
        {"{\"scenario\": {\"at\": 1}}", "scenario: must be an array of phases"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *file = write_file(env, "bad.json", cases[i].json);
        char out[1024], err[1024];
        const char *check[] = {"--check-config", file, NULL};
        const char *run[] = {"--config", file, "--port", "0", NULL};
        for (int k = 0; k < 2; k++) {
            CHECK_INT(
                run_to_exit(env->bin, k ? run : check, NULL, out, sizeof out, err, sizeof err), 2);
            if (!strstr(err, cases[i].says) || strchr(err, '\n') != err + strlen(err) - 1)
                CHECK_FAIL_("stderr '%.300s' is not one line with '%s'", err, cases[i].says);
        }
    }
}

/* A raw HTTP/1.1 GET /test on a kept-alive connection: its answer's status, and its plan. */
static long keepalive_get(int fd, double *dur_ms, unsigned long long *gen)
{
    static const char req[] = "GET /test HTTP/1.1\r\nHost: t\r\n\r\n";
    char buf[2048];
    int closed = 0;
    long status = 0;
    *gen = 0;
    if (send_all(fd, req, sizeof req - 1) != 0)
        return -1;
    read_until_close(fd, buf, sizeof buf, 300, &closed);
    const char *st = strstr(buf, "erver-Timing: ");
    if (sscanf(buf, "HTTP/1.1 %ld", &status) != 1 || closed || !st ||
        sscanf(st + 14, "delay;dur=%lf, gen;desc=%llu", dur_ms, gen) != 2)
        return -1;
    return status;
}

/* GET path on a new connection answers status and body, by a plan of dur_ms and generation gen
 * (its Server-Timing). */
static void answers_by_plan(unsigned port, const char *path, long status, const char *body,
                            double dur_ms, unsigned long long gen)
{
    static struct reply r;
    double dur = -1;
    unsigned long long g = 0;
    http_request(port, "GET", path, NULL, NULL, &r);
    CHECK_INT(r.status, status);
    CHECK_STR(r.body, body);
    CHECK_INT(answer_plan(&r, &dur, &g), 0);
    CHECK_INT(dur, dur_ms);
    CHECK_INT(g, gen);
}

/* A change through the control API reaches the answers of every thread model alike, on a new
 * connection and on one kept alive across the change: each model of each engine is held to the
 * same statuses, bodies and plans. */
static void control_changes_reach_every_model(const struct itest_env *env)
{
    const char *model = env->model;
    struct server s;
    const char *args[] = {"--delay", "0", "--control", "0", "--model", model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    CHECK(strstr(s.startup, model) != NULL);
    unsigned pc = control_port_of(&s);
    CHECK(pc != 0);
    struct reply r;
    double dur;
    unsigned long long gen;
    int fd = raw_connect(s.port);
    CHECK(fd >= 0);
    CHECK_INT(keepalive_get(fd, &dur, &gen), 200);
    CHECK_INT(gen, 1);
    /* A route never delayed names its generation too: no prebuilt answer while the routes can
     * change. */
    char timing[64];
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(reply_timing(&r, timing, sizeof timing), "gen;desc=1");
    CHECK_INT(
        api(pc, "PATCH", "/routes/test", "{\"delay\": \"50ms\", \"status\": 202}", NULL, NULL),
        200);
    /* The connection kept alive from before the change answers by the new plan. */
    double t0 = now_seconds();
    CHECK_INT(keepalive_get(fd, &dur, &gen), 202);
    CHECK(now_seconds() - t0 >= 0.05);
    CHECK_INT(dur, 50);
    CHECK_INT(gen, 2);
    close(fd);
    answers_by_plan(s.port, "/test", 202, "ok", 50, 2);
    CHECK_INT(api(pc, "POST", "/routes",
                  "{\"path\": \"/b\", \"delay\": \"10ms\", \"status\": 201, \"body\": \"B\"}", NULL,
                  NULL),
              201);
    answers_by_plan(s.port, "/b", 201, "B", 10, 3);
    CHECK_INT(api(pc, "DELETE", "/routes/b", NULL, NULL, NULL), 200);
    http_request(s.port, "GET", "/b", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    /* PUT puts the config's routes back: the built-in /test answers as at the start. */
    CHECK_INT(api(pc, "PUT", "/routes", "[]", NULL, NULL), 200);
    answers_by_plan(s.port, "/test", 200, "ok", 0, 5);
    stop_expect_clean(&s);
}

/* The reason phrase of a status line: "HTTP/1.1 418 I'm a Teapot\r\n..." -> "I'm a Teapot". */
static const char *status_reason(const struct reply *r, char *buf, size_t len)
{
    const char *p = strchr(r->headers, ' ');
    p = p ? strchr(p + 1, ' ') : NULL;
    const char *eol = p ? strstr(p, "\r\n") : NULL;
    if (!eol) {
        snprintf(buf, len, "(no status line)");
        return buf;
    }
    snprintf(buf, len, "%.*s", (int)(eol - p - 1), p + 1);
    return buf;
}

/* Every status is sent with the core's reason phrase (RFC 9110 and the IANA registry), the
 * control API's own included. libmicrohttpd writes the status line itself from its own table:
 * for 418 and an unregistered 599 slowsrv says "Non-Standard Status" (doc/engines.md). */
static void reason_phrases_are_the_registrys(const struct itest_env *env)
{
    static const struct {
        unsigned status;
        const char *reason, *mhd; /* mhd: libmicrohttpd's, where it differs */
    } want[] = {
        {206, "Partial Content", NULL},
        {409, "Conflict", NULL},
        {410, "Gone", NULL},
        {418, "I'm a Teapot", "Non-Standard Status"},
        {422, "Unprocessable Content", NULL},
        {425, "Too Early", NULL},
        {507, "Insufficient Storage", NULL},
        {511, "Network Authentication Required", NULL},
        {599, "Server Error", "Non-Standard Status"},
    };
    struct server s;
    static struct reply r;
    char got[128], target[64];
    const char *args[] = {"--delay", "0", "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    int mhd = strcmp(env->caps->program, "slowsrv") == 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(target, sizeof target, "/test?status=%u", want[i].status);
        http_request(s.port, "GET", target, NULL, NULL, &r);
        CHECK_INT(r.status, want[i].status);
        const char *w = mhd && want[i].mhd ? want[i].mhd : want[i].reason;
        if (strcmp(status_reason(&r, got, sizeof got), w) != 0)
            CHECK_FAIL_("%u: reason '%s', want '%s'", want[i].status, got, w);
        else
            check_passed++;
    }
    /* The control API's 409: a route that is there already. */
    const char *hdrs[] = {"Content-Type: application/json", NULL};
    http_request(control_port_of(&s), "POST", "/routes", "{\"path\": \"/test\"}", hdrs, &r);
    CHECK_INT(r.status, 409);
    CHECK_STR(status_reason(&r, got, sizeof got), "Conflict");
    stop_expect_clean(&s);
}

/* A JSON array of n routes "/<dir>/00000"... answering status 200 + i % 3 and "<word> i". The
 * caller frees it. */
static char *many_routes(size_t n, const char *dir, const char *word)
{
    size_t cap = 64 + n * 80, len = 0;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    text[len++] = '[';
    for (size_t i = 0; i < n; i++)
        len +=
            (size_t)snprintf(text + len, cap - len,
                             "%s{\"path\": \"/%s/%05zu\", \"status\": %zu, \"body\": \"%s %zu\"}",
                             i ? ", " : "", dir, i, 200 + i % 3, word, i);
    snprintf(text + len, cap - len, "]");
    return text;
}

struct big_body {
    char *buf;
    size_t len, cap;
};

static size_t on_big_body(char *p, size_t size, size_t n, void *arg)
{
    struct big_body *b = arg;
    if (b->len + size * n + 1 > b->cap) {
        /* Doubled: /metrics of 10 000 routes is 45 MB, in pieces of 16 KiB. */
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + size * n + 1)
            cap *= 2;
        char *grown = realloc(b->buf, cap);
        if (!grown)
            return 0;
        b->buf = grown;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, p, size * n);
    b->len += size * n;
    b->buf[b->len] = '\0';
    return size * n;
}

/* GET path whole, however long (the harness's reply keeps 64 KiB): the body, malloc'd, or NULL
 * if the transfer failed or the status was not 200. */
static char *get_whole(unsigned port, const char *path)
{
    char url[256];
    struct big_body b = {NULL, 0, 0};
    long status = 0;
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_big_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK || status != 200) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}

/* Each route's answer: `want` as body and 200 + i % 3 as status, for i in idx. */
static void expect_routes(unsigned port, const char *dir, const char *word, const size_t *idx,
                          size_t n)
{
    for (size_t k = 0; k < n; k++) {
        static struct reply r;
        char path[64], want[64];
        snprintf(path, sizeof path, "/%s/%05zu", dir, idx[k]);
        snprintf(want, sizeof want, "%s %zu", word, idx[k]);
        http_request(port, "GET", path, NULL, NULL, &r);
        CHECK_INT(r.status, 200 + idx[k] % 3);
        CHECK_STR(r.body, want);
    }
}

/* 10 000 routes, on both binaries: from a config file, the first, the middle and the last are
 * answered as configured and the next path is a 404; /stats and /metrics stay whole and valid;
 * PUT /routes with 10 000 others replaces them, and POST and PATCH work on that table; one route
 * past CONFIG_ROUTES_MAX (65 536) is refused, by PUT with 413 and by the config file with exit
 * 2, each with one line saying the count and the limit. */
static void ten_thousand_routes_are_served(const struct itest_env *env)
{
    enum { N = 10000, LIMIT = 65536 };
    static const size_t ends[] = {0, N / 2, N - 1};
    char *routes = many_routes(N, "r", "answer");
    char *over = many_routes(LIMIT + 1, "x", "x");
    size_t cap = strlen(over) + 64;
    char *text = malloc(cap);
    if (!routes || !over || !text) {
        CHECK_FAIL_("%s", "out of memory");
        return;
    }
    snprintf(text, cap, "{\"delay\": \"0\", \"routes\": %s}", routes);
    char cfg[512], over_cfg[512];
    snprintf(cfg, sizeof cfg, "%s", write_file(env, "routes.json", text));
    snprintf(text, cap, "{\"routes\": %s}", over);
    snprintf(over_cfg, sizeof over_cfg, "%s", write_file(env, "over.json", text));
    const char *binaries[2] = {env->bin, env->other_bin};
    for (int b = 0; b < 2 && binaries[b]; b++) {
        struct server s;
        const char *args[] = {"--config", cfg, "--control", "0", NULL};
        if (server_start(&s, binaries[b], args, NULL) != 0) {
            CHECK_FAIL_("%s did not start with %d routes", binaries[b], N);
            continue;
        }
        static struct reply r;
        expect_routes(s.port, "r", "answer", ends, 3);
        http_request(s.port, "GET", "/r/10000", NULL, NULL, &r);
        CHECK_INT(r.status, 404);
        http_request(s.port, "GET", "/healthz", NULL, NULL, &r);
        CHECK_STR(r.body, "ok");
        /* The reports name every route, whole: /stats parses, /metrics reaches its last line. */
        char *stats = get_whole(s.port, "/stats");
        cJSON *j = stats ? cJSON_Parse(stats) : NULL;
        CHECK(j != NULL);
        CHECK_INT(json_number(j, "routes./r/09999.requests"), 1);
        CHECK_INT(json_number(j, "routes./r/05000.status.202"), 1);
        CHECK_INT(json_number(j, "routes./r/00001.requests"), 0);
        CHECK_INT(
            cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "routes")),
            N + 4);
        cJSON_Delete(j);
        free(stats);
        char *metrics = get_whole(s.port, "/metrics");
        CHECK(metrics &&
              strstr(metrics, "slowsrv_requests_total{route=\"/r/09999\",status=\"200\"} 1\n"));
        CHECK(metrics && strstr(metrics, "slowsrv_cancels_total{route=\"/r/00001\"} 0\n"));
        CHECK(metrics && strstr(metrics, "\nslowsrv_scenario_running 0\n"));
        free(metrics);
        /* The control API: PUT 10 000 others, then POST one more and PATCH one of them. */
        unsigned cp = control_port_of(&s);
        char *put = many_routes(N, "p", "put");
        CHECK_INT(api(cp, "PUT", "/routes", put, NULL, NULL), 200);
        free(put);
        expect_routes(s.port, "p", "put", ends, 3);
        http_request(s.port, "GET", "/r/00000", NULL, NULL, &r);
        CHECK_INT(r.status, 404);
        CHECK_INT(
            api(cp, "POST", "/routes", "{\"path\": \"/p/10000\", \"body\": \"added\"}", NULL, NULL),
            201);
        http_request(s.port, "GET", "/p/10000", NULL, NULL, &r);
        CHECK_STR(r.body, "added");
        CHECK_INT(api(cp, "PATCH", "/routes/p/05000", "{\"status\": 203, \"body\": \"patched\"}",
                      NULL, NULL),
                  200);
        http_request(s.port, "GET", "/p/05000", NULL, NULL, &r);
        CHECK_INT(r.status, 203);
        CHECK_STR(r.body, "patched");
        expect_routes(s.port, "p", "put", (const size_t[]){N - 1}, 1);
        /* One past the limit: refused, and the table stays as it was. */
        cJSON *e = NULL;
        CHECK_INT(api(cp, "PUT", "/routes", over, NULL, &e), 413);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "error")),
                  "routes: 65537 routes, over the limit of 65536; send fewer");
        cJSON_Delete(e);
        expect_routes(s.port, "p", "put", ends, 1);
        stop_expect_clean(&s);
        /* The same count in a config file: exit 2, one line. */
        char out[4096], err[4096];
        const char *check[] = {"--check-config", over_cfg, NULL};
        CHECK_INT(run_to_exit(binaries[b], check, NULL, out, sizeof out, err, sizeof err), 2);
        char want[1024];
        snprintf(want, sizeof want,
                 "%s: routes: 65537 routes, over the limit of 65536; remove some or run a second "
                 "server\n",
                 over_cfg);
        CHECK(strstr(err, want) != NULL && strchr(err, '\n') == strrchr(err, '\n'));
    }
    free(text);
    free(over);
    free(routes);
}

/* Replaces the file at `path` whole, as an editor or a deployment does: a new file renamed over
 * it, so that no reader ever sees half of it. */
static void replace_file(const char *path, const char *text)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        CHECK_FAIL_("cannot write %s", tmp);
        return;
    }
    fputs(text, f);
    fclose(f);
    CHECK_INT(rename(tmp, path), 0);
}

/* The /stats value at `path` once it reaches `want` (or after `timeout` s). */
static double reloads(const struct server *s, const char *which, double want)
{
    char path[64];
    snprintf(path, sizeof path, "config.reloads.%s", which);
    return await_stat(h1(s), path, want, 3);
}

/* A string of /stats at a dotted path, into buf ("" if none). */
static const char *stats_string(const struct server *s, const char *path, char *buf, size_t len)
{
    struct reply r;
    http_request(s->port, "GET", "/stats", NULL, NULL, &r);
    cJSON *j = cJSON_Parse(r.body);
    char p[128];
    snprintf(p, sizeof p, "%s", path);
    const cJSON *o = j;
    for (char *tok = strtok(p, "."); tok && o; tok = strtok(NULL, "."))
        o = cJSON_GetObjectItemCaseSensitive(o, tok);
    snprintf(buf, len, "%s", cJSON_IsString(o) ? o->valuestring : "");
    cJSON_Delete(j);
    return buf;
}

struct in_flight {
    unsigned port;
    struct reply r;
    double took;
};

static void *request_in_flight(void *arg)
{
    struct in_flight *f = arg;
    double t0 = now_seconds();
    http_request(f->port, "GET", "/test", NULL, NULL, &f->r);
    f->took = now_seconds() - t0;
    return NULL;
}

/* SIGHUP reloads the config file: the next request gets its routes and delay, a request in
 * flight keeps its plan; a bad file changes nothing and is counted with its reason; options only
 * a start applies are reported as needing a restart, and the rest applies. */
static void reload_by_sighup(const struct itest_env *env)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s",
             write_file(env, "reload.json",
                        "{\"delay\": \"400ms\", \"routes\": [{\"path\": \"/api\", \"body\": "
                        "\"v1\"}]}"));
    struct server s;
    const char *args[] = {"--config", cfg, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    struct reply r;
    double dur;
    unsigned long long gen;
    struct in_flight f = {s.port, {0}, 0};
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, request_in_flight, &f), 0);
    usleep(100 * 1000); /* it waits its 400 ms */
    replace_file(cfg, "{\"delay\": \"50ms\", \"error-status\": 502, \"routes\": [{\"path\": "
                      "\"/api\", \"body\": \"v2\"}, {\"path\": \"/new\", \"status\": 201}]}");
    kill(s.pid, SIGHUP);
    CHECK_INT(reloads(&s, "ok", 1), 1);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 50);
    CHECK_INT(gen, 2);
    http_request(s.port, "GET", "/api", NULL, NULL, &r);
    CHECK_STR(r.body, "v2");
    http_request(s.port, "GET", "/new", NULL, NULL, &r);
    CHECK_INT(r.status, 201);
    pthread_join(th, NULL);
    CHECK_INT(f.r.status, 200);
    CHECK_STR(f.r.body, "ok");
    CHECK(f.took >= 0.4);
    char v[200];
    CHECK(reply_timing(&f.r, v, sizeof v) && strncmp(v, "delay;dur=400", 13) == 0);

    /* Bad files: each refused whole, counted, its reason in /stats; nothing changes. */
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"{\"delay\": ", "malformed JSON"},
        {"{\"delay\": \"1sec\"}", "delay: bad duration"},
        {"{\"routes\": [{\"path\": \"/a\", \"headers\": {\"Content-Length\": \"3\"}}]}",
         "routes[0].headers"},
        {"{\"scenario\": [{\"at\": \"1s\", \"routes\": {\"/nope\": {\"delay\": \"1s\"}}}]}",
         "scenario[0].routes./nope: no such route"},
    };
    char why[300];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        replace_file(cfg, bad[i].text);
        kill(s.pid, SIGHUP);
        CHECK_INT(reloads(&s, "error", (double)i + 1), (double)i + 1);
        stats_string(&s, "config.reloads.last_error", why, sizeof why);
        if (!strstr(why, bad[i].why))
            CHECK_FAIL_("bad file %zu: last_error '%s', want '%s' in it", i, why, bad[i].why);
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
        CHECK_INT(answer_plan(&r, &dur, &gen), 0);
        CHECK_INT(dur, 50);
        CHECK_INT(gen, 2);
    }
    http_request(s.port, "GET", "/metrics", NULL, NULL, &r);
    CHECK(strstr(r.body, "slowsrv_config_reloads_total{result=\"ok\"} 1\n") != NULL);
    CHECK(strstr(r.body, "slowsrv_config_reloads_total{result=\"error\"} 4\n") != NULL);

    /* A change of options a start applies: the rest is applied, those reported. */
    replace_file(cfg, "{\"delay\": \"70ms\", \"threads\": 3, \"max-connections\": 77}");
    kill(s.pid, SIGHUP);
    CHECK_INT(reloads(&s, "ok", 2), 2);
    CHECK_STR(stats_string(&s, "config.reloads.needs_restart", why, sizeof why),
              "threads, max-connections");
    CHECK_STR(stats_string(&s, "config.reloads.last_error", why, sizeof why), "");
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 70);
    http_request(s.port, "GET", "/api", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    /* SIGHUP with the file as it was applied: nothing to do, nothing counted. */
    kill(s.pid, SIGHUP);
    usleep(200 * 1000);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "config.reloads.ok"), 2);
    cJSON_Delete(j);
    char log[8192];
    CHECK_INT(server_stop(&s, 5000, log, sizeof log), 0);
    CHECK(strstr(log, "reloaded (SIGHUP): 2 routes: generation 1 -> 2") != NULL);
    CHECK(strstr(log, "config: reload refused, nothing changed: ") != NULL);
    CHECK(strstr(log, "threads, max-connections changed: needs a restart") != NULL);
    CHECK(strstr(log, "is unchanged: nothing to reload") != NULL);
}

/* What a reload must not do: end the scenario phase in force, apply again a file that is back
 * to the bytes applied (after a typo) and so undo the API's changes, take delays over the
 * running --max-delay, count an unreadable file again for every event beside it, or lose the
 * watch when the folder is removed and made again. */
static void reload_edges(const struct itest_env *env)
{
    char dir[300], cfg[400], other[400];
    snprintf(dir, sizeof dir, "%s/etc", env->tmpdir);
    mkdir(dir, 0755);
    snprintf(cfg, sizeof cfg, "%s/cfg.json", dir);
    snprintf(other, sizeof other, "%s/other.txt", dir);
    static const char v2[] =
        "{\"delay\": \"10ms\", \"max-delay\": \"1s\", \"routes\": [{\"path\": \"/a\", \"body\": "
        "\"B\"}], "
        "\"scenario\": [{\"at\": \"0s\", \"routes\": {\"/test\": {\"status\": 503}}}]}";
    replace_file(cfg, "{\"delay\": \"10ms\", \"max-delay\": \"1s\", \"routes\": [{\"path\": "
                      "\"/a\", \"body\": \"A\"}], "
                      "\"scenario\": [{\"at\": \"0s\", \"routes\": {\"/test\": {\"status\": "
                      "503}}}]}");
    struct server s;
    const char *args[] = {"--config", cfg, "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    struct reply r;
    CHECK_INT(await_stat(h1(&s), "scenario.phase", 0, 3), 0); /* it starts after the line */
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 503);
    /* The routes change, the scenario does not: its phase stays in force. */
    replace_file(cfg, v2);
    CHECK_INT(reloads(&s, "ok", 1), 1);
    http_request(s.port, "GET", "/a", NULL, NULL, &r);
    CHECK_STR(r.body, "B");
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 503);
    /* A typo, then the file as it was applied: the API's change stays. */
    CHECK_INT(api(cp, "PATCH", "/routes/a", "{\"status\": 418}", NULL, NULL), 200);
    replace_file(cfg, "{\"delay\": ");
    CHECK_INT(reloads(&s, "error", 1), 1);
    replace_file(cfg, v2);
    usleep(500 * 1000);
    http_request(s.port, "GET", "/a", NULL, NULL, &r);
    CHECK_INT(r.status, 418);
    /* Over the running --max-delay (the file's own is only reported as needing a restart). */
    replace_file(cfg, "{\"max-delay\": \"10s\", \"routes\": [{\"path\": \"/a\", \"delay\": "
                      "\"3s\"}]}");
    CHECK_INT(reloads(&s, "error", 2), 2);
    char why[300];
    stats_string(&s, "config.reloads.last_error", why, sizeof why);
    if (!strstr(why, "routes[0].delay: up to 3000 ms is over --max-delay 1000 ms"))
        CHECK_FAIL_("last_error '%s'", why);
    /* Gone: counted once, not again for each file written beside it. */
    unlink(cfg);
    CHECK_INT(reloads(&s, "error", 3), 3);
    for (int i = 0; i < 3; i++) {
        replace_file(other, "x");
        usleep(150 * 1000);
    }
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "config.reloads.error"), 3);
    cJSON_Delete(j);
    /* The folder removed and made again: watched again, its file applied. */
    unlink(other);
    CHECK_INT(rmdir(dir), 0);
    usleep(300 * 1000);
    mkdir(dir, 0755);
    replace_file(cfg, "{\"delay\": \"20ms\"}");
    CHECK_INT(reloads(&s, "ok", 2), 2);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    double dur;
    unsigned long long gen;
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 20);
    char log[8192];
    CHECK_INT(server_stop(&s, 5000, log, sizeof log), 0);
    CHECK(strstr(log, "scenario phases 0 to 0 applied again") != NULL);
    CHECK(strstr(log, "is gone; watching for it again") != NULL);
}

/* The RFC 3339 form of Unix time *t_io, to the millisecond, in UTC; *t_io becomes that. */
static void rfc3339(double *t_io, char *buf, size_t len)
{
    long long ms = (long long)floor(*t_io * 1000); /* what the text says */
    *t_io = (double)ms / 1000;
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", base, (int)(ms % 1000));
}

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How late a phase may begin after its instant here: a thread's wake-up on a 2-core host that
 * runs the suite two tests at a time (about a millisecond when idle). */
#define LATE 0.1

/* The began_at of scenario phase i in /stats, or -1 while it has not begun. */
static double phase_began(const struct server *s, int i)
{
    cJSON *j = settled_stats(h1(s));
    const cJSON *phases = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "scenario"), "phases");
    double b = json_number(cJSON_GetArrayItem(phases, i), "began_at");
    cJSON_Delete(j);
    return b;
}

/* A mounted ConfigMap as the kubelet updates it: the files are symlinks through ..data to a
 * timestamped directory, and an update swaps ..data in one rename. slowsrv sees the swap with no
 * signal, serves the new delay on a connection it already holds, and starts the new file's
 * scenario at its wall-clock instant. */
static void reload_follows_a_configmap_swap(const struct itest_env *env)
{
    char dir[300], path[400], cfg[400], link[400], tmp[400];
    snprintf(dir, sizeof dir, "%s/cm", env->tmpdir);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/..v1", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/..v1/slowsrv.json", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"delay\": \"300ms\"}", f);
        fclose(f);
    }
    snprintf(link, sizeof link, "%s/..data", dir);
    CHECK_INT(symlink("..v1", link), 0);
    snprintf(cfg, sizeof cfg, "%s/slowsrv.json", dir);
    CHECK_INT(symlink("..data/slowsrv.json", cfg), 0);
    struct server s;
    const char *args[] = {"--config", cfg, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    int fd = raw_connect(s.port);
    static const char get[] = "GET /test HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    char buf[2048];
    CHECK_INT(send_all(fd, get, sizeof get - 1), 0);
    read_until_text(fd, buf, sizeof buf, "\r\n\r\nok", 3000);
    CHECK(strstr(buf, "delay;dur=300") != NULL);

    /* The update: a new directory, then ..data swapped to it, then the old one removed. */
    double at = unix_now() + 1.5;
    char when[64], text[600];
    rfc3339(&at, when, sizeof when);
    snprintf(path, sizeof path, "%s/..v2", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/..v2/slowsrv.json", dir);
    snprintf(text, sizeof text,
             "{\"delay\": \"40ms\", \"scenario-start\": \"at:%s\", \"scenario\": ["
             "{\"at\": \"0s\", \"routes\": {\"/test\": {\"delay\": \"80ms\"}}},"
             "{\"at\": \"300ms\", \"routes\": {\"/test\": {\"delay\": \"90ms\"}}}]}",
             when);
    f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    snprintf(tmp, sizeof tmp, "%s/..data_tmp", dir);
    CHECK_INT(symlink("..v2", tmp), 0);
    double t0 = now_seconds();
    CHECK_INT(rename(tmp, link), 0);
    snprintf(path, sizeof path, "%s/..v1/slowsrv.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/..v1", dir);
    rmdir(path);
    CHECK_INT(reloads(&s, "ok", 1), 1);
    double took = now_seconds() - t0;
    if (took > 2)
        CHECK_FAIL_("the swap was applied after %.2f s, want within 2 s", took);
    /* The same connection, kept: the new delay. */
    CHECK_INT(send_all(fd, get, sizeof get - 1), 0);
    read_until_text(fd, buf, sizeof buf, "\r\n\r\nok", 3000);
    CHECK(strstr(buf, "delay;dur=40") != NULL);
    close(fd);
    /* Its scenario starts at its instant: not before, then within LATE of it. */
    CHECK(phase_began(&s, 0) < 0);
    while (unix_now() < at + 0.45)
        usleep(10 * 1000);
    double b0 = phase_began(&s, 0), b1 = phase_began(&s, 1);
    if (b0 < at || b0 > at + LATE || b1 < at + 0.3 || b1 > at + 0.3 + LATE)
        CHECK_FAIL_("phases began %.3f and %.3f s after the instant, want 0 and 0.3 (+0.1)",
                    b0 - at, b1 - at);
    struct reply r;
    double dur;
    unsigned long long gen;
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 90);
    char log[8192];
    CHECK_INT(server_stop(&s, 5000, log, sizeof log), 0);
    CHECK(strstr(log, "reloaded (the file changed): 0 routes: generation 1 -> 2") != NULL);
}

/* "scenario-start": "at:TIME" and POST /scenario/start {"at": TIME} start the phases at a
 * wall-clock instant (what replicas share); bad instants are refused in one line. */
static void scenario_starts_at_an_instant(const struct itest_env *env)
{
    double at = unix_now() + 1.0;
    char when[64], text[600];
    rfc3339(&at, when, sizeof when);
    snprintf(text, sizeof text,
             "{\"delay\": \"10ms\", \"scenario-start\": \"at:%s\", \"scenario\": ["
             "{\"at\": \"0s\", \"routes\": {\"/test\": {\"delay\": \"60ms\"}}},"
             "{\"at\": \"200ms\", \"routes\": {\"/test\": {\"delay\": \"70ms\"}}}]}",
             when);
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s", write_file(env, "at.json", text));
    struct server s;
    const char *args[] = {"--config", cfg, "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    struct reply r;
    double dur;
    unsigned long long gen;
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 10);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "scenario.phase"), -1);
    CHECK(json_number(j, "scenario.elapsed_s") < 0 || unix_now() >= at);
    cJSON_Delete(j);
    while (unix_now() < at + 0.3)
        usleep(10 * 1000);
    double b0 = phase_began(&s, 0), b1 = phase_began(&s, 1);
    if (b0 < at || b0 > at + LATE || b1 < at + 0.2 || b1 > at + 0.2 + LATE)
        CHECK_FAIL_("config: phases began %.3f and %.3f s after the instant", b0 - at, b1 - at);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(answer_plan(&r, &dur, &gen), 0);
    CHECK_INT(dur, 70);

    /* Through the API, for a fleet started at different moments. */
    at = unix_now() + 0.5;
    rfc3339(&at, when, sizeof when);
    char body[128];
    snprintf(body, sizeof body, "{\"at\": \"%s\"}", when);
    CHECK_INT(api(cp, "POST", "/scenario/start", body, NULL, NULL), 200);
    CHECK(phase_began(&s, 0) < 0);
    while (unix_now() < at + 0.3)
        usleep(10 * 1000);
    b0 = phase_began(&s, 0);
    if (b0 < at || b0 > at + LATE)
        CHECK_FAIL_("API: phase 0 began %.3f s after the instant", b0 - at);
    cJSON *e = NULL;
    CHECK_INT(api(cp, "POST", "/scenario/start", "{\"at\": \"tomorrow\"}", NULL, &e), 400);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "error")),
              "at: must be an RFC 3339 instant such as \"2026-12-04T10:00:00Z\"");
    cJSON_Delete(e);
    CHECK_INT(api(cp, "POST", "/scenario/start", "{\"when\": 1}", NULL, NULL), 400);
    stop_expect_clean(&s);

    /* A bad instant in the config: exit 2, one line. */
    const char *bad = write_file(env, "bad-at.json",
                                 "{\"scenario-start\": \"at:2026-02-30T10:00:00Z\", "
                                 "\"scenario\": [{\"at\": \"0s\"}]}");
    char out[2048], err[2048];
    const char *check[] = {"--check-config", bad, NULL};
    CHECK_INT(run_to_exit(env->bin, check, NULL, out, sizeof out, err, sizeof err), 2);
    CHECK(strstr(err, "scenario-start: '2026-02-30T10:00:00Z' is not an RFC 3339 instant") != NULL);
}

static const struct itest_case cases[] = {
    {"reason_phrases_are_the_registrys", reason_phrases_are_the_registrys, ITEST_PLAIN, 0},
    {"bad_scenarios_are_config_errors", bad_scenarios_are_config_errors, ITEST_PLAIN, 0},
    {"drips_and_queued_requests_keep_their_plan", drips_and_queued_requests_keep_their_plan,
     ITEST_PLAIN, 0},
    {"control_api_answers_alike", control_api_answers_alike, ITEST_BOTH, 0},
    {"control_plane_is_locked_down", control_plane_is_locked_down, ITEST_PLAIN, 0},
    {"control_token_is_required", control_token_is_required, ITEST_PLAIN, 0},
    {"control_token_refuses_before_body", control_token_refuses_before_body, ITEST_PLAIN, 0},
    {"control_port_outlasts_trickling_clients", control_port_outlasts_trickling_clients,
     ITEST_PLAIN, 0},
    {"control_changes_reach_every_model", control_changes_reach_every_model, ITEST_PER_MODEL, 0},
    {"changes_under_load_keep_each_plan", changes_under_load_keep_each_plan, ITEST_PLAIN, 0},
    {"scenario_changes_answers_on_time", scenario_changes_answers_on_time, ITEST_PLAIN, 0},
    {"reset_starts_a_new_run", reset_starts_a_new_run, ITEST_PLAIN, 0},
    {"seeded_scenarios_repeat", seeded_scenarios_repeat, ITEST_PLAIN, 0},
    {"ten_thousand_routes_are_served", ten_thousand_routes_are_served, ITEST_BOTH, 0},
    {"reload_by_sighup", reload_by_sighup, ITEST_PLAIN, 0},
    {"reload_follows_a_configmap_swap", reload_follows_a_configmap_swap, ITEST_PLAIN, 0},
    {"reload_edges", reload_edges, ITEST_PLAIN, 0},
    {"scenario_starts_at_an_instant", scenario_starts_at_an_instant, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_control = {"control", cases, sizeof cases / sizeof cases[0]};
