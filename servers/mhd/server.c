/*
 * The libmicrohttpd engine: start and stop, the daemons' options, the engine table (the rest:
 * mhd.h).
 */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mhd.h"

/* Per-connection memory pool. MHD's default (32 KiB) costs 32 KiB of RSS for every idle
 * keep-alive connection once it has served a request; 8 KiB still holds request headers of
 * several KiB, the request line and our small responses. */
#define CONN_MEMORY_LIMIT (8 * 1024)
/* Defined at the end, with the engine table; the error paths of the start call them. */
static void mhd_server_stop(struct app_server *srv);
static void mhd_server_free(struct app_server *srv);

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    const struct log *lg = cls;
    char line[512];
    if (lg->level < LOG_LEVEL_DEBUG)
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_write(lg, LOG_LEVEL_DEBUG, "libmicrohttpd: %s", line);
}

/* The per-connection pool holds the request line and headers, what libmicrohttpd parses out of
 * them and the answer's header. libmicrohttpd 0.9.75 zeroes the whole pool after each request, so
 * every kept-alive connection costs its pool in RSS: 8 KiB at the default limits, less when they
 * are lowered (768 bytes over the two limits), what they ask plus 2 KiB when raised. */
static size_t conn_memory(const struct config *cfg)
{
    size_t need = (size_t)(cfg->max_request_line + cfg->max_header_size);
    if (cfg->max_request_line > 8192 || cfg->max_header_size > 8192)
        return need + 2048;
    return need + 768 < CONN_MEMORY_LIMIT ? need + 768 : CONN_MEMORY_LIMIT;
}

int mhd_start_daemon(struct mhd_shard *shard, unsigned conn_limit, char *err)
{
    struct app_server *srv = shard->loop->srv;
    unsigned flags = MHD_USE_ERROR_LOG | srv->backend->flags;
    struct MHD_OptionItem opts[16];
    size_t n = 0;

#define OPT(o, v, p) (opts[n++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (p)})
    /* The logger goes first so that MHD reports the other options' problems through it. */
    OPT(MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, (void *)(uintptr_t)srv->log);
    if (srv->cfg->model != CONFIG_MODEL_EPOLL)
        OPT(MHD_OPTION_LISTEN_SOCKET, shard->loop->listen_fd, NULL);
    OPT(MHD_OPTION_CONNECTION_LIMIT, conn_limit, NULL);
    OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, conn_memory(srv->cfg), NULL);
    /* In seconds. libmicrohttpd never times out a suspended (waiting) connection. It also
     * reclaims the connections its epoll mode loses when a client closes mid-body. */
    OPT(MHD_OPTION_CONNECTION_TIMEOUT, (srv->cfg->idle_timeout_us + 999999) / 1000000, NULL);
    OPT(MHD_OPTION_NOTIFY_COMPLETED, mhd_on_completed, shard);
    OPT(MHD_OPTION_NOTIFY_CONNECTION, mhd_on_connection, shard);
    OPT(MHD_OPTION_URI_LOG_CALLBACK, mhd_on_uri, shard);
    if (srv->tpc)
        OPT(MHD_OPTION_THREAD_STACK_SIZE, 256 * 1024, NULL);
    if (srv->tls_cert) {
        flags |= MHD_USE_TLS;
        OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert);
        OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key);
    }
    OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
    shard->daemon = MHD_start_daemon(flags, 0, mhd_on_accept_policy, shard, mhd_on_request, shard,
                                     MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!shard->daemon) {
        if (srv->tls_cert)
            snprintf(err, CORE_ERR_LEN,
                     "tls-key: libmicrohttpd (GnuTLS) refused the certificate and key; is "
                     "--tls-key the PEM key of --tls-cert? (--log-level debug says more)");
        else
            snprintf(err, CORE_ERR_LEN,
                     "libmicrohttpd: cannot start the %s daemon (--log-level debug says why)",
                     config_model_name(srv->cfg->model));
        return -EINVAL;
    }
    /* The daemon owns the listening socket now and closes it when stopped. */
    if (srv->cfg->model != CONFIG_MODEL_EPOLL)
        shard->loop->listen_fd = -1;
    return 0;
}

static void monotonic_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}

/* Daemons per loop: one, except in the epoll model, where there may be enough for the loop's
 * share of --max-connections in shards of SHARD_CONNECTIONS, started as they fill up. */
static size_t shards_per_loop(const struct config *cfg, size_t nloops)
{
    if (cfg->model != CONFIG_MODEL_EPOLL)
        return 1;
    size_t per_loop = ((size_t)cfg->max_connections + nloops - 1) / nloops;
    size_t k = (per_loop + SHARD_CONNECTIONS - 1) / SHARD_CONNECTIONS;
    return k < 1 ? 1 : k > MAX_SHARDS ? MAX_SHARDS : k;
}

static const struct mhd_backend *backend_of(enum config_model model)
{
    switch (model) {
    case CONFIG_MODEL_POLL:
        return &mhd_backend_poll;
    case CONFIG_MODEL_SELECT:
        return &mhd_backend_select;
    case CONFIG_MODEL_THREAD_PER_CONNECTION:
        return &mhd_backend_tpc;
    case CONFIG_MODEL_EPOLL:
        break;
    }
    return &mhd_backend_epoll;
}

/* Makes the server; a certificate and key libmicrohttpd refuses are a config error, found before
 * the port is bound (a daemon with no listening socket binds nothing). */
static int mhd_server_prepare(struct app_server **out, const struct config *cfg,
                              const struct log *lg, char *err, size_t errlen)
{
    struct app_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *out = srv;
    srv->cfg = cfg;
    srv->log = lg;
    srv->tpc = cfg->model == CONFIG_MODEL_THREAD_PER_CONNECTION;
    srv->backend = backend_of(cfg->model);
    srv->internal = cfg->model == CONFIG_MODEL_POLL;
    atomic_init(&srv->stopping, 0);
    pthread_mutex_init(&srv->sleep_lock, NULL);
    monotonic_cond_init(&srv->sleep_cond);
    if (!cfg->tls_cert[0])
        return 0;
    size_t len;
    char why[CORE_ERR_LEN];
    int rc = config_read_file(cfg->tls_cert, 1 << 20, &srv->tls_cert, &len, why, sizeof why);
    if (rc == 0)
        rc = config_read_file(cfg->tls_key, 1 << 20, &srv->tls_key, &len, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %.200s", srv->tls_cert ? "tls-key" : "tls-cert", why);
        return -EINVAL;
    }
    struct MHD_Daemon *probe =
        MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, mhd_on_request,
                         NULL, MHD_OPTION_HTTPS_MEM_CERT, srv->tls_cert, MHD_OPTION_HTTPS_MEM_KEY,
                         srv->tls_key, MHD_OPTION_END);
    if (!probe) {
        snprintf(err, errlen,
                 "tls-key: %.80s does not load as the private key of %.80s (PEM expected)",
                 cfg->tls_key, cfg->tls_cert);
        return -EINVAL;
    }
    MHD_stop_daemon(probe);
    return 0;
}

/* The loops, each with its listening socket, timer heap, answers and daemon(s), and their
 * threads. */
static int mhd_server_start(struct app_server *srv, struct app_base *base, char *err, size_t errlen)
{
    const struct config *cfg = srv->cfg;
    size_t nshards = shards_per_loop(cfg, base->nloops);
    int rc = 0;
    srv->svc = base->svc;
    srv->loops = calloc(base->nloops, sizeof *srv->loops);
    srv->nloops = srv->loops ? base->nloops : 0;
    for (size_t i = 0; i < srv->nloops; i++) {
        srv->loops[i].listen_fd = base->listen_fds[i];
        base->listen_fds[i] = -1;
        srv->loops[i].wake_fd = srv->loops[i].ep_fd = -1;
    }
    for (size_t i = 0; i < srv->nloops && rc == 0; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        loop->shards = calloc(nshards, sizeof *loop->shards);
        if (!loop->shards) {
            rc = -ENOMEM;
            break;
        }
        loop->nshards = nshards;
        for (size_t k = 0; k < nshards; k++) {
            loop->shards[k].loop = loop;
            loop->shards[k].next_us = UINT64_MAX;
            atomic_init(&loop->shards[k].due, 0);
            atomic_init(&loop->shards[k].conns, 0);
        }
        loop->srv = srv;
        loop->index = i;
        loop->shard = service_shard(srv->svc, i);
        atomic_init(&loop->active, 0);
        pthread_mutex_init(&loop->lock, NULL);
        pthread_mutex_init(&loop->watch_lock, NULL);
        monotonic_cond_init(&loop->wake);
        /* --max-connections is enforced over all loops by the accept policy; any one loop may
         * hold them all, so each daemon and heap is sized for the whole limit. */
        if (timer_heap_init(&loop->timers, cfg->max_connections) != 0 ||
            mhd_build_cache(srv, loop->cache) != 0)
            rc = -ENOMEM;
    }
    if (!srv->loops || rc != 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        if (!srv->internal && !srv->tpc) {
            loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (loop->wake_fd < 0) {
                snprintf(err, errlen, "eventfd: %s", strerror(errno));
                rc = -EMFILE;
                break;
            }
        }
        rc = srv->backend->open(loop, err);
        if (rc != 0)
            break;
        if (srv->backend->turn) {
            rc = -pthread_create(&loop->thread, NULL, mhd_loop_main, loop);
            if (rc != 0) {
                snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
                break;
            }
            loop->thread_started = 1;
        }
    }
    if (rc != 0)
        mhd_server_stop(srv);
    return rc;
}

static void mhd_server_stop(struct app_server *srv)
{
    atomic_store_explicit(&srv->stopping, 1, memory_order_release);
    for (size_t i = 0; i < srv->nloops; i++)
        if (srv->loops[i].thread_started)
            mhd_wake_loop(&srv->loops[i]);
    if (srv->tpc)
        mhd_tpc_drain(srv);
    for (size_t i = 0; i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        if (loop->thread_started)
            pthread_join(loop->thread, NULL);
        loop->thread_started = 0;
        if (loop->watch_started)
            pthread_join(loop->watch_thread, NULL);
        loop->watch_started = 0;
        for (size_t k = 0; k < loop->nshards; k++) {
            if (loop->shards[k].daemon)
                MHD_stop_daemon(loop->shards[k].daemon);
            loop->shards[k].daemon = NULL;
        }
    }
}

static void mhd_server_free(struct app_server *srv)
{
    if (!srv)
        return;
    for (size_t i = 0; srv->loops && i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        net_close(&loop->listen_fd);
        net_close(&loop->ep_fd);
        net_close(&loop->wake_fd);
        free(loop->shards);
        if (srv->svc)
            mhd_free_cache(loop->cache, srv->svc->routes.count);
        timer_heap_cleanup(&loop->timers);
        if (loop->srv) {
            pthread_cond_destroy(&loop->wake);
            pthread_mutex_destroy(&loop->lock);
            pthread_mutex_destroy(&loop->watch_lock);
        }
    }
    free(srv->loops);
    free(srv->tls_cert);
    free(srv->tls_key);
    pthread_cond_destroy(&srv->sleep_cond);
    pthread_mutex_destroy(&srv->sleep_lock);
    free(srv);
}

static const char *library(void)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "libmicrohttpd %s", MHD_get_version());
    return buf;
}

const struct app_engine mhd_engine = {
    .caps = {.program = "slowsrv",
             .description = "libmicrohttpd engine",
             .models = CONFIG_MODEL_BIT(CONFIG_MODEL_EPOLL) | CONFIG_MODEL_BIT(CONFIG_MODEL_POLL) |
                       CONFIG_MODEL_BIT(CONFIG_MODEL_SELECT) |
                       CONFIG_MODEL_BIT(CONFIG_MODEL_THREAD_PER_CONNECTION),
             .models_name = "every model",
             .others = "no other engine"},
    .name = "mhd",
    .library = library,
    .prepare = mhd_server_prepare,
    .start = mhd_server_start,
    .stop = mhd_server_stop,
    .free = mhd_server_free,
};
