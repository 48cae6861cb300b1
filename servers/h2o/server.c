/*
 * The libh2o engine: libh2o's configuration and TLS, start and stop, the engine table (the rest:
 * h2o.h).
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "h2o.h"
#include "pool_fit.h"

#include <h2o/http2.h>
#include <h2o/version.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

/* Defined at the end, with the engine table; the error paths of the start call them. */
static void h2s_server_stop(struct app_server *srv);
static void h2s_server_free(struct app_server *srv);

static int setup_tls(struct app_server *srv, char *err)
{
    const struct config *cfg = srv->cfg;
    srv->ssl_ctx = SSL_CTX_new(TLS_server_method());
    if (!srv->ssl_ctx) {
        snprintf(err, CORE_ERR_LEN, "tls: cannot create an OpenSSL context");
        return -EINVAL;
    }
    /* TLS 1.2 and 1.3 only (RFC 8996 deprecates 1.0 and 1.1), as slowsrv's GnuTLS. */
    SSL_CTX_set_min_proto_version(srv->ssl_ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(srv->ssl_ctx, cfg->tls_cert) != 1) {
        snprintf(err, CORE_ERR_LEN, "tls-cert: cannot load '%.120s': %s", cfg->tls_cert,
                 ERR_reason_error_string(ERR_get_error()));
        return -EINVAL;
    }
    if (SSL_CTX_use_PrivateKey_file(srv->ssl_ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(srv->ssl_ctx) != 1) {
        snprintf(err, CORE_ERR_LEN, "tls-key: cannot load '%.120s' for the certificate: %s",
                 cfg->tls_key, ERR_reason_error_string(ERR_get_error()));
        return -EINVAL;
    }
    /* h2 first, and http/1.1 for a client that offers it alone (libh2o's own list is h2's). */
    static char h2[] = "h2", h1[] = "http/1.1";
    static const h2o_iovec_t alpn[] = {{h2, sizeof h2 - 1}, {h1, sizeof h1 - 1}, {NULL, 0}};
    h2o_ssl_register_alpn_protocols(srv->ssl_ctx, alpn);
    return 0;
}

/* One listener's libh2o configuration: its body limit and one handler. The connections' clocks
 * are the core's (conn.h); libh2o keeps only its HTTP/2 idle timeout, which ends an idle session
 * with a GOAWAY, at the same --idle-timeout. */
static void configure(h2o_globalconf_t *g, struct app_server *srv, uint64_t max_body,
                      int (*on)(h2o_handler_t *, h2o_req_t *))
{
    const struct config *cfg = srv->cfg;
    h2o_config_init(g);
    g->server_name = h2o_iovec_init(H2O_STRLIT(""));
    g->max_request_entity_size = max_body;
    g->http1.req_timeout = UINT32_MAX;
    g->handshake_timeout = UINT32_MAX;
    g->http2.idle_timeout = cfg->idle_timeout_us ? cfg->idle_timeout_us / 1000 : UINT32_MAX;
    h2o_hostconf_t *host =
        h2o_config_register_host(g, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_handler_t *handler =
        h2o_create_handler(h2o_config_register_path(host, "/", 0), sizeof *handler);
    handler->on_req = on;
    /* libh2o answers some requests itself (a body over the limit: 413) on the host's fallback
     * path: a logger there counts and logs them (h2s_library_answer). */
    struct h2s_logger *logger =
        (struct h2s_logger *)(void *)h2o_create_logger(&host->fallback_path, sizeof *logger);
    logger->super.log_access = h2s_library_answer;
    logger->srv = srv;
}

static int setup_globalconf(struct app_server *srv, char *err)
{
    if (!pool_fit_init())
        LOG(srv->log, LOG_LEVEL_INFO, "%s",
            "libh2o's pool layout is not 2.2.5's: waiting requests keep their 4 KiB chunk");
    configure(&srv->globalconf, srv, srv->cfg->max_body, h2s_on_req);
    /* The control API (--control) has a host of its own, on its own listener: a body over its
     * limit gets libh2o's 413 from the head, before any of it is read. */
    configure(&srv->ctl_conf, srv, CONTROL_BODY_MAX, h2s_on_control_req);
    /* The spool template is a libh2o global: set it before any loop runs. */
    char *tmpl = h2o_socket_buffer_mmap_settings.fn_template;
    size_t room = sizeof h2o_socket_buffer_mmap_settings.fn_template;
    if ((size_t)snprintf(tmpl, room, "%s/slowsrv-h2o.b.XXXXXX", srv->cfg->spool_dir) >= room) {
        snprintf(err, CORE_ERR_LEN, "spool-dir: path too long");
        return -EINVAL;
    }
    return 0;
}

/* Makes the server: libh2o's configuration, and OpenSSL's context when serving HTTPS (a
 * certificate or key it refuses is a config error, found before the port is bound). */
static int h2s_server_prepare(struct app_server **out, const struct config *cfg,
                              const struct log *lg, char *err, size_t errlen)
{
    struct app_server *srv = calloc(1, sizeof *srv);
    (void)errlen;
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *out = srv;
    srv->cfg = cfg;
    srv->log = lg;
    srv->control_fd = -1;
    atomic_init(&srv->stopping, 0);
    atomic_init(&srv->ready, 0);
    int rc = setup_globalconf(srv, err);
    if (rc == 0 && cfg->tls_cert[0])
        rc = setup_tls(srv, err);
    return rc;
}

/* The loops, each with its listening socket, core loop and timerfd, in threads of their own;
 * returns once every one of them serves. */
static int h2s_server_start(struct app_server *srv, struct app_base *base, char *err, size_t errlen)
{
    const struct config *cfg = srv->cfg;
    int rc = 0;
    srv->svc = base->svc;
    srv->control_fd = base->control_fd;
    base->control_fd = -1; /* loop 0 takes it */
    if (!(srv->loops = calloc(base->nloops, sizeof *srv->loops))) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    srv->nloops = base->nloops;
    for (size_t i = 0; i < srv->nloops; i++) {
        srv->loops[i].listen_fd = base->listen_fds[i];
        base->listen_fds[i] = -1;
        srv->loops[i].timer_fd = srv->loops[i].wake_poll_fd = -1;
    }
    for (size_t i = 0; rc == 0 && i < srv->nloops; i++) {
        struct h2s_loop *loop = &srv->loops[i];
        loop->srv = srv;
        loop->index = i;
        /* Any one loop may hold every connection the limit allows, and HTTP/2 multiplexes: up
         * to 100 waiting streams per connection. */
        rc = loop_init(&loop->core, &h2s_backend, loop, srv->svc, i, cfg->max_connections * 100,
                       cfg->grace_us);
        loop->ready = rc == 0;
        loop->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        loop->wake_poll_fd = rc ? -1 : fcntl(loop_wake_fd(&loop->core), F_DUPFD_CLOEXEC, 0);
        if (rc == 0 && (loop->timer_fd < 0 || loop->wake_poll_fd < 0))
            rc = -EMFILE;
        if (rc != 0)
            snprintf(err, errlen, "loop set-up: %s", strerror(-rc));
    }
    for (size_t i = 0; rc == 0 && i < srv->nloops; i++) {
        rc = -pthread_create(&srv->loops[i].thread, NULL, h2s_loop_main, &srv->loops[i]);
        if (rc != 0)
            snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
        else
            srv->loops[i].thread_started = 1;
    }
    /* The loops make their contexts in their own threads; "listening" (and READY=1) is only
     * said once every one of them serves. */
    uint64_t deadline = timer_now_us() + 10 * 1000000;
    while (rc == 0 && atomic_load(&srv->ready) < srv->nloops && timer_now_us() < deadline) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (rc == 0 && atomic_load(&srv->ready) < srv->nloops) {
        snprintf(err, errlen, "event loops did not start within 10 s");
        rc = -ETIMEDOUT;
    }
    if (rc != 0)
        h2s_server_stop(srv);
    return rc;
}

static void h2s_server_stop(struct app_server *srv)
{
    atomic_store(&srv->stopping, 1);
    for (size_t i = 0; i < srv->nloops; i++)
        if (srv->loops[i].thread_started)
            loop_wake(&srv->loops[i].core);
    for (size_t i = 0; i < srv->nloops; i++) {
        if (srv->loops[i].thread_started)
            pthread_join(srv->loops[i].thread, NULL);
        srv->loops[i].thread_started = 0;
    }
}

static void h2s_server_free(struct app_server *srv)
{
    if (!srv)
        return;
    for (size_t i = 0; srv->loops && i < srv->nloops; i++) {
        struct h2s_loop *loop = &srv->loops[i];
        net_close(&loop->listen_fd);
        net_close(&loop->timer_fd);
        net_close(&loop->wake_poll_fd);
        if (loop->ready)
            loop_cleanup(&loop->core);
    }
    free(srv->loops);
    net_close(&srv->control_fd);
    if (srv->globalconf.hosts)
        h2o_config_dispose(&srv->globalconf);
    if (srv->ctl_conf.hosts)
        h2o_config_dispose(&srv->ctl_conf);
    if (srv->ssl_ctx)
        SSL_CTX_free(srv->ssl_ctx);
    free(srv);
}

static const char *library(void)
{
    return "libh2o " H2O_VERSION;
}

const struct app_engine h2o_engine = {
    .caps = {.program = "slowsrv-h2o",
             .description = "libh2o engine",
             .models = CONFIG_MODEL_BIT(CONFIG_MODEL_EPOLL),
             .models_name = "event loops",
             .others = "slowsrv (libmicrohttpd)",
             .whole_bodies = H2S_WHOLE_BODIES},
    .name = "h2o",
    .library = library,
    .prepare = h2s_server_prepare,
    .start = h2s_server_start,
    .stop = h2s_server_stop,
    .free = h2s_server_free,
};
