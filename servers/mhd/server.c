/*
 * The libmicrohttpd engine: start and stop, the daemons' options, the engine table (the rest:
 * mhd.h).
 */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/net.h"
#include "mhd.h"

/* Defined at the end, with the engine table; the error paths of the start call them. */
static void mhd_server_stop(struct app_server *srv);
static void mhd_server_free(struct app_server *srv);

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
    srv->backend = backend_of(cfg->model);
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

/* A loop's thread: the core loop runs it (loop.h). */
static void *loop_main(void *arg)
{
    struct mhd_loop *loop = arg;
    loop_run(&loop->core, &loop->srv->stopping);
    return NULL;
}

/* The loops, each with its listening socket, core loop, answers and daemon(s), and their
 * threads. */
static int mhd_server_start(struct app_server *srv, struct app_base *base, char *err, size_t errlen)
{
    const struct config *cfg = srv->cfg;
    size_t nshards = shards_per_loop(cfg, base->nloops);
    int rc = 0;
    srv->svc = base->svc;
    if (mhd_watch_init() != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    srv->loops = calloc(base->nloops, sizeof *srv->loops);
    srv->nloops = srv->loops ? base->nloops : 0;
    for (size_t i = 0; i < srv->nloops; i++) {
        srv->loops[i].listen_fd = base->listen_fds[i];
        base->listen_fds[i] = -1;
        srv->loops[i].ep_fd = srv->loops[i].control_fd = -1;
    }
    /* Loop 0 serves the control listener too, through the same exchange path. */
    if (srv->nloops && base->control_fd >= 0) {
        srv->loops[0].control_fd = base->control_fd;
        srv->control_port = net_local_port(base->control_fd);
        base->control_fd = -1;
    }
    for (size_t i = 0; i < srv->nloops && rc == 0; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        loop->srv = srv;
        loop->index = i;
        pthread_mutex_init(&loop->lock, NULL);
        monotonic_cond_init(&loop->wake);
        /* --max-connections is enforced over all loops by the core's accept; any one loop may
         * hold them all, so each daemon and heap is sized for the whole limit. */
        rc = loop_init(&loop->core, srv->backend->core, loop, srv->svc, i, cfg->max_connections,
                       cfg->grace_us);
        loop->ready = rc == 0;
        loop->shards = calloc(nshards, sizeof *loop->shards);
        loop->nshards = loop->shards ? nshards : 0;
        for (size_t k = 0; k < loop->nshards; k++) {
            loop->shards[k] = (struct mhd_shard){.loop = loop, .next_us = UINT64_MAX};
            atomic_init(&loop->shards[k].due, 0);
            atomic_init(&loop->shards[k].conns, 0);
        }
        loop->ctl = (struct mhd_shard){.loop = loop, .next_us = UINT64_MAX, .ep_fd = -1};
        atomic_init(&loop->ctl.due, 0);
        atomic_init(&loop->ctl.conns, 0);
        if (rc == 0 && (!loop->shards || mhd_build_cache(srv, loop) != 0))
            rc = -ENOMEM;
        if (rc == 0) {
            rc = mhd_open_control(loop, err);
            if (rc == 0)
                rc = srv->backend->open(loop, err);
        } else
            snprintf(err, errlen, "loop set-up: %s", strerror(-rc));
        if (rc == 0) {
            rc = -pthread_create(&loop->thread, NULL, loop_main, loop);
            loop->thread_started = rc == 0;
            if (rc != 0)
                snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
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
            loop_wake(&srv->loops[i].core);
    for (size_t i = 0; i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        if (loop->thread_started)
            pthread_join(loop->thread, NULL);
        loop->thread_started = 0;
        if (loop->accept_started)
            pthread_join(loop->accept_thread, NULL);
        loop->accept_started = 0;
        for (size_t k = 0; k < loop->nshards; k++) {
            if (loop->shards[k].daemon)
                MHD_stop_daemon(loop->shards[k].daemon);
            loop->shards[k].daemon = NULL;
        }
        if (loop->ctl.daemon)
            MHD_stop_daemon(loop->ctl.daemon);
        loop->ctl.daemon = NULL;
    }
}

static void mhd_server_free(struct app_server *srv)
{
    if (!srv)
        return;
    for (size_t i = 0; srv->loops && i < srv->nloops; i++) {
        struct mhd_loop *loop = &srv->loops[i];
        net_close(&loop->listen_fd);
        net_close(&loop->control_fd);
        net_close(&loop->ep_fd);
        free(loop->shards);
        mhd_free_cache(loop);
        if (loop->ready)
            loop_cleanup(&loop->core);
        if (loop->srv) {
            pthread_cond_destroy(&loop->wake);
            pthread_mutex_destroy(&loop->lock);
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
