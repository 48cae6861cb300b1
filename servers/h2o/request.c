/*
 * libh2o's requests turned into core events (exchange.h), and the core's answers handed to
 * libh2o: whole, paced, or cut.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/net.h"
#include "h2o.h"
#include "pool_fit.h"

#include <h2o/http1.h>

/* The socket under req, or NULL. */
static h2o_socket_t *socket_of(h2o_req_t *req)
{
    return req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
}

static struct h2s_request *request_of(struct exchange *x)
{
    return (struct h2s_request *)(void *)((char *)x - REQUEST_SIZE);
}

/* `name` in its canonical case ("Content-Type"): HTTP/1 sends it as given, HTTP/2 lowercased
 * (libh2o keeps header names that way). libh2o keeps the value until the answer is sent: one
 * made for this answer alone (struct answer's timing) is copied into the request's pool. */
static void add_header(h2o_req_t *req, const struct answer *a, const char *name, const char *value)
{
    size_t n = strlen(name), vlen = strlen(value);
    char *lower = h2o_mem_alloc_pool(&req->pool, n);
    for (size_t i = 0; i < n; i++)
        lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    if (value == a->timing)
        value = h2o_strdup(&req->pool, value, vlen).base;
    h2o_add_header_by_str(&req->pool, &req->res.headers, lower, n, 1, name, value, vlen);
}

static void on_sent(h2o_generator_t *gen, h2o_req_t *req)
{
    (void)gen;
    (void)req;
}

static void on_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    /* The client left: on_dispose ends the request, and with it any timer. */
    (void)gen;
    (void)req;
}

/* Hands libh2o the next bytes of a paced body, or queues the timer of the next chunk. Runs when
 * the answer starts, when libh2o has sent the previous bytes (proceed) and when the timer pops. */
static void send_paced(struct h2s_request *r)
{
    size_t len;
    uint64_t due;
    const char *bytes;
    h2o_iovec_t buf;
    switch (exchange_body_take(r->x, timer_now_us(), r->sent, SIZE_MAX, &bytes, &len, &due)) {
    case EXCHANGE_BODY_SEND:
        buf = h2o_iovec_init(bytes, len);
        r->sent += len;
        r->sending = 1;
        r->head_sent = 1; /* with these bytes */
        /* A slow-close holds the end of the answer (its last step is a WAIT, then DONE). */
        h2o_send(r->req, &buf, 1,
                 r->sent == r->req->res.content_length && !exchange_slow_close_us(r->x)
                     ? H2O_SEND_STATE_FINAL
                     : H2O_SEND_STATE_IN_PROGRESS);
        return;
    case EXCHANGE_BODY_RESET:
        /* HTTP/1: a TCP reset, the bytes before it sent; HTTP/2: the stream's RST_STREAM. */
        if (r->req->version < 0x200) {
            h2o_socket_t *sock = socket_of(r->req);
            if (sock)
                net_reset(h2o_socket_get_fd(sock));
        }
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    case EXCHANGE_BODY_DONE:
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_FINAL);
        return;
    case EXCHANGE_BODY_CUT:
        /* HTTP/1: the connection closes short of Content-Length; HTTP/2: the stream is reset. */
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    case EXCHANGE_BODY_WAIT:
        break;
    }
    if (loop_pace(&r->loop->core, r->x, due) != EXCHANGE_DO_WAIT) {
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    }
    /* The head goes out when the delay ends, as slowsrv's does, not with the first chunk:
     * libh2o writes it on the first send, so send nothing yet. */
    if (!r->head_sent && !r->sending) {
        r->head_sent = 1;
        r->sending = 1;
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_IN_PROGRESS);
    }
}

static void on_paced_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    struct h2s_request *r = H2O_STRUCT_FROM_MEMBER(struct h2s_request, gen, gen);
    (void)req;
    /* libh2o may ask again while the next chunk's timer runs: that timer sends it. */
    if (!r->sending)
        return;
    r->sending = 0;
    if (exchange_next(r->x) == EXCHANGE_DO_CLOSE) /* cut short while libh2o sent */
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
    else
        send_paced(r);
}

static void break_connection(struct h2s_request *r, int rst);

/* A WebSocket's socket, once libh2o has written its 101 and let go of the connection: taken out
 * of libh2o's loop and handed to the core's socket loop, with the bytes read past the request
 * (reqsize bytes of the input are the request). libh2o closes its own descriptor; the core keeps
 * a second one. */
static void on_upgraded(void *data, h2o_socket_t *sock, size_t reqsize)
{
    struct wsloop_ticket *t = data;
    h2o_socket_export_t info;
    if (sock && h2o_socket_export(sock, &info) == 0) {
        int fd = dup(info.fd);
        size_t have = info.input->size > reqsize ? info.input->size - reqsize : 0;
        if (fd >= 0)
            wsloop_adopt(t, fd, info.input->bytes + reqsize, have);
        h2o_socket_dispose_export(&info);
    }
    free(t);
}

/* A WebSocket handshake's 101 (answer.upgrade): libh2o writes it with Connection: upgrade and
 * calls on_upgraded. Over HTTP/2 the core answers 400 instead, so the request is HTTP/1.1. */
static void respond_upgrade(struct h2s_request *r, const struct answer *a)
{
    h2o_req_t *req = r->req;
    struct wsloop_ticket *t = exchange_ws_take(r->x);
    if (!t || req->version >= 0x200) {
        free(t);
        break_connection(r, 0);
        return;
    }
    req->res.status = (int)a->status;
    req->res.reason = a->reason;
    req->res.content_length = SIZE_MAX;
    for (size_t i = 0; i < a->nheaders; i++)
        add_header(req, a, a->headers[i].name, a->headers[i].value);
    exchange_answer(r->x);
    h2o_http1_upgrade(req, NULL, 0, on_upgraded, t);
}

/* The core's answer (exchange_answer_of). Its body is sent as it is, not copied (h2o_send_inline
 * would copy it into the request's pool): it lives as long as the request, and a client that
 * stops reading, or an HTTP/2 stream whose window stays shut, holds no copy of a large body. */
static void respond(struct h2s_request *r)
{
    h2o_req_t *req = r->req;
    struct answer a;
    exchange_answer_of(r->x, &a);
    if (a.upgrade) {
        respond_upgrade(r, &a);
        return;
    }
    req->res.status = (int)a.status;
    req->res.reason = a.reason;
    /* SIZE_MAX: libh2o then sends no content-length; a bodiless status gets no body either,
     * an event stream (unsized) is chunked over HTTP/1.1 and DATA frames over HTTP/2. */
    req->res.content_length = a.bodiless || a.unsized ? SIZE_MAX : a.body_len;
    /* HTTP/1 closes after the answer: libh2o writes Connection: close itself, so the answer's
     * own, its last header, is left out. */
    for (size_t i = 0; i < a.nheaders - (a.close && a.nheaders ? 1 : 0); i++)
        add_header(req, &a, a.headers[i].name, a.headers[i].value);
    /* A stream's HEAD over HTTP/1.1 has GET's head, chunked coding named as slowsrv names it
     * (libh2o chunks a body it sends, and names none for a head alone). */
    if (a.unsized && !a.paced && req->version == 0x101)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_TRANSFER_ENCODING, NULL,
                       H2O_STRLIT("chunked"));
    /* HTTP/1.x: the core decides whether the connection stays open, from the head as sent
     * (libh2o alone would keep it on "Connection: close, keep-alive" and close it on
     * "Connection: upgrade"). */
    if (a.close)
        req->http1_is_persistent = 0;
    else if (r->head_read)
        req->http1_is_persistent = 1;
    exchange_answer(r->x);
    if (req->version >= 0x200) {
        h2o_socket_t *sock = socket_of(req);
        if (sock)
            h2s_budget_answered(sock->on_close.data);
    }
    r->gen.proceed = a.paced ? on_paced_proceed : on_sent;
    r->gen.stop = on_stop;
    h2o_start_response(req, &r->gen);
    if (a.paced) {
        send_paced(r);
        return;
    }
    /* HEAD: the head alone (h2o_send, unlike h2o_send_inline, would send the body too). */
    int head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    h2o_iovec_t buf = h2o_iovec_init(a.body, a.body_len);
    h2o_send(req, &buf, a.body_len && !head ? 1 : 0, H2O_SEND_STATE_FINAL);
}

/* The core said to reset or close the connection, or the client is gone: libh2o 2.2.5 has no call
 * to drop a connection from a handler, so the socket is broken under it, shut down (the client
 * reads an end of stream) or reset (net_reset), and the request ends in error before its head:
 * HTTP/1 closes the connection, HTTP/2 resets the stream (and every stream of the connection
 * ends with it). */
static void break_connection(struct h2s_request *r, int rst)
{
    h2o_socket_t *sock = socket_of(r->req);
    if (sock && rst)
        net_reset(h2o_socket_get_fd(sock));
    else if (sock)
        shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
    /* libh2o cannot end a request before its head; this one is never written, as the socket
     * under it is broken already. */
    r->req->res.status = 500;
    r->req->http1_is_persistent = 0;
    r->gen.proceed = on_sent;
    r->gen.stop = on_stop;
    h2o_start_response(r->req, &r->gen);
    h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
}

/* Carries out what the core said. */
static void act(struct h2s_request *r, enum exchange_do d)
{
    switch (d) {
    case EXCHANGE_DO_HOLD: /* nothing to suspend: a handler that returned is left waiting */
        act(r, loop_hold(&r->loop->core, r->x));
        return;
    case EXCHANGE_DO_ANSWER:
        respond(r);
        return;
    case EXCHANGE_DO_SEND:
        if (!r->sending) /* else libh2o still sends the previous chunk; proceed sends on */
            send_paced(r);
        return;
    case EXCHANGE_DO_RESET:
    case EXCHANGE_DO_CLOSE:
    case EXCHANGE_DO_DROP:
        if (!exchange_has_answered(r->x))
            break_connection(r, d == EXCHANGE_DO_RESET);
        else if (!r->sending) /* a paced body cut short; else proceed cuts it */
            h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    case EXCHANGE_DO_WAIT: /* its timer is queued */
    case EXCHANGE_DO_READ:
    case EXCHANGE_DO_PARK:
    case EXCHANGE_DO_DONE:
        return;
    }
}

int h2s_carry(void *ctx, struct exchange *x, enum exchange_do d)
{
    struct h2s_request *r = request_of(x);
    (void)ctx;
    /* libh2o sends an HTTP/2 answer when the turn ends, an HTTP/1 answer as it is made. */
    int deferred = r->req->version >= 0x200;
    act(r, d);
    return deferred;
}

/* HTTP/1 does not watch a connection while its request waits; look at the socket. HTTP/2
 * disposes a reset or closed stream itself, so a live request there is wanted. */
int h2s_peer_gone(void *ctx, struct exchange *x)
{
    h2o_req_t *req = request_of(x)->req;
    h2o_socket_t *sock = socket_of(req);
    (void)ctx;
    return sock && req->version < 0x200 && net_peer_gone(h2o_socket_get_fd(sock));
}

/* A request has waited its delay, so its record and libh2o's request are out of the cache: the
 * next answer's pool, the one after's libh2o request, the third's record. */
void h2s_prefetch(void *ctx, struct exchange *x, unsigned ahead)
{
    struct h2s_request *r = request_of(x);
    (void)ctx;
    if (ahead == 1) {
        __builtin_prefetch(r->req->pool.chunks);
    } else if (ahead == 2) {
        for (size_t off = 0; off < sizeof *r->req; off += 64)
            __builtin_prefetch((const char *)r->req + off);
    } else {
        __builtin_prefetch(&r->req); /* its exchange is the core's to prefetch */
    }
}

/* Runs as libh2o clears the request's pool, before its chunks go: p is the shared handle that
 * points at the record (begin_request). */
static void on_dispose(void *p)
{
    struct h2s_request *r = *(struct h2s_request **)p;
    /* Out of the pool, the heap and the inbox: once this has returned, no thread can hand r
     * back. */
    loop_end(&r->loop->core, r->x);
}

static long on_lookup(void *ctx, const char *name, char *buf, size_t len)
{
    h2o_req_t *req = ctx;
    /* libh2o keeps Host (HTTP/2: :authority) apart from the other fields. */
    if (strcasecmp(name, "Host") == 0)
        return req->input.authority.base
                   ? route_value_copy(req->input.authority.base, req->input.authority.len, buf, len)
                   : -1;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        if (h->name->len == strlen(name) && strncasecmp(h->name->base, name, h->name->len) == 0)
            return route_value_copy(h->value.base, h->value.len, buf, len);
    }
    return -1;
}

/* libh2o 2.2.5 takes much larger header blocks than libmicrohttpd; the core holds both engines
 * to the same limits. */
static size_t header_bytes(const h2o_req_t *req)
{
    size_t n = 0;
    for (size_t i = 0; i < req->headers.size; i++)
        n += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
    return n;
}

/* The head of req: over HTTP/2, its header block as libh2o decoded it; over HTTP/1.x, as
 * received (head_parse), or NULL if the buffer does not start with this request (then libh2o's
 * own checks stand). libh2o keeps only the first Content-Length, folds Host, Expect and
 * Transfer-Encoding away from req->headers, and reads the body before the handler; but its
 * HTTP/1.x connection keeps the head as received at the start of the socket's input buffer until
 * the answer is done. */
static const struct head *raw_head(h2o_req_t *req, struct head *h, struct head_field *f)
{
    h2o_socket_t *sock = socket_of(req);
    struct h2s_conn *c = sock ? sock->on_close.data : NULL;
    /* The request an Upgrade: h2c was sent with is answered over HTTP/2 but came as HTTP/1.1,
     * with the fields that asked for the upgrade, and its head as received is gone. */
    if (req->version >= 0x200 && c && c->upgraded) {
        c->upgraded = 0;
        return NULL;
    }
    if (req->version >= 0x200) {
        *h = (struct head){.method = req->method.base,
                           .mlen = req->method.len,
                           .target = req->path.base,
                           .tlen = req->path.len,
                           .fields = f,
                           .nfields = req->headers.size,
                           .h2 = 1};
        for (size_t i = 0; i < req->headers.size && i < HEAD_MAX_FIELDS; i++) {
            const h2o_header_t *e = &req->headers.entries[i];
            f[i] = (struct head_field){e->name->base, e->name->len, e->value.base, e->value.len};
        }
        return h;
    }
    h2o_buffer_t *in = sock ? sock->input : NULL;
    if (!in || head_parse(in->bytes, in->size, h, f) <= 0 || h->mlen != req->method.len ||
        memcmp(h->method, req->method.base, h->mlen) != 0 || h->tlen != req->path.len ||
        memcmp(h->target, req->path.base, h->tlen) != 0)
        return NULL;
    return h;
}

/* A request of loop's main or control listener, read whole by libh2o: the core plans and answers
 * it (exchange.h). Due requests are answered at the end of the turn (on_fire), never from here:
 * answering them while arrivals are read ties the two together, so that one second's answers
 * and the next second's arrivals gather into a burst that never spreads out again. */
static int begin_request(struct h2s_loop *loop, h2o_req_t *req)
{
    char method[32];
    size_t mlen = req->method.len < sizeof method - 1 ? req->method.len : sizeof method - 1;
    memcpy(method, req->method.base, mlen);
    method[mlen] = '\0';
    /* The record and its exchange live in the request's pool, whose first chunk (4 KiB) every
     * request has and little of which libh2o fills; a small shared handle brings on_dispose. A
     * record of its own (malloc) cost 0.6 KiB more a waiting request. */
    struct h2s_request *r = h2o_mem_alloc_pool(&req->pool, REQUEST_SIZE + exchange_size());
    struct h2s_request **handle = h2o_mem_alloc_shared(&req->pool, sizeof *handle, on_dispose);
    *handle = r;
    *r = (struct h2s_request){
        .x = (struct exchange *)(void *)((char *)r + REQUEST_SIZE), .req = req, .loop = loop};
    h2o_socket_t *sock = socket_of(req);
    struct h2s_conn *c = sock ? sock->on_close.data : NULL;
    struct sockaddr_storage peer;
    socklen_t plen = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer);
    struct head head;
    struct head_field fields[HEAD_MAX_FIELDS];
    /* Routed by the normalized path (percent-decoded, no dot segments), as libmicrohttpd does;
     * the query is read raw (on_lookup), and the limits and the log see the target as sent. */
    struct route_request in = {.method = method,
                               .target = req->path_normalized.base,
                               .target_len = req->path_normalized.len,
                               .target_bytes = req->path.len,
                               .raw_target = req->path.base,
                               .raw_target_len = req->path.len,
                               .lookup = on_lookup,
                               .whole_bodies = H2S_WHOLE_BODIES,
                               .ctx = req,
                               .peer = plen ? (struct sockaddr *)&peer : NULL,
                               .header_bytes = header_bytes(req),
                               .head = raw_head(req, &head, fields),
                               .h2 = req->version >= 0x200};
    r->head_read = in.head && !in.h2;
    enum exchange_do d = loop_begin(&loop->core, r->x, r, c ? &c->c : NULL, &in);
    /* libh2o has read the whole body already. */
    if (d == EXCHANGE_DO_READ && req->entity.base)
        d = exchange_on_body(r->x, req->entity.base, req->entity.len);
    if (d == EXCHANGE_DO_READ || d == EXCHANGE_DO_ANSWER)
        d = exchange_next(r->x);
    /* A request about to wait keeps only what its pool holds, not libh2o's 4 KiB chunk: nothing
     * but the request, its pool and the handle point into the pool yet (pool_fit.h). */
    if (d == EXCHANGE_DO_HOLD)
        *handle = r = pool_fit(req, r);
    act(r, d);
    h2s_want_fire(loop);
    return 0;
}

int h2s_on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    return begin_request(H2O_STRUCT_FROM_MEMBER(struct h2s_loop, ctx, req->conn->ctx), req);
}

int h2s_on_control_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    return begin_request(H2O_STRUCT_FROM_MEMBER(struct h2s_loop, ctl_ctx, req->conn->ctx), req);
}

void h2s_library_answer(h2o_logger_t *self, h2o_req_t *req)
{
    struct app_server *srv = ((struct h2s_logger *)(void *)self)->srv;
    struct h2s_loop *loop = NULL;
    /* The control listener's requests are not the load's: never counted. */
    for (size_t i = 0; !loop && i < srv->nloops; i++)
        if (req->conn->ctx == &srv->loops[i].ctx)
            loop = &srv->loops[i];
    if (!loop || req->res.status <= 0)
        return;
    char method[32];
    size_t mlen = req->method.len < sizeof method - 1 ? req->method.len : sizeof method - 1;
    memcpy(method, req->method.base, mlen);
    method[mlen] = '\0';
    struct sockaddr_storage peer;
    socklen_t plen = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer);
    struct route_request in = {.method = method,
                               .target = req->path_normalized.base ? req->path_normalized.base : "",
                               .target_len = req->path_normalized.len,
                               .peer = plen ? (struct sockaddr *)&peer : NULL};
    exchange_library_answer(srv->svc, loop->core.shard, &in, (unsigned)req->res.status);
}
