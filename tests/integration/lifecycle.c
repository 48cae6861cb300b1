/*
 * Cases on a server's life around its answers: --version and --help, refused flags and configs
 * with their exit status, config precedence, a port in use, stopping with work in flight (in
 * every thread model), the example configs, and systemd's notify and socket activation.
 */
#include "itest.h"

#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* --version names the program, its version and its engine; --help lists the options and the
 * exit statuses. */
static void version_and_help(const struct itest_env *env)
{
    char out[8192], err[4096];
    const char *v[] = {"--version", NULL};
    const char *h[] = {"--help", NULL};
    CHECK_INT(run_to_exit(env->bin, v, NULL, out, sizeof out, err, sizeof err), 0);
    /* The engine records are chosen by the "(engine ...)" of this very line: the name of the
     * program ties it to the binary. */
    char want[64], name[256];
    snprintf(name, sizeof name, "%s", env->bin);
    CHECK_STR(basename(name), env->caps->program);
    snprintf(want, sizeof want, "%s 0.1.0 (engine %s, lib", env->caps->program, env->caps->name);
    CHECK(strncmp(out, want, strlen(want)) == 0);
    CHECK_INT(run_to_exit(env->bin, h, NULL, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "--max-connections N") != NULL);
    CHECK(strstr(out, "Exit status: 0 ok; 1 cannot listen") != NULL);
}

/* Each bad flag or value exits 2 before listening, with one line naming it. */
static void bad_flags_exit_2(const struct itest_env *env)
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
        {{"--tls-cert", "/tmp/c.pem"}, {NULL}, "tls-cert: needs --tls-key too"},
        {{"--tls-key", "/tmp/k.pem"}, {NULL}, "tls-key: needs --tls-cert too"},
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
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct bad_case c = cases[i];
        /* slowsrv-h2o refuses any model but its event loop before looking at the limit. */
        if (!engine_has_model(env->caps, "select") && strstr(c.want, "--model select"))
            c.want = "model: slowsrv-h2o runs event loops only; 'select' needs slowsrv";
        expect_refused(env, &c, 2);
    }
}

/* Each bad config file exits 2 naming the file, the key and the reason. */
static void bad_config_exit_2(const struct itest_env *env)
{
    static const struct {
        const char *text, *want;
    } files[] = {
        {"{\"delay\": \"1sec\"}", "cfg.json: delay: bad duration '1sec'"},
        {"{\"delya\": 5}", "cfg.json: delya: unknown key"},
        {"{\"port\": 8080,\n \"delay\": }", "cfg.json:2: malformed JSON"},
        {"{\"port\": [1]}", "cfg.json: port: must be a string, a number or a boolean"},
        {"[1, 2]", "cfg.json: the config must be a JSON object"},
        {"{\"threads\": 2.5}", "cfg.json: threads: '2.5' is not a whole number"},
        {"{\"model\": \"select\", \"max-connections\": 20000}",
         "max-connections: 20000 is more than --model select can hold"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct bad_case c = {{"--config", NULL}, {NULL}, files[i].want};
        if (!engine_has_model(env->caps, "select") && strstr(c.want, "--model select"))
            c.want = "model: slowsrv-h2o runs event loops only";
        c.args[1] = write_file(env, "cfg.json", files[i].text);
        expect_refused(env, &c, 2);
        c.args[0] = "--check-config";
        expect_refused(env, &c, 2);
    }
}

/* --check-config on a good file prints "<file>: ok" and exits 0. */
static void check_config_accepts_good_file(const struct itest_env *env)
{
    char out[4096], err[4096];
    const char *path = write_file(env, "good.json",
                                  "{\"delay\": \"250ms\", \"port\": 9090, "
                                  "\"max-body\": \"64M\", \"threads\": 2}");
    const char *args[] = {"--check-config", path, NULL};
    CHECK_INT(run_to_exit(env->bin, args, NULL, out, sizeof out, err, sizeof err), 0);
    char want[600];
    snprintf(want, sizeof want, "%s: ok\n", path);
    CHECK_STR(out, want);
    CHECK_STR(err, "");
}

static void expect_timing(const struct itest_env *env, const char *const *args,
                          const char *const *envs, const char *want)
{
    struct server s;
    struct reply r;
    char h[64];
    if (server_start(&s, env->bin, args, envs) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/test", NULL, NULL, &r);
    CHECK_STR(reply_header(&r, "Server-Timing", h, sizeof h), want);
    stop_expect_clean(&s);
}

/* defaults < config file < SLOWSRV_* environment < flags. */
static void precedence_file_env_flags(const struct itest_env *env)
{
    const char *path = write_file(env, "prec.json", "{\"delay\": \"70ms\"}");
    const char *file_only[] = {"--config", path, NULL};
    const char *file_flag[] = {"--config", path, "--delay", "30ms", NULL};
    const char *env_delay[] = {"SLOWSRV_DELAY=50ms", NULL};
    char envcfg[600];
    snprintf(envcfg, sizeof envcfg, "SLOWSRV_CONFIG=%s", path);
    const char *env_file[] = {envcfg, NULL};
    const char *none[] = {NULL};

    expect_timing(env, file_only, NULL, "delay;dur=70");
    expect_timing(env, file_only, env_delay, "delay;dur=50");
    expect_timing(env, file_flag, env_delay, "delay;dur=30");
    expect_timing(env, none, env_file, "delay;dur=70");
    expect_timing(env, none, NULL, "delay;dur=1000");
}

/* A port in use: one clear line and exit status 1. */
static void port_in_use_exits_1(const struct itest_env *env)
{
    struct server s;
    char port[16];
    START(env, &s, "--delay", "0");
    snprintf(port, sizeof port, "%u", s.port);
    struct bad_case c = {{"--port", port}, {NULL}, "Address already in use"};
    expect_refused(env, &c, 1);
    stop_expect_clean(&s);
}

struct load {
    unsigned port;
    const char *path; /* NULL: /test */
    size_t n;
    long status[100];
    double secs[100];
    int ok[100];
};

static void *run_load(void *arg)
{
    struct load *l = arg;
    http_concurrent(l->port, l->path ? l->path : "/test", l->n, l->status, l->secs, l->ok, "ok");
    return NULL;
}

/* In every thread model a drip paces the body, and SIGTERM cuts drips that outlast --grace
 * (their clients get a short body) and exits 0 on time. */
static void drip_across_stop(const struct itest_env *env)
{
    const char *model = env->model;
    struct server s;
    struct reply r;
    struct load l;
    pthread_t th;
    const char *args[] = {"--delay", "0", "--grace", "500ms", "--model", model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    http_request(s.port, "GET", "/echo?drip=2,300ms", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    if (r.seconds < 0.3 || r.seconds > 0.3 + LONE_SLACK || r.body_writes != 2)
        CHECK_FAIL_("drip=2,300ms: %.3f s in %u pieces", r.seconds, r.body_writes);
    memset(&l, 0, sizeof l);
    l.port = s.port;
    l.path = "/test?drip=2,5s";
    l.n = 3;
    pthread_create(&th, NULL, run_load, &l);
    CHECK_INT(await_stat(h1(&s), "in_flight", 3, 5), 3);
    double t0 = now_seconds();
    CHECK_INT(server_stop(&s, 10000, NULL, 0), 0);
    double took = now_seconds() - t0;
    pthread_join(th, NULL);
    for (size_t i = 0; i < l.n; i++) {
        CHECK_INT(l.status[i], 200);
        CHECK_INT(l.ok[i], 0); /* cut: "o" of "ok" at most */
    }
    if (took > 2.0)
        CHECK_FAIL_("stop with drips in flight took %.2f s (grace 500 ms)", took);
}

/* SIGTERM with 100 delayed requests in flight: all 100 get ok, then exit 0. */
static void sigterm_drains_delayed(const struct itest_env *env)
{
    const char *model = env->model;
    struct server s;
    struct load l;
    pthread_t th;
    const char *args[] = {"--delay", "1s", "--model", model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    memset(&l, 0, sizeof l);
    l.port = s.port;
    l.n = 100;
    pthread_create(&th, NULL, run_load, &l);
    CHECK_INT(await_stat(h1(&s), "waiting", 100, 5), 100);
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

/* Every example config in config/ passes --check-config, and the realistic one serves. */
static void example_configs_check(const struct itest_env *env)
{
    static const char *const files[] = {"spring-200-workers.json", "upload-gateway.json",
                                        "ok-echo.json", "realistic-api.json"};
    const char *dir = getenv("SLOWSRV_EXAMPLES");
    char path[600], out[4096], err[4096], want[700];
    if (!dir) {
        CHECK_FAIL_("%s", "SLOWSRV_EXAMPLES (the config/ directory) is not set");
        return;
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        const char *args[] = {"--check-config", path, NULL};
        CHECK_INT(run_to_exit(env->bin, args, NULL, out, sizeof out, err, sizeof err), 0);
        snprintf(want, sizeof want, "%s: ok\n", path);
        CHECK_STR(out, want);
    }
    struct server s;
    struct reply r;
    snprintf(path, sizeof path, "%s/realistic-api.json", dir);
    const char *args[] = {"--config", path, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    /* Seeded (seed 1): the same answers on every run and on both binaries. */
    static const char *const orders_timing[3] = {"delay;dur=289.195", "delay;dur=188.229",
                                                 "delay;dur=221.574"};
    char h[64];
    for (int i = 0; i < 3; i++) {
        http_request(s.port, "GET", "/api/health", NULL, NULL, &r);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body, "{\"status\": \"up\"}");
        http_request(s.port, "POST", "/api/orders", "{}", NULL, &r);
        CHECK_INT(r.status, 201);
        CHECK_STR(r.body, "{\"id\": 42, \"status\": \"created\"}");
        CHECK_STR(reply_header(&r, "Server-Timing", h, sizeof h), orders_timing[i]);
        CHECK_STR(reply_header(&r, "Cache-Control", h, sizeof h), "no-store");
    }
    http_request(s.port, "GET", "/api/orders/42", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(reply_header(&r, "Server-Timing", h, sizeof h), "delay;dur=10");
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./api/orders.status.201"), 3);
    CHECK_INT(json_number(j, "routes./api/health.status.200"), 3);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* Type=notify: READY=1 (with a STATUS line) once listening, STOPPING=1 on SIGTERM. */
static void systemd_notify_ready_and_stopping(const struct itest_env *env)
{
    struct server s;
    char path[100], notify_env[128], msg[512];
    snprintf(path, sizeof path, "%.80s/notify", env->tmpdir);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    CHECK_INT(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    snprintf(notify_env, sizeof notify_env, "NOTIFY_SOCKET=%s", path);
    const char *envs[] = {notify_env, NULL};
    const char *args[] = {"--delay", "0", NULL};
    if (server_start(&s, env->bin, args, envs) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        close(fd);
        return;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    CHECK_INT(poll(&pfd, 1, 5000), 1);
    ssize_t n = recv(fd, msg, sizeof msg - 1, MSG_DONTWAIT);
    msg[n > 0 ? n : 0] = '\0';
    char want[128];
    snprintf(want, sizeof want, "READY=1\nSTATUS=listening on http://127.0.0.1:%u", s.port);
    CHECK_STR(msg, want);
    kill(s.pid, SIGTERM);
    CHECK_INT(poll(&pfd, 1, 5000), 1);
    n = recv(fd, msg, sizeof msg - 1, MSG_DONTWAIT);
    msg[n > 0 ? n : 0] = '\0';
    CHECK_STR(msg, "STOPPING=1");
    stop_expect_clean(&s);
    close(fd);
}

/* Socket activation: started by systemd-socket-activate, the server serves on the socket it is
 * handed (with several loops sharing it). */
static void socket_activation_serves(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    const char *args[] = {"--delay", "20ms", "--threads", "2", NULL};
    if (server_start_activated(&s, env->bin, args) != 0) {
        CHECK_FAIL_("%s", "server did not start under systemd-socket-activate");
        return;
    }
    for (int i = 0; i < 20; i++) {
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
        CHECK_STR(r.body, "ok");
    }
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"version_and_help", version_and_help, ITEST_PLAIN, 0},
    {"bad_flags_exit_2", bad_flags_exit_2, ITEST_PLAIN, 0},
    {"bad_config_exit_2", bad_config_exit_2, ITEST_PLAIN, 0},
    {"check_config_accepts_good_file", check_config_accepts_good_file, ITEST_PLAIN, 0},
    {"precedence_file_env_flags", precedence_file_env_flags, ITEST_PLAIN, 0},
    {"port_in_use_exits_1", port_in_use_exits_1, ITEST_PLAIN, 0},
    {"drip_across_stop", drip_across_stop, ITEST_PER_MODEL, 0},
    {"sigterm_drains_delayed", sigterm_drains_delayed, ITEST_PER_MODEL, 0},
    {"example_configs_check", example_configs_check, ITEST_PLAIN, 0},
    {"systemd_notify_ready_and_stopping", systemd_notify_ready_and_stopping, ITEST_PLAIN, 0},
    {"socket_activation_serves", socket_activation_serves, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_lifecycle = {"lifecycle", cases,
                                                  sizeof cases / sizeof cases[0]};
