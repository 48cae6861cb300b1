/*
 * Event streams (?stream=, X-Slowsrv-Stream, a route's "stream"): SSE and NDJSON bodies with no
 * Content-Length, their count, format and gaps, Last-Event-ID, the seeded gaps the same on both
 * binaries, a client that leaves mid-stream, and the JSON 400 of every bad value
 * (doc/options.md §Event streams).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

/* One event as the client read it. */
struct event {
    unsigned long long id, intended_us, sent_us;
    size_t data_len;
    char name[40];
    long retry; /* -1: none */
};

#define EVENTS_MAX 64

/* The SSE events of body, in order: returns their number, or -1 at a block that is not one of
 * slowsrv's events (id, event, optional retry, the times' comment, data, blank line). */
static int parse_sse(const char *body, struct event *ev, int max)
{
    int n = 0;
    const char *p = body;
    while (*p && n < max) {
        struct event e = {.retry = -1};
        int used = 0;
        if (sscanf(p, "id: %llu\nevent: %39[^\n]\n%n", &e.id, e.name, &used) != 2)
            return -1;
        p += used;
        if (strncmp(p, "retry: ", 7) == 0) {
            e.retry = strtol(p + 7, NULL, 10);
            p = strchr(p, '\n') + 1;
        }
        if (sscanf(p, ": intended_us=%llu sent_us=%llu\ndata: %n", &e.intended_us, &e.sent_us,
                   &used) != 2)
            return -1;
        p += used;
        const char *end = strstr(p, "\n\n");
        if (!end)
            return -1;
        e.data_len = (size_t)(end - p);
        p = end + 2;
        ev[n++] = e;
    }
    return *p ? -1 : n;
}

/* The NDJSON events of body: returns their number, or -1 at a line that is not one. */
static int parse_ndjson(const char *body, struct event *ev, int max)
{
    int n = 0;
    const char *p = body;
    while (*p && n < max) {
        const char *nl = strchr(p, '\n');
        if (!nl)
            return -1;
        char line[4096];
        size_t len = (size_t)(nl - p);
        if (len >= sizeof line)
            return -1;
        memcpy(line, p, len);
        line[len] = '\0';
        cJSON *j = cJSON_Parse(line);
        cJSON *d = j ? cJSON_GetObjectItem(j, "data") : NULL;
        if (!cJSON_IsString(d) || cJSON_GetArraySize(j) != 4) {
            cJSON_Delete(j);
            return -1;
        }
        ev[n] = (struct event){.id = (unsigned long long)json_number(j, "id"),
                               .intended_us = (unsigned long long)json_number(j, "intended_us"),
                               .sent_us = (unsigned long long)json_number(j, "sent_us"),
                               .data_len = strlen(d->valuestring),
                               .retry = -1};
        n++;
        cJSON_Delete(j);
        p = nl + 1;
    }
    return *p ? -1 : n;
}

/* Checks that the events have ids from `first` on and intended times `gap_us` apart from 0, and
 * that each left at or after its time. */
static void check_schedule(const char *what, const struct event *ev, int n,
                           unsigned long long first, unsigned long long gap_us)
{
    for (int i = 0; i < n; i++) {
        if (ev[i].id != first + (unsigned)i || ev[i].intended_us != gap_us * (unsigned)i ||
            ev[i].sent_us < ev[i].intended_us)
            CHECK_FAIL_("%s: event %d is id %llu intended %llu sent %llu, want id %llu intended "
                        "%llu",
                        what, i, ev[i].id, ev[i].intended_us, ev[i].sent_us, first + (unsigned)i,
                        gap_us * (unsigned)i);
        else
            check_passed++;
    }
}

/* Checks r took [lo, lo + LONE_SLACK] seconds. */
static void took(const char *what, const struct reply *r, double lo)
{
    if (r->seconds < lo || r->seconds > lo + LONE_SLACK)
        CHECK_FAIL_("%s: took %.3f s, want %.3f s", what, r->seconds, lo);
    else
        check_passed++;
}

/* SSE and NDJSON: the count, the fields, the gaps (from the answer's start, after the delay),
 * no Content-Length but chunked coding, the header and a config route's "stream", an open
 * stream ended by --max-delay, Last-Event-ID, and the counters. */
static void sse_and_ndjson_count_format_and_gaps(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    struct event ev[EVENTS_MAX];
    char buf[128];
    const char *cfg = write_file(env, "streams.json",
                                 "{\"routes\": [{\"path\": \"/events\", \"stream\": "
                                 "\"sse,count=2,gap=50ms,event=update\"}]}");
    const char *args[] = {"--delay", "0", "--max-delay", "300ms", "--config", cfg, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }

    http_request(s.port, "GET", "/echo?stream=sse,count=5,size=8,retry=2500,event=tok,gap=100ms",
                 NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(reply_header(&r, "Content-Type", buf, sizeof buf), "text/event-stream");
    CHECK_STR(reply_header(&r, "Cache-Control", buf, sizeof buf), "no-cache");
    CHECK_STR(reply_header(&r, "Transfer-Encoding", buf, sizeof buf), "chunked");
    CHECK(reply_header(&r, "Content-Length", buf, sizeof buf) == NULL);
    CHECK_INT(parse_sse(r.body, ev, EVENTS_MAX), 5);
    check_schedule("sse", ev, 5, 1, 100000);
    for (int i = 0; i < 5; i++) {
        CHECK_STR(ev[i].name, "tok");
        CHECK_INT(ev[i].data_len, 8);
        CHECK_INT(ev[i].retry, i == 0 ? 2500 : -1);
    }
    CHECK(strstr(r.body, "data: abcdefgh\n\n") != NULL);
    took("sse count=5 gap=100ms", &r, 0.4);

    static const char *const hdr[] = {"X-Slowsrv-Stream: ndjson,count=3,size=4,gap=50ms", NULL};
    http_request(s.port, "GET", "/echo?delay=200", NULL, hdr, &r);
    CHECK_STR(reply_header(&r, "Content-Type", buf, sizeof buf), "application/x-ndjson");
    CHECK_INT(parse_ndjson(r.body, ev, EVENTS_MAX), 3);
    check_schedule("ndjson", ev, 3, 1, 50000);
    CHECK_INT(ev[0].data_len, 4);
    if (r.first_body_at < 0.2)
        CHECK_FAIL_("the first event came %.3f s after the request, before its delay",
                    r.first_body_at);
    else
        check_passed++;
    took("delay=200 then 3 events 50 ms apart", &r, 0.3);

    /* No count: events until the next would come after --max-delay (300 ms): 0, 100, 200, 300. */
    http_request(s.port, "GET", "/echo?stream=ndjson,gap=100ms", NULL, NULL, &r);
    CHECK_INT(parse_ndjson(r.body, ev, EVENTS_MAX), 4);
    check_schedule("open stream", ev, 4, 1, 100000);
    took("open stream to --max-delay 300ms", &r, 0.3);

    /* Last-Event-ID goes on after the client's last event; past the end: 204, no stream. */
    static const char *const last3[] = {"Last-Event-ID: 3", NULL};
    http_request(s.port, "GET", "/echo?stream=sse,count=5,gap=10ms", NULL, last3, &r);
    CHECK_INT(parse_sse(r.body, ev, EVENTS_MAX), 2);
    check_schedule("resumed", ev, 2, 4, 10000);
    static const char *const last5[] = {"Last-Event-ID: 5", NULL};
    http_request(s.port, "GET", "/echo?stream=sse,count=5,gap=10ms", NULL, last5, &r);
    CHECK_INT(r.status, 204);
    CHECK_INT(r.body_len, 0);

    http_request(s.port, "GET", "/events", NULL, NULL, &r);
    CHECK_INT(parse_sse(r.body, ev, EVENTS_MAX), 2);
    check_schedule("route", ev, 2, 1, 50000);
    CHECK_STR(ev[1].name, "update");

    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./echo.streams.begun"), 4);
    CHECK_INT(json_number(j, "routes./echo.streams.events"), 5 + 3 + 4 + 2);
    CHECK_INT(json_number(j, "routes./echo.streams.open"), 0);
    CHECK_INT(json_number(j, "routes./echo.streams.cut"), 0);
    CHECK_INT(json_number(j, "routes./echo.stream_event_late_ms.count"), 14);
    CHECK_INT(json_number(j, "routes./events.streams.events"), 2);
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    http_request(s.port, "GET", "/metrics", NULL, NULL, &r);
    CHECK(strstr(r.body, "slowsrv_stream_events_total{route=\"/echo\"} 14\n") != NULL);
    CHECK(strstr(r.body, "slowsrv_stream_event_late_seconds_count{route=\"/echo\"} 14\n") != NULL);
    CHECK(r.body_len < sizeof r.body);
    char path[512], cmd[600];
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

/* Every bad value of a stream gets the JSON 400 naming it, and the server goes on. */
static void stream_bad_values_get_json_400(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "0", "--max-delay", "1s");
    static const struct {
        const char *target, *header, *body;
    } bad[] = {
        {"/echo?stream=xml", NULL,
         "{\"error\": \"stream: bad stream format 'xml' (want "
         "sse|ndjson[,count=N][,size=B][,retry=MS][,event=NAME][,gap=D])\", \"status\": 400}"},
        {"/echo?stream=sse,count=-1", NULL,
         "{\"error\": \"stream: count '-1' is not a number of events from 0 to 1000000\", "
         "\"status\": 400}"},
        {"/echo?stream=sse,size=70000", NULL,
         "{\"error\": \"stream: size '70000' is not BYTES or LO..HI from 0 to 65536\", "
         "\"status\": 400}"},
        {"/echo?stream=sse,size=9..3", NULL,
         "{\"error\": \"stream: size '9..3' is not BYTES or LO..HI from 0 to 65536\", "
         "\"status\": 400}"},
        {"/echo?stream=sse,gap=fast", NULL,
         "{\"error\": \"stream: gap: bad duration 'fast' (want a number with us, ms, s, m or h, "
         "e.g. 250ms or 1.5s)\", \"status\": 400}"},
        {"/echo?stream=sse,gap=2s", NULL,
         "{\"error\": \"stream: gap 2000 ms is over --max-delay 1000 ms\", \"status\": 400}"},
        {"/echo?stream=sse,colour=red", NULL,
         "{\"error\": \"stream: unknown stream key 'colour=red' (want "
         "sse|ndjson[,count=N][,size=B][,retry=MS][,event=NAME][,gap=D])\", \"status\": 400}"},
        {"/echo?stream=sse,count=1,count=2", NULL,
         "{\"error\": \"stream: stream key 'count' given twice\", \"status\": 400}"},
        {"/echo?stream=sse,event=a%20b", NULL,
         "{\"error\": \"stream: event name is 1 to 32 of A-Z a-z 0-9 _ . -, not 'a b'\", "
         "\"status\": 400}"},
        {"/echo?stream=sse&rate=10", NULL,
         "{\"error\": \"stream: cannot be shaped by drip, rate, stall, reset-after, slow-close or "
         "truncate too; keep the stream\", \"status\": 400}"},
        {"/echo?stream=sse&status=204", NULL,
         "{\"error\": \"stream: only on routes with a fixed answer (not /write), and a status "
         "with a body\", \"status\": 400}"},
        {"/echo?stream=sse,count=3", "Last-Event-ID: x7",
         "{\"error\": \"Last-Event-ID: 'x7' is not an event number from this stream\", "
         "\"status\": 400}"},
        {"/echo", "X-Slowsrv-Stream: json",
         "{\"error\": \"stream: bad stream format 'json' (want "
         "sse|ndjson[,count=N][,size=B][,retry=MS][,event=NAME][,gap=D])\", \"status\": 400}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *hdr[] = {bad[i].header, NULL};
        http_request(s.port, "GET", bad[i].target, NULL, bad[i].header ? hdr : NULL, &r);
        CHECK_INT(r.status, 400);
        CHECK_STR(r.body, bad[i].body);
    }
    http_request(s.port, "POST", "/write?stream=sse", "", NULL, &r);
    CHECK_INT(r.status, 400);
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    const char *cfg = write_file(env, "bad.json",
                                 "{\"routes\": [{\"path\": \"/e\", \"stream\": \"sse,gap=p\"}]}");
    char out[1024], err[1024];
    const char *args[] = {"--check-config", cfg, NULL};
    CHECK_INT(run_to_exit(env->bin, args, NULL, out, sizeof out, err, sizeof err), 2);
    CHECK(strstr(err, "stream: gap: ") != NULL);
    cfg = write_file(env, "bad204.json",
                     "{\"routes\": [{\"path\": \"/e\", \"status\": 204, \"stream\": \"sse\"}]}");
    const char *args204[] = {"--check-config", cfg, NULL};
    CHECK_INT(run_to_exit(env->bin, args204, NULL, out, sizeof out, err, sizeof err), 2);
    CHECK(strstr(err, "stream: needs a status with a body, not 204") != NULL);
    stop_expect_clean(&s);
}

/* A client that leaves an open stream is counted as a cut stream, and nothing of it stays in
 * flight or open. */
static void client_leaving_mid_stream_is_counted(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0");
    int fd = raw_connect(s.port);
    static const char req[] = "GET /echo?stream=ndjson,gap=50ms HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK_INT(send_all(fd, req, sizeof req - 1), 0);
    char buf[4096];
    size_t got = 0;
    double t0 = now_seconds();
    /* Until three events are in: the head, then three lines. */
    while (now_seconds() - t0 < 3) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
        if (strstr(buf, "\"id\":3,"))
            break;
    }
    CHECK(strstr(buf, "\"id\":3,") != NULL);
    CHECK_INT(await_stat(h1(&s), "routes./echo.streams.open", 1, 3), 1);
    close(fd);
    CHECK_INT(await_stat(h1(&s), "routes./echo.streams.cut", 1, 3), 1);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./echo.streams.open"), 0);
    CHECK_INT(json_number(j, "in_flight"), 0);
    CHECK(json_number(j, "routes./echo.streams.events") >= 3);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* The gaps and sizes of one seeded stream request on bin: its events' (intended time, data
 * size) pairs into ev; returns their number. */
static int seeded_events(const char *bin, const char *seed, struct event *ev)
{
    struct server s;
    struct reply r;
    const char *args[] = {"--delay", "0", "--seed", seed, NULL};
    if (server_start(&s, bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return -1;
    }
    /* The second request of the route: request i of a route has its own draws. */
    http_request(s.port, "GET", "/echo?stream=ndjson,count=8,size=1..40,gap=1ms..30ms", NULL, NULL,
                 &r);
    http_request(s.port, "GET", "/echo?stream=ndjson,count=8,size=1..40,gap=1ms..30ms", NULL, NULL,
                 &r);
    int n = parse_ndjson(r.body, ev, EVENTS_MAX);
    stop_expect_clean(&s);
    return n;
}

/* --seed: event k of request i of a route has the same gap and size on every run and on both
 * binaries, and another seed gives others. */
static void seeded_stream_gaps_equal_on_both_binaries(const struct itest_env *env)
{
    struct event a[EVENTS_MAX], b[EVENTS_MAX], c[EVENTS_MAX], d[EVENTS_MAX];
    if (!env->other_bin) {
        CHECK_FAIL_("%s", "needs the second binary as third argument");
        return;
    }
    CHECK_INT(seeded_events(env->bin, "7", a), 8);
    CHECK_INT(seeded_events(env->bin, "7", b), 8);
    CHECK_INT(seeded_events(env->other_bin, "7", c), 8);
    CHECK_INT(seeded_events(env->bin, "8", d), 8);
    int differ = 0;
    for (int i = 0; i < 8; i++) {
        CHECK_INT(a[i].intended_us, b[i].intended_us);
        CHECK_INT(a[i].intended_us, c[i].intended_us);
        CHECK_INT(a[i].data_len, b[i].data_len);
        CHECK_INT(a[i].data_len, c[i].data_len);
        differ += a[i].intended_us != d[i].intended_us;
    }
    CHECK(differ >= 6);
    /* The gaps are drawn: not all the same. */
    CHECK(a[2].intended_us - a[1].intended_us != a[3].intended_us - a[2].intended_us ||
          a[3].intended_us - a[2].intended_us != a[4].intended_us - a[3].intended_us);
}

/* Over HTTP/2 a stream is DATA frames on its stream, as over HTTP/1.1 chunks. */
static void h2_stream_is_data_frames(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    struct event ev[EVENTS_MAX];
    long version = 0;
    START(env, &s, "--delay", "0");
    struct target t = {s.port, 0, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 0};
    http_request_to(&t, "GET", "/echo?stream=sse,count=4,gap=50ms", NULL, NULL, &r, &version);
    CHECK_INT(version, CURL_HTTP_VERSION_2_0);
    CHECK_INT(r.status, 200);
    CHECK_INT(parse_sse(r.body, ev, EVENTS_MAX), 4);
    check_schedule("h2", ev, 4, 1, 50000);
    took("h2 sse count=4 gap=50ms", &r, 0.15);
    CHECK(r.body_writes >= 2); /* not one piece at the end */
    stop_expect_clean(&s);
}

static void check_stream_line(const char *log, const char *path, int events, const char *end,
                              size_t bytes);

/* A stream on every thread model of both binaries, and its access-log line. */
static void stream_on_every_model(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    struct event ev[EVENTS_MAX];
    char log[300];
    snprintf(log, sizeof log, "%s/access.log", env->tmpdir);
    const char *args[] = {"--delay", "0", "--model", env->model, "--access-log", log, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/echo?stream=ndjson,count=4,gap=50ms", NULL, NULL, &r);
    CHECK_INT(parse_ndjson(r.body, ev, EVENTS_MAX), 4);
    check_schedule(env->model, ev, 4, 1, 50000);
    took(env->model, &r, 0.15);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./echo.streams.events"), 4);
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
    check_stream_line(log, "/echo?stream=ndjson,count=4,gap=50ms", 4, "complete", r.body_len);
}

/* 200 streams side by side keep their schedule: each of 5 events 100 ms apart ends on time, and
 * every event is counted with its lateness. */
static void many_streams_keep_their_schedule(const struct itest_env *env)
{
    enum { N = 200 };
    struct server s;
    static long status[N];
    static double secs[N];
    static int ok[N];
    START(env, &s, "--delay", "0");
    double wall = http_concurrent(s.port, "/echo?stream=sse,count=5,size=32,gap=100ms", N, status,
                                  secs, ok, "");
    size_t good = 0;
    double lo = 1e9, hi = 0;
    for (size_t i = 0; i < N; i++) {
        good += status[i] == 200 && secs[i] >= 0.4 && secs[i] <= 0.4 + BATCH_SLACK;
        lo = secs[i] < lo ? secs[i] : lo;
        hi = secs[i] > hi ? secs[i] : hi;
    }
    if (good != N)
        CHECK_FAIL_("%zu of %d streams ended in [0.4, %.2f] s (fastest %.3f s, slowest %.3f s, "
                    "all in %.3f s)",
                    good, N, 0.4 + BATCH_SLACK, lo, hi, wall);
    else
        check_passed++;
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./echo.streams.begun"), N);
    CHECK_INT(json_number(j, "routes./echo.streams.events"), 5 * N);
    CHECK_INT(json_number(j, "routes./echo.streams.cut"), 0);
    CHECK_INT(json_number(j, "routes./echo.stream_event_late_ms.count"), 5 * N);
    double p99 = json_number(j, "routes./echo.stream_event_late_ms.p99");
    if (p99 < 0 || p99 > 50)
        CHECK_FAIL_("event lateness p99 %.3f ms over 200 streams, want under 50 ms", p99);
    else
        check_passed++;
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* A stream read in a thread of its own (path NULL: an open NDJSON stream), while the server
 * stops or its route changes. */
struct open_stream {
    struct target t;
    struct reply r;
    const char *path;
};

static void *run_open_stream(void *arg)
{
    struct open_stream *o = arg;
    http_request_to(&o->t, "GET", o->path ? o->path : "/echo?stream=ndjson,gap=100ms,size=1", NULL,
                    NULL, &o->r, NULL);
    return NULL;
}

/* SIGTERM: a stream under way sends on through --grace, then is closed without the end of its
 * body, and the server exits 0. */
static void stream_is_cut_at_the_end_of_grace(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0", "--grace", "500ms");
    struct open_stream o = {.t = *h1(&s)};
    pthread_t th;
    pthread_create(&th, NULL, run_open_stream, &o);
    CHECK_INT(await_stat(h1(&s), "routes./echo.streams.open", 1, 3), 1);
    double t0 = now_seconds();
    CHECK_INT(server_stop(&s, 5000, NULL, 0), 0);
    double stop = now_seconds() - t0;
    pthread_join(th, NULL);
#ifdef SLOWSRV_SANITIZED
    const double slack = 0.5; /* the exit's leak check */
#else
    const double slack = LONE_SLACK;
#endif
    if (stop < 0.5 || stop > 0.5 + slack)
        CHECK_FAIL_("the stop took %.3f s, want --grace 0.5 s", stop);
    else
        check_passed++;
    CHECK_INT(o.r.status, 200);
    CHECK(o.r.curl_code != 0); /* no end of the body */
    struct event ev[EVENTS_MAX];
    /* Whole events up to the stop (at 0, 100, ... ms, and 500 ms more of grace). */
    char *last = strrchr(o.r.body, '\n');
    if (last)
        last[1] = '\0';
    int n = parse_ndjson(o.r.body, ev, EVENTS_MAX);
    CHECK(n >= 5);
}

/* The control API changes a route's stream; a stream that has begun keeps its count, gaps and
 * event name, the next one gets the new ones; a bad stream is the API's 400 naming the key, and
 * "none" turns the stream off. */
static void begun_stream_keeps_its_plan_across_a_change(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    struct event ev[EVENTS_MAX];
    char buf[128];
    const char *cfg = write_file(env, "events.json",
                                 "{\"routes\": [{\"path\": \"/events\", \"stream\": "
                                 "\"sse,count=4,gap=100ms\"}]}");
    const char *args[] = {"--delay", "0", "--config", cfg, "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    static const char *const json[] = {"Content-Type: application/json", NULL};
    struct open_stream o = {.t = *h1(&s), .path = "/events"};
    pthread_t th;
    pthread_create(&th, NULL, run_open_stream, &o);
    CHECK_INT(await_stat(h1(&s), "routes./events.streams.open", 1, 3), 1);
    http_request(cp, "PATCH", "/routes/events", "{\"stream\": \"sse,count=2,gap=20ms,event=new\"}",
                 json, &r);
    CHECK_INT(r.status, 200);
    /* The API's answer is sized, not chunked like the stream it describes. */
    const char *clen = reply_header(&r, "Content-Length", buf, sizeof buf);
    CHECK_INT(clen ? strtoul(clen, NULL, 10) : 0, r.body_len);
    cJSON *j = cJSON_Parse(r.body);
    const cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "route"), "stream");
    CHECK_STR(cJSON_IsString(st) ? st->valuestring : "(none)",
              "sse,count=2,size=16,retry=0,event=new,gap=20ms");
    cJSON_Delete(j);
    pthread_join(th, NULL);
    CHECK_INT(parse_sse(o.r.body, ev, EVENTS_MAX), 4);
    check_schedule("begun before the change", ev, 4, 1, 100000);
    CHECK_STR(ev[3].name, "tick");
    http_request(s.port, "GET", "/events", NULL, NULL, &r);
    CHECK_INT(parse_sse(r.body, ev, EVENTS_MAX), 2);
    check_schedule("begun after the change", ev, 2, 1, 20000);
    CHECK_STR(ev[0].name, "new");
    http_request(cp, "PATCH", "/routes/events", "{\"stream\": \"sse,gap=fast\"}", json, &r);
    CHECK_INT(r.status, 400);
    j = cJSON_Parse(r.body);
    const cJSON *field = cJSON_GetObjectItem(j, "field");
    CHECK_STR(cJSON_IsString(field) ? field->valuestring : "(none)", "stream");
    cJSON_Delete(j);
    http_request(cp, "PATCH", "/routes/events", "{\"stream\": \"none\"}", json, &r);
    CHECK_INT(r.status, 200);
    http_request(s.port, "GET", "/events", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(reply_header(&r, "Content-Type", buf, sizeof buf), "text/plain");
    stop_expect_clean(&s);
}

/* The gap between the first two events of an NDJSON stream from path, in microseconds, and
 * its number of events in *n. */
static unsigned long long first_gap(unsigned port, const char *path, int *n)
{
    struct reply r;
    struct event ev[EVENTS_MAX];
    http_request(port, "GET", path, NULL, NULL, &r);
    *n = parse_ndjson(r.body, ev, EVENTS_MAX);
    return *n >= 2 ? ev[1].intended_us - ev[0].intended_us : 0;
}

/* A scenario phase sets a route's stream (any key a PATCH sets: format, count, gap) and ramps
 * its gap ("of": "stream-gap") in steps; a ramp of a route without a stream is a config error. */
static void scenario_sets_and_ramps_a_stream(const struct itest_env *env)
{
    struct server s;
    int n;
    const char *cfg = write_file(
        env, "ramp.json",
        "{\"routes\": [{\"path\": \"/events\", \"stream\": \"ndjson,count=2,gap=10ms\"}], "
        "\"scenario-start\": \"api\", \"scenario\": [{\"at\": \"0s\", \"name\": \"slower\", "
        "\"routes\": {\"/events\": {\"stream\": \"ndjson,count=3,gap=200ms\"}}, \"ramp\": "
        "{\"/events\": {\"of\": \"stream-gap\", \"from\": \"200ms\", \"to\": \"20ms\", "
        "\"over\": \"600ms\"}}}]}");
    const char *args[] = {"--delay", "0", "--config", cfg, "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    unsigned cp = control_port_of(&s);
    struct reply r;
    CHECK_INT(first_gap(s.port, "/events", &n), 10000);
    CHECK_INT(n, 2);
    http_request(cp, "POST", "/scenario/start", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    double t0 = now_seconds();
    /* The phase's stream at the ramp's start: 3 events, 200 ms apart (a step or two in). */
    unsigned long long g = first_gap(s.port, "/events", &n);
    CHECK_INT(n, 3);
    if (g < 140000 || g > 200000)
        CHECK_FAIL_("gap %llu us at the ramp's start, want 140 to 200 ms", g);
    else
        check_passed++;
    /* Half way (a stream of its own after the first): between the ends. */
    while (now_seconds() - t0 < 0.45)
        usleep(5000);
    g = first_gap(s.port, "/events", &n);
    if (g <= 20000 || g >= 180000)
        CHECK_FAIL_("gap %llu us half way through the ramp, want between 20 and 180 ms", g);
    else
        check_passed++;
    while (now_seconds() - t0 < 0.8)
        usleep(5000);
    CHECK_INT(first_gap(s.port, "/events", &n), 20000);
    CHECK_INT(n, 3);
    http_request(cp, "GET", "/scenario", NULL, NULL, &r);
    CHECK(strstr(r.body, "\"of\":\"stream-gap\"") != NULL);
    stop_expect_clean(&s);

    static const struct {
        const char *scenario, *want;
    } bad[] = {
        {"[{\"at\": 0, \"ramp\": {\"/test\": {\"of\": \"stream-gap\", \"from\": \"1s\", \"to\": "
         "\"2s\", \"over\": \"1s\"}}}]",
         "scenario[0].ramp./test.from: the route has no stream to ramp the gap of; give it one "
         "first"},
        {"[{\"at\": 0, \"ramp\": {\"/test\": {\"of\": \"size\", \"from\": \"1s\", \"to\": "
         "\"2s\", \"over\": \"1s\"}}}]",
         "scenario[0].ramp./test.of: must be \"delay\", \"stream-gap\" or \"websocket-delay\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512], out[1024], err[1024];
        snprintf(text, sizeof text, "{\"scenario\": %s}", bad[i].scenario);
        const char *bcfg = write_file(env, "bad.json", text);
        const char *bargs[] = {"--check-config", bcfg, NULL};
        CHECK_INT(run_to_exit(env->bin, bargs, NULL, out, sizeof out, err, sizeof err), 2);
        if (!strstr(err, bad[i].want))
            CHECK_FAIL_("error '%s' lacks '%s'", err, bad[i].want);
        else
            check_passed++;
    }
}

/* HEAD on a stream is the stream's head (its Content-Type, Cache-Control, no length), at once,
 * with no body and no stream begun. */
static void stream_head_is_the_streams_head(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char buf[128];
    const char *cfg = write_file(env, "events.json",
                                 "{\"routes\": [{\"path\": \"/events\", \"stream\": "
                                 "\"sse,count=2,gap=300ms\"}]}");
    const char *args[] = {"--delay", "0", "--config", cfg, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const struct {
        const char *path, *type;
    } heads[] = {{"/events", "text/event-stream"},
                 {"/echo?stream=ndjson,count=2,gap=300ms", "application/x-ndjson"}};
    for (size_t i = 0; i < 2; i++) {
        http_request(s.port, "HEAD", heads[i].path, NULL, NULL, &r);
        CHECK_INT(r.status, 200);
        CHECK_STR(reply_header(&r, "Content-Type", buf, sizeof buf), heads[i].type);
        CHECK_STR(reply_header(&r, "Cache-Control", buf, sizeof buf), "no-cache");
        /* GET's head over HTTP/1.1 names its chunked coding; so does HEAD's, but on slowsrv,
         * whose library would write the last chunk after it (an empty answer instead). */
        int empty = itest_has(env, ENGINE_LENGTH_ON_HEAD_OF_STREAM);
        const char *cl = reply_header(&r, "Content-Length", buf, sizeof buf);
        CHECK_STR(cl ? cl : "(none)", empty ? "0" : "(none)");
        const char *te = reply_header(&r, "Transfer-Encoding", buf, sizeof buf);
        CHECK_STR(te ? te : "(none)", empty ? "(none)" : "chunked");
        CHECK_INT(r.body_len, 0);
        if (r.seconds > 0.2)
            CHECK_FAIL_("HEAD %s took %.3f s: a stream ran", heads[i].path, r.seconds);
        else
            check_passed++;
    }
    if (itest_has(env, ENGINE_HTTP2)) {
        /* Over HTTP/2 the same head, with no length either. */
        long version = 0;
        struct target t = {s.port, 0, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 0};
        http_request_to(&t, "HEAD", "/events", NULL, NULL, &r, &version);
        CHECK_INT(version, CURL_HTTP_VERSION_2_0);
        CHECK_INT(r.status, 200);
        CHECK_STR(reply_header(&r, "Content-Type", buf, sizeof buf), "text/event-stream");
        CHECK(reply_header(&r, "Content-Length", buf, sizeof buf) == NULL);
        CHECK_INT(r.body_len, 0);
        CHECK(r.seconds < 0.2);
    }
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./events.requests"), itest_has(env, ENGINE_HTTP2) ? 2 : 1);
    CHECK_INT(json_number(j, "routes./events.streams.begun"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* The access-log lines of path in the file at `log`: the last one, parsed (the caller frees). */
static cJSON *log_line(const char *log, const char *path)
{
    char line[2048];
    cJSON *found = NULL;
    FILE *f = fopen(log, "r");
    while (f && fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *p = cJSON_GetObjectItem(j, "path");
        if (cJSON_IsString(p) && strcmp(p->valuestring, path) == 0) {
            cJSON_Delete(found);
            found = j;
        } else {
            cJSON_Delete(j);
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* Checks a stream's access-log line: its events, its end, and its bytes_out (the body's bytes
 * when `bytes` is not 0). */
static void check_stream_line(const char *log, const char *path, int events, const char *end,
                              size_t bytes)
{
    cJSON *j = log_line(log, path);
    const cJSON *e = cJSON_GetObjectItem(j, "stream_end");
    if (!j) {
        CHECK_FAIL_("no access-log line for %s", path);
        return;
    }
    CHECK_STR(cJSON_IsString(e) ? e->valuestring : "(none)", end);
    if (events >= 0)
        CHECK_INT(json_number(j, "events"), events);
    else
        CHECK(json_number(j, "events") >= 1);
    if (bytes)
        CHECK_INT(json_number(j, "bytes_out"), bytes);
    else
        CHECK(json_number(j, "bytes_out") > 0);
    CHECK_INT(json_number(j, "status"), 200);
    cJSON_Delete(j);
}

/* The access log has one line per stream, written at its end, with its events, its end
 * (complete, max-delay, client-left, stopped) and the bytes of its events; a line that is not a
 * stream's has neither field. */
static void stream_access_log_line_per_stream(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char log[300];
    snprintf(log, sizeof log, "%s/access.log", env->tmpdir);
    const char *args[] = {"--delay",      "0", "--max-delay", "1s", "--grace", "300ms",
                          "--access-log", log, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const char complete[] = "/echo?stream=sse,count=3,size=1..50,gap=20ms";
    http_request(s.port, "GET", complete, NULL, NULL, &r);
    size_t complete_bytes = r.body_len;
    CHECK(complete_bytes > 0);
    static const char open[] = "/echo?stream=ndjson,gap=250ms";
    http_request(s.port, "GET", open, NULL, NULL, &r);
    size_t open_bytes = r.body_len;
    http_request(s.port, "GET", "/test", NULL, NULL, &r);

    /* A client that leaves after its second event. */
    int fd = raw_connect(s.port);
    static const char req[] = "GET /echo?stream=ndjson,gap=30ms&left HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK_INT(send_all(fd, req, sizeof req - 1), 0);
    char buf[4096];
    read_until_text(fd, buf, sizeof buf, "\"id\":2,", 3000);
    close(fd);
    CHECK_INT(await_stat(h1(&s), "routes./echo.streams.cut", 1, 3), 1);

    /* One under way when the server stops: cut at the end of --grace. */
    struct open_stream o = {.t = *h1(&s), .path = "/echo?stream=ndjson,gap=50ms&stopped"};
    pthread_t th;
    pthread_create(&th, NULL, run_open_stream, &o);
    CHECK_INT(await_stat(h1(&s), "routes./echo.streams.open", 1, 3), 1);
    CHECK_INT(server_stop(&s, 5000, NULL, 0), 0);
    pthread_join(th, NULL);

    check_stream_line(log, complete, 3, "complete", complete_bytes);
    check_stream_line(log, open, 5, "max-delay", open_bytes);
    check_stream_line(log, "/echo?stream=ndjson,gap=30ms&left", -1, "client-left", 0);
    check_stream_line(log, "/echo?stream=ndjson,gap=50ms&stopped", -1, "stopped", 0);
    cJSON *j = log_line(log, "/test");
    CHECK(j && !cJSON_GetObjectItem(j, "events") && !cJSON_GetObjectItem(j, "stream_end"));
    cJSON_Delete(j);
}

static const struct itest_case cases[] = {
    {"begun_stream_keeps_its_plan_across_a_change", begun_stream_keeps_its_plan_across_a_change,
     ITEST_PLAIN, 0},
    {"scenario_sets_and_ramps_a_stream", scenario_sets_and_ramps_a_stream, ITEST_PLAIN, 0},
    {"stream_head_is_the_streams_head", stream_head_is_the_streams_head, ITEST_PLAIN, 0},
    {"stream_access_log_line_per_stream", stream_access_log_line_per_stream, ITEST_PLAIN, 0},
    {"sse_and_ndjson_count_format_and_gaps", sse_and_ndjson_count_format_and_gaps, ITEST_PLAIN, 0},
    {"stream_bad_values_get_json_400", stream_bad_values_get_json_400, ITEST_PLAIN, 0},
    {"client_leaving_mid_stream_is_counted", client_leaving_mid_stream_is_counted, ITEST_PLAIN, 0},
    {"seeded_stream_gaps_equal_on_both_binaries", seeded_stream_gaps_equal_on_both_binaries,
     ITEST_BOTH, 0},
    {"h2_stream_is_data_frames", h2_stream_is_data_frames, ITEST_PLAIN, ENGINE_HTTP2},
    {"stream_on_every_model", stream_on_every_model, ITEST_PER_MODEL, 0},
    {"stream_is_cut_at_the_end_of_grace", stream_is_cut_at_the_end_of_grace, ITEST_PLAIN, 0},
    {"many_streams_keep_their_schedule", many_streams_keep_their_schedule, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_streams = {"streams", cases, sizeof cases / sizeof cases[0]};
