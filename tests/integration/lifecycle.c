/*
 * Cases on a server's life around its answers: --version and --help, refused flags and configs
 * with their exit status, config precedence, a port in use, stopping with work in flight (in
 * every thread model), the example configs, and systemd's notify and socket activation.
 */
#include "itest.h"

#include <dirent.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
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
        {{NULL}, {"SLOWSRV_DELAY=2m", NULL}, "SLOWSRV_DELAY: delay: up to 120000 ms is over"},
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
        {"{\"delay\": \"2m\"}", "cfg.json: delay: up to 120000 ms is over --max-delay 60000 ms"},
        {"{\"delay\": \"1s\", \"delay\": \"2s\"}", "cfg.json: delay: given twice; keep one"},
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
    CHECK_STR(reply_timing(&r, h, sizeof h), want);
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

/* A misspelt SLOWSRV_ variable is not silently ignored: one warning names it and the nearest
 * option's variable, and the server runs with its default. */
static void unknown_environment_is_warned(const struct itest_env *env)
{
    struct server s;
    char log[4096];
    const char *args[] = {"--delay", "0", NULL};
    const char *envs[] = {"SLOWSRV_DEALY=5s", "SLOWSRV_ZZZZZZZZZZ=1", NULL};
    if (server_start(&s, env->bin, args, envs) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    answers_within(s.port, "/test", "ok", 0, LONE_SLACK);
    CHECK_INT(server_stop(&s, 5000, log, sizeof log), 0);
    CHECK(strstr(log, "warn: SLOWSRV_DEALY is not an option's variable: ignored (did you mean "
                      "SLOWSRV_DELAY?)") != NULL);
    CHECK(strstr(log, "warn: SLOWSRV_ZZZZZZZZZZ is not an option's variable: ignored\n") != NULL);
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
    const char *want; /* the body ok[] looks for; NULL: "ok" */
    size_t n;
    long status[100];
    double secs[100];
    int ok[100];
};

static void *run_load(void *arg)
{
    struct load *l = arg;
    http_concurrent(l->port, l->path ? l->path : "/test", l->n, l->status, l->secs, l->ok,
                    l->want ? l->want : "ok");
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

/* Every example config in config/ (each *.json there, the five the README lists among them)
 * passes --check-config, and the realistic one serves. */
static void example_configs_check(const struct itest_env *env)
{
    static const char *const files[] = {"spring-200-workers.json",  "bounded-queue-503.json",
                                        "upload-gateway.json",      "ok-echo.json",
                                        "realistic-api.json",       "scenario-brownout.json",
                                        "scenario-error-burst.json"};
    const char *dir = getenv("SLOWSRV_EXAMPLES");
    char path[600], out[4096], err[4096], want[700];
    unsigned listed = 0;
    if (!dir) {
        CHECK_FAIL_("%s", "SLOWSRV_EXAMPLES (the config/ directory) is not set");
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        CHECK_FAIL_("cannot list %s", dir);
        return;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const char *args[] = {"--check-config", path, NULL};
        CHECK_INT(run_to_exit(env->bin, args, NULL, out, sizeof out, err, sizeof err), 0);
        snprintf(want, sizeof want, "%s: ok\n", path);
        CHECK_STR(out, want);
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
            listed += strcmp(e->d_name, files[i]) == 0;
    }
    closedir(d);
    CHECK_INT(listed, sizeof files / sizeof files[0]);
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
        CHECK_STR(reply_timing(&r, h, sizeof h), orders_timing[i]);
        CHECK_STR(reply_header(&r, "Cache-Control", h, sizeof h), "no-store");
    }
    /* Templates: any order id, any user's orders, and the wildcard's 404 for the rest of /api. */
    http_request(s.port, "GET", "/api/orders/42", NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=10");
    http_request(s.port, "GET", "/api/orders/7", NULL, NULL, &r);
    CHECK_STR(r.body, "{\"id\": 42, \"status\": \"shipped\"}");
    http_request(s.port, "GET", "/api/users/3/orders", NULL, NULL, &r);
    CHECK_STR(r.body, "[{\"id\": 42, \"status\": \"shipped\"}]");
    http_request(s.port, "GET", "/api/nope/1", NULL, NULL, &r);
    CHECK_INT(r.status, 404);
    CHECK_STR(r.body, "{\"error\": \"not found\"}");
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "routes./api/orders.status.201"), 3);
    CHECK_INT(json_number(j, "routes./api/health.status.200"), 3);
    CHECK_INT(json_number(j, "routes./api/orders/{id}.requests"), 2);
    CHECK_INT(json_number(j, "routes./api/users/{id}/orders.requests"), 1);
    CHECK_INT(json_number(j, "routes./api/*.status.404"), 1);
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

/* SIGINT drains as SIGTERM does: 20 delayed requests in flight all get ok, the drain line names
 * the signal, and SIGINT alone makes the server exit 0. */
static void sigint_drains_delayed(const struct itest_env *env)
{
    struct server s;
    struct load l;
    pthread_t th;
    char log[8192], want[256];
    START(env, &s, "--delay", "1s");
    memset(&l, 0, sizeof l);
    l.port = s.port;
    l.n = 20;
    pthread_create(&th, NULL, run_load, &l);
    CHECK_INT(await_stat(h1(&s), "waiting", 20, 5), 20);
    double t0 = now_seconds();
    CHECK_INT(server_stop_with(&s, SIGINT, 10000, log, sizeof log), 0);
    double took = now_seconds() - t0;
    pthread_join(th, NULL);
    unsigned good = 0;
    for (size_t i = 0; i < l.n; i++)
        good += l.status[i] == 200 && l.ok[i];
    CHECK_INT(good, 20);
    snprintf(want, sizeof want, "%s: info: Interrupt: draining for up to 5000 ms\n",
             env->caps->program);
    if (!strstr(log, want))
        CHECK_FAIL_("stderr after SIGINT lacks '%s': '%s'", want, log);
    else
        check_passed++;
    if (took > 3.0)
        CHECK_FAIL_("drain took %.2f s for 1 s delays", took);
}

/* The startup line, exactly, in every thread model of the engine, with --threads 3: the
 * program, its version, the URL with the real port, the engine, the model and the threads. */
static void startup_line_names_engine_model_threads(const struct itest_env *env)
{
    for (size_t m = 0; env->caps->models[m]; m++) {
        const char *model = env->caps->models[m];
        const char *args[] = {"--threads", "3", "--model", model, "--delay", "0", NULL};
        struct server s;
        struct reply r;
        char want[256];
        if (server_start(&s, env->bin, args, NULL) != 0) {
            CHECK_FAIL_("--model %s: server did not start", model);
            continue;
        }
        snprintf(want, sizeof want,
                 "%s 0.1.0 listening on http://127.0.0.1:%u (engine=%s model=%s threads=3)",
                 env->caps->program, s.port, env->caps->name, model);
        /* thread-per-connection has no loops for --threads to size: the number it shows there
         * is not part of the contract. */
        if (strcmp(model, "thread-per-connection") == 0)
            want[strlen(want) - strlen("3)")] = '\0';
        if (strncmp(s.startup, want, strlen(want)) != 0 ||
            (strcmp(model, "thread-per-connection") != 0 && strcmp(s.startup, want) != 0))
            CHECK_FAIL_("startup line '%s', want '%s'", s.startup, want);
        else
            check_passed++;
        /* The port it names is the one it serves. */
        http_request(s.port, "GET", "/healthz", NULL, NULL, &r);
        CHECK_INT(r.status, 200);
        stop_expect_clean(&s);
    }
}

/* --check-config FILE validates the environment and the flags given with it as well as FILE: a
 * bad value there, or a combination of the three that does not hold, is refused like at start
 * (exit 2, one line naming it, nothing on stdout); a good one prints "FILE: ok". */
static void check_config_validates_env_and_flags(const struct itest_env *env)
{
    static const struct {
        const char *args[3];
        const char *env[2];
        int status;
        const char *want; /* in the one line on stderr, for status 2 ("FILE" names the file) */
    } cases[] = {
        {{NULL}, {NULL}, 0, NULL},
        {{"--threads", "2"}, {"SLOWSRV_WORKERS=4"}, 0, NULL},
        {{NULL}, {"SLOWSRV_DELAY=abc"}, 2, "SLOWSRV_DELAY: bad duration 'abc'"},
        {{NULL},
         {"SLOWSRV_MAX_DELAY=1m"},
         2,
         "FILE: delay: up to 120000 ms is over --max-delay 60000 ms"},
        {{"--threads", "0"}, {NULL}, 2, "--threads: '0' is not a whole number from 1 to 1024"},
        {{"--bogus"}, {NULL}, 2, "unknown option '--bogus'"},
        {{"--max-delay", "90s"},
         {NULL},
         2,
         "FILE: delay: up to 120000 ms is over --max-delay 90000 ms"},
        {{"--queue", "5"}, {NULL}, 2, "queue: needs --workers"},
    };
    char path[600], out[4096], err[4096], want[700];
    /* Good alone: a 2 min delay under a 3 min ceiling. */
    snprintf(path, sizeof path, "%s",
             write_file(env, "cfg.json", "{\"delay\": \"2m\", \"max-delay\": \"3m\"}"));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[6] = {"--check-config", path};
        for (size_t a = 0; a < 3 && cases[i].args[a]; a++)
            args[2 + a] = cases[i].args[a];
        int rc = run_to_exit(env->bin, args, cases[i].env, out, sizeof out, err, sizeof err);
        CHECK_INT(rc, cases[i].status);
        if (cases[i].status == 0) {
            snprintf(want, sizeof want, "%s: ok\n", path);
            CHECK_STR(out, want);
            CHECK_STR(err, "");
        } else {
            if (strncmp(cases[i].want, "FILE: ", 6) == 0)
                snprintf(want, sizeof want, "%s: %s: %s", env->caps->program, path,
                         cases[i].want + 6);
            else
                snprintf(want, sizeof want, "%s: %s", env->caps->program, cases[i].want);
            char *nl = strchr(err, '\n');
            if (strncmp(err, want, strlen(want)) != 0 || !nl || nl[1] != '\0')
                CHECK_FAIL_("case %zu: stderr '%s', want one line starting '%s'", i, err, want);
            else
                check_passed++;
            CHECK_STR(out, "");
        }
    }
}

/* What shows that an option took effect (see option_cases). */
enum probe {
    PROBE_NONE,      /* nothing cheap: --check-config accepts it and refuses the bad value */
    PROBE_STARTUP,   /* the startup line contains `want` (NULL: "model=<value> ") */
    PROBE_ANSWER,    /* `path` answers `status`, with `want` in its body if not NULL; with `post`,
                        a POST of that many bytes (to /write: a `data` part of that size) */
    PROBE_HEADER,    /* GET `path` answers header `header` exactly `want` */
    PROBE_STAT,      /* /stats has `status` at `want` */
    PROBE_STOP_LOG,  /* after SIGTERM the server's stderr contains `want`, or, when `status` is 1,
                        is exactly `want` */
    PROBE_CUT,       /* a connection that sent `path` (and no more) is closed unanswered within
                        5 s (every default timeout is 30 s or more) */
    PROBE_RESET,     /* while `path` holds the only worker, GET /echo gets no answer */
    PROBE_LOGGED,    /* after GET /echo, the file named by the value holds its line */
    PROBE_PORT_BUSY, /* a port another server holds: exit 1, the line naming it */
    PROBE_REFUSED,   /* the value without `aux`: exit 2, the line containing `want` */
    PROBE_BACKLOG,   /* both listening sockets (aux: --threads 2) have the backlog `status` */
};

/* One option, with a value whose effect a user sees, a value it refuses, and how to tell. A
 * value "$NAME" stands for something made at run time (option_value). */
struct option_case {
    const char *name;     /* --name, config key "name", SLOWSRV_NAME */
    const char *value;    /* NULL: a flag without a value ("true" in a file or the environment) */
    const char *bad;      /* refused, with the form's own name in the line unless bad_says */
    const char *bad_says; /* the refusal names the option this way whatever the form */
    const char *aux[6];   /* flags the probe needs besides */
    enum probe probe;
    const char *path;
    const char *header;
    long status;
    size_t post;
    const char *want;
    const char *help_default; /* what --help gives in parentheses as its default, or NULL */
};

static const struct option_case option_cases[] = {
    {"port",
     "$BUSY_PORT",
     "http",
     NULL,
     {NULL},
     PROBE_PORT_BUSY,
     NULL,
     NULL,
     0,
     0,
     "Address already in use",
     "8080"},
    {"bind",
     "127.0.0.2",
     "a b",
     NULL,
     {NULL},
     PROBE_STARTUP,
     NULL,
     NULL,
     0,
     0,
     "listening on http://127.0.0.2:",
     "127.0.0.1"},
    {"delay",
     "7ms",
     "1sec",
     NULL,
     {NULL},
     PROBE_HEADER,
     "/test",
     "Server-Timing",
     0,
     0,
     "delay;dur=7",
     "1000"},
    {"threads",
     "3",
     "0",
     NULL,
     {NULL},
     PROBE_STARTUP,
     NULL,
     NULL,
     0,
     0,
     " threads=3)",
     "usable CPUs"},
    {"model", "$MODEL", "fork", NULL, {NULL}, PROBE_STARTUP, NULL, NULL, 0, 0, NULL, "epoll"},
    {"max-connections",
     "37",
     "0",
     NULL,
     {NULL},
     PROBE_STAT,
     NULL,
     NULL,
     37,
     0,
     "connections.max",
     "10000"},
    {"backlog", "5", "0", NULL, {"--threads", "2"}, PROBE_BACKLOG, NULL, NULL, 5, 0, NULL, "4096"},
    /* On /write: slowsrv lets a larger body through on / and /echo, slowsrv-h2o refuses it (an
     * open discrepancy, issue 13). */
    {"max-body", "100", "12X", NULL, {NULL}, PROBE_ANSWER, "/write", NULL, 413, 200, NULL, "1G"},
    {"max-delay",
     "1s",
     "soon",
     NULL,
     {NULL},
     PROBE_ANSWER,
     "/echo?delay=2s",
     NULL,
     400,
     0,
     "delay: 2000 ms is over --max-delay 1000 ms",
     "60s"},
    /* The README's draw, at a tenth of its scale: lognormal:200ms,0.5 --seed 7 gives 324.674. */
    {"seed",
     "7",
     "x",
     NULL,
     {"--delay", "lognormal:20ms,0.5"},
     PROBE_HEADER,
     "/test",
     "Server-Timing",
     0,
     0,
     "delay;dur=32.467",
     NULL},
    {"grace",
     "250ms",
     "soon",
     NULL,
     {NULL},
     PROBE_STOP_LOG,
     NULL,
     NULL,
     0,
     0,
     ": info: Terminated: draining for up to 250 ms\n",
     "5s"},
    {"idle-timeout", "200ms", "soon", NULL, {NULL}, PROBE_CUT, "", NULL, 0, 0, NULL, "60s"},
    {"header-timeout",
     "200ms",
     "soon",
     NULL,
     {NULL},
     PROBE_CUT,
     "GET /te",
     NULL,
     0,
     0,
     NULL,
     "30s"},
    {"max-request-line",
     "1K",
     "12X",
     NULL,
     {NULL},
     PROBE_ANSWER,
     "$LONG_TARGET",
     NULL,
     414,
     0,
     NULL,
     "8K"},
    {"max-header-size",
     "1K",
     "12X",
     NULL,
     {NULL},
     PROBE_ANSWER,
     "$BIG_HEADER",
     NULL,
     431,
     0,
     NULL,
     "8K"},
    {"max-requests",
     "1",
     "x",
     NULL,
     {NULL},
     PROBE_HEADER,
     "/echo",
     "Connection",
     0,
     0,
     "close",
     "0"},
    {"no-overrides",
     NULL,
     "maybe",
     NULL,
     {NULL},
     PROBE_ANSWER,
     "/echo?status=418",
     NULL,
     200,
     0,
     "OK",
     NULL},
    {"max-size",
     "100",
     "12X",
     NULL,
     {NULL},
     PROBE_ANSWER,
     "/echo?size=101",
     NULL,
     400,
     0,
     "'101' is not a byte count from 0 to --max-size 100",
     "16M"},
    {"error-rate",
     "1",
     "2",
     NULL,
     {NULL},
     PROBE_ANSWER,
     "/echo",
     NULL,
     503,
     0,
     "injected by --error-rate",
     "0"},
    {"error-status",
     "418",
     "99",
     NULL,
     {"--error-rate", "1"},
     PROBE_ANSWER,
     "/echo",
     NULL,
     418,
     0,
     "injected by --error-rate",
     "503"},
    {"workers", "3", "x", NULL, {NULL}, PROBE_STAT, NULL, NULL, 3, 0, "workers.size", "0"},
    {"queue",
     "2",
     "x",
     NULL,
     {"--workers", "1"},
     PROBE_REFUSED,
     NULL,
     NULL,
     0,
     0,
     "queue: needs --workers",
     "0"},
    {"overflow",
     "reset",
     "drop",
     NULL,
     {"--workers", "1", "--grace", "0"},
     PROBE_RESET,
     "/echo?delay=3s",
     NULL,
     0,
     0,
     NULL,
     "503"},
    {"log-level", "warn", "loud", NULL, {NULL}, PROBE_STOP_LOG, NULL, NULL, 1, 0, "", "info"},
    {"tls-cert",
     "$CERT",
     "/nonexistent.pem",
     "tls-cert: /nonexistent.pem: cannot read",
     {"--tls-key", "$KEY"},
     PROBE_STARTUP,
     NULL,
     NULL,
     0,
     0,
     "listening on https://127.0.0.1:",
     NULL},
    {"tls-key",
     "$KEY",
     "/nonexistent.pem",
     "tls-key: /nonexistent.pem: cannot read",
     {"--tls-cert", "$CERT"},
     PROBE_STARTUP,
     NULL,
     NULL,
     0,
     0,
     "listening on https://127.0.0.1:",
     NULL},
    {"access-log",
     "$ACCESS_LOG",
     "$TOO_LONG",
     NULL,
     {NULL},
     PROBE_LOGGED,
     NULL,
     NULL,
     0,
     0,
     NULL,
     "off"},
    {"spool-dir", "$TMPDIR", "$TOO_LONG", NULL, {NULL}, PROBE_NONE, NULL, NULL, 0, 0, NULL, "/tmp"},
    {"control",
     "127.0.0.1:0",
     "9090:x",
     NULL,
     {NULL},
     PROBE_STARTUP,
     NULL,
     NULL,
     0,
     0,
     " control=http://127.0.0.1:",
     "off"},
    {"control-token",
     "$TOKEN",
     "/nonexistent",
     "control-token: /nonexistent: cannot read",
     {"--control", "0"},
     PROBE_STARTUP,
     NULL,
     NULL,
     0,
     0,
     " (token)",
     "none"},
    {"scenario-start", "api", "later", NULL, {NULL}, PROBE_NONE, NULL, NULL, 0, 0, NULL, "start"},
};

enum form { FORM_FLAG, FORM_FILE, FORM_ENV };
static const char *const form_names[] = {"flag", "config file", "environment"};

/* What the "$NAME" values stand for in one run of option_cases. */
struct option_ctx {
    const struct itest_env *env;
    char busy_port[16], cert[300], key[300], access_log[300], long_target[1200];
    char big_header[1600], too_long[4200], token[300];
};

static const char *option_value(const struct option_ctx *x, const char *v)
{
    if (!v || v[0] != '$')
        return v;
    if (strcmp(v, "$BUSY_PORT") == 0)
        return x->busy_port;
    if (strcmp(v, "$MODEL") == 0)
        return engine_has_model(x->env->caps, "poll") ? "poll" : "epoll";
    if (strcmp(v, "$CERT") == 0)
        return x->cert;
    if (strcmp(v, "$KEY") == 0)
        return x->key;
    if (strcmp(v, "$ACCESS_LOG") == 0)
        return x->access_log;
    if (strcmp(v, "$TMPDIR") == 0)
        return x->env->tmpdir;
    if (strcmp(v, "$LONG_TARGET") == 0)
        return x->long_target;
    if (strcmp(v, "$TOO_LONG") == 0)
        return x->too_long;
    if (strcmp(v, "$TOKEN") == 0)
        return x->token;
    return v;
}

/* The arguments and environment of one run: the option `c` with `value` in form `f`, after
 * "--check-config FILE" when `check` (FILE: the config file of the file form, else an empty
 * object), and c->aux when `aux`. */
struct option_run {
    const char *args[16];
    const char *envs[2];
    char env_var[4300];
    char file[600];
};

static void option_run_make(struct option_run *r, const struct option_ctx *x,
                            const struct option_case *c, enum form f, const char *value, int check,
                            int aux)
{
    size_t n = 0;
    char text[4300];
    memset(r, 0, sizeof *r);
    if (f == FORM_FILE) {
        if (value)
            snprintf(text, sizeof text, "{\"%s\": \"%s\"}", c->name, value);
        else
            snprintf(text, sizeof text, "{\"%s\": true}", c->name);
        snprintf(r->file, sizeof r->file, "%s", write_file(x->env, "option.json", text));
    } else {
        snprintf(r->file, sizeof r->file, "%s", write_file(x->env, "empty.json", "{}"));
    }
    if (check) {
        r->args[n++] = "--check-config";
        r->args[n++] = r->file;
    } else if (f == FORM_FILE) {
        r->args[n++] = "--config";
        r->args[n++] = r->file;
    }
    if (f == FORM_FLAG) {
        snprintf(r->env_var, sizeof r->env_var, "--%s", c->name);
        r->args[n++] = r->env_var;
        if (value)
            r->args[n++] = value;
    } else if (f == FORM_ENV) {
        size_t k = (size_t)snprintf(r->env_var, sizeof r->env_var, "SLOWSRV_");
        for (const char *p = c->name; *p && k + 1 < sizeof r->env_var; p++)
            r->env_var[k++] = *p == '-' ? '_' : (char)(*p - ('a' <= *p && *p <= 'z' ? 32 : 0));
        snprintf(r->env_var + k, sizeof r->env_var - k, "=%s", value ? value : "true");
        r->envs[0] = r->env_var;
    }
    for (size_t i = 0; aux && i < 6 && c->aux[i]; i++)
        r->args[n++] = option_value(x, c->aux[i]);
    r->args[n] = NULL;
}

/* Reads from a new connection that sent `req` until the server closes it (at most 5 s). */
static void expect_cut(unsigned port, const char *req)
{
    char buf[256];
    int closed = 0;
    int fd = raw_connect(port);
    if (fd < 0 || send_all(fd, req, strlen(req)) != 0) {
        CHECK_FAIL_("%s", "cannot connect");
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t got = read_until_close(fd, buf, sizeof buf, 5000, &closed);
    close(fd);
    if (!closed || got != 0)
        CHECK_FAIL_("after '%s': %s, %zu bytes", req, closed ? "closed" : "open after 5 s", got);
    else
        check_passed++;
}

static void option_probe(const struct option_ctx *x, const struct option_case *c,
                         const struct option_run *run, const char *value)
{
    const struct itest_env *env = x->env;
    struct server s;
    struct reply r;
    char h[256], log[8192], out[4096], err[4096];
    if (c->probe == PROBE_NONE)
        return;
    if (c->probe == PROBE_PORT_BUSY || c->probe == PROBE_REFUSED) {
        int rc = run_to_exit(env->bin, run->args, run->envs, out, sizeof out, err, sizeof err);
        CHECK_INT(rc, c->probe == PROBE_PORT_BUSY ? 1 : 2);
        snprintf(h, sizeof h, "%s", c->want);
        if (c->probe == PROBE_PORT_BUSY)
            snprintf(h, sizeof h, "bind 127.0.0.1:%s: %s", x->busy_port, c->want);
        if (!strstr(err, h))
            CHECK_FAIL_("stderr '%s' lacks '%s'", err, h);
        else
            check_passed++;
        return;
    }
    if (server_start(&s, env->bin, run->args, run->envs) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    switch (c->probe) {
    case PROBE_STARTUP:
        if (c->want)
            snprintf(h, sizeof h, "%s", c->want);
        else
            snprintf(h, sizeof h, "model=%s ", value);
        if (!strstr(s.startup, h))
            CHECK_FAIL_("startup line '%s' lacks '%s'", s.startup, h);
        else
            check_passed++;
        break;
    case PROBE_ANSWER: {
        static char body[128];
        char header[1500];
        const char *headers[] = {header, NULL};
        memset(body, 'b', sizeof body - 1);
        body[c->post < sizeof body ? c->post : sizeof body - 1] = '\0';
        snprintf(header, sizeof header, "X-Pad: %01400d", 0);
        const char *path = strcmp(c->path, "$BIG_HEADER") == 0 ? "/echo" : option_value(x, c->path);
        if (strcmp(path, "/write") == 0) {
            const struct part parts[] = {{"token", NULL, "t", 0}, {"data", "d.bin", NULL, c->post}};
            http_upload(h1(&s), path, parts, 2, &r, 0);
        } else {
            http_request(s.port, c->post ? "POST" : "GET", path, c->post ? body : NULL,
                         strcmp(c->path, "$BIG_HEADER") == 0 ? headers : NULL, &r);
        }
        CHECK_INT(r.status, c->status);
        if (c->want && !strstr(r.body, c->want))
            CHECK_FAIL_("body '%s' lacks '%s'", r.body, c->want);
        break;
    }
    case PROBE_HEADER:
        http_request(s.port, "GET", c->path, NULL, NULL, &r);
        CHECK_STR(strcmp(c->header, "Server-Timing") == 0
                      ? reply_timing(&r, h, sizeof h)
                      : reply_header(&r, c->header, h, sizeof h),
                  c->want);
        break;
    case PROBE_STAT: {
        cJSON *j = settled_stats(h1(&s));
        CHECK_INT(json_number(j, c->want), c->status);
        cJSON_Delete(j);
        break;
    }
    case PROBE_CUT:
        expect_cut(s.port, c->path);
        break;
    case PROBE_RESET: {
        size_t sent = 0;
        int *fds = open_requests(s.port, c->path, 1, &sent);
        CHECK_INT(await_stat(h1(&s), "workers.active", 1, 5), 1);
        http_request(s.port, "GET", "/echo", NULL, NULL, &r);
        CHECK_INT(r.status, 0); /* the default, 503, is an answer */
        close_requests(fds, 1);
        break;
    }
    case PROBE_LOGGED:
        http_request(s.port, "GET", "/echo?from=option", NULL, NULL, &r);
        break;
    case PROBE_BACKLOG: {
        unsigned got[2] = {0};
        int n = listen_backlogs(s.port, got, 2);
        if (n != 2 || got[0] != (unsigned)c->status || got[1] != (unsigned)c->status)
            CHECK_FAIL_("%d listening sockets, backlogs %u, %u (want 2 with %ld)", n, got[0],
                        got[1], c->status);
        else
            check_passed++;
        break;
    }
    default:
        break;
    }
    CHECK_INT(server_stop(&s, 15000, log, sizeof log), 0);
    if (c->probe == PROBE_STOP_LOG) {
        if (c->status == 1 ? strcmp(log, c->want) != 0 : !strstr(log, c->want))
            CHECK_FAIL_("stderr after SIGTERM '%s', want %s '%s'", log,
                        c->status == 1 ? "exactly" : "a line with", c->want);
        else
            check_passed++;
    }
    if (c->probe == PROBE_LOGGED) {
        long n = read_text(x->access_log, log, sizeof log);
        if (n <= 0 || !strstr(log, "\"path\": \"/echo?from=option\""))
            CHECK_FAIL_("access log %s: '%s'", x->access_log, log);
        else
            check_passed++;
        unlink(x->access_log);
    }
}

static int make_cert(const struct itest_env *env, char *cert, char *key, size_t len)
{
    char cmd[1024];
    snprintf(cert, len, "%s/cert.pem", env->tmpdir);
    snprintf(key, len, "%s/key.pem", env->tmpdir);
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout '%s' -out '%s' -days 1 -subj /CN=127.0.0.1 2>/dev/null",
             key, cert);
    return system(cmd);
}

/* Every option works as a flag, as a key of the config file and as a SLOWSRV_* variable: in each
 * form --check-config accepts a good value and refuses a bad one naming it, and a server given
 * the good value shows its effect (a header, a status, a /stats figure, the startup line, its
 * log...) where a look costs little. */
static void every_option_three_ways(const struct itest_env *env)
{
    struct option_ctx x;
    struct server busy;
    memset(&x, 0, sizeof x);
    x.env = env;
    CHECK_INT(make_cert(env, x.cert, x.key, sizeof x.cert), 0);
    snprintf(x.access_log, sizeof x.access_log, "%s/access.log", env->tmpdir);
    snprintf(x.token, sizeof x.token, "%s/token", env->tmpdir);
    FILE *tf = fopen(x.token, "w");
    if (tf) {
        fputs("t0ken\n", tf);
        fclose(tf);
    }
    memcpy(x.long_target, "/echo?x=", 8);
    memset(x.long_target + 8, 'a', 1100);
    memset(x.too_long, 'd', sizeof x.too_long - 1);
    x.too_long[0] = '/';
    START(env, &busy, "--delay", "0");
    snprintf(x.busy_port, sizeof x.busy_port, "%u", busy.port);

    for (size_t i = 0; i < sizeof option_cases / sizeof option_cases[0]; i++) {
        const struct option_case *c = &option_cases[i];
        const char *value = option_value(&x, c->value);
        const char *bad = option_value(&x, c->bad);
        for (int f = FORM_FLAG; f <= FORM_ENV; f++) {
            struct option_run run;
            char out[4096], err[4096], want[4400];
            unsigned failed = check_failed;
            /* Accepted by --check-config. */
            option_run_make(&run, &x, c, (enum form)f, value, 1, 1);
            CHECK_INT(run_to_exit(env->bin, run.args, run.envs, out, sizeof out, err, sizeof err),
                      0);
            snprintf(want, sizeof want, "%s: ok\n", run.file);
            CHECK_STR(out, want);
            CHECK_STR(err, "");
            /* A bad value is refused, naming the option as the user wrote it; $TOO_LONG (over
             * 1023 bytes) in every form, the config file's "<file>: <key>: value is over 1023
             * bytes" included. */
            if (bad && !(f == FORM_FLAG && !c->value)) {
                option_run_make(&run, &x, c, (enum form)f, bad, 1, 1);
                CHECK_INT(
                    run_to_exit(env->bin, run.args, run.envs, out, sizeof out, err, sizeof err), 2);
                if (c->bad_says)
                    snprintf(want, sizeof want, "%s", c->bad_says);
                else if (f == FORM_FLAG)
                    snprintf(want, sizeof want, "%s: --%s: ", env->caps->program, c->name);
                else if (f == FORM_FILE)
                    snprintf(want, sizeof want, "%s: %s: %s: %s", env->caps->program, run.file,
                             c->name,
                             strcmp(c->bad, "$TOO_LONG") == 0 ? "value is over 1023 bytes\n" : "");
                else
                    snprintf(want, sizeof want, "%s: %.*s: ", env->caps->program,
                             (int)(strchr(run.env_var, '=') - run.env_var), run.env_var);
                char *nl = strchr(err, '\n');
                if (!strstr(err, want) || !nl || nl[1] != '\0')
                    CHECK_FAIL_("stderr '%.200s' is not one line with '%.200s'", err, want);
                else
                    check_passed++;
            }
            /* Its effect. */
            option_run_make(&run, &x, c, (enum form)f, value, 0, c->probe != PROBE_REFUSED);
            option_probe(&x, c, &run, value);
            if (check_failed > failed)
                fprintf(stderr, "  ^ option %s = '%.40s' as %s\n", c->name,
                        value ? value : "(flag)", form_names[f]);
        }
    }
    stop_expect_clean(&busy);
}

/* --help lists every option of option_cases (and no other) with the default it has. */
static void help_lists_every_option(const struct itest_env *env)
{
    static const char *const actions[] = {"config", "check-config", "help", "version"};
    const char *args[] = {"--help", NULL};
    char out[8192], err[1024], name[64];
    CHECK_INT(run_to_exit(env->bin, args, NULL, out, sizeof out, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof option_cases / sizeof option_cases[0]; i++) {
        const struct option_case *c = &option_cases[i];
        /* The option's own line: "  -x, --name ..." or "      --name ...". */
        snprintf(name, sizeof name, "--%s ", c->name);
        const char *line = NULL;
        for (const char *p = out; p && !line; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (strncmp(p, "  ", 2) == 0 && strlen(p) > 6 &&
                strncmp(p + 6, name, strlen(name)) == 0)
                line = p;
        if (!line) {
            CHECK_FAIL_("--help lacks %s", name);
            continue;
        }
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char want[64];
        snprintf(want, sizeof want, "(%s", c->help_default ? c->help_default : "");
        if (c->help_default && !memmem(line, len, want, strlen(want)))
            CHECK_FAIL_("--help: '%.*s' lacks the default '%s'", (int)len, line, want);
        else
            check_passed++;
    }
    /* Every option --help shows is one of the table (so a new one gets its three forms). */
    for (const char *p = out; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "  ", 2) != 0 || strlen(p) < 8 || strncmp(p + 6, "--", 2) != 0)
            continue;
        const char *opt = p + 8;
        size_t n = strcspn(opt, " \n");
        int known = 0;
        for (size_t i = 0; i < sizeof option_cases / sizeof option_cases[0]; i++)
            known |=
                strlen(option_cases[i].name) == n && strncmp(option_cases[i].name, opt, n) == 0;
        for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
            known |= strlen(actions[i]) == n && strncmp(actions[i], opt, n) == 0;
        if (!known)
            CHECK_FAIL_("--help shows --%.*s, which every_option_three_ways does not test", (int)n,
                        opt);
        else
            check_passed++;
    }
}

/* --log-level: info (the default) and debug show the info lines (the drain on SIGTERM and the
 * stop), warn and error hide them; the startup line is printed at every level. */
static void log_level_filters_info_lines(const struct itest_env *env)
{
    static const struct {
        const char *level; /* NULL: the default */
        int info;
    } cases[] = {{NULL, 1}, {"info", 1}, {"debug", 1}, {"warn", 0}, {"error", 0}};
    const char *p = env->caps->program;
    char info[256], log[8192], start[128];
    snprintf(info, sizeof info,
             "%s: info: Terminated: draining for up to 5000 ms\n%s: info: stopped\n", p, p);
    snprintf(start, sizeof start, "%s 0.1.0 listening on http://127.0.0.1:", p);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"--delay", "0", cases[i].level ? "--log-level" : NULL, cases[i].level,
                              NULL};
        struct server s;
        struct reply r;
        if (server_start(&s, env->bin, args, NULL) != 0) {
            CHECK_FAIL_("%s", "server did not start");
            continue;
        }
        CHECK(strncmp(s.startup, start, strlen(start)) == 0);
        http_request(s.port, "GET", "/echo", NULL, NULL, &r);
        CHECK_INT(server_stop(&s, 15000, log, sizeof log), 0);
        /* debug may add the HTTP library's own lines; the others are exact. */
        int ok = cases[i].info ? (cases[i].level && strcmp(cases[i].level, "debug") == 0
                                      ? strstr(log, info) != NULL
                                      : strcmp(log, info) == 0)
                               : strcmp(log, "") == 0;
        if (!ok)
            CHECK_FAIL_("--log-level %s: stderr after the startup line '%s'",
                        cases[i].level ? cases[i].level : "(default)", log);
        else
            check_passed++;
    }
}

/* Without --seed every run draws its own delays: two runs of 8 draws of 1us..2ms differ (the
 * chance that they agree is about 2000^-8), while two runs with the same --seed agree. */
static void seed_absent_draws_differ(const struct itest_env *env)
{
    char seq[4][8][64];
    for (int run = 0; run < 4; run++) {
        const char *args[] = {"--delay", "1us..2ms", run >= 2 ? "--seed" : NULL, "5", NULL};
        struct server s;
        struct reply r;
        if (server_start(&s, env->bin, args, NULL) != 0) {
            CHECK_FAIL_("%s", "server did not start");
            return;
        }
        for (int i = 0; i < 8; i++) {
            http_request(s.port, "GET", "/test", NULL, NULL, &r);
            const char *v = reply_timing(&r, seq[run][i], sizeof seq[run][i]);
            if (!v)
                snprintf(seq[run][i], sizeof seq[run][i], "(none)");
            CHECK(strncmp(seq[run][i], "delay;dur=", 10) == 0);
        }
        stop_expect_clean(&s);
    }
    int same = 1, seeded_same = 1, varied = 0;
    for (int i = 0; i < 8; i++) {
        same &= strcmp(seq[0][i], seq[1][i]) == 0;
        seeded_same &= strcmp(seq[2][i], seq[3][i]) == 0;
        varied |= strcmp(seq[0][i], seq[0][0]) != 0;
    }
    if (same)
        CHECK_FAIL_("two unseeded runs drew the same 8 delays (first: %s, last: %s)", seq[0][0],
                    seq[0][7]);
    else
        check_passed++;
    CHECK(varied);      /* the draws of one run are random at all */
    CHECK(seeded_same); /* and the comparison can tell equal sequences */
}

#define STOPPING_BODY "{\"error\": \"server stopping\", \"status\": 503}"

/* --grace cuts what still waits: 10 requests wait on a 5 s delay, SIGTERM with --grace 300ms,
 * and the server exits 0 once the grace time is over, long before the delay. With `workers`
 * (--workers 1 --queue 9), one of them waits on its delay and nine are queued for the worker.
 * Either way every client gets the one answer of a request the server gives up on, in every
 * model of both binaries: 503 {"error": "server stopping"}, on time; and the access log has one
 * line for each: 503, its delay 5000 ms, waited from the grace time to well before the delay
 * (a queued request has not begun its wait: 0). */
static void stop_cuts(const struct itest_env *env, int workers)
{
    struct server s;
    struct load l;
    pthread_t th;
    char alog[300], log[8192], want[256];
    static char text[65536];
    snprintf(alog, sizeof alog, "%s/access.log", env->tmpdir);
    const char *plain[] = {"--delay", "5s",      "--grace",  "300ms", "--access-log",
                           alog,      "--model", env->model, NULL};
    const char *pooled[] = {"--delay", "5s",      "--grace",  "300ms",     "--access-log",
                            alog,      "--model", env->model, "--workers", "1",
                            "--queue", "9",       NULL};
    if (server_start(&s, env->bin, workers ? pooled : plain, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    memset(&l, 0, sizeof l);
    l.port = s.port;
    l.n = 10;
    l.want = STOPPING_BODY;
    pthread_create(&th, NULL, run_load, &l);
    CHECK_INT(await_stat(h1(&s), "in_flight", 10, 5), 10);
    CHECK_INT(await_stat(h1(&s), "waiting", workers ? 1 : 10, 5), workers ? 1 : 10);
    if (workers)
        CHECK_INT(await_stat(h1(&s), "workers.queued", 9, 5), 9);
    static struct reply r; /* 64 KiB: not on the stack */
    http_request_to(h1(&s), "GET", "/stats", NULL, NULL, &r, NULL);
    cJSON *j = cJSON_Parse(r.body);
    CHECK_INT(json_number(j, "routes./test.requests"), 10);
    CHECK_INT(json_number(j, "answered"), 0);
    CHECK_INT(json_number(j, "cancels"), 0);
    cJSON_Delete(j);
    double t0 = now_seconds();
    CHECK_INT(server_stop(&s, 10000, log, sizeof log), 0);
    double took = now_seconds() - t0;
    pthread_join(th, NULL);
    /* The grace time is waited out in full (the requests are still active), and not much more. */
    if (took < 0.3 || took > 2.0)
        CHECK_FAIL_("stop took %.2f s with --grace 300ms and 5 s delays", took);
    else
        check_passed++;
    unsigned stopped = 0, on_time = 0;
    for (size_t i = 0; i < l.n; i++) {
        stopped += l.status[i] == 503 && l.ok[i];
        on_time += l.secs[i] >= 0.3 && l.secs[i] < 2.0;
    }
    CHECK_INT(stopped, 10);
    CHECK_INT(on_time, 10);
    snprintf(want, sizeof want,
             "%s: info: Terminated: draining for up to 300 ms\n%s: info: stopped\n",
             env->caps->program, env->caps->program);
    CHECK_STR(log, want);
    read_text(alog, text, sizeof text);
    unsigned lines = 0, cut = 0, queued = 0;
    /* Line by line without strtok: json_number uses it. */
    for (char *line = text, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        cJSON *a = cJSON_Parse(line);
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(a, "path");
        double waited = json_number(a, "waited_ms");
        int ours = cJSON_IsString(path) && strcmp(path->valuestring, "/test") == 0 &&
                   json_number(a, "status") == 503 && json_number(a, "delay_ms") == 5000;
        lines++;
        if (ours && waited >= 300 && waited < 4500)
            cut++;
        else if (ours && workers && waited == 0)
            queued++;
        else
            fprintf(stderr, "access-log line: %s\n", line);
        cJSON_Delete(a);
    }
    CHECK_INT(lines, 10);
    CHECK_INT(cut, workers ? 1 : 10);
    CHECK_INT(queued, workers ? 9 : 0);
}

static void grace_cuts_waiting_requests(const struct itest_env *env)
{
    stop_cuts(env, 0);
}

static void stop_answers_queued_requests(const struct itest_env *env)
{
    stop_cuts(env, 1);
}

/* --grace covers the queue for a worker too, whichever loop a request came in on: with
 * --threads 8, --workers 1 --queue 9 and 200 ms delays, SIGTERM while one request is served and
 * nine are queued lets all ten be served in turn (about 2 s), none answered "server stopping".
 * Ten connections over eight loops leave a loop idle: it must end without flushing the pools the
 * other loops still use. */
static void stop_serves_the_queue_within_grace(const struct itest_env *env)
{
    struct server s;
    struct load l;
    pthread_t th;
    char log[8192];
    const char *args[] = {"--threads", "8",         "--delay", "200ms",   "--grace",
                          "10s",       "--workers", "1",       "--queue", "9",
                          "--model",   env->model,  NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    memset(&l, 0, sizeof l);
    l.port = s.port;
    l.n = 10;
    pthread_create(&th, NULL, run_load, &l);
    CHECK_INT(await_stat(h1(&s), "workers.queued", 9, 5), 9);
    double t0 = now_seconds();
    CHECK_INT(server_stop(&s, 10000, log, sizeof log), 0);
    double took = now_seconds() - t0;
    pthread_join(th, NULL);
    unsigned served = 0;
    for (size_t i = 0; i < l.n; i++)
        served += l.status[i] == 200 && l.ok[i];
    CHECK_INT(served, 10);
    /* Nine more turns of 200 ms after the signal, one after the other. */
    if (took < 1.5 || took > 6.0)
        CHECK_FAIL_("stop took %.2f s for nine queued 200 ms requests", took);
    else
        check_passed++;
}

/* On SIGTERM, a connection that carries no request is closed at once (a kept-alive one between
 * requests, one opened but silent), and one whose request waits is answered within --grace with
 * Connection: close, on every model of both binaries (issue 15, item 11: a request sent on an
 * idle connection during the drain was served on some models and reset on others). */
static void stop_closes_idle_connections(const struct itest_env *env)
{
    struct server s;
    char buf[1024], log[8192];
    int closed;
    /* One loop: the idle connections share it with the waiting request (a loop with nothing
     * in flight would end at once and close them anyway). */
    const char *args[] = {"--grace", "5s", "--threads", "1", "--model", env->model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    int a = raw_connect(s.port), b = raw_connect(s.port), c = raw_connect(s.port);
    /* Longer than the 1.5 s the idle ones are given to close: the drain is still on then. */
    const char *wait = "GET /test?delay=2500ms HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(a, wait, strlen(wait));
    send_all(b, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", 31);
    struct timeval tv = {2, 0};
    setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = recv(b, buf, sizeof buf - 1, 0);
    CHECK(n > 12 && strncmp(buf, "HTTP/1.1 200", 12) == 0);
    CHECK_INT(await_stat(h1(&s), "waiting", 1, 3), 1);
    double t0 = now_seconds();
    kill(s.pid, SIGTERM);
    size_t got_b = read_until_close(b, buf, sizeof buf, 1500, &closed);
    if (got_b || !closed)
        CHECK_FAIL_("the idle kept-alive connection: %zu bytes, %s", got_b,
                    closed ? "closed" : "still open after 1.5 s");
    else
        check_passed++;
    size_t got_c = read_until_close(c, buf, sizeof buf, 1500, &closed);
    if (got_c || !closed)
        CHECK_FAIL_("the silent connection: %zu bytes, %s", got_c,
                    closed ? "closed" : "still open after 1.5 s");
    else
        check_passed++;
    if (now_seconds() - t0 > 1.0)
        CHECK_FAIL_("idle connections closed %.2f s after SIGTERM", now_seconds() - t0);
    else
        check_passed++;
    read_until_close(a, buf, sizeof buf, 4000, &closed);
    CHECK(strncmp(buf, "HTTP/1.1 200", 12) == 0 && strstr(buf, "\r\n\r\nok") != NULL);
    CHECK(strcasestr(buf, "\r\nConnection: close\r\n") != NULL);
    CHECK(closed);
    close(a);
    close(b);
    close(c);
    CHECK_INT(server_stop(&s, 10000, log, sizeof log), 0);
}

/* 1 if the process has exited (left a zombie for server_stop to collect), else 0. */
static int has_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* 1 if a new connection to port is refused, or closed without an answer to a GET /echo; 0 if it
 * is answered. */
static int new_connection_refused(unsigned port)
{
    static const char req[] = "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char buf[512];
    int closed = 0;
    int fd = raw_connect(port);
    if (fd < 0)
        return 1;
    send_all(fd, req, sizeof req - 1);
    size_t got = read_until_close(fd, buf, sizeof buf, 1000, &closed);
    close(fd);
    return got == 0 && closed;
}

/* SIGTERM stops accepting: while a delayed request drains (--grace 5s), new connections are
 * refused or closed unanswered, in every thread model, within 2 s of the signal and from then
 * on, with the server still running; the request in flight still gets its `ok`. */
static void sigterm_stops_accepting(const struct itest_env *env)
{
    struct server s;
    struct load l;
    pthread_t th;
    char log[8192], want[256];
    const char *args[] = {"--delay", "3s", "--grace", "5s", "--model", env->model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    answers_within(s.port, "/echo", "OK", 0, 1);
    memset(&l, 0, sizeof l);
    l.port = s.port;
    l.n = 1;
    pthread_create(&th, NULL, run_load, &l);
    CHECK_INT(await_stat(h1(&s), "waiting", 1, 5), 1);
    double t0 = now_seconds();
    kill(s.pid, SIGTERM);
    /* A connection made just before the signal may still be served, or reset as its listener
     * closes; then every listener is closed and connect() is refused. */
    int stopped = 0;
    while (!stopped && now_seconds() - t0 < 2.0) {
        int fd = raw_connect(s.port);
        stopped = fd < 0;
        if (fd >= 0)
            close(fd);
        else
            break;
        usleep(10 * 1000);
    }
    if (!stopped)
        CHECK_FAIL_("%s", "new connections still accepted 2 s after SIGTERM");
    else
        check_passed++;
    unsigned refused = 0;
    for (int i = 0; i < 5; i++) {
        usleep(50 * 1000);
        refused += (unsigned)new_connection_refused(s.port);
    }
    CHECK_INT(refused, 5);
    /* All of it while draining: the server had not exited yet. */
    CHECK_INT(has_exited(s.pid), 0);
    CHECK_INT(server_stop(&s, 10000, log, sizeof log), 0);
    pthread_join(th, NULL);
    CHECK_INT(l.status[0], 200);
    CHECK_INT(l.ok[0], 1);
    snprintf(want, sizeof want, "%s: info: Terminated: draining for up to 5000 ms\n",
             env->caps->program);
    if (!strstr(log, want))
        CHECK_FAIL_("stderr after SIGTERM '%s' lacks '%s'", log, want);
    else
        check_passed++;
}

/* The short flags act as their long forms: -h and -V print what --help and --version do; each
 * of -p, -b, -d, -t, -m and -c is refused with a bad value exactly as its long form is, and
 * takes effect with a good one. */
static void short_flags_act_as_long_ones(const struct itest_env *env)
{
    static const struct {
        const char *s, *l, *value;
        const char *says; /* in the refusal's one line: the long form */
    } bad[] = {
        {"-p", "--port", "http", "--port: 'http' is not a port"},
        {"-b", "--bind", "a b", "--bind: 'a b' is not an address"},
        {"-d", "--delay", "1sec", "--delay: bad duration '1sec'"},
        {"-t", "--threads", "0", "--threads: '0' is not a whole number"},
        {"-m", "--model", "fork", "--model: unknown model 'fork'"},
        {"-c", "--config", "/nonexistent/cfg.json", "/nonexistent/cfg.json: cannot read"},
    };
    char out[8192], err[4096], out2[8192], err2[4096], h[64], want[256];
    static const char *const pairs[][2] = {{"-h", "--help"}, {"-V", "--version"}};
    for (size_t i = 0; i < 2; i++) {
        const char *sa[] = {pairs[i][0], NULL}, *la[] = {pairs[i][1], NULL};
        CHECK_INT(run_to_exit(env->bin, sa, NULL, out, sizeof out, err, sizeof err), 0);
        CHECK_INT(run_to_exit(env->bin, la, NULL, out2, sizeof out2, err2, sizeof err2), 0);
        CHECK_STR(out, out2);
        CHECK_STR(err, "");
    }
    CHECK(strncmp(out, env->caps->program, strlen(env->caps->program)) == 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *sa[] = {bad[i].s, bad[i].value, NULL}, *la[] = {bad[i].l, bad[i].value, NULL};
        CHECK_INT(run_to_exit(env->bin, sa, NULL, out, sizeof out, err, sizeof err), 2);
        CHECK_INT(run_to_exit(env->bin, la, NULL, out2, sizeof out2, err2, sizeof err2), 2);
        CHECK_STR(err, err2);
        if (!strstr(err, bad[i].says))
            CHECK_FAIL_("%s %s: stderr '%s' lacks '%s'", bad[i].s, bad[i].value, err, bad[i].says);
        else
            check_passed++;
    }
    /* -p: a port another server holds. */
    struct server s;
    struct reply r;
    char port[16];
    START(env, &s, "--delay", "0");
    snprintf(port, sizeof port, "%u", s.port);
    const char *pa[] = {"-p", port, NULL};
    CHECK_INT(run_to_exit(env->bin, pa, NULL, out, sizeof out, err, sizeof err), 1);
    snprintf(want, sizeof want, "bind 127.0.0.1:%s: Address already in use", port);
    if (!strstr(err, want))
        CHECK_FAIL_("-p %s: stderr '%s' lacks '%s'", port, err, want);
    else
        check_passed++;
    stop_expect_clean(&s);
    /* -c FILE, -b, -t and -m: the file's delay, the address, the threads and the model. */
    const char *model = engine_has_model(env->caps, "poll") ? "poll" : "epoll";
    const char *cfg =
        write_file(env, "short.json", "{\"delay\": \"70ms\", \"bind\": \"127.0.0.1\"}");
    const char *a1[] = {"-c", cfg, "-t", "3", "-m", model, NULL};
    if (server_start(&s, env->bin, a1, NULL) == 0) {
        snprintf(want, sizeof want,
                 "%s 0.1.0 listening on http://127.0.0.1:%u (engine=%s model=%s threads=3)",
                 env->caps->program, s.port, env->caps->name, model);
        CHECK_STR(s.startup, want);
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
        CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=70");
        stop_expect_clean(&s);
    } else {
        CHECK_FAIL_("%s", "-c -t -m: server did not start");
    }
    /* On the port the test holds on 127.0.0.1: a connection there reaches the test's socket. */
    unsigned held_port;
    int holder = hold_port("127.0.0.1", &held_port);
    char held[16];
    snprintf(held, sizeof held, "%u", held_port);
    const char *a2[] = {"-b", "127.0.0.2", "-p", held, NULL};
    if (holder >= 0 && server_start(&s, env->bin, a2, NULL) == 0) {
        snprintf(want, sizeof want, "listening on http://127.0.0.2:%u ", s.port);
        if (!strstr(s.startup, want))
            CHECK_FAIL_("startup line '%s' lacks '%s'", s.startup, want);
        else
            check_passed++;
        /* Not on 127.0.0.1 any more. */
        int fd = raw_connect(s.port);
        CHECK(fd >= 0 && holder_reached(holder));
        if (fd >= 0)
            close(fd);
        stop_expect_clean(&s);
    } else {
        CHECK_FAIL_("%s", "-b: server did not start");
    }
    if (holder >= 0)
        close(holder);
    const char *a3[] = {"-d", "7ms", NULL};
    if (server_start(&s, env->bin, a3, NULL) == 0) {
        http_request(s.port, "GET", "/test", NULL, NULL, &r);
        CHECK_STR(reply_timing(&r, h, sizeof h), "delay;dur=7");
        stop_expect_clean(&s);
    } else {
        CHECK_FAIL_("%s", "-d: server did not start");
    }
}

/* The HTTP library's own messages, by engine: the prefix of its lines at --log-level debug. */
static const struct {
    const char *engine, *prefix;
} library_logs[] = {
    {"mhd", "debug: libmicrohttpd: "},
    /* slowsrv-h2o passes nothing of libh2o's to its log (doc/operations.md §Logs says debug adds
     * the HTTP libraries' own messages): no line is asserted there. */
    {"h2o", NULL},
};

/* --log-level debug adds the HTTP library's own messages: the same traffic (a request the
 * library refuses as malformed, and a ?fault=reset) gives lines "<program>: debug: <library>: "
 * at debug, and at info only the drain and stop lines. Every line keeps the log's prefix. */
static void log_level_debug_adds_library_lines(const struct itest_env *env)
{
    static const char malformed[] = "GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                    "Content-Length: 6\r\n\r\nhello!";
    const char *p = env->caps->program, *lib = NULL;
    char log[16384], info[256], want[128];
    for (size_t i = 0; i < sizeof library_logs / sizeof library_logs[0]; i++)
        if (strcmp(library_logs[i].engine, env->caps->name) == 0)
            lib = library_logs[i].prefix;
    snprintf(info, sizeof info,
             "%s: info: Terminated: draining for up to 5000 ms\n%s: info: stopped\n", p, p);
    for (int debug = 0; debug <= 1; debug++) {
        const char *args[] = {"--delay", "0", "--log-level", debug ? "debug" : "info", NULL};
        struct server s;
        struct reply r;
        char buf[1024];
        int closed;
        if (server_start(&s, env->bin, args, NULL) != 0) {
            CHECK_FAIL_("%s", "server did not start");
            return;
        }
        int fd = raw_connect(s.port);
        send_all(fd, malformed, sizeof malformed - 1);
        read_until_close(fd, buf, sizeof buf, 2000, &closed);
        close(fd);
        http_request(s.port, "GET", "/echo?fault=reset", NULL, NULL, &r);
        CHECK_INT(r.status, 0);
        answers_within(s.port, "/echo", "OK", 0, 1);
        CHECK_INT(server_stop(&s, 15000, log, sizeof log), 0);
        if (!debug) {
            CHECK_STR(log, info);
            continue;
        }
        /* Each line is "<program>: <level>: ..."; the info lines come last, in order. */
        snprintf(want, sizeof want, "%s: ", p);
        for (const char *l = log; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
            if (strncmp(l, want, strlen(want)) != 0)
                CHECK_FAIL_("log line without '%s': '%.200s'", want, l);
        size_t n = strlen(log);
        CHECK(n >= strlen(info) && strcmp(log + n - strlen(info), info) == 0);
        if (!lib)
            continue;
        snprintf(want, sizeof want, "%s: %s", p, lib);
        if (!strstr(log, want))
            CHECK_FAIL_("--log-level debug: stderr '%s' has no line '%s...'", log, want);
        else
            check_passed++;
    }
}

static const struct itest_case cases[] = {
    {"version_and_help", version_and_help, ITEST_PLAIN, 0},
    {"bad_flags_exit_2", bad_flags_exit_2, ITEST_PLAIN, 0},
    {"bad_config_exit_2", bad_config_exit_2, ITEST_PLAIN, 0},
    {"check_config_accepts_good_file", check_config_accepts_good_file, ITEST_PLAIN, 0},
    {"precedence_file_env_flags", precedence_file_env_flags, ITEST_PLAIN, 0},
    {"unknown_environment_is_warned", unknown_environment_is_warned, ITEST_PLAIN, 0},
    {"port_in_use_exits_1", port_in_use_exits_1, ITEST_PLAIN, 0},
    {"drip_across_stop", drip_across_stop, ITEST_PER_MODEL, 0},
    {"sigterm_drains_delayed", sigterm_drains_delayed, ITEST_PER_MODEL, 0},
    {"example_configs_check", example_configs_check, ITEST_PLAIN, 0},
    {"systemd_notify_ready_and_stopping", systemd_notify_ready_and_stopping, ITEST_PLAIN, 0},
    {"socket_activation_serves", socket_activation_serves, ITEST_PLAIN, 0},
    {"sigint_drains_delayed", sigint_drains_delayed, ITEST_PLAIN, 0},
    {"startup_line_names_engine_model_threads", startup_line_names_engine_model_threads,
     ITEST_PLAIN, 0},
    {"check_config_validates_env_and_flags", check_config_validates_env_and_flags, ITEST_PLAIN, 0},
    {"every_option_three_ways", every_option_three_ways, ITEST_PLAIN, 0},
    {"help_lists_every_option", help_lists_every_option, ITEST_PLAIN, 0},
    {"log_level_filters_info_lines", log_level_filters_info_lines, ITEST_PLAIN, 0},
    {"seed_absent_draws_differ", seed_absent_draws_differ, ITEST_PLAIN, 0},
    {"grace_cuts_waiting_requests", grace_cuts_waiting_requests, ITEST_PER_MODEL, 0},
    {"stop_answers_queued_requests", stop_answers_queued_requests, ITEST_PER_MODEL, 0},
    {"stop_serves_the_queue_within_grace", stop_serves_the_queue_within_grace, ITEST_PER_MODEL, 0},
    {"sigterm_stops_accepting", sigterm_stops_accepting, ITEST_PER_MODEL, 0},
    {"stop_closes_idle_connections", stop_closes_idle_connections, ITEST_PER_MODEL, 0},
    {"short_flags_act_as_long_ones", short_flags_act_as_long_ones, ITEST_PLAIN, 0},
    {"log_level_debug_adds_library_lines", log_level_debug_adds_library_lines, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_lifecycle = {"lifecycle", cases,
                                                  sizeof cases / sizeof cases[0]};
