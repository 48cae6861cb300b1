/*
 * libmicrohttpd's request callbacks, turned into core events (exchange.h), and the core's
 * actions carried out: answer, hold (suspend), reset, close.
 */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mhd.h"

#include "base/net.h"

/* Every header the core put in the answer. */
static void add_headers(struct MHD_Response *resp, const struct answer *a)
{
    for (size_t i = 0; i < a->nheaders; i++)
        MHD_add_response_header(resp, a->headers[i].name, a->headers[i].value);
}

/* The body is not copied: it lives as long as the request (the route table's text, the shared
 * ?size= filler, the exchange's or the upload's own buffer), which libmicrohttpd frees only
 * after it is done with the answer. A client that stops reading thus holds no copy of a large
 * body. */
static struct MHD_Response *build_response(const struct answer *a)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        a->body_len, (void *)(uintptr_t)a->body, MHD_RESPMEM_PERSISTENT);
    if (resp)
        add_headers(resp, a);
    return resp;
}

int mhd_build_cache(struct app_server *srv, struct mhd_loop *loop)
{
    loop->ncache = srv->svc->routes.count;
    loop->cache = calloc(loop->ncache, sizeof *loop->cache);
    return loop->cache ? 0 : -ENOMEM;
}

void mhd_free_cache(struct mhd_loop *loop)
{
    for (size_t i = 0; loop->cache && i < loop->ncache; i++) {
        struct MHD_Response *r = atomic_load(&loop->cache[i]);
        if (r)
            MHD_destroy_response(r);
    }
    free(loop->cache);
    loop->cache = NULL;
    loop->ncache = 0;
}

/* Route i's prebuilt answer on this loop, built now if it is the first; NULL if it cannot be
 * built (the caller builds one for the request). The loop's threads may race to build it
 * (thread-per-connection): one keeps its own, the others free theirs. */
static struct MHD_Response *cached(struct app_server *srv, struct mhd_loop *loop, size_t i)
{
    if (i >= loop->ncache)
        return NULL;
    struct MHD_Response *r = atomic_load_explicit(&loop->cache[i], memory_order_acquire);
    struct answer a;
    if (r || exchange_cached_answer(srv->svc, i, &a) != 0 || !(r = build_response(&a)))
        return r;
    struct MHD_Response *none = NULL;
    if (atomic_compare_exchange_strong_explicit(&loop->cache[i], &none, r, memory_order_acq_rel,
                                                memory_order_acquire))
        return r;
    MHD_destroy_response(r);
    return none;
}

/* --overflow reset and ?fault=reset: the client sees a reset, not an answer (libmicrohttpd would
 * shut the socket down before closing it, and the client read an end of stream first). */
static enum MHD_Result reset(struct request *rq)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci)
        net_reset(ci->connect_fd);
    return MHD_NO;
}

/* slow-close: libmicrohttpd closes the connection right after an answer's last byte (it
 * carries Connection: close), and asks for no more of a body of known length, so it cannot hold
 * the end. The core keeps a second descriptor of the socket open until the silence is over
 * (loop_linger), and libmicrohttpd's shutdown of it is skipped (watch.c): its close then sends
 * nothing, and the FIN leaves when the core closes its descriptor. */
static void linger(struct request *rq, uint64_t now)
{
    uint64_t us = exchange_slow_close_us(rq->x);
    const union MHD_ConnectionInfo *ci =
        us ? MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    if (ci && loop_linger(&rq->shard->loop->core, rq->x, ci->connect_fd, now + us) == 0)
        mhd_watch_linger(ci->connect_fd, 1);
}

/* Content reader of a paced body (?drip=, ?fault=truncate, rate, reset-after, stall,
 * slow-close). Between chunks the backend waits until the next is due (pace). */
static ssize_t read_paced(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct request *rq = cls;
    const struct mhd_backend *backend = rq->shard->loop->srv->backend;
    const char *bytes;
    size_t len;
    uint64_t due, now;
    for (;;) {
        if (exchange_next(rq->x) == EXCHANGE_DO_CLOSE)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        now = timer_now_us();
        switch (exchange_body_take(rq->x, now, pos, max, &bytes, &len, &due)) {
        case EXCHANGE_BODY_SEND:
            memcpy(buf, bytes, len);
            if (pos + len == rq->body_len)
                linger(rq, now);
            return (ssize_t)len;
        case EXCHANGE_BODY_RESET:
            reset(rq);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        case EXCHANGE_BODY_DONE:
            return MHD_CONTENT_READER_END_OF_STREAM;
        case EXCHANGE_BODY_CUT:
            return MHD_CONTENT_READER_END_WITH_ERROR;
        case EXCHANGE_BODY_WAIT:
            break;
        }
        if (!backend->pace(rq, due, now))
            return 0; /* suspended until due: libmicrohttpd reads again then */
    }
}

/* A WebSocket's socket, once libmicrohttpd has sent its 101: handed to the core's socket loop
 * through a descriptor of the core's own, with the bytes read past the head. libmicrohttpd's
 * close of its own descriptor then skips its shutdown (watch.c), which would end the socket
 * under the core. */
static void on_upgraded(void *cls, struct MHD_Connection *connection, void *con_cls,
                        const char *extra_in, size_t extra_in_size, MHD_socket sock,
                        struct MHD_UpgradeResponseHandle *urh)
{
    struct wsloop_ticket *t = cls;
    struct request *rq = con_cls;
    (void)connection;
    int fd = dup(sock);
    if (fd >= 0) {
        mhd_watch_linger(sock, 1);
        wsloop_adopt(t, fd, extra_in, extra_in_size);
    }
    free(t);
    if (rq)
        rq->ws = NULL;
    /* libmicrohttpd resumes the connection to clean it up on its next run: the shard is due. */
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    if (rq)
        atomic_store_explicit(&rq->shard->due, 1, memory_order_release);
}

/* A WebSocket handshake's 101 (answer.upgrade): libmicrohttpd calls on_upgraded once the head
 * is out. Its own "Connection: Upgrade" is written as libh2o writes it, so that the head is the
 * same bytes on both binaries but for the Date. */
static enum MHD_Result respond_upgrade(struct request *rq, const struct answer *a)
{
    struct wsloop_ticket *t = exchange_ws_take(rq->x);
    struct MHD_Response *resp = t ? MHD_create_response_for_upgrade(on_upgraded, t) : NULL;
    if (!resp) {
        free(t);
        return MHD_NO;
    }
    MHD_del_response_header(resp, "Connection", "Upgrade");
    MHD_add_response_header(resp, "Connection", "upgrade");
    add_headers(resp, a);
    enum MHD_Result ret = MHD_queue_response(rq->conn, a->status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES) {
        rq->ws = t; /* on_upgraded takes it, unless the client leaves first */
        exchange_answer(rq->x);
    } else {
        free(t);
    }
    return ret;
}

/* The answer the core made, queued as libmicrohttpd's: the start table's route answers from
 * the loop's prebuilt ones, the others built per request. */
static enum MHD_Result respond(struct request *rq)
{
    struct answer a;
    exchange_answer_of(rq->x, &a);
    if (a.upgrade)
        return respond_upgrade(rq, &a);
    struct mhd_loop *loop = rq->shard->loop;
    struct MHD_Response *resp = a.cached >= 0 ? cached(loop->srv, loop, (size_t)a.cached) : NULL;
    int fresh = resp == NULL;
    if (a.unsized && !a.paced) {
        /* HEAD of a stream: libmicrohttpd 0.9.75 writes a chunked body's last chunk even after
         * a HEAD's head, which a client reads as the start of the next answer; an empty answer
         * (Content-Length: 0) is framed right. */
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (resp)
            add_headers(resp, &a);
    } else if (a.paced || a.unsized) {
        /* A stream's length is not known: libmicrohttpd sends it chunked over HTTP/1.1. */
        rq->body_len = a.unsized ? MHD_SIZE_UNKNOWN : a.body_len;
        resp = MHD_create_response_from_callback(rq->body_len, 16 * 1024, read_paced, rq, NULL);
        if (resp)
            add_headers(resp, &a);
    } else if (fresh) {
        resp = build_response(&a);
    }
    if (!resp)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(rq->conn, a.status, resp);
    if (fresh)
        MHD_destroy_response(resp);
    if (ret == MHD_YES)
        exchange_answer(rq->x);
    return ret;
}

/* Carries out what the core said. */
static enum MHD_Result act(struct request *rq, enum exchange_do d)
{
    switch (d) {
    case EXCHANGE_DO_HOLD:
        return rq->shard->loop->srv->backend->hold(rq, act);
    case EXCHANGE_DO_ANSWER:
        return respond(rq);
    case EXCHANGE_DO_RESET:
        return reset(rq);
    case EXCHANGE_DO_CLOSE:
    case EXCHANGE_DO_DROP:
        return MHD_NO;
    case EXCHANGE_DO_READ:
    case EXCHANGE_DO_WAIT:
    case EXCHANGE_DO_PARK:
    case EXCHANGE_DO_SEND:
    case EXCHANGE_DO_DONE:
        break;
    }
    return MHD_YES;
}

static long on_lookup(void *ctx, const char *name, char *buf, size_t len)
{
    const char *v =
        MHD_lookup_connection_value(((struct request *)ctx)->conn, MHD_HEADER_KIND, name);
    return v ? route_value_copy(v, strlen(v), buf, len) : -1;
}

/* libmicrohttpd 0.9.75 cannot queue an answer while it receives a body (only before it, or after
 * it). An upload error found mid-body (over --max-body without Content-Length, malformed
 * multipart) is therefore written straight to the socket, on a cleartext connection, with
 * Connection: close: the client learns it when it happens (libcurl then stops sending), the rest
 * of the body is read and dropped, and the connection is closed at its end. Over TLS the answer
 * waits for the end of the body. Returns 0, or -1 if the connection must close now (a partial
 * write). */
static int answer_early(struct request *rq)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (mhd_shard_tls(rq->shard) || !ci)
        return 0;
    int rc = exchange_write_h1(rq->x, ci->connect_fd);
    if (rc == 0)
        return 0; /* nothing written: answered at the end of the body after all */
    rq->answered_early = 1;
    exchange_answer(rq->x);
    return rc > 0 ? 0 : -1;
}

/* Size of the request's header block, for --max-header-size: libmicrohttpd's size of the whole
 * head less the request line ("METHOD TARGET VERSION\r\n") and the blank line that ends it. */
static size_t header_bytes(struct MHD_Connection *conn, const char *method, size_t target,
                           const char *version)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    size_t around = strlen(method) + target + strlen(version) + 4 + 2;
    return ci && ci->header_size > around ? ci->header_size - around : 0;
}

/* A request's record, with its exchange right after it in the same block. */
static struct request *new_request(void)
{
    size_t rsize = (sizeof(struct request) + EXCHANGE_ALIGN - 1) / EXCHANGE_ALIGN * EXCHANGE_ALIGN;
    struct request *rq = calloc(1, rsize + exchange_size());
    if (rq)
        rq->x = (struct exchange *)(void *)((char *)rq + rsize);
    return rq;
}

/* The loop of a callback's closure (a shard). */
static struct mhd_loop *loop_of(void *cls)
{
    return ((struct mhd_shard *)cls)->loop;
}

enum MHD_Result mhd_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **req_cls)
{
    struct mhd_loop *loop = loop_of(cls);
    struct request *rq = *req_cls;

    if (!rq || !rq->started) {
        if (!rq && !(rq = new_request()))
            return MHD_NO;
        rq->conn = conn;
        rq->shard = cls;
        rq->started = 1;
        struct mhd_conn *w = mhd_conn_of(conn);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct head head;
        struct head_field fields[HEAD_MAX_FIELDS];
        struct route_request in = {
            .method = method,
            .target = url,
            .target_len = strlen(url),
            .lookup = on_lookup,
            .ctx = rq,
            .peer = ci ? ci->client_addr : NULL,
            .raw_target = rq->raw_uri,
            .raw_target_len = rq->raw_len,
            .header_bytes = header_bytes(conn, method, w ? w->target_bytes : strlen(url), version),
            .target_bytes = w ? w->target_bytes : 0,
            .head = mhd_raw_head(rq, method, version, &head, fields)};
        enum exchange_do d = loop_begin(&loop->core, rq->x, rq, w ? &w->c : NULL, &in);
        *req_cls = rq;
        if (w)
            w->current = rq;
        return act(rq, d);
    }
    if (*upload_data_size) {
        /* read-rate: what is not taken yet stays in libmicrohttpd's buffer, which then reads
         * nothing more from the socket; the connection is suspended until more may be taken
         * (libmicrohttpd hands the rest over again once it is resumed). */
        const struct mhd_backend *backend = loop->srv->backend;
        const char *at = upload_data;
        size_t left = *upload_data_size;
        while (left) {
            uint64_t due, now = timer_now_us();
            size_t n = (size_t)exchange_read_allowed(rq->x, now, left, &due);
            if (n == 0) {
                if (!backend->read_pace(rq, due, now)) {
                    *upload_data_size = left;
                    return MHD_YES;
                }
                continue;
            }
            left -= n;
            *upload_data_size = left;
            enum exchange_do d = exchange_on_body(rq->x, at, n);
            at += n;
            if (d == EXCHANGE_DO_ANSWER && answer_early(rq) != 0)
                return MHD_NO;
            if (d == EXCHANGE_DO_CLOSE)
                return MHD_NO;
        }
        return MHD_YES;
    }
    /* An answer written around libmicrohttpd: the rest of the body was dropped, and the
     * connection closes. */
    if (rq->answered_early)
        return MHD_NO;
    return act(rq, exchange_next(rq->x));
}

/* The request line is in: the record it returns becomes the request's. It keeps the target as
 * received when it has a query (slowsrv reads it: on_lookup), an access log is open
 * (libmicrohttpd hands the handler the path alone) or its path holds a %-encoded byte, and stops
 * libmicrohttpd from parsing the query itself: this runs on its read buffer before it does, and
 * an empty query is what it then parses. */
void *mhd_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct mhd_loop *loop = loop_of(cls);
    /* A later request on a kept-alive connection: its headers are due from its request line. */
    struct mhd_conn *w = mhd_conn_of(conn);
    size_t n = strlen(uri);
    if (w) {
        conn_head_begins(&w->c, timer_now_us());
        w->target_bytes = n;
    }
    struct request *rq = new_request();
    if (!rq)
        return NULL;
    rq->uri_at = uri;
    size_t plen = strcspn(uri, "?");
    if (plen < sizeof rq->path)
        memcpy(rq->path, uri, plen); /* the record is zeroed: it stays a string */
    /* libmicrohttpd ended the target with a NUL over the space before "HTTP/1.x"; an earlier NUL
     * is one the client sent. */
    rq->target_nul = strncmp(uri + n + 1, "HTTP/", 5) != 0;
    char *q = memchr(uri, '?', n);
    /* libmicrohttpd decodes the path in place before the handler runs: a path with a
     * percent-encoded byte is kept as received, so that the head check sees what was sent (a
     * %20 or %0A is no bare space or control byte, a %00 ends no string) and the control API
     * decodes a route's path once, as on slowsrv-h2o. */
    if (q || loop->srv->svc->access || memchr(uri, '%', plen)) {
        rq->raw_uri = strndup(uri, n);
        rq->raw_len = rq->raw_uri ? n : 0;
    }
    if (q)
        q[1] = '\0';
    return rq;
}

void mhd_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct mhd_loop *loop = loop_of(cls);
    struct request *rq = *req_cls;
    (void)toe;
    if (!rq)
        return;
    /* libmicrohttpd answered it before the handler ran (a bad Content-Length, say): counted and
     * logged all the same. It does not tell the method. */
    const union MHD_ConnectionInfo *st =
        rq->started ? NULL : MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
    if (st && st->http_status) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct route_request in = {.method = "-",
                                   .target = rq->path,
                                   .target_len = strlen(rq->path),
                                   .peer = ci ? ci->client_addr : NULL};
        exchange_library_answer(loop->srv->svc, loop->core.shard, &in, st->http_status);
    }
    struct mhd_conn *w = mhd_conn_of(conn);
    if (w && w->current == rq)
        w->current = NULL;
    if (rq->started)
        loop_end(&loop->core, rq->x);
    free(rq->raw_uri);
    free(rq->ws);
    free(rq);
    *req_cls = NULL;
}

/* Writes x's answer through the GnuTLS session of a TLS connection. Returns 1 if all of it
 * went. */
static int write_answer_tls(gnutls_session_t session, struct exchange *x)
{
    size_t n;
    char *out = exchange_h1_bytes(x, &n);
    int all = out && gnutls_record_send(session, out, n) == (ssize_t)n;
    free(out);
    return all;
}

int mhd_refuse_early(struct mhd_conn *w, int fd, void *session, unsigned status, const char *why)
{
    struct mhd_loop *loop = w->shard->loop;
    struct request *rq = w->current;
    if (rq && rq->started) {
        if (rq->answered_early || exchange_refuse(rq->x, status, why) != EXCHANGE_DO_ANSWER)
            return -1;
        if ((session ? write_answer_tls(session, rq->x) : exchange_write_h1(rq->x, fd)) <= 0)
            return -1;
        rq->answered_early = 1;
        exchange_answer(rq->x);
        return 0;
    }
    /* Refused before libmicrohttpd read its head: a request of its own, named by its request
     * line ("METHOD TARGET HTTP/1.x"). */
    char method[32], target[96];
    struct head h;
    head_name_line(w->h1.first, w->h1.first_len, &h);
    snprintf(method, sizeof method, "%.*s", (int)h.mlen, h.method);
    snprintf(target, sizeof target, "%.*s", (int)h.tlen, h.target);
    struct request *own = new_request();
    if (!own)
        return -1;
    own->shard = w->shard;
    struct route_request in = {.method = method,
                               .target = target,
                               .target_len = strlen(target),
                               .refused = status,
                               .refused_why = why};
    int rc = -1;
    if (loop_begin(&loop->core, own->x, own, &w->c, &in) == EXCHANGE_DO_ANSWER &&
        (session ? write_answer_tls(session, own->x) : exchange_write_h1(own->x, fd)) > 0) {
        exchange_answer(own->x);
        rc = 0;
    }
    loop_end(&loop->core, own->x);
    free(own);
    return rc;
}
