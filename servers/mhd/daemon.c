/*
 * The libmicrohttpd daemons: their options and callbacks, started the same for every model.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mhd.h"

/* Per-connection memory pool. MHD's default (32 KiB) costs 32 KiB of RSS for every idle
 * keep-alive connection once it has served a request; 8 KiB still holds request headers of
 * several KiB, the request line and our small responses. */
#define CONN_MEMORY_LIMIT (8 * 1024)

/* GnuTLS's priorities for HTTPS: its defaults, with TLS 1.2 and 1.3 as the only versions. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* How far libmicrohttpd's own connection limit lies above slowsrv's. */
#define LIMIT_ROOM 16

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

    /* --max-connections is kept by the loops, which accept (mhd_accept_some); libmicrohttpd's own
     * limit, at which it would close what it is handed, lies above it. */
    OPT(MHD_OPTION_CONNECTION_LIMIT, conn_limit + LIMIT_ROOM, NULL);
    OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, conn_memory(srv->cfg), NULL);
    /* No timeout of libmicrohttpd's (whole seconds): the core's sweeps keep the connections'
     * clocks (conn.h). */
    OPT(MHD_OPTION_CONNECTION_TIMEOUT, 0, NULL);
    OPT(MHD_OPTION_NOTIFY_COMPLETED, mhd_on_completed, shard);
    OPT(MHD_OPTION_NOTIFY_CONNECTION, mhd_on_connection, shard);
    OPT(MHD_OPTION_URI_LOG_CALLBACK, mhd_on_uri, shard);
    if (srv->cfg->model == CONFIG_MODEL_THREAD_PER_CONNECTION)
        OPT(MHD_OPTION_THREAD_STACK_SIZE, 256 * 1024, NULL);
    int tls = mhd_shard_tls(shard);
    if (tls) {
        flags |= MHD_USE_TLS;
        OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert);
        OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key);
        /* TLS 1.2 and 1.3 only (RFC 8996 deprecates 1.0 and 1.1); GnuTLS's NORMAL would also
         * offer 1.0 and 1.1 to a client that asks. slowsrv-h2o sets the same floor on OpenSSL. */
        OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)(uintptr_t)TLS_PRIORITIES);
    } else
        flags |= MHD_ALLOW_UPGRADE; /* a WebSocket route's 101 (cleartext only: wshs.h) */
    OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
    shard->daemon = MHD_start_daemon(flags, 0, NULL, NULL, mhd_on_request, shard, MHD_OPTION_ARRAY,
                                     opts, MHD_OPTION_END);
    if (!shard->daemon) {
        if (tls)
            snprintf(err, CORE_ERR_LEN,
                     "tls-key: libmicrohttpd (GnuTLS) refused the certificate and key; is "
                     "--tls-key the PEM key of --tls-cert? (--log-level debug says more)");
        else
            snprintf(err, CORE_ERR_LEN,
                     "libmicrohttpd: cannot start the %s daemon (--log-level debug says why)",
                     config_model_name(srv->cfg->model));
        return -EINVAL;
    }
    return 0;
}

int mhd_open_daemon(struct mhd_loop *loop, char *err)
{
    int rc = mhd_start_daemon(&loop->shards[0], loop->srv->cfg->max_connections, err);
    loop->used = rc == 0;
    return rc;
}

int mhd_shard_tls(const struct mhd_shard *shard)
{
    return shard->loop->srv->tls_cert && shard != &shard->loop->ctl;
}

int mhd_open_control(struct mhd_loop *loop, char *err)
{
    const struct app_server *srv = loop->srv;
    if (loop->control_fd < 0 || !srv->tls_cert || config_control_tls(srv->cfg))
        return 0;
    return mhd_start_daemon(&loop->ctl, srv->cfg->max_connections, err);
}
