/*
 * Cases on HTTPS and on HTTP/2 (slowsrv-h2o's): h2c and ALPN, a thousand streams, streams reset
 * by their client, and drips and faults on streams and connections.
 */
#include "itest.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int make_cert(const struct itest_env *env, char *cert, char *key, size_t len)
{
    char cmd[1200];
    snprintf(cert, len, "%s/cert.pem", env->tmpdir);
    snprintf(key, len, "%s/key.pem", env->tmpdir);
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s' -out '%s' -days 1 "
             "-subj /CN=127.0.0.1 >/dev/null 2>&1",
             key, cert);
    return system(cmd);
}

/* --tls-cert/--tls-key serve HTTPS with the same answers; bad files are refused with exit 2. */
static void tls_serves_https(const struct itest_env *env)
{
    char cert[300], key[300];
    struct server s;
    struct reply r;
    long version = 0;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    const char *args[] = {"--delay", "50ms", "--tls-cert", cert, "--tls-key", key, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    CHECK(strstr(s.startup, "listening on https://127.0.0.1:") != NULL);
    struct target t = {s.port, 1, CURL_HTTP_VERSION_1_1, 0};
    http_request_to(&t, "GET", "/test", NULL, NULL, &r, &version);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "ok");
    CHECK_INT(version, CURL_HTTP_VERSION_1_1);
    struct part p[] = {{"data", "f", NULL, 70000}};
    http_upload(&t, "/write", p, 1, &r, 0);
    CHECK_STR(r.body, "70000");
    stop_expect_clean(&s);

    struct bad_case c = {
        {"--tls-cert", "/nonexistent.pem", "--tls-key", key}, {NULL}, "tls-cert: "};
    expect_refused(env, &c, 2);
    struct bad_case k = {{"--tls-cert", cert, "--tls-key", cert}, {NULL}, "tls-key: "};
    expect_refused(env, &k, 2);
}

/* GET /echo over HTTPS on `port` by a libcurl client held to one TLS version (`v`, a
 * CURL_SSLVERSION_TLSv1_x), with OpenSSL's security level 0 so that the client itself would
 * accept TLS 1.0 and 1.1. Returns the status, 0 if the handshake failed. */
static long get_with_tls_version(unsigned port, long v)
{
    struct target t = {port, 1, CURL_HTTP_VERSION_1_1, 5000};
    static struct reply r;
    CURL *c = http_easy(&t, "GET", "/echo", &r);
    curl_easy_setopt(c, CURLOPT_SSLVERSION, v | (v << 16)); /* min and max */
    curl_easy_setopt(c, CURLOPT_SSL_CIPHER_LIST, "DEFAULT@SECLEVEL=0");
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

/* An `openssl s_server` that speaks TLS 1.0 and 1.1 only, on a free port: the control that shows
 * the client above can still make such a handshake. Returns its pid and sets *port and *out (its
 * output, kept open until it ends, which the caller closes), or -1. */
static pid_t start_old_tls_server(const char *cert, const char *key, unsigned *port, FILE **out)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execlp("openssl", "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key",
               key, "-www", "-min_protocol", "TLSv1", "-max_protocol", "TLSv1.1", "-cipher",
               "DEFAULT@SECLEVEL=0", (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char line[256];
    *out = fdopen(pfd[0], "r");
    *port = 0;
    while (*out && *port == 0 && fgets(line, sizeof line, *out)) {
        const char *colon = strncmp(line, "ACCEPT ", 7) == 0 ? strrchr(line, ':') : NULL;
        if (colon)
            *port = (unsigned)strtoul(colon + 1, NULL, 10);
    }
    if (!*out)
        close(pfd[0]);
    if (*port == 0 && pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

/* HTTPS takes TLS 1.2 and 1.3 and refuses TLS 1.0 and 1.1 at the handshake (RFC 8996), on both
 * binaries; the same client makes a TLS 1.0 and a 1.1 handshake with a server that allows them,
 * so the refusal is the server's. */
static void tls_refuses_versions_before_1_2(const struct itest_env *env)
{
    char cert[300], key[300];
    struct server s;
    unsigned old_port = 0;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    FILE *old_out = NULL;
    pid_t old = start_old_tls_server(cert, key, &old_port, &old_out);
    CHECK(old > 0);
    if (old > 0) {
        /* s_server -www answers its own status page. */
        CHECK_INT(get_with_tls_version(old_port, CURL_SSLVERSION_TLSv1_0), 200);
        CHECK_INT(get_with_tls_version(old_port, CURL_SSLVERSION_TLSv1_1), 200);
        kill(old, SIGTERM);
        waitpid(old, NULL, 0);
    }
    if (old_out)
        fclose(old_out);
    const char *args[] = {"--tls-cert", cert, "--tls-key", key, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    CHECK_INT(get_with_tls_version(s.port, CURL_SSLVERSION_TLSv1_0), 0);
    CHECK_INT(get_with_tls_version(s.port, CURL_SSLVERSION_TLSv1_1), 0);
    CHECK_INT(get_with_tls_version(s.port, CURL_SSLVERSION_TLSv1_2), 200);
    CHECK_INT(get_with_tls_version(s.port, CURL_SSLVERSION_TLSv1_3), 200);
    stop_expect_clean(&s);
}

/* HTTP/2 over cleartext, with prior knowledge and by Upgrade: h2c, answers the same bytes. */
/* --header-timeout counts from the connection's opening, the TLS handshake included: a client
 * that connects to the HTTPS port and sends nothing is closed after it, on both binaries
 * (libh2o's own handshake timeout is 10 s). */
static void tls_handshake_within_header_timeout(const struct itest_env *env)
{
    char cert[300], key[300], buf[64];
    struct server s;
    int closed;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    const char *args[] = {"--header-timeout", "1s", "--tls-cert", cert, "--tls-key", key, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    int fd = raw_connect(s.port);
    double t0 = now_seconds();
    read_until_close(fd, buf, sizeof buf, 5000, &closed);
    double took = now_seconds() - t0;
    close(fd);
    if (!closed || took < 0.9 || took > 2.5)
        CHECK_FAIL_("a silent TLS client was %s after %.2f s (want closed after about 1 s)",
                    closed ? "closed" : "still open", took);
    else
        check_passed++;
    stop_expect_clean(&s);
}

static void h2c_prior_knowledge_and_upgrade(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    char h[64];
    START(env, &s, "--delay", "50ms");
    static const long modes[] = {CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, CURL_HTTP_VERSION_2_0};
    for (size_t m = 0; m < 2; m++) {
        struct target t = {s.port, 0, modes[m], 0};
        long version = 0;
        http_request_to(&t, "GET", "/test", NULL, NULL, &r, &version);
        CHECK_INT(version, CURL_HTTP_VERSION_2_0);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body, "ok");
        CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=50");
        CHECK_STR(reply_header(&r, "content-length", h, sizeof h), "2");
        http_request_to(&t, "GET", "/nope", NULL, NULL, &r, &version);
        CHECK_INT(r.status, 404);
        struct part p[] = {{"token", NULL, "x", 0}, {"data", "f", NULL, 123456}};
        http_upload(&t, "/write", p, 2, &r, 0);
        CHECK_STR(r.body, "123456");
    }
    stop_expect_clean(&s);
}

/* h2 over TLS is chosen by ALPN. */
static void h2_over_tls_by_alpn(const struct itest_env *env)
{
    char cert[300], key[300];
    struct server s;
    struct reply r;
    long version = 0;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    const char *args[] = {"--delay", "20ms", "--tls-cert", cert, "--tls-key", key, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    struct target t = {s.port, 1, CURL_HTTP_VERSION_2_0, 0};
    http_request_to(&t, "GET", "/test", NULL, NULL, &r, &version);
    CHECK_INT(version, CURL_HTTP_VERSION_2_0);
    CHECK_STR(r.body, "ok");
    /* ALPN offers both: a client that asks for http/1.1 alone gets it named, one that asks for
     * both gets h2. */
    static const char *const offers[][2] = {{"http/1.1", "ALPN protocol: http/1.1"},
                                            {"h2,http/1.1", "ALPN protocol: h2"}};
    for (size_t i = 0; i < 2; i++) {
        char cmd[400];
        snprintf(
            cmd, sizeof cmd,
            "openssl s_client -connect 127.0.0.1:%u -alpn %s </dev/null 2>/dev/null | grep -qx "
            "'%s'",
            s.port, offers[i][0], offers[i][1]);
        if (system(cmd) != 0)
            CHECK_FAIL_("a client offering %s did not read '%s'", offers[i][0], offers[i][1]);
        else
            check_passed++;
    }
    stop_expect_clean(&s);
}

/* Starts env->bin with a throw-away certificate, for HTTP/2 by ALPN. libcurl 7.88 (Debian 12)
 * cannot reuse an h2c prior-knowledge connection for a second stream (curl issue 10634, fixed
 * in 8.0), so the multiplexing cases run over TLS. */
/* threads: "--threads"'s value, or NULL for the default (one loop per CPU). */
static int start_tls_loops(const struct itest_env *env, struct server *s, const char *delay,
                           const char *threads)
{
    static char cert[300], key[300];
    if (make_cert(env, cert, key, sizeof cert) != 0)
        return -1;
    const char *args[9] = {"--delay", delay, "--tls-cert", cert, "--tls-key", key};
    if (threads) {
        args[6] = "--threads";
        args[7] = threads;
    }
    return server_start(s, env->bin, args, NULL);
}

static int start_tls(const struct itest_env *env, struct server *s, const char *delay)
{
    return start_tls_loops(env, s, delay, NULL);
}

/* 1000 concurrent delayed streams multiplexed on 10 connections all finish after one delay. */
static void h2_thousand_streams_on_ten_connections(const struct itest_env *env)
{
    struct server s;
    static long status[1000];
    static double secs[1000];
    static int ok[1000];
    if (start_tls(env, &s, "300ms") != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    struct target t = {s.port, 1, CURL_HTTP_VERSION_2_0, 0};
    double wall = http_concurrent_to(&t, "/test", 1000, 10, status, secs, ok, "ok");
    all_answered_within(1000, status, secs, ok, 0.3, 0.3 + 2 * BATCH_SLACK);
    if (wall > 2.0)
        CHECK_FAIL_("1000 streams took %.2f s", wall);
    stop_expect_clean(&s);
}

/* The server's largest RSS while `want` requests wait on it (its /stats says so), sampled every
 * 20 ms until `stop`. */
struct rss_watch {
    const struct target *t;
    pid_t pid;
    long want, max_kb;
    atomic_int stop;
};

static void *rss_watch_main(void *arg)
{
    struct rss_watch *w = arg;
    static struct reply r;
    while (!atomic_load(&w->stop)) {
        http_request_to(w->t, "GET", "/stats", NULL, NULL, &r, NULL);
        cJSON *j = cJSON_Parse(r.body);
        if (j && (long)json_number(j, "waiting") == w->want) {
            long kb = proc_status_kb(w->pid, "VmRSS");
            w->max_kb = kb > w->max_kb ? kb : w->max_kb;
        }
        cJSON_Delete(j);
        usleep(20000);
    }
    return NULL;
}

/* A waiting HTTP/2 stream costs at most 3 KiB of the server's memory: 4000 streams on
 * 40 TLS connections (their share included), sampled while all of them wait. libh2o's own 4 KiB
 * pool chunk per request, which pool_fit gives back while it waits, makes it about 5.3 KiB. */
static void h2_waiting_streams_keep_little_memory(const struct itest_env *env)
{
    enum { STREAMS = 4000, CONNS = 40 };
    static long status[STREAMS];
    static double secs[STREAMS];
    static int ok[STREAMS];
    struct server s;
    /* Under the sanitizers the client opens 4000 TLS streams more slowly: the delay must still
     * outlast the opening, so that all of them wait at once. */
#ifdef SLOWSRV_SANITIZED
    const char *delay = "4000ms";
    const double delay_s = 4.0;
#else
    const char *delay = "1500ms";
    const double delay_s = 1.5;
#endif
    if (start_tls(env, &s, delay) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    /* Over TLS (ALPN): Debian's libcurl 7.88 fails streams it multiplexes onto a reused h2c
     * prior-knowledge connection (curl issue 10634, fixed in 8.0). */
    struct target t = {s.port, 1, CURL_HTTP_VERSION_2_0, 0};
    long idle = proc_status_kb(s.pid, "VmRSS");
    struct rss_watch w = {&t, s.pid, STREAMS, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, rss_watch_main, &w);
    http_concurrent_to(&t, "/test", STREAMS, CONNS, status, secs, ok, "ok");
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    /* Answered, none early; libcurl's one thread is the slow side of 4000 TLS streams. */
    all_answered_within(STREAMS, status, secs, ok, delay_s, delay_s + 6 * BATCH_SLACK);
    double per = (double)(w.max_kb - idle) / STREAMS;
    fprintf(stderr, "RSS %ld KiB idle, %ld KiB with %d streams waiting: %.2f KiB a stream\n", idle,
            w.max_kb, STREAMS, per);
    if (w.max_kb == 0)
        CHECK_FAIL_("/stats never showed all %d streams waiting at once", STREAMS);
#ifndef SLOWSRV_SANITIZED
    else if (per > 3.0)
        CHECK_FAIL_("%.2f KiB a waiting stream, want at most 3", per);
    else
        check_passed++;
#endif
    stop_expect_clean(&s);
}

/* An HTTP/2 client that resets its waiting streams cancels their timers at once. */
static void h2_reset_streams_cancel_at_once(const struct itest_env *env)
{
    struct server s;
    static long status[100];
    static double secs[100];
    static int ok[100];
    if (start_tls(env, &s, "5s") != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    /* The client gives up on every stream after 300 ms, long before the 5 s delay. */
    struct target t = {s.port, 1, CURL_HTTP_VERSION_2_0, 300};
    http_concurrent_to(&t, "/test", 100, 2, status, secs, ok, "ok");
    t.timeout_ms = 0;
    cJSON *j = settled_stats(&t);
    CHECK_INT(json_number(j, "cancels"), 100);
    CHECK_INT(json_number(j, "waiting"), 0);
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* Over HTTP/2 a drip paces DATA frames; truncate resets the stream after half the body; close
 * and reset end the whole connection. */
static void h2_drip_and_faults(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "50ms");
    struct target t = {s.port, 0, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 0};
    long version = 0;
    http_request_to(&t, "GET", "/test?size=1000&drip=4,800ms", NULL, NULL, &r, &version);
    CHECK_INT(version, CURL_HTTP_VERSION_2_0);
    CHECK_INT(r.curl_code, 0);
    CHECK_INT(r.body_len, 1000);
    if (r.seconds < 0.85 || r.seconds > 0.85 + LONE_SLACK || r.body_writes < 4)
        CHECK_FAIL_("h2 drip=4,800ms: %.3f s in %u pieces", r.seconds, r.body_writes);
    http_request_to(&t, "GET", "/test?size=100&fault=truncate", NULL, NULL, &r, NULL);
    CHECK_INT(r.curl_code, CURLE_HTTP2_STREAM);
    http_request_to(&t, "GET", "/test?fault=reset", NULL, NULL, &r, NULL);
    CHECK_INT(r.curl_code, CURLE_RECV_ERROR);
    http_request_to(&t, "GET", "/test?fault=close", NULL, NULL, &r, NULL);
    CHECK(r.curl_code != CURLE_OK && r.status == 0);
    http_request_to(&t, "GET", "/test", NULL, NULL, &r, NULL);
    CHECK_STR(r.body, "ok");
    stop_expect_clean(&s);
}

/* A waiting request whose client gives up leaves the timer armed for it (its HTTP/2 stream ends
 * with the connection); the next request, due later, is still answered on time: the timer is
 * armed anew when it expires for the request that left.
 * The next request must meet that timer: one loop, and no request in between (a request that
 * finds nothing waiting disarms the timer), so the test waits for the server to close the
 * connection that left, by its sockets, not by /stats. It asks /stats afterwards that the first
 * request was cancelled then, not answered. */
static void h2_answer_after_a_request_that_left(const struct itest_env *env)
{
    struct server s;
    if (start_tls_loops(env, &s, "0", "1") != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    struct target gone = {s.port, 1, CURL_HTTP_VERSION_2_0, 200};
    struct target t = {s.port, 1, CURL_HTTP_VERSION_2_0, 5000};
    struct reply r;
    int base = count_sockets(s.pid);
    double t_gone = now_seconds();
    http_request_to(&gone, "GET", "/echo?delay=1s", NULL, NULL, &r, NULL);
    CHECK_INT(r.curl_code, CURLE_OPERATION_TIMEDOUT);
    while (count_sockets(s.pid) > base && now_seconds() - t_gone < 0.8)
        usleep(2000);
    CHECK_INT(count_sockets(s.pid), base);
    double t0 = now_seconds();
    if (t0 - t_gone >= 0.9) /* the timer for the one that left must still be ahead */
        CHECK_FAIL_("the connection that left closed only after %.3f s", t0 - t_gone);
    http_request_to(&t, "GET", "/echo?delay=1500ms", NULL, NULL, &r, NULL);
    double took = now_seconds() - t0;
    CHECK_INT(r.curl_code, 0);
    CHECK_STR(r.body, "OK");
    if (took < 1.5 || took > 1.5 + LONE_SLACK)
        CHECK_FAIL_("answered in %.3f s, want 1.5 s", took);
    CHECK_INT(await_stat(&t, "routes./echo.cancels", 1, 3), 1);
    stop_expect_clean(&s);
}

/* HTTP/2: fault=close and fault=reset end the whole connection, as a failing server would:
 * another stream waiting on the same connection ends with it, which the server counts as that
 * stream's client leaving (libcurl then retries the request on a new connection, so the client
 * side alone cannot tell). */
static void h2_faults_end_the_connection(const struct itest_env *env)
{
    struct server s;
    if (start_tls(env, &s, "50ms") != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const char *const faults[] = {"/test?fault=close", "/test?fault=reset"};
    struct target t = {s.port, 1, CURL_HTTP_VERSION_2_0, 0};
    for (size_t f = 0; f < 2; f++) {
        CURLM *m = curl_multi_init();
        static struct reply ra, rb;
        curl_multi_setopt(m, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
        curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 1L);
        /* Both streams on one connection: the second waits to multiplex on the first's. */
        CURL *a = http_easy(&t, "GET", "/echo?delay=1s", &ra);
        CURL *b = http_easy(&t, "GET", faults[f], &rb);
        curl_easy_setopt(a, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(b, CURLOPT_PIPEWAIT, 1L);
        curl_multi_add_handle(m, a);
        curl_multi_add_handle(m, b);
        int running = 0;
        double t0 = now_seconds();
        do {
            curl_multi_perform(m, &running);
            if (running)
                curl_multi_poll(m, NULL, 0, 100, NULL);
        } while (running && now_seconds() - t0 < 10);
        long sb = 0;
        curl_easy_getinfo(b, CURLINFO_RESPONSE_CODE, &sb);
        CHECK_INT(sb, 0);
        curl_multi_remove_handle(m, a);
        curl_multi_remove_handle(m, b);
        curl_easy_cleanup(a);
        curl_easy_cleanup(b);
        curl_multi_cleanup(m);
        cJSON *j = settled_stats(&t);
        CHECK_INT(json_number(j, "routes./echo.cancels"), (double)f + 1);
        CHECK_INT(json_number(j, "routes./test.faults"), (double)f + 1);
        cJSON_Delete(j);
    }
    struct reply r;
    http_request_to(&t, "GET", "/test", NULL, NULL, &r, NULL);
    CHECK_STR(r.body, "ok");
    stop_expect_clean(&s);
}

/* HTTP/2 streams are capped at 100 per connection and the client waits (doc/limits.md): 150
 * delayed streams on ONE connection finish in two waves, 100 after one delay and 50 after two.
 * The client would open all 150 at once (CURLMOPT_MAX_CONCURRENT_STREAMS 150), so the waves are
 * the server's cap; /stats, read while they run, never shows more than 100 waiting. A stream
 * of the second wave opens only when one of the first is answered, so it ends two delays after
 * the start at the earliest: the 100/50 split is exact while the first wave ends within one more
 * delay. */
static void h2_streams_capped_at_100_per_connection(const struct itest_env *env)
{
    enum { N = 150, CAP = 100 };
    const double delay = 0.5;
    struct server s;
    static struct reply replies[N], poll_reply;
    static double done_at[N];
    CURL *easies[N];
    if (start_tls(env, &s, "500ms") != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    struct target t = {s.port, 1, CURL_HTTP_VERSION_2_0, 0};
    struct target report = {s.port, 1, CURL_HTTP_VERSION_1_1, 0};
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 1L);
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    curl_multi_setopt(m, CURLMOPT_MAX_CONCURRENT_STREAMS, (long)N);
    double start = now_seconds();
    for (size_t i = 0; i < N; i++) {
        easies[i] = http_easy(&t, "GET", "/test", &replies[i]);
        curl_easy_setopt(easies[i], CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(easies[i], CURLOPT_PRIVATE, (void *)&done_at[i]);
        done_at[i] = -1;
        curl_multi_add_handle(m, easies[i]);
    }
    int running = 0;
    double max_waiting = -1, last_poll = 0;
    do {
        curl_multi_perform(m, &running);
        for (CURLMsg *msg; (msg = curl_multi_info_read(m, &(int){0})) != NULL;) {
            double *at = NULL;
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&at);
            *at = now_seconds() - start;
        }
        /* What the server holds: requests waiting on their delay, on a second connection. */
        if (running && now_seconds() - last_poll > 0.02) {
            http_request_to(&report, "GET", "/stats", NULL, NULL, &poll_reply, NULL);
            cJSON *j = cJSON_Parse(poll_reply.body);
            double w = json_number(j, "waiting");
            max_waiting = w > max_waiting ? w : max_waiting;
            cJSON_Delete(j);
            last_poll = now_seconds();
        }
        if (running)
            curl_multi_poll(m, NULL, 0, 20, NULL);
    } while (running && now_seconds() - start < 15);
    unsigned good = 0, first = 0, second = 0;
    long connects = 0;
    double fastest = 1e9, slowest = 0;
    for (size_t i = 0; i < N; i++) {
        long status = 0, version = 0, c = 0;
        curl_easy_getinfo(easies[i], CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(easies[i], CURLINFO_HTTP_VERSION, &version);
        curl_easy_getinfo(easies[i], CURLINFO_NUM_CONNECTS, &c);
        connects += c;
        good +=
            status == 200 && version == CURL_HTTP_VERSION_2_0 && strcmp(replies[i].body, "ok") == 0;
        first += done_at[i] >= delay && done_at[i] < 2 * delay;
        second += done_at[i] >= 2 * delay && done_at[i] <= 2 * delay + BATCH_SLACK;
        fastest = done_at[i] < fastest ? done_at[i] : fastest;
        slowest = done_at[i] > slowest ? done_at[i] : slowest;
        curl_multi_remove_handle(m, easies[i]);
        curl_easy_cleanup(easies[i]);
    }
    curl_multi_cleanup(m);
    CHECK_INT(good, N);
    CHECK_INT(connects, 1); /* every stream on the one connection */
    CHECK_INT(first, CAP);
    CHECK_INT(second, N - CAP);
    if (first != CAP || second != N - CAP)
        fprintf(stderr,
                "want %d in [%.1f, %.1f) s and %d in [%.1f, %.2f] s: fastest %.3f s, "
                "slowest %.3f s\n",
                CAP, delay, 2 * delay, N - CAP, 2 * delay, 2 * delay + BATCH_SLACK, fastest,
                slowest);
    CHECK_INT(max_waiting, CAP);
    cJSON *j = settled_stats(&report);
    CHECK_INT(json_number(j, "routes./test.status.200"), N);
    CHECK_INT(json_number(j, "cancels"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* With --tls-cert, the control listener speaks TLS with the same certificate: a token never
 * crosses the network in clear, and plain HTTP there gets no answer. */
static void control_speaks_tls(const struct itest_env *env)
{
    char cert[300], key[300];
    struct server s;
    struct reply r;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    const char *args[] = {"--tls-cert", cert, "--tls-key", key, "--control", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    const char *p = strstr(s.startup, " control=https://127.0.0.1:");
    CHECK(p != NULL);
    unsigned cp = p ? (unsigned)strtoul(strrchr(p, ':') + 1, NULL, 10) : 0;
    struct target tls = {cp, 1, CURL_HTTP_VERSION_1_1, 3000};
    http_request_to(&tls, "GET", "/routes", NULL, NULL, &r, NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"routes\"") != NULL);
    struct target plain = {cp, 0, CURL_HTTP_VERSION_1_1, 3000};
    http_request_to(&plain, "GET", "/routes", NULL, NULL, &r, NULL);
    CHECK(r.status != 200);
    stop_expect_clean(&s);
}

/* --control http://ADDR:PORT asks for plain HTTP on the control listener beside a TLS main port,
 * in every model: the startup line says http://, a plain PATCH with the token changes what the
 * main port answers over TLS, and TLS there gets no answer. https:// without --tls-cert, or
 * another scheme, is a config error (exit 2). */
static void control_plain_beside_tls(const struct itest_env *env)
{
    char cert[300], key[300];
    struct server s;
    static struct reply r;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    const char *token = write_file(env, "token", "s3cret-t0ken\n");
    const char *args[] = {"--tls-cert",
                          cert,
                          "--tls-key",
                          key,
                          "--control",
                          "http://127.0.0.1:0",
                          "--control-token",
                          token,
                          "--model",
                          env->model,
                          "--delay",
                          "0",
                          NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    const char *p = strstr(s.startup, " control=http://127.0.0.1:");
    CHECK(p != NULL);
    CHECK(strstr(s.startup, "listening on https://") != NULL);
    unsigned cp = p ? (unsigned)strtoul(strrchr(p, ':') + 1, NULL, 10) : 0;
    struct target plain = {cp, 0, CURL_HTTP_VERSION_1_1, 3000};
    struct target main_tls = {s.port, 1, CURL_HTTP_VERSION_1_1, 3000};
    const char *auth[] = {"Authorization: Bearer s3cret-t0ken", NULL};
    http_request_to(&plain, "PATCH", "/routes/test", "{\"status\": 503}", auth, &r, NULL);
    CHECK_INT(r.status, 200);
    http_request_to(&plain, "GET", "/routes", NULL, NULL, &r, NULL);
    CHECK_INT(r.status, 401);
    http_request_to(&main_tls, "GET", "/test", NULL, NULL, &r, NULL);
    CHECK_INT(r.status, 503);
    struct target tls = {cp, 1, CURL_HTTP_VERSION_1_1, 3000};
    http_request_to(&tls, "GET", "/routes", NULL, auth, &r, NULL);
    CHECK(r.status != 200);
    stop_expect_clean(&s);
    /* https:// spelled out is the default with a certificate. */
    const char *https[] = {"--tls-cert",          cert,      "--tls-key", key, "--control",
                           "https://127.0.0.1:0", "--model", env->model,  NULL};
    if (server_start(&s, env->bin, https, NULL) == 0) {
        CHECK(strstr(s.startup, " control=https://127.0.0.1:") != NULL);
        stop_expect_clean(&s);
    } else {
        CHECK_FAIL_("%s", "server did not start with --control https://");
    }
    struct bad_case no_cert = {
        {"--control", "https://127.0.0.1:0"}, {NULL}, "control: https:// needs --tls-cert"};
    expect_refused(env, &no_cert, 2);
    struct bad_case ftp = {
        {"--control", "ftp://127.0.0.1:9090"}, {NULL}, "is not [http[s]://][ADDR:]PORT"};
    expect_refused(env, &ftp, 2);
}

/* The core refuses a head over TLS as on cleartext, with the same JSON: 101 fields get 431 and
 * its body, not libh2o's text 400 (slowsrv-h2o's HTTP/1 framing watch runs on TLS too); the
 * server serves the next request. The framing cases (chunk-size lines, trailers) over TLS:
 * conformance.h1.*.tls. */
static void tls_refusals_are_the_cores(const struct itest_env *env)
{
    char cert[300], key[300];
    struct server s;
    static struct reply r, plain_r;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    const char *args[] = {"--tls-cert", cert, "--tls-key", key, "--delay", "0", NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static char names[101][24];
    const char *headers[102];
    for (int i = 0; i < 101; i++) {
        snprintf(names[i], sizeof names[i], "X-F%d: v", i);
        headers[i] = names[i];
    }
    headers[101] = NULL;
    struct target tls = {s.port, 1, CURL_HTTP_VERSION_1_1, 3000};
    http_request_to(&tls, "GET", "/echo", NULL, headers, &r, NULL);
    CHECK_INT(r.status, 431);
    CHECK_STR(r.body, "{\"error\": \"more than 100 header fields\", \"status\": 431}");
    char v[64];
    CHECK_STR(reply_header(&r, "Content-Type", v, sizeof v), "application/json");
    http_request_to(&tls, "GET", "/echo", NULL, NULL, &r, NULL);
    CHECK_INT(r.status, 200);
    stop_expect_clean(&s);
    /* The same on cleartext. */
    START(env, &s, "--delay", "0");
    http_request(s.port, "GET", "/echo", NULL, headers, &plain_r);
    CHECK_INT(plain_r.status, 431);
    CHECK_STR(plain_r.body, "{\"error\": \"more than 100 header fields\", \"status\": 431}");
    stop_expect_clean(&s);
}

/* An event stream over TLS: HTTP/1.1 chunks on both binaries, and on slowsrv-h2o HTTP/2 DATA
 * frames by ALPN; every event of it, on its schedule, in pieces as they are sent. */
static void stream_over_tls(const struct itest_env *env)
{
    char cert[300], key[300], buf[128];
    struct server s;
    struct reply r;
    CHECK_INT(make_cert(env, cert, key, sizeof cert), 0);
    const char *args[] = {"--delay", "0", "--tls-cert", cert, "--tls-key", key, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static const long versions[] = {CURL_HTTP_VERSION_1_1, CURL_HTTP_VERSION_2_0};
    size_t nv = itest_has(env, ENGINE_HTTP2) ? 2 : 1;
    for (size_t i = 0; i < nv; i++) {
        long version = 0;
        struct target t = {s.port, 1, versions[i], 0};
        http_request_to(&t, "GET", "/echo?stream=ndjson,count=4,size=5,gap=60ms", NULL, NULL, &r,
                        &version);
        CHECK_INT(version, versions[i]);
        CHECK_INT(r.status, 200);
        CHECK_STR(reply_header(&r, "Content-Type", buf, sizeof buf), "application/x-ndjson");
        CHECK(reply_header(&r, "Content-Length", buf, sizeof buf) == NULL);
        /* Four lines, ids 1 to 4, 60 ms apart. */
        unsigned long long id, intended, sent;
        const char *p = r.body;
        int n = 0;
        while (p && *p &&
               sscanf(p, "{\"id\":%llu,\"intended_us\":%llu,\"sent_us\":%llu,", &id, &intended,
                      &sent) == 3) {
            n++;
            if (id != (unsigned long long)n || intended != 60000ULL * (unsigned)(n - 1) ||
                sent < intended)
                CHECK_FAIL_("event %d: id %llu intended %llu sent %llu", n, id, intended, sent);
            p = strchr(p, '\n');
            p = p ? p + 1 : NULL;
        }
        CHECK_INT(n, 4);
        CHECK(r.seconds >= 0.18 && r.seconds < 0.18 + LONE_SLACK + 0.1);
        CHECK(r.body_writes >= 2); /* as they were sent, not in one piece at the end */
    }
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"stream_over_tls", stream_over_tls, ITEST_PLAIN, 0},
    {"tls_refusals_are_the_cores", tls_refusals_are_the_cores, ITEST_PLAIN, 0},
    {"control_speaks_tls", control_speaks_tls, ITEST_PLAIN, 0},
    {"control_plain_beside_tls", control_plain_beside_tls, ITEST_PER_MODEL, 0},
    {"tls_serves_https", tls_serves_https, ITEST_PLAIN, 0},
    {"tls_handshake_within_header_timeout", tls_handshake_within_header_timeout, ITEST_PLAIN, 0},
    {"tls_refuses_versions_before_1_2", tls_refuses_versions_before_1_2, ITEST_PLAIN, 0},
    {"h2c_prior_knowledge_and_upgrade", h2c_prior_knowledge_and_upgrade, ITEST_PLAIN, ENGINE_HTTP2},
    {"h2_over_tls_by_alpn", h2_over_tls_by_alpn, ITEST_PLAIN, ENGINE_HTTP2},
    {"h2_thousand_streams_on_ten_connections", h2_thousand_streams_on_ten_connections, ITEST_PLAIN,
     ENGINE_HTTP2},
    {"h2_reset_streams_cancel_at_once", h2_reset_streams_cancel_at_once, ITEST_PLAIN, ENGINE_HTTP2},
    {"h2_waiting_streams_keep_little_memory", h2_waiting_streams_keep_little_memory, ITEST_PLAIN,
     ENGINE_HTTP2},
    {"h2_drip_and_faults", h2_drip_and_faults, ITEST_PLAIN, ENGINE_HTTP2},
    {"h2_faults_end_the_connection", h2_faults_end_the_connection, ITEST_PLAIN, ENGINE_HTTP2},
    {"h2_answer_after_a_request_that_left", h2_answer_after_a_request_that_left, ITEST_PLAIN,
     ENGINE_HTTP2},
    {"h2_streams_capped_at_100_per_connection", h2_streams_capped_at_100_per_connection,
     ITEST_PLAIN, ENGINE_HTTP2},
};

const struct itest_suite itest_suite_h2_tls = {"h2_tls", cases, sizeof cases / sizeof cases[0]};
