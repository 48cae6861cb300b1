/*
 * Integration cases against a real server binary: `itest BINARY CASE`. ctest registers every
 * case once per binary (tests/integration/CMakeLists.txt). Each case starts the binary on port 0,
 * talks to it with libcurl, and stops it with SIGTERM expecting exit status 0.
 */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

static const char *bin;
static char tmpdir[256];

#define START(s, ...)                                                                              \
    do {                                                                                           \
        static const char *const start_args_[] = {__VA_ARGS__, NULL};                              \
        if (server_start((s), bin, start_args_, NULL) != 0) {                                      \
            CHECK_FAIL_("%s", "server did not start");                                             \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static void stop_expect_clean(struct server *s)
{
    CHECK_INT(server_stop(s, 15000, NULL, 0), 0);
}

static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return path;
    fputs(text, f);
    fclose(f);
    return path;
}

/* Every built-in route answers exact bytes, status, Content-Type and Content-Length. */
static void routes_answer_exact_bytes(void)
{
    struct server s;
    struct reply r;
    char h[256];
    START(&s, "--delay", "20ms");

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
    CHECK_STR(reply_header(&r, "Server-Timing", h, sizeof h), "delay;dur=20");
    http_request(s.port, "POST", "/test", "x", NULL, &r);
    CHECK_STR(reply_header(&r, "Allow", h, sizeof h), "GET, HEAD");
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK(reply_header(&r, "Server-Timing", h, sizeof h) == NULL);
    stop_expect_clean(&s);
}

/* One request on /test with --delay 300ms takes 300 ms. */
static void delay_alone_takes_its_time(void)
{
    struct server s;
    struct reply r;
    START(&s, "--delay", "300ms");
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_STR(r.body, "ok");
    if (r.seconds < 0.25 || r.seconds > 0.6)
        CHECK_FAIL_("one /test took %.3f s, want 0.25..0.6", r.seconds);
    else
        check_passed++;
    stop_expect_clean(&s);
}

/* 200 concurrent delayed requests all finish after about one delay, in the given model. */
static void concurrent_delays(const char *model)
{
    struct server s;
    long status[200];
    double secs[200];
    int ok[200];
    const char *args[] = {"--delay", "300ms", "--model", model, NULL};
    if (server_start(&s, bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    CHECK(strstr(s.startup, model) != NULL);
    http_concurrent(s.port, "/test", 200, status, secs, ok, "ok");
    unsigned good = 0, in_bounds = 0;
    double lo = 1e9, hi = 0;
    for (size_t i = 0; i < 200; i++) {
        good += status[i] == 200 && ok[i];
        in_bounds += secs[i] >= 0.25 && secs[i] <= 0.9;
        lo = secs[i] < lo ? secs[i] : lo;
        hi = secs[i] > hi ? secs[i] : hi;
    }
    CHECK_INT(good, 200);
    CHECK_INT(in_bounds, 200);
    if (in_bounds != 200)
        fprintf(stderr, "model %s: fastest %.3f s, slowest %.3f s\n", model, lo, hi);
    stop_expect_clean(&s);
}

struct bad_case {
    const char *args[8];
    const char *env[3];
    const char *want; /* substring of the one stderr line */
};

static void expect_refused(const struct bad_case *c, int want_status)
{
    char out[4096], err[4096];
    int rc = run_to_exit(bin, c->args, c->env, out, sizeof out, err, sizeof err);
    CHECK_INT(rc, want_status);
    if (!strstr(err, c->want))
        CHECK_FAIL_("stderr '%s' lacks '%s'", err, c->want);
    else
        check_passed++;
    /* One line, no more. */
    char *nl = strchr(err, '\n');
    CHECK(nl && nl[1] == '\0');
}

/* Each bad flag or value exits 2 before listening, with one line naming it. */
static void bad_flags_exit_2(void)
{
    static const struct bad_case cases[] = {
        {{"--port", "70000"}, {NULL}, "--port: '70000' is not a port"},
        {{"--port", "http"}, {NULL}, "--port: 'http' is not a port"},
        {{"--delay", "1sec"}, {NULL}, "--delay: bad duration '1sec'"},
        {{"--delay", "25h"}, {NULL}, "--delay: duration '25h' is over the 24h limit"},
        {{"--delay", "-5ms"}, {NULL}, "--delay: bad duration '-5ms'"},
        {{"--delay", "900ms..100ms"}, {NULL}, "--delay: uniform range"},
        {{"--delay", "2m", "--max-delay", "60s"}, {NULL}, "delay: up to 120000 ms is over"},
        {{"--threads", "0"}, {NULL}, "--threads: '0' is not a whole number from 1 to 1024"},
        {{"--model", "fork"}, {NULL}, "--model: unknown model 'fork'"},
        {{"--model", "select", "--max-connections", "5000"},
         {NULL},
         "max-connections: 5000 is more than --model select can hold (1000)"},
        {{"--max-body", "12X"}, {NULL}, "--max-body: '12X' is not a size"},
        {{"--grace", "soon"}, {NULL}, "--grace: 'soon' is not a duration"},
        {{"--log-level", "loud"}, {NULL}, "--log-level: unknown level 'loud'"},
        {{"--bogus"}, {NULL}, "unknown option '--bogus'"},
        {{"-x"}, {NULL}, "unknown option '-x'"},
        {{"--port"}, {NULL}, "--port: needs a value"},
        {{"stray"}, {NULL}, "unexpected argument 'stray'"},
        {{NULL}, {"SLOWSRV_DELAY=abc", NULL}, "SLOWSRV_DELAY: bad duration 'abc'"},
        {{NULL}, {"SLOWSRV_PORT=tcp://10.0.0.1:80", NULL}, "SLOWSRV_PORT: 'tcp://"},
        {{"--config", "/nonexistent/cfg.json"},
         {NULL},
         "/nonexistent/cfg.json: cannot read: No such file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_refused(&cases[i], 2);
}

/* Each bad config file exits 2 naming the file, the key and the reason. */
static void bad_config_exit_2(void)
{
    static const struct {
        const char *text, *want;
    } files[] = {
        {"{\"delay\": \"1sec\"}", "cfg.json: delay: bad duration '1sec'"},
        {"{\"delya\": 5}", "cfg.json: delya: unknown key"},
        {"{\"port\": 8080,\n \"delay\": }", "cfg.json:2: malformed JSON"},
        {"{\"port\": [1]}", "cfg.json: port: must be a string or a number"},
        {"[1, 2]", "cfg.json: the config must be a JSON object"},
        {"{\"threads\": 2.5}", "cfg.json: threads: '2.5' is not a whole number"},
        {"{\"model\": \"select\", \"max-connections\": 20000}",
         "max-connections: 20000 is more than --model select can hold"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct bad_case c = {{"--config", NULL}, {NULL}, files[i].want};
        c.args[1] = write_file("cfg.json", files[i].text);
        expect_refused(&c, 2);
        c.args[0] = "--check-config";
        expect_refused(&c, 2);
    }
}

/* --check-config on a good file prints "<file>: ok" and exits 0. */
static void check_config_accepts_good_file(void)
{
    char out[4096], err[4096];
    const char *path = write_file("good.json", "{\"delay\": \"250ms\", \"port\": 9090, "
                                               "\"model\": \"poll\", \"threads\": 2}");
    const char *args[] = {"--check-config", path, NULL};
    CHECK_INT(run_to_exit(bin, args, NULL, out, sizeof out, err, sizeof err), 0);
    char want[600];
    snprintf(want, sizeof want, "%s: ok\n", path);
    CHECK_STR(out, want);
    CHECK_STR(err, "");
}

static void expect_timing(const char *const *args, const char *const *env, const char *want)
{
    struct server s;
    struct reply r;
    char h[64];
    if (server_start(&s, bin, args, env) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_STR(reply_header(&r, "Server-Timing", h, sizeof h), want);
    stop_expect_clean(&s);
}

/* defaults < config file < SLOWSRV_* environment < flags. */
static void precedence_file_env_flags(void)
{
    const char *path = write_file("prec.json", "{\"delay\": \"70ms\"}");
    const char *file_only[] = {"--config", path, NULL};
    const char *file_flag[] = {"--config", path, "--delay", "30ms", NULL};
    const char *env[] = {"SLOWSRV_DELAY=50ms", NULL};
    char envcfg[600];
    snprintf(envcfg, sizeof envcfg, "SLOWSRV_CONFIG=%s", path);
    const char *env_file[] = {envcfg, NULL};
    const char *none[] = {NULL};

    expect_timing(file_only, NULL, "delay;dur=70");
    expect_timing(file_only, env, "delay;dur=50");
    expect_timing(file_flag, env, "delay;dur=30");
    expect_timing(none, env_file, "delay;dur=70");
    expect_timing(none, NULL, "delay;dur=1000");
}

/* A port in use: one clear line and exit status 1. */
static void port_in_use_exits_1(void)
{
    struct server s;
    char port[16];
    START(&s, "--delay", "0");
    snprintf(port, sizeof port, "%u", s.port);
    struct bad_case c = {{"--port", port}, {NULL}, "Address already in use"};
    expect_refused(&c, 1);
    stop_expect_clean(&s);
}

static void version_and_help(void)
{
    char out[8192], err[4096];
    const char *v[] = {"--version", NULL};
    const char *h[] = {"--help", NULL};
    CHECK_INT(run_to_exit(bin, v, NULL, out, sizeof out, err, sizeof err), 0);
    CHECK(strncmp(out, "slowsrv 0.1.0 (engine ", 22) == 0);
    CHECK_INT(run_to_exit(bin, h, NULL, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "--max-connections N") != NULL);
    CHECK(strstr(out, "Exit status: 0 ok; 1 cannot listen") != NULL);
}

struct load {
    unsigned port;
    size_t n;
    long status[100];
    double secs[100];
    int ok[100];
};

static void *run_load(void *arg)
{
    struct load *l = arg;
    http_concurrent(l->port, "/test", l->n, l->status, l->secs, l->ok, "ok");
    return NULL;
}

/* SIGTERM with 100 delayed requests in flight: all 100 get ok, then exit 0. */
static void sigterm_drains_delayed(const char *model)
{
    struct server s;
    struct load l;
    pthread_t th;
    const char *args[] = {"--delay", "1s", "--model", model, NULL};
    if (server_start(&s, bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    memset(&l, 0, sizeof l);
    l.port = s.port;
    l.n = 100;
    pthread_create(&th, NULL, run_load, &l);
    usleep(400 * 1000);
    double t0 = now_seconds();
    CHECK_INT(server_stop(&s, 10000, NULL, 0), 0);
    double took = now_seconds() - t0;
    pthread_join(th, NULL);
    unsigned good = 0;
    for (size_t i = 0; i < l.n; i++)
        good += l.status[i] == 200 && l.ok[i];
    CHECK_INT(good, 100);
    if (took > 3.0)
        CHECK_FAIL_("drain took %.2f s for 1 s delays", took);
}

static double json_number(const cJSON *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, "."))
        o = cJSON_GetObjectItemCaseSensitive(o, tok);
    return cJSON_IsNumber(o) ? o->valuedouble : -1;
}

/* 1000 clients that leave while waiting are counted as cancels; the server goes on serving and
 * (under the sanitizer build) exits without a leak. */
static void abandoned_waits_are_cancelled(void)
{
    struct server s;
    struct reply r;
    START(&s, "--delay", "500ms");
    size_t sent = abandon_requests(s.port, "/test", 1000, 300);
    CHECK_INT(sent, 1000);
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "ok");
    if (r.seconds > 1.5)
        CHECK_FAIL_("honest request took %.3f s beside abandoned ones", r.seconds);
    usleep(300 * 1000);
    http_request(s.port, "GET", "/stats", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(j != NULL);
    CHECK_INT(json_number(j, "cancels"), 1000);
    CHECK_INT(json_number(j, "routes./test.requests"), 1001);
    CHECK_INT(json_number(j, "routes./test.status.200"), 1);
    CHECK_INT(json_number(j, "waiting"), 0);
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* /stats counts what was asked, by route and status, and not itself or /healthz. */
static void stats_count_requests(void)
{
    struct server s;
    struct reply r;
    START(&s, "--delay", "0");
    for (int i = 0; i < 3; i++)
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
    http_request(s.port, "POST", "/echo", "abcde", NULL, &r);
    http_request(s.port, "GET", "/missing", NULL, NULL, &r);
    http_request(s.port, "GET", "/healthz", NULL, NULL, &r);
    http_request(s.port, "GET", "/stats", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    cJSON *j = cJSON_Parse(r.body);
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

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"routes_answer_exact_bytes", routes_answer_exact_bytes},
    {"delay_alone_takes_its_time", delay_alone_takes_its_time},
    {"bad_flags_exit_2", bad_flags_exit_2},
    {"bad_config_exit_2", bad_config_exit_2},
    {"check_config_accepts_good_file", check_config_accepts_good_file},
    {"precedence_file_env_flags", precedence_file_env_flags},
    {"port_in_use_exits_1", port_in_use_exits_1},
    {"version_and_help", version_and_help},
    {"abandoned_waits_are_cancelled", abandoned_waits_are_cancelled},
    {"stats_count_requests", stats_count_requests},
};

/* Cases run once per model: "<case>:<model>". */
static const struct {
    const char *name;
    void (*fn)(const char *model);
} model_cases[] = {
    {"concurrent_delays", concurrent_delays},
    {"sigterm_drains_delayed", sigterm_drains_delayed},
};

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: itest BINARY CASE\n");
        return 2;
    }
    bin = argv[1];
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_ALL);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/slowsrv-itest.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    int found = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(argv[2], cases[i].name) == 0) {
            cases[i].fn();
            found = 1;
        }
    }
    const char *colon = strchr(argv[2], ':');
    for (size_t i = 0; colon && i < sizeof model_cases / sizeof model_cases[0]; i++) {
        if (strlen(model_cases[i].name) == (size_t)(colon - argv[2]) &&
            strncmp(argv[2], model_cases[i].name, (size_t)(colon - argv[2])) == 0) {
            model_cases[i].fn(colon + 1);
            found = 1;
        }
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    curl_global_cleanup();
    if (!found) {
        fprintf(stderr, "itest: unknown case '%s'\n", argv[2]);
        return 2;
    }
    return CHECK_DONE();
}
