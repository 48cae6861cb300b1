/*
 * libFuzzer target for common/config: config_load() on a config file and on a command line.
 *
 * Input layout (tests/fuzz/corpus/config/ holds examples; gen_seeds.py writes them):
 *   byte 0     flags: bit 0 clear: the rest is a config file, loaded with
 *              argv {"slowsrv", "--check-config", PATH}; bit 0 set: the rest is a command line,
 *              split on NUL bytes into up to 16 arguments after argv[0] = "slowsrv" (each an
 *              exact-size heap copy, so ASan sees any read past an argument);
 *              bit 1 picks the engine (clear: every model, set: event loops only)
 *   the rest   the file or the arguments
 * The file is a memfd (memfd_create, written in place per input) named /proc/self/fd/N, so
 * nothing touches the disk. The environment is empty; stdin is /dev/null (a command line may
 * name any file with --config). A command line is loaded twice with the same argv (config_load
 * must give the same answer again: it is called repeatedly and resets getopt itself).
 *
 * Checked (a violation calls __builtin_trap()):
 *   - config_load returns 0, -EINVAL or -ENOMEM; for a command line the same on both calls
 *     (with the same action on success, the same error text on failure);
 *   - on failure: err is non-empty, NUL-terminated inside errlen, one line (no '\n', '\r'),
 *     and nothing is left to release (routes NULL, nroutes 0);
 *   - on success with action RUN or CHECK (file mode: always CHECK): threads >= 1; every value
 *     is inside its documented range; every route has a path starting with '/' and no '?',
 *     a status 100..599, at most CONFIG_ROUTE_HEADERS headers, a body of body_len bytes, a
 *     bounded delay no longer than max-delay; paths are unique; the rules of validate() hold
 *     (tls pair, queue needs workers, h2o: epoll and 503);
 *   - a route table built from it plans GET /test with a delay <= max-delay, and each
 *     configured route (no overrides) to that route, with its status (or error-status, with
 *     error-rate) and a delay <= max-delay;
 *   - config_cleanup() leaves routes NULL and nroutes 0, and may be called again.
 *
 * Build: see CMakeLists.txt (needs config.c, delay.c, log.c, route.c and what route.c uses,
 * libcjson, -lm -lpthread).
 */
#include "plan/config.h"
#include "plan/route.h"
#include "run/service.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../unit/engines.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            __builtin_trap();                                                                      \
    } while (0)

#define MAX_ARGS 16

static int memfd = -1;
static char memfd_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int null;

    (void)argc;
    (void)argv;
    memfd = memfd_create("fuzz_config", MFD_CLOEXEC);
    REQUIRE(memfd >= 0);
    snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
    /* A command line may say --config /dev/stdin: never block on it. */
    null = open("/dev/null", O_RDONLY);
    REQUIRE(null >= 0);
    REQUIRE(dup2(null, 0) == 0);
    close(null);
    return 0;
}

static char *dup_bytes(const void *p, size_t n)
{
    char *d = malloc(n + 1);

    REQUIRE(d != NULL);
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

static void check_err(const char *err, size_t errlen)
{
    const char *nul = memchr(err, '\0', errlen);

    REQUIRE(nul != NULL);
    REQUIRE(err[0] != '\0');
    REQUIRE(memchr(err, '\n', (size_t)(nul - err)) == NULL);
    REQUIRE(memchr(err, '\r', (size_t)(nul - err)) == NULL);
}

static int cstr_ok(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

static void check_routes_plan(const struct config *cfg)
{
    static struct route_table t; /* large; one at a time */
    struct plan plan;

    static struct service svc; /* large; one at a time */
    REQUIRE(service_init(&svc, cfg, 1, NULL) == 0);
    REQUIRE((svc.pool != NULL) == (cfg->workers > 0));
    route_table_init(&t, cfg);
    REQUIRE(t.count >= 7 && t.count <= ROUTE_MAX);
    /* GET /test (the --delay route, unless "routes" replaced it): at most max-delay. */
    {
        struct route_request rq;

        memset(&rq, 0, sizeof rq);
        rq.method = "GET";
        rq.target = "/test";
        rq.target_len = 5;
        route_plan(&t, &rq, &plan);
        /* A configured /test may take another method only: then GET gets 405. */
        REQUIRE(plan.route != NULL || plan.status == 405);
        REQUIRE(plan.delay_us <= cfg->max_delay_us);
    }
    for (size_t i = 0; i < cfg->nroutes; i++) {
        const struct config_route *r = &cfg->routes[i];
        struct route_request rq;

        memset(&rq, 0, sizeof rq);
        rq.method = r->method ? r->method : "GET";
        rq.target = r->path;
        rq.target_len = strlen(r->path);
        memset(&plan, 0, sizeof plan);
        route_plan(&t, &rq, &plan);
        REQUIRE(plan.route != NULL && strcmp(plan.route->path, r->path) == 0);
        /* A route's own pool is made as configured; its drip fits its body; its fault is
         * planned (unless error-rate answered first). */
        const struct pool *own = svc.route_pools[plan.route_id];
        REQUIRE((own != NULL) == (r->workers > 0));
        if (own)
            REQUIRE(own->workers == r->workers && own->queue_max == r->queue);
        REQUIRE(r->drip.chunks <= r->body_len && r->drip.over_us <= cfg->max_delay_us);
        if (plan.action == PLAN_RESET)
            REQUIRE(r->fault == CONFIG_FAULT_RESET);
        else if (plan.action == PLAN_CLOSE)
            REQUIRE(r->fault == CONFIG_FAULT_CLOSE);
        else
            REQUIRE(plan.action == PLAN_RESPOND);
        REQUIRE(plan.status == r->status ||
                (cfg->error_rate > 0 && plan.status == cfg->error_status));
        REQUIRE(plan.delay_us <= cfg->max_delay_us);
        REQUIRE(plan.body_len == 0 || plan.body != NULL);
        if (plan.timing)
            REQUIRE(strncmp(plan.timing, "delay;dur=", 10) == 0 &&
                    strlen(plan.timing) < ROUTE_TIMING_LEN);
    }
    route_table_cleanup(&t);
    service_cleanup(&svc);
}

static void check_loaded(const struct config *cfg, const struct config_engine *engine)
{
    REQUIRE(cfg->threads >= 1);
    REQUIRE(cfg->port <= 65535);
    REQUIRE(cstr_ok(cfg->bind, sizeof cfg->bind) && cfg->bind[0] != '\0');
    REQUIRE(cstr_ok(cfg->tls_cert, sizeof cfg->tls_cert));
    REQUIRE(cstr_ok(cfg->tls_key, sizeof cfg->tls_key));
    REQUIRE(cstr_ok(cfg->spool_dir, sizeof cfg->spool_dir) && cfg->spool_dir[0] != '\0');
    REQUIRE(cstr_ok(cfg->access_log, sizeof cfg->access_log));
    REQUIRE(cstr_ok(cfg->check_file, sizeof cfg->check_file));
    REQUIRE(cstr_ok(cfg->config_file, sizeof cfg->config_file));
    REQUIRE((unsigned)cfg->model <= CONFIG_MODEL_THREAD_PER_CONNECTION);
    REQUIRE(cfg->max_connections >= 1 && cfg->max_connections <= 10000000);
    REQUIRE(cfg->backlog >= 1 && cfg->backlog <= 65535);
    if (cfg->model == CONFIG_MODEL_SELECT)
        REQUIRE(cfg->max_connections <= config_select_max_connections());
    REQUIRE(cfg->max_body >= 1 && cfg->max_body <= (1ULL << 40));
    REQUIRE(cfg->max_delay_us <= DELAY_DURATION_MAX_US);
    REQUIRE(cfg->grace_us <= 3600ULL * 1000000 && cfg->idle_timeout_us <= 3600ULL * 1000000);
    REQUIRE(cfg->no_overrides == 0 || cfg->no_overrides == 1);
    REQUIRE(cfg->max_size <= (1ULL << 30));
    REQUIRE(cfg->error_rate >= 0 && cfg->error_rate <= 1);
    REQUIRE(cfg->error_status >= CONFIG_STATUS_MIN && cfg->error_status <= CONFIG_STATUS_MAX);
    REQUIRE(cfg->workers <= 10000000 && cfg->queue <= 10000000);
    REQUIRE(cfg->queue == 0 || cfg->workers > 0);
    REQUIRE((cfg->tls_cert[0] != '\0') == (cfg->tls_key[0] != '\0'));
    REQUIRE((unsigned)cfg->log_level <= LOG_LEVEL_DEBUG);
    REQUIRE(engine->models & CONFIG_MODEL_BIT(cfg->model));
    if (cfg->max_delay_us > 0 && delay_spec_max_us(&cfg->delay) != UINT64_MAX)
        REQUIRE(delay_spec_max_us(&cfg->delay) <= cfg->max_delay_us);

    REQUIRE(cfg->nroutes <= CONFIG_ROUTES_MAX);
    REQUIRE(cfg->nroutes == 0 || cfg->routes != NULL);
    for (size_t i = 0; i < cfg->nroutes; i++) {
        const struct config_route *r = &cfg->routes[i];

        REQUIRE(r->path != NULL && r->path[0] == '/' && strchr(r->path, '?') == NULL);
        REQUIRE(r->status >= CONFIG_STATUS_MIN && r->status <= CONFIG_STATUS_MAX);
        REQUIRE(r->nheaders <= CONFIG_ROUTE_HEADERS);
        for (size_t h = 0; h < r->nheaders; h++)
            REQUIRE(r->headers[h].name && r->headers[h].name[0] && r->headers[h].value &&
                    !strpbrk(r->headers[h].value, "\r\n"));
        if (r->body)
            REQUIRE(r->body_len == strlen(r->body) && r->body_len <= CONFIG_ROUTE_BODY_MAX);
        else
            REQUIRE(r->body_len == 0);
        if (r->method)
            REQUIRE(r->method[0] != '\0' && strcmp(r->method, "*") != 0);
        if (r->has_delay && delay_spec_max_us(&r->delay) != UINT64_MAX)
            REQUIRE(delay_spec_max_us(&r->delay) <= cfg->max_delay_us);
        for (size_t j = 0; j < i; j++)
            REQUIRE(strcmp(cfg->routes[j].path, r->path) != 0);
    }
    check_routes_plan(cfg);
}

/* One config_load; returns rc, leaves *cfg released. */
static int load_once(const struct config_engine *engine, int argc, char **argv,
                     enum config_action *action, char *err)
{
    static struct config cfg; /* ~20 KiB of paths */
    static char *const envp[] = {NULL};
    int rc;

    memset(err, 'E', CORE_ERR_LEN);
    *action = (enum config_action) - 1;
    rc = config_load(&cfg, engine, argc, argv, envp, 12345, action, err, CORE_ERR_LEN);
    REQUIRE(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
    if (rc != 0) {
        check_err(err, CORE_ERR_LEN);
        REQUIRE(cfg.routes == NULL && cfg.nroutes == 0);
        return rc;
    }
    REQUIRE(*action == CONFIG_ACTION_RUN || *action == CONFIG_ACTION_HELP ||
            *action == CONFIG_ACTION_VERSION || *action == CONFIG_ACTION_CHECK);
    if (*action == CONFIG_ACTION_RUN || *action == CONFIG_ACTION_CHECK)
        check_loaded(&cfg, engine);
    config_cleanup(&cfg);
    REQUIRE(cfg.routes == NULL && cfg.nroutes == 0);
    config_cleanup(&cfg);
    REQUIRE(cfg.routes == NULL && cfg.nroutes == 0);
    return rc;
}

/* argv, every string an exact-size heap copy; returns argc. */
static int make_argv(uint8_t flags, const uint8_t *rest, size_t len, char **argv)
{
    int argc = 0;

    argv[argc++] = dup_bytes("slowsrv", 7);
    if (!(flags & 1)) {
        argv[argc++] = dup_bytes("--check-config", 14);
        argv[argc++] = dup_bytes(memfd_path, strlen(memfd_path));
    } else {
        size_t off = 0;

        while (off < len && argc < MAX_ARGS + 1) {
            const uint8_t *nul = memchr(rest + off, '\0', len - off);
            size_t n = nul ? (size_t)(nul - (rest + off)) : len - off;

            argv[argc++] = dup_bytes(rest + off, n);
            off += n + 1;
        }
    }
    argv[argc] = NULL;
    return argc;
}

static void free_argv(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        free(argv[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t flags = size ? data[0] : 0;
    const uint8_t *rest = size ? data + 1 : data;
    size_t len = size ? size - 1 : 0;
    const struct config_engine *engine = (flags & 2) ? &loops_only : &all_models;
    enum config_action a1, a2;
    char err1[CORE_ERR_LEN], err2[CORE_ERR_LEN];
    char *argv[MAX_ARGS + 2];
    int argc, rc1, rc2;

    if (len > CONFIG_FILE_MAX + 16)
        return 0;
    if (!(flags & 1)) {
        REQUIRE(ftruncate(memfd, 0) == 0);
        REQUIRE(pwrite(memfd, rest, len, 0) == (ssize_t)len);
    }

    /* A command line twice, on the same argv (getopt_long may have permuted it: same options,
     * same answer). The same strings, not fresh copies: getopt's leftovers from the first call
     * would point into freed memory, which ASan cannot see (glibc is not instrumented) and whose
     * first bytes its allocator overwrites, hiding the difference. */
    argc = make_argv(flags, rest, len, argv);
    rc1 = load_once(engine, argc, argv, &a1, err1);
    if (flags & 1) {
        rc2 = load_once(engine, argc, argv, &a2, err2);
    } else {
        /* A file's argv is always the same: once is enough (and twice as fast). */
        rc2 = rc1;
        a2 = a1;
        memcpy(err2, err1, sizeof err2);
    }
    free_argv(argc, argv);
    REQUIRE(rc1 == rc2);
    if (rc1 != 0)
        REQUIRE(strcmp(err1, err2) == 0);
    if (rc1 == 0) {
        REQUIRE(a1 == a2);
        if (!(flags & 1))
            REQUIRE(a1 == CONFIG_ACTION_CHECK);
    }
    return 0;
}
