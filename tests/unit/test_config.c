#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/config.h"
#include "check.h"
#include "engines.h"

static int load(struct config *cfg, const char *const *args, const char *const *env, char *err)
{
    char *argv[32];
    int argc = 0;
    enum config_action action;
    argv[argc++] = (char *)(uintptr_t) "slowsrv";
    for (size_t i = 0; args && args[i]; i++)
        argv[argc++] = (char *)(uintptr_t)args[i];
    argv[argc] = NULL;
    return config_load(cfg, &all_models, argc, argv, (char *const *)(uintptr_t)env, 99, &action,
                       err, CORE_ERR_LEN);
}

static void config_defaults_match_the_contract(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    CHECK_INT(load(&cfg, NULL, NULL, err), 0);
    CHECK_STR(cfg.bind, "127.0.0.1");
    CHECK_INT(cfg.port, 8080);
    CHECK_INT(cfg.delay.kind, DELAY_FIXED);
    CHECK_U64(cfg.delay.a_us, 1000000);
    CHECK_INT(cfg.model, CONFIG_MODEL_EPOLL);
    CHECK_INT(cfg.max_connections, 10000);
    CHECK_INT(cfg.backlog, 4096);
    CHECK_U64(cfg.max_body, 1ULL << 30);
    CHECK_U64(cfg.max_delay_us, 60000000);
    CHECK_U64(cfg.grace_us, 5000000);
    CHECK_U64(cfg.seed, 99);
    CHECK_INT(cfg.seed_set, 0);
    CHECK_INT(cfg.threads, sysconf(_SC_NPROCESSORS_ONLN));
    CHECK_U64(cfg.idle_timeout_us, 60000000);
    CHECK_U64(cfg.header_timeout_us, 30000000);
    CHECK_U64(cfg.max_request_line, 8192);
    CHECK_U64(cfg.max_header_size, 8192);
    CHECK_INT(cfg.max_requests, 0);
}

static void config_flags_set_every_option(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    const char *args[] = {"-p",
                          "0",
                          "--bind",
                          "::1",
                          "-d",
                          "800ms..1s",
                          "-t",
                          "3",
                          "-m",
                          "poll",
                          "--max-connections",
                          "500",
                          "--backlog",
                          "100",
                          "--max-body",
                          "512M",
                          "--max-delay",
                          "2m",
                          "--seed",
                          "7",
                          "--grace",
                          "250ms",
                          "--log-level",
                          "debug",
                          NULL};
    CHECK_INT(load(&cfg, args, NULL, err), 0);
    CHECK_STR(err, "");
    CHECK_INT(cfg.port, 0);
    CHECK_STR(cfg.bind, "::1");
    CHECK_INT(cfg.delay.kind, DELAY_UNIFORM);
    CHECK_INT(cfg.threads, 3);
    CHECK_INT(cfg.model, CONFIG_MODEL_POLL);
    CHECK_INT(cfg.max_connections, 500);
    CHECK_INT(cfg.backlog, 100);
    CHECK_U64(cfg.max_body, 512ULL << 20);
    CHECK_U64(cfg.max_delay_us, 120000000);
    CHECK_U64(cfg.seed, 7);
    CHECK_INT(cfg.seed_set, 1);
    CHECK_U64(cfg.grace_us, 250000);
    CHECK_INT(cfg.log_level, LOG_LEVEL_DEBUG);
}

static void config_env_sits_between_file_and_flags(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    char path[] = "/tmp/slowsrv-cfg-XXXXXX";
    int fd = mkstemp(path);
    const char text[] = "{\"delay\": 700, \"threads\": 4, \"max-body\": \"1K\"}";
    CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
    close(fd);
    const char *args_file[] = {"--config", path, NULL};
    const char *args_flag[] = {"--config", path, "--threads", "2", NULL};
    const char *env[] = {"SLOWSRV_THREADS=3", "SLOWSRV_UNRELATED=x", "OTHER=1", NULL};

    CHECK_INT(load(&cfg, args_file, NULL, err), 0);
    CHECK_U64(cfg.delay.a_us, 700000);
    CHECK_INT(cfg.threads, 4);
    CHECK_U64(cfg.max_body, 1024);
    CHECK_INT(load(&cfg, args_file, env, err), 0);
    CHECK_INT(cfg.threads, 3);
    CHECK_INT(load(&cfg, args_flag, env, err), 0);
    CHECK_INT(cfg.threads, 2);
    unlink(path);
}

static void config_refusals_name_the_source_and_key(void)
{
    static const struct {
        const char *args[6];
        const char *env[2];
        const char *err;
    } cases[] = {
        {{"--port", "65536"}, {NULL}, "--port: '65536' is not a port from 0 to 65535"},
        {{"--threads", "x"}, {NULL}, "--threads: 'x' is not a whole number from 1 to 1024"},
        {{"--max-body", "0"}, {NULL}, "--max-body: '0' is not a size from 1 bytes to 1T"},
        {{"--max-header-size", "512"},
         {NULL},
         "--max-header-size: '512' is not a size from 1K to 1M (e.g. 512M)"},
        {{"--max-request-line", "2M"}, {NULL}, "--max-request-line: '2M' is not a size from 256 "},
        {{"--header-timeout", "2h"}, {NULL}, "--header-timeout: "},
        {{"--max-requests", "-3"}, {NULL}, "--max-requests: '-3' is not a whole number from 0"},
        {{"--backlog", "0"}, {NULL}, "--backlog: '0' is not a whole number from 1 to 65535"},
        {{NULL}, {"SLOWSRV_BACKLOG=65536"}, "SLOWSRV_BACKLOG: '65536' is not a whole number"},
        {{NULL},
         {"SLOWSRV_HEADER_TIMEOUT=soon"},
         "SLOWSRV_HEADER_TIMEOUT: 'soon' is not a duration"},
        {{"--bind", ""}, {NULL}, "--bind: '' is not an address"},
        {{"--seed", "-1"}, {NULL}, "--seed: '-1' is not a whole number"},
        {{NULL}, {"SLOWSRV_MODEL=fork"}, "SLOWSRV_MODEL: unknown model 'fork'"},
        {{"--nope"}, {NULL}, "unknown option '--nope' (see --help)"},
        {{"--delay"}, {NULL}, "--delay: needs a value (see --help)"},
        {{"--delay", "5s", "--max-delay", "1s"},
         {NULL},
         "delay: up to 5000 ms is over --max-delay 1000 ms; raise --max-delay"},
        /* Without max=, percentiles reach p100 on the last segment's slope: 400 * 5^(1/9). */
        {{"--delay", "p50=20ms,p90=80ms,p99=400ms", "--max-delay", "450ms"},
         {NULL},
         "delay: up to 478.325 ms is over --max-delay 450 ms; raise --max-delay"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct config cfg;
        char err[CORE_ERR_LEN] = "";
        CHECK_INT(load(&cfg, cases[i].args, cases[i].env, err), -EINVAL);
        if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            CHECK_FAIL_("got '%s', want '%s'", err, cases[i].err);
        else
            check_passed++;
    }
}

static void config_select_lowers_the_default_limit_but_refuses_an_explicit_one(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    const char *dflt[] = {"--model", "select", NULL};
    const char *fits[] = {"--model", "select", "--max-connections", "1000", NULL};
    const char *over[] = {"--model", "select", "--max-connections", "1001", NULL};
    CHECK_INT(load(&cfg, dflt, NULL, err), 0);
    CHECK_INT(cfg.max_connections, config_select_max_connections());
    CHECK_INT(load(&cfg, fits, NULL, err), 0);
    CHECK_INT(load(&cfg, over, NULL, err), -EINVAL);
}

static void config_h2o_engine_refuses_other_models(void)
{
    struct config cfg;
    enum config_action action;
    char err[CORE_ERR_LEN] = "";
    char *argv[] = {(char *)(uintptr_t) "slowsrv-h2o", (char *)(uintptr_t) "--model",
                    (char *)(uintptr_t) "select", NULL};
    CHECK_INT(config_load(&cfg, &loops_only, 3, argv, NULL, 1, &action, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "slowsrv-h2o runs event loops only") != NULL);
}

static void config_actions_are_recognised(void)
{
    struct config cfg;
    enum config_action action;
    char err[CORE_ERR_LEN] = "";
    char *help[] = {(char *)(uintptr_t) "slowsrv", (char *)(uintptr_t) "--help", NULL};
    char *ver[] = {(char *)(uintptr_t) "slowsrv", (char *)(uintptr_t) "-V", NULL};
    CHECK_INT(config_load(&cfg, &all_models, 2, help, NULL, 1, &action, err, sizeof err), 0);
    CHECK_INT(action, CONFIG_ACTION_HELP);
    CHECK_INT(config_load(&cfg, &all_models, 2, ver, NULL, 1, &action, err, sizeof err), 0);
    CHECK_INT(action, CONFIG_ACTION_VERSION);
}

static const char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/slowsrv-cfg-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        return "/nonexistent";
    close(fd);
    return path;
}

static void config_reads_routes_from_the_file(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    const char *path = write_tmp(
        "{\"routes\": [{\"path\": \"/a\", \"method\": \"PUT\", \"status\": 201, \"body\": \"x\","
        " \"headers\": {\"X-A\": \"1\", \"Content-Type\": \"application/json\"},"
        " \"delay\": \"5ms..10ms\"}, {\"path\": \"/b\", \"method\": \"*\"}]}");
    const char *args[] = {"--config", path, NULL};
    CHECK_INT(load(&cfg, args, NULL, err), 0);
    CHECK_STR(err, "");
    CHECK_INT(cfg.nroutes, 2);
    CHECK_STR(cfg.routes[0].path, "/a");
    CHECK_STR(cfg.routes[0].method, "PUT");
    CHECK_INT(cfg.routes[0].status, 201);
    CHECK_STR(cfg.routes[0].body, "x");
    CHECK_INT(cfg.routes[0].nheaders, 2);
    CHECK_STR(cfg.routes[0].headers[0].name, "X-A");
    CHECK_INT(cfg.routes[0].delay.kind, DELAY_UNIFORM);
    CHECK(cfg.routes[1].method == NULL);
    CHECK_INT(cfg.routes[1].status, 200);
    CHECK_INT(cfg.routes[0].drip.chunks, 0);
    CHECK_INT(cfg.routes[0].fault, CONFIG_FAULT_NONE);
    CHECK_INT(cfg.routes[0].workers, 0);
    config_cleanup(&cfg);
    unlink(path);

    path = write_tmp("{\"routes\": [{\"path\": \"/slow\", \"body\": \"0123456789\", \"drip\": "
                     "\"5,500ms\", \"fault\": \"truncate\", \"workers\": 3, \"queue\": 7}]}");
    args[1] = path;
    CHECK_INT(load(&cfg, args, NULL, err), 0);
    CHECK_STR(err, "");
    CHECK_INT(cfg.routes[0].drip.chunks, 5);
    CHECK_U64(cfg.routes[0].drip.over_us, 500000);
    CHECK_INT(cfg.routes[0].fault, CONFIG_FAULT_TRUNCATE);
    CHECK_INT(cfg.routes[0].workers, 3);
    CHECK_INT(cfg.routes[0].queue, 7);
    config_cleanup(&cfg);
    CHECK(cfg.routes == NULL);
    unlink(path);
}

/* The bandwidth and mid-body fault keys: strings or numbers, null to lift them; a route with
 * read-rate is refused by an engine whose library reads bodies whole. */
static void config_routes_take_the_pace_keys(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    const char *path = write_tmp(
        "{\"routes\": [{\"path\": \"/p\", \"body\": \"0123456789\", \"rate\": \"1M,burst=64Ki\","
        " \"read-rate\": 256000, \"reset-after\": \"8\", \"stall\": \"4,1s\","
        " \"slow-close\": 250}, {\"path\": \"/q\", \"rate\": null}]}");
    const char *args[] = {"--config", path, NULL};
    CHECK_INT(load(&cfg, args, NULL, err), 0);
    CHECK_STR(err, "");
    const struct pace_spec *p = &cfg.routes[0].pace;
    CHECK_U64(p->rate, 1000000);
    CHECK_U64(p->burst, 65536);
    CHECK_U64(p->read_rate, 256000);
    CHECK_INT(p->reset, 1);
    CHECK_U64(p->reset_after, 8);
    CHECK_U64(p->stall_at, 4);
    CHECK_U64(p->stall_us, 1000000);
    CHECK_U64(p->slow_close_us, 250000);
    CHECK_U64(cfg.routes[1].pace.rate, 0);
    config_cleanup(&cfg);
    /* slowsrv-h2o refuses read-rate before anything is bound. */
    char *argv[] = {(char *)(uintptr_t) "slowsrv-h2o", (char *)(uintptr_t) "--config",
                    (char *)(uintptr_t)path, NULL};
    enum config_action action;
    CHECK_INT(config_load(&cfg, &loops_only, 3, argv, NULL, 1, &action, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "routes[0].read-rate: slowsrv-h2o reads a request body whole") != NULL);
    config_cleanup(&cfg);
    unlink(path);
    static const struct {
        const char *text, *err;
    } bad[] = {
        {"{\"routes\": [{\"path\": \"/a\", \"rate\": true}]}",
         "routes[0].rate: must be a string such as \"1M\", or \"none\""},
        {"{\"routes\": [{\"path\": \"/a\", \"body\": \"abc\", \"reset-after\": 3}]}",
         "routes[0].reset-after: 3 bytes is not inside the body of 3 bytes; add size="},
        {"{\"routes\": [{\"path\": \"/a\", \"body\": \"abc\", \"drip\": \"3,1s\", \"stall\": "
         "\"1,1s\"}]}",
         "routes[0].drip: cannot be paced by rate or stall too; keep one"},
        {"{\"routes\": [{\"path\": \"/a\", \"body\": \"abc\", \"slow-close\": \"2m\"}]}",
         "routes[0].slow-close: 120000 ms is over --max-delay 60000 ms"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        path = write_tmp(bad[i].text);
        args[1] = path;
        CHECK_INT(load(&cfg, args, NULL, err), -EINVAL);
        if (!strstr(err, bad[i].err))
            CHECK_FAIL_("got '%s', want '%s' in it", err, bad[i].err);
        config_cleanup(&cfg);
        unlink(path);
    }
}

static void config_route_errors_name_the_entry(void)
{
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"{\"routes\": {}}", "routes: must be an array of route objects"},
        {"{\"routes\": [{\"path\": \"/a\"}, {\"path\": \"/b\", \"delay\": \"1sec\"}]}",
         "routes[1].delay: bad duration '1sec'"},
        {"{\"routes\": [{\"method\": \"GET\"}]}", "routes[0].path: missing"},
        {"{\"routes\": [{\"path\": \"a\"}]}", "routes[0].path: must be a string starting with /"},
        {"{\"routes\": [{\"path\": \"/.\"}]}", "routes[0].path: a \".\" or \"..\" segment"},
        {"{\"routes\": [{\"path\": \"/a/../b\"}]}", "routes[0].path: a \".\" or \"..\" segment"},
        {"{\"routes\": [{\"path\": \"/a/..\"}]}", "routes[0].path: a \".\" or \"..\" segment"},
        {"{\"routes\": [{\"path\": \"/a\", \"status\": 700}]}",
         "routes[0].status: must be an HTTP status from 200 to 599"},
        {"{\"routes\": [{\"path\": \"/a\", \"status\": 101}]}",
         "routes[0].status: must be an HTTP status from 200 to 599"},
        {"{\"routes\": [{\"path\": \"/a\", \"method\": \"G T\"}]}", "routes[0].method: must be"},
        {"{\"routes\": [{\"path\": \"/a\", \"headers\": {\"X\": \"a\\r\\nb\"}}]}",
         "routes[0].headers.X: must be a header name with a string value without control "
         "characters"},
        {"{\"routes\": [{\"path\": \"/a\", \"colour\": 1}]}", "routes[0].colour: unknown key"},
        {"{\"routes\": [{\"path\": \"/a\"}, {\"path\": \"/a\"}]}",
         "routes[1].path: '/a' is already routes[0]"},
        {"{\"routes\": [{\"path\": \"/a\", \"delay\": \"2m\"}]}",
         "routes[0].delay: up to 120000 ms is over --max-delay 60000 ms; raise --max-delay"},
        {"{\"routes\": [{\"path\": \"/a\", \"body\": \"ab\", \"drip\": \"3,1s\"}]}",
         "routes[0].drip: 3 chunks need a body of at least 3 bytes (this one has 2)"},
        {"{\"routes\": [{\"path\": \"/a\", \"body\": \"ab\", \"drip\": \"0\"}]}",
         "routes[0].drip: bad drip '0'"},
        {"{\"routes\": [{\"path\": \"/a\", \"body\": \"ab\", \"drip\": 2}]}",
         "routes[0].drip: must be a string such as \"10,2s\""},
        {"{\"routes\": [{\"path\": \"/a\", \"body\": \"ab\", \"drip\": \"2,2m\"}]}",
         "routes[0].drip: 120000 ms is over --max-delay 60000 ms; raise --max-delay"},
        {"{\"routes\": [{\"path\": \"/a\", \"fault\": \"explode\"}]}",
         "routes[0].fault: must be \"close\", \"reset\", \"truncate\" or \"none\""},
        {"{\"routes\": [{\"path\": \"/a\", \"fault\": \"truncate\"}]}",
         "routes[0].fault: truncate needs a body to cut"},
        {"{\"routes\": [{\"path\": \"/a\", \"workers\": 0}]}",
         "routes[0].workers: must be a whole number from 1 to 10000000"},
        {"{\"routes\": [{\"path\": \"/a\", \"workers\": 2.5}]}",
         "routes[0].workers: must be a whole number from 1 to 10000000"},
        {"{\"routes\": [{\"path\": \"/a\", \"queue\": -1, \"workers\": 1}]}",
         "routes[0].queue: must be a whole number from 0 to 10000000"},
        {"{\"routes\": [{\"path\": \"/a\", \"queue\": 5}]}", "routes[0].queue: needs \"workers\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct config cfg;
        char err[CORE_ERR_LEN] = "";
        const char *path = write_tmp(cases[i].text);
        const char *args[] = {"--config", path, NULL};
        CHECK_INT(load(&cfg, args, NULL, err), -EINVAL);
        const char *colon = strchr(err, ' ');
        if (!colon || strncmp(colon + 1, cases[i].err, strlen(cases[i].err)) != 0)
            CHECK_FAIL_("got '%s', want '<file>: %s'", err, cases[i].err);
        else
            check_passed++;
        unlink(path);
    }
    /* Dots that are not a whole segment are a path's own. */
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    const char *path = write_tmp("{\"routes\": [{\"path\": \"/.well-known/a..b/...\"}]}");
    const char *args[] = {"--config", path, NULL};
    CHECK_INT(load(&cfg, args, NULL, err), 0);
    CHECK_STR(cfg.routes[0].path, "/.well-known/a..b/...");
    config_cleanup(&cfg);
    unlink(path);
}

static void config_load_shaping_options(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    const char *args[] = {"--no-overrides",
                          "--max-size",
                          "1M",
                          "--error-rate",
                          "0.25",
                          "--error-status",
                          "502",
                          "--workers",
                          "200",
                          "--queue",
                          "100",
                          "--overflow",
                          "reset",
                          NULL};
    CHECK_INT(load(&cfg, args, NULL, err), 0);
    CHECK_INT(cfg.no_overrides, 1);
    CHECK_U64(cfg.max_size, 1 << 20);
    CHECK(cfg.error_rate == 0.25);
    CHECK_INT(cfg.error_status, 502);
    CHECK_INT(cfg.workers, 200);
    CHECK_INT(cfg.queue, 100);
    CHECK_INT(cfg.overflow, CONFIG_OVERFLOW_RESET);
    const char *env[] = {"SLOWSRV_NO_OVERRIDES=false", NULL};
    CHECK_INT(load(&cfg, NULL, env, err), 0);
    CHECK_INT(cfg.no_overrides, 0);
    static const struct {
        const char *args[4];
        const char *err;
    } bad[] = {
        {{"--error-rate", "1.5"}, "--error-rate: '1.5' is not a rate from 0 to 1"},
        {{"--error-status", "99"}, "--error-status: '99' is not an HTTP status from 200 to 599"},
        {{"--error-status", "100"}, "--error-status: '100' is not an HTTP status from 200 to 599"},
        {{"--overflow", "drop"}, "--overflow: 'drop' is not 503 or reset"},
        {{"--queue", "5"}, "queue: needs --workers"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(load(&cfg, bad[i].args, NULL, err), -EINVAL);
        if (strncmp(err, bad[i].err, strlen(bad[i].err)) != 0)
            CHECK_FAIL_("got '%s', want '%s'", err, bad[i].err);
        else
            check_passed++;
    }
}

static void config_fuzz_findings_stay_fixed(void)
{
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    /* A repeated key in a route is refused, naming it, and nothing leaks (ASan). */
    const char *path = write_tmp("{\"routes\": [{\"path\": \"/a\", \"path\": \"/b\", "
                                 "\"body\": \"x\", \"body\": \"y\", \"headers\": {\"A\": \"1\"}, "
                                 "\"headers\": {\"B\": \"2\"}}]}");
    const char *args[] = {"--config", path, NULL};
    CHECK_INT(load(&cfg, args, NULL, err), -EINVAL);
    if (!strstr(err, ": path: given twice; keep one"))
        CHECK_FAIL_("got '%s'", err);
    unlink(path);
    /* An error quoting a value with a newline stays one line. */
    const char *nl[] = {"--port", "1\n2", NULL};
    CHECK_INT(load(&cfg, nl, NULL, err), -EINVAL);
    CHECK_STR(err, "--port: '1?2' is not a port from 0 to 65535");
    /* A half-read cluster of short options does not leak into the next load. */
    const char *cluster[] = {"-hZq", NULL};
    CHECK_INT(load(&cfg, cluster, NULL, err), -EINVAL);
    const char *clean[] = {"-d", "5ms", NULL};
    CHECK_INT(load(&cfg, clean, NULL, err), 0);
    CHECK_U64(cfg.delay.a_us, 5000);
    /* --max-delay 0 allows no delay at all. */
    const char *zero[] = {"--max-delay", "0", NULL};
    CHECK_INT(load(&cfg, zero, NULL, err), -EINVAL);
    CHECK_STR(err, "delay: up to 1000 ms is over --max-delay 0 ms; raise --max-delay");
    const char *zero_ok[] = {"--max-delay", "0", "--delay", "0", NULL};
    CHECK_INT(load(&cfg, zero_ok, NULL, err), 0);
}

/* Files the config names are read whole up to their ceiling, and refused past it; TLS files
 * that cannot be read are a config error, found before the engine starts. */
static void config_files_have_a_ceiling_and_must_be_readable(void)
{
    char path[] = "/tmp/slowsrv-test-config.XXXXXX";
    char err[CORE_ERR_LEN], *text = NULL;
    size_t len = 0;
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    static char block[4096];
    memset(block, ' ', sizeof block);
    for (int i = 0; i < 3; i++)
        CHECK_INT(write(fd, block, sizeof block), sizeof block);
    close(fd);
    CHECK_INT(config_read_file(path, 3 * 4096, &text, &len, err, sizeof err), 0);
    CHECK_INT(len, 3 * 4096);
    free(text);
    text = NULL;
    CHECK_INT(config_read_file(path, 8192, &text, &len, err, sizeof err), -EINVAL);
    char want[300];
    snprintf(want, sizeof want, "%s: file is over 8 KiB", path);
    CHECK_STR(err, want);
    CHECK(text == NULL);

    struct config cfg;
    const char *missing_key[] = {"--tls-cert", path, "--tls-key", "/nonexistent/key.pem", NULL};
    CHECK_INT(load(&cfg, missing_key, NULL, err), -EINVAL);
    CHECK_STR(err, "tls-key: /nonexistent/key.pem: cannot read: No such file or directory");
    const char *missing_cert[] = {"--tls-cert", "/nonexistent/c.pem", "--tls-key", path, NULL};
    CHECK_INT(load(&cfg, missing_cert, NULL, err), -EINVAL);
    CHECK_STR(err, "tls-cert: /nonexistent/c.pem: cannot read: No such file or directory");
    const char *both[] = {"--tls-cert", path, "--tls-key", path, NULL};
    CHECK_INT(load(&cfg, both, NULL, err), 0);
    config_cleanup(&cfg);
    unlink(path);

    /* A FIFO or a directory in a config file's place is refused at once, never waited on. */
    CHECK_INT(mkfifo(path, 0600), 0);
    CHECK_INT(config_read_file(path, 8192, &text, &len, err, sizeof err), -EINVAL);
    snprintf(want, sizeof want, "%s: cannot read: not a regular file", path);
    CHECK_STR(err, want);
    unlink(path);
    CHECK_INT(config_read_file("/tmp", 8192, &text, &len, err, sizeof err), -EINVAL);
    CHECK_STR(err, "/tmp: cannot read: not a regular file");
}

/* A value too long for its field is refused, never cut short (a cut path names another file); an
 * access log whose folder cannot be written is a config error, so --check-config finds it. */
static void config_long_values_and_unwritable_logs_are_refused(void)
{
    static char text[1400], want[1200];
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    memset(want, 'a', 1100);
    want[1100] = '\0';
    snprintf(text, sizeof text, "{\"access-log\": \"/tmp/%s\"}", want);
    const char *path = write_tmp(text);
    const char *args[] = {"--config", path, NULL};
    CHECK_INT(load(&cfg, args, NULL, err), -EINVAL);
    snprintf(want, sizeof want, "%s: access-log: value is over 1023 bytes", path);
    CHECK_STR(err, want);
    unlink(path);

    memset(want, '1', 300);
    want[300] = '\0';
    snprintf(text, sizeof text, "{\"routes\": [{\"path\": \"/a\", \"delay\": \"%s\"}]}", want);
    path = write_tmp(text);
    args[1] = path;
    CHECK_INT(load(&cfg, args, NULL, err), -EINVAL);
    snprintf(want, sizeof want, "%s: routes[0].delay: value is over 255 bytes", path);
    CHECK_STR(err, want);
    unlink(path);

    const char *logs[] = {"--access-log", "/nonexistent/dir/a.log", NULL};
    CHECK_INT(load(&cfg, logs, NULL, err), -EINVAL);
    CHECK_STR(err, "access-log: /nonexistent/dir/a.log: cannot write there: No such file or "
                   "directory");
    const char *ok_logs[] = {"--access-log", "/tmp/slowsrv-unit-access.log", NULL};
    CHECK_INT(load(&cfg, ok_logs, NULL, err), 0);
    config_cleanup(&cfg);
    const char *stdout_log[] = {"--access-log", "-", NULL};
    CHECK_INT(load(&cfg, stdout_log, NULL, err), 0);
    config_cleanup(&cfg);
}

/* --control takes an optional http:// or https:// in front (and a '/' after), the form the
 * startup line prints; the scheme decides whether the listener speaks TLS. */
static void config_control_scheme_picks_tls(void)
{
    static const struct {
        const char *val;
        const char *host;
        unsigned port;
        enum config_scheme scheme;
        int tls_with_cert;
    } cases[] = {
        {"9090", "127.0.0.1", 9090, CONFIG_SCHEME_AS_MAIN, 1},
        {"http://0.0.0.0:9090", "0.0.0.0", 9090, CONFIG_SCHEME_HTTP, 0},
        {"HTTP://[::1]:9090/", "::1", 9090, CONFIG_SCHEME_HTTP, 0},
        {"http://9091", "127.0.0.1", 9091, CONFIG_SCHEME_HTTP, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct config cfg;
        char err[CORE_ERR_LEN] = "";
        const char *args[] = {"--control", cases[i].val, NULL};
        CHECK_INT(load(&cfg, args, NULL, err), 0);
        CHECK_STR(err, "");
        CHECK_STR(cfg.control_host, cases[i].host);
        CHECK_INT(cfg.control_port, cases[i].port);
        CHECK_INT(cfg.control_scheme, cases[i].scheme);
        CHECK_INT(config_control_tls(&cfg), 0);
        snprintf(cfg.tls_cert, sizeof cfg.tls_cert, "cert.pem");
        CHECK_INT(config_control_tls(&cfg), cases[i].tls_with_cert);
    }
    static const char *const bad[] = {"ftp://127.0.0.1:9090", "http://", "http:///9090",
                                      "https://a/b:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct config cfg;
        char err[CORE_ERR_LEN] = "";
        const char *args[] = {"--control", bad[i], NULL};
        CHECK_INT(load(&cfg, args, NULL, err), -EINVAL);
        CHECK(strstr(err, "is not [http[s]://][ADDR:]PORT") != NULL);
    }
    /* https:// needs the main port's certificate (the integration case serves it). */
    struct config cfg;
    char err[CORE_ERR_LEN] = "";
    const char *https[] = {"--control", "https://127.0.0.1:9090", NULL};
    CHECK_INT(load(&cfg, https, NULL, err), -EINVAL);
    CHECK(strstr(err, "control: https:// needs --tls-cert") != NULL);
    cfg.control_scheme = CONFIG_SCHEME_HTTPS;
    CHECK_INT(config_control_tls(&cfg), 1);
}

/* RFC 3339 instants, as "scenario-start": "at:..." and POST /scenario/start take them. */
static void config_time_parse_reads_rfc3339(void)
{
    static const struct {
        const char *s;
        double want; /* -1: refused */
    } cases[] = {
        {"2026-12-04T10:00:00Z", 1796378400},
        {"2026-12-04t10:00:00z", 1796378400},
        {"2026-12-04 10:00:00Z", 1796378400},
        {"2026-12-04T11:30:00+01:30", 1796378400},
        {"2026-12-04T08:00:00-02:00", 1796378400},
        {"2026-12-04T10:00:00.250Z", 1796378400.25},
        {"2024-02-29T00:00:00Z", 1709164800},
        {"1970-01-01T00:00:01Z", 1},
        {"2016-12-31T23:59:60Z", 1483228800},
        {"1970-01-01T00:00:00Z", -1},
        {"1970-01-01T00:30:00+01:00", -1},
        {"2026-12-04T10:00:00", -1},
        {"2026-12-04T10:00Z", -1},
        {"2026-12-04", -1},
        {"2026-02-29T00:00:00Z", -1},
        {"2026-04-31T00:00:00Z", -1},
        {"2026-13-01T00:00:00Z", -1},
        {"2026-12-04T24:00:00Z", -1},
        {"2026-12-04T10:00:00.Z", -1},
        {"2026-12-04T10:00:00+1:00", -1},
        {"2026-12-04T10:00:00Z ", -1},
        {"1969-12-31T23:59:59Z", -1},
        {"tomorrow", -1},
        {"", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t = -1;
        int rc = config_time_parse(cases[i].s, &t);
        if (cases[i].want < 0 ? rc != -EINVAL : rc != 0 || fabs(t - cases[i].want) > 1e-6)
            CHECK_FAIL_("'%s': rc %d, %.3f; want %.3f", cases[i].s, rc, t, cases[i].want);
    }
}

/* A reload applies the delay, error-rate, error-status and scenario-start; every other option
 * differing from the running one is named as needing a restart. */
static void config_restart_keys_name_what_a_start_applies(void)
{
    struct config a, b;
    char err[CORE_ERR_LEN], keys[256];
    const char *base[] = {"--delay", "1s", NULL};
    const char *live[] = {
        "--delay", "2s", "--error-rate", "0.5", "--error-status", "502", "--scenario-start",
        "api",     NULL};
    const char *restart[] = {"--port",
                             "9",
                             "--threads",
                             "3",
                             "--log-level",
                             "debug",
                             "--control",
                             "7000",
                             "--model",
                             "poll",
                             "--no-overrides",
                             "--max-body",
                             "5M",
                             "--header-timeout",
                             "2s",
                             NULL};
    CHECK_INT(load(&a, base, NULL, err), 0);
    CHECK_INT(load(&b, live, NULL, err), 0);
    config_restart_keys(&a, &b, keys, sizeof keys);
    CHECK_STR(keys, "");
    config_cleanup(&b);
    if (load(&b, restart, NULL, err) != 0)
        CHECK_FAIL_("%s", err);
    config_restart_keys(&a, &b, keys, sizeof keys);
    CHECK_STR(keys, "port, threads, model, max-body, header-timeout, no-overrides, log-level, "
                    "control");
    config_cleanup(&a);
    config_cleanup(&b);
}

int main(void)
{
    config_control_scheme_picks_tls();
    config_time_parse_reads_rfc3339();
    config_restart_keys_name_what_a_start_applies();
    config_long_values_and_unwritable_logs_are_refused();
    config_files_have_a_ceiling_and_must_be_readable();
    config_fuzz_findings_stay_fixed();
    config_reads_routes_from_the_file();
    config_routes_take_the_pace_keys();
    config_route_errors_name_the_entry();
    config_load_shaping_options();
    config_defaults_match_the_contract();
    config_flags_set_every_option();
    config_env_sits_between_file_and_flags();
    config_refusals_name_the_source_and_key();
    config_select_lowers_the_default_limit_but_refuses_an_explicit_one();
    config_h2o_engine_refuses_other_models();
    config_actions_are_recognised();
    return CHECK_DONE();
}
