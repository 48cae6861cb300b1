/*
 * Soak: a mixed load of honest and cancelling clients for SOAK_SECONDS (default 20), after
 * which nothing leaked.
 */
#include "itest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How much RSS may grow after the warm-up: 10 %. The sanitizer build allows 20 %: its
 * quarantine and shadow pages follow how far the run got by the warm-up (less on a loaded
 * machine), and LeakSanitizer finds leaks there anyway. */
#ifdef SLOWSRV_SANITIZED
#define SOAK_RSS_GROWTH 0.20
#else
#define SOAK_RSS_GROWTH 0.10
#endif

struct soak {
    unsigned port;
    double until;
    int kind;
    unsigned long ok, errors, cancelled;
    char last_error[160];
};

static void *soak_client(void *arg)
{
    struct soak *k = arg;
    struct target t = {k->port, 0, CURL_HTTP_VERSION_1_1, 0};
    struct reply *r = malloc(sizeof *r);
    unsigned i = (unsigned)k->kind * 7919u;
    while (r && now_seconds() < k->until) {
        char path[64];
        i = i * 1103515245u + 12345u;
        switch (k->kind) {
        case 0: /* short delays */
            snprintf(path, sizeof path, "/test?delay=%ums", 1 + (i >> 16) % 20);
            http_request(k->port, "GET", path, NULL, NULL, r);
            if (r->status == 200 && strcmp(r->body, "ok") == 0)
                k->ok++;
            else
                snprintf(k->last_error, sizeof k->last_error, "%s: %ld '%.40s'", path, r->status,
                         r->body),
                    k->errors++;
            break;
        case 1: /* the echo */
            http_request(k->port, i & 1 ? "GET" : "POST", "/echo", i & 1 ? NULL : "payload", NULL,
                         r);
            if (r->status == 200 && strcmp(r->body, "OK") == 0)
                k->ok++;
            else
                snprintf(k->last_error, sizeof k->last_error, "/echo: %ld", r->status), k->errors++;
            break;
        case 2: { /* uploads of varied sizes */
            size_t size = (i >> 8) % 300000;
            char want[32];
            struct part p[] = {{"token", NULL, "t", 0}, {"data", "f", NULL, size}};
            snprintf(want, sizeof want, "%zu", size);
            http_upload(&t, "/write", p, 2, r, 0);
            if (r->status == 200 && strcmp(r->body, want) == 0)
                k->ok++;
            else
                snprintf(k->last_error, sizeof k->last_error, "/write %zu: %ld '%.40s'", size,
                         r->status, r->body),
                    k->errors++;
            break;
        }
        case 3: { /* clients that give up mid-delay */
            struct target quitter = {k->port, 0, CURL_HTTP_VERSION_1_1, 15};
            long st;
            double secs;
            int okb;
            http_concurrent_to(&quitter, "/test?delay=300ms", 1, 1, &st, &secs, &okb, "ok");
            k->cancelled += st == 0;
            break;
        }
        case 4: { /* clients that give up mid-upload */
            struct part p[] = {{"data", "f", NULL, 2u << 20}};
            k->cancelled += http_upload(&t, "/write", p, 1, r, 200000) == CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        }
    }
    free(r);
    return NULL;
}

/* Mixed load with cancellations: at the end no honest client saw an error, the counters add up
 * (requests = answered + cancels), the descriptors are back to the baseline and the RSS is
 * within 10 % of its value after warm-up. */
static void soak(const struct itest_env *env)
{
    struct server s;
    const char *env_secs = getenv("SOAK_SECONDS");
    double secs = env_secs ? atof(env_secs) : 20;
    START(env, &s, "--delay", "0", "--idle-timeout", "2s");
    /* The baseline once every loop is up (slowsrv-h2o makes its loops' descriptors in their own
     * threads, after the startup line) and the first connection is gone. */
    answers_within(s.port, "/healthz", "ok", 0, 1);
    usleep(300 * 1000);
    int fds_base = count_sockets(s.pid);
    struct soak k[8];
    pthread_t th[8];
    static const int kinds[8] = {0, 0, 1, 1, 2, 2, 3, 4};
    double start = now_seconds();
    for (int i = 0; i < 8; i++) {
        memset(&k[i], 0, sizeof k[i]);
        k[i].port = s.port;
        k[i].until = start + secs;
        k[i].kind = kinds[i];
        pthread_create(&th[i], NULL, soak_client, &k[i]);
    }
    /* Warm-up: the first 40 % of the run (allocator arenas settle). The reference is the
     * highest RSS sampled over its second half: one sample alone moves by hundreds of KiB with
     * what happens to be in flight at that instant. */
    usleep((useconds_t)(secs * 0.2 * 1e6));
    long rss_warm = 0;
    while (now_seconds() - start < secs * 0.4) {
        long v = proc_status_kb(s.pid, "VmRSS");
        rss_warm = v > rss_warm ? v : rss_warm;
        usleep(100 * 1000);
    }
    unsigned long ok = 0, errors = 0, cancelled = 0, delay_cancels = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ok += k[i].ok;
        errors += k[i].errors;
        cancelled += k[i].cancelled;
        delay_cancels += k[i].kind == 3 ? k[i].cancelled : 0;
        if (k[i].errors)
            fprintf(stderr, "soak client %d: %lu errors, last: %s\n", i, k[i].errors,
                    k[i].last_error);
    }
    /* Idle keep-alive connections and abandoned uploads time out (--idle-timeout 2s, counted in
     * whole seconds by libmicrohttpd): wait for every one of them to be gone before the /stats
     * read below, whose own connection is the one more allowed at the end. */
    double t_idle = now_seconds();
    while (count_sockets(s.pid) > fds_base && now_seconds() - t_idle < 8)
        usleep(20 * 1000);
    cJSON *j = settled_stats(h1(&s));
    long rss_end = proc_status_kb(s.pid, "VmRSS");
    int fds_end = count_sockets(s.pid);
    fprintf(stderr,
            "soak %.0f s: %lu ok, %lu errors, %lu client cancels; RSS %ld -> %ld KiB; sockets %d "
            "-> %d\n",
            secs, ok, errors, cancelled, rss_warm, rss_end, fds_base, fds_end);
    CHECK_INT(errors, 0);
    CHECK(ok > 100);
    CHECK(cancelled > 5);
    double requests = json_number(j, "requests"), answered = json_number(j, "answered"),
           cancels = json_number(j, "cancels");
    CHECK_INT(requests, answered + cancels);
    /* Clients that leave mid-delay are the server's cancels (some may have got their answer
     * just before leaving); libh2o drops a half-sent body before any request exists. */
    CHECK(cancels >= (double)delay_cancels * 0.5);
    CHECK_INT(json_number(j, "in_flight"), 0);
    CHECK_INT(json_number(j, "waiting"), 0);
    /* One descriptor more than the baseline: the /stats connection may still be open. */
    if (fds_end > fds_base + 1)
        CHECK_FAIL_("sockets: %d at the end, %d at the start", fds_end, fds_base);
    else
        check_passed++;
    /* SOAK_RSS_GROWTH, but never less than 1 MiB: below that it is the allocators' caches. */
    double allowed =
        (double)rss_warm * SOAK_RSS_GROWTH > 1024 ? (double)rss_warm * SOAK_RSS_GROWTH : 1024;
    if ((double)(rss_end - rss_warm) > allowed)
        CHECK_FAIL_("RSS grew from %ld to %ld KiB after warm-up", rss_warm, rss_end);
    else
        check_passed++;
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"soak", soak, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_soak = {"soak", cases, sizeof cases / sizeof cases[0]};
