/*
 * The HTTP/1 framing watch: in front of libh2o's HTTP/1 read callback, on cleartext and on TLS
 * (HTTP/1.1 by ALPN, or no ALPN), it follows each request as its bytes arrive
 * (common/http/h1frame.h) before libh2o reads them. libh2o 2.2.5 reads a request whole before
 * any handler runs, answers some heads itself (its own text 400 past 100 fields) and takes what
 * the core refuses (a trailer line without a colon, a chunk-size line of any length): the watch
 * lets the core decide these, as on slowsrv.
 *
 * libh2o decrypts a TLS connection's bytes into the socket's input before it calls the read
 * callback, so the watch sees the same bytes on both. Only the first bytes of a TLS connection
 * come another way: libh2o may decrypt them with the handshake's last flight, and hands them to
 * h2o_http1_accept, whose parser reads them at once. The program's own h2o_http1_accept (ELF
 * symbol interposition, as in budget.c) looks at them first.
 *
 * A refused request that is the first libh2o holds, with nothing under way on the connection,
 * gets the core's answer, written around libh2o (h2s_refuse_early): on cleartext at once, on TLS
 * through libh2o's socket, which encrypts it; then libh2o closes the connection as if the client
 * had left. One pipelined behind requests libh2o has still to answer is cut off the input, and
 * its refusal waits: once libh2o has answered those before it, it reads again (read_start) with
 * nothing left, and the core's answer goes out then, in the loop's next timeout phase, before
 * the close. The order of the answers stays, and nothing after the refused request is read.
 *
 * On the control listener, the first head is also given to the core as soon as it is whole
 * (h2s_gate_control): what the core refuses from a head there (a missing or wrong token, a Host
 * or Origin it does not allow, a body over the API's limit) is answered and closed before libh2o
 * reads any of the body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "h2o.h"

#include <h2o/http1.h>

/* What libh2o reads in place of a refused request behind others when its refusal cannot wait
 * (no memory to keep its head): not a request line, which libh2o answers with its own 400. */
static const char NOT_HTTP[] = "\x01\r\n\r\n";

static _Atomic(void *) real_http1_accept;

static void on_read(h2o_socket_t *sock, const char *err);

static struct h2s_conn *conn_of(h2o_socket_t *sock)
{
    return sock->on_close.data;
}

/* Calls libh2o's HTTP/1 read callback; returns -1 if it closed the connection. */
static int call_inner(struct h2s_conn *c, h2o_socket_t *sock, const char *err)
{
    return h2s_call_library(c, sock, c->h1_inner, err);
}

/* 1 once the watch is past the first head of the connection. */
static long on_head_lookup(void *ctx, const char *name, char *buf, size_t len)
{
    size_t vlen;
    const char *v = head_value(ctx, name, &vlen);
    return v ? route_value_copy(v, vlen, buf, len) : -1;
}

/* x's answer written through libh2o's socket (TLS, which encrypts it); c->refusal holds it until
 * h2s_refusal_sent. */
static enum h2s_early write_tls(struct h2s_conn *c, struct exchange *x)
{
    size_t n;
    if (c->refusal || !(c->refusal = exchange_h1_bytes(x, &n)))
        return H2S_EARLY_FAILED;
    h2o_iovec_t buf = h2o_iovec_init(c->refusal, n);
    exchange_answer(x);
    h2o_socket_write(c->sock, &buf, 1, h2s_refusal_sent);
    return H2S_EARLY_SENDING;
}

/* The head at the start of c's input, given to the core: refused with status (and why) when
 * that is not 0, else as it came (a control request, checked before its body). Writes the
 * core's answer when it answers from the head. */
static enum h2s_early answer_head(struct h2s_conn *c, const char *buf, size_t len, unsigned status,
                                  const char *why)
{
    h2o_socket_t *sock = c->sock;
    struct head head;
    struct head_field fields[HEAD_MAX_FIELDS];
    int parsed = head_parse(buf, len, &head, fields) > 0;
    if (!parsed && !status)
        return H2S_EARLY_NONE;
    if (!parsed) /* a head cut short or too long to parse: its request line names it */
        head_name_line(buf, len, &head);
    char method[32], target[512];
    snprintf(method, sizeof method, "%.*s", (int)head.mlen, head.method);
    size_t tlen = head.tlen < sizeof target - 1 ? head.tlen : sizeof target - 1;
    memcpy(target, head.target, tlen);
    target[tlen] = '\0';
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    int fd = h2o_socket_get_fd(sock);
    if (getpeername(fd, (struct sockaddr *)&peer, &plen) != 0)
        plen = 0;
    struct route_request in = {.method = method,
                               .target = target,
                               .target_len = tlen,
                               .peer = plen ? (struct sockaddr *)&peer : NULL,
                               .refused = status,
                               .refused_why = why};
    if (!status) {
        /* The whole head: the control API reads its Authorization, Origin and Host. */
        in.target = head.target;
        in.target_len = head.tlen;
        in.lookup = on_head_lookup;
        in.ctx = &head;
        in.head = &head;
    }
    struct h2s_request *r = calloc(1, REQUEST_SIZE + exchange_size());
    if (!r)
        return H2S_EARLY_FAILED;
    r->x = (struct exchange *)(void *)((char *)r + REQUEST_SIZE);
    r->loop = c->loop;
    enum h2s_early rc = status ? H2S_EARLY_FAILED : H2S_EARLY_NONE;
    if (loop_begin(&c->loop->core, r->x, r, &c->c, &in) == EXCHANGE_DO_ANSWER) {
        if (sock->ssl) {
            rc = write_tls(c, r->x);
        } else {
            int w = exchange_write_h1(r->x, fd);
            if (w != 0)
                exchange_answer(r->x);
            rc = w > 0 ? H2S_EARLY_SENT : H2S_EARLY_FAILED;
        }
    }
    loop_end(&c->loop->core, r->x);
    free(r);
    return rc;
}

/* Answers c's request that h1frame refused (status, why) with the core's answer, written around
 * libh2o (on TLS through its socket, which encrypts it): counted and logged as a refused head
 * is. Its head is at the start of the socket's input. Never H2S_EARLY_NONE. */
static enum h2s_early h2s_refuse_early(struct h2s_conn *c, unsigned status, const char *why)
{
    return answer_head(c, c->sock->input->bytes, c->sock->input->size, status, why);
}

/* The same for a refusal deferred behind others (c->deferred): its head is c->deferred_head. */
static enum h2s_early h2s_refuse_deferred(struct h2s_conn *c)
{
    return answer_head(c, c->deferred_head ? c->deferred_head : "", c->deferred_len, c->deferred,
                       c->deferred_why);
}

/* The head of a control request is whole at the start of c's input, its body not yet read: the
 * core answers it from the head if it refuses it there (a missing or wrong --control-token, a
 * Host or Origin it does not allow, a body over the API's limit), as h2s_refuse_early writes. */
static enum h2s_early h2s_gate_control(struct h2s_conn *c)
{
    return answer_head(c, c->sock->input->bytes, c->sock->input->size, 0, NULL);
}

static int head_done(const struct h1frame *f)
{
    switch (f->state) {
    case H1FRAME_HEAD:
        return f->head_at > 0;
    case H1FRAME_BODY:
    case H1FRAME_CHUNK_LINE:
    case H1FRAME_CHUNK_DATA:
    case H1FRAME_CHUNK_END:
    case H1FRAME_TRAILER:
        return 1;
    case H1FRAME_OFF:
    case H1FRAME_REFUSED:
        break;
    }
    return 0;
}

/* What becomes of the connection after look(). */
enum verdict {
    GO_ON,   /* libh2o reads what the input holds */
    CLOSE,   /* it ends now */
    WRITING, /* a refusal is being written (TLS): it ends once that is out (h2s_refusal_sent) */
};

static enum verdict ended(enum h2s_early e)
{
    return e == H2S_EARLY_SENDING ? WRITING : CLOSE;
}

/* The refused request at buf (len bytes to the end of the input) waits behind the requests before
 * it. Returns 0, or -1 if its head cannot be kept. */
static int defer(struct h2s_conn *c, const char *buf, size_t len, unsigned status, const char *why)
{
    size_t keep = len < H2S_DEFERRED_HEAD ? len : H2S_DEFERRED_HEAD;
    if (c->deferred || !(c->deferred_head = malloc(keep ? keep : 1)))
        return -1;
    memcpy(c->deferred_head, buf, keep);
    c->deferred_len = keep;
    c->deferred = status;
    c->deferred_why = why;
    return 0;
}

/* The loop's timeout phase after libh2o answered every request before a deferred refusal. */
static void on_deferred(h2o_timeout_entry_t *entry)
{
    struct h2s_conn *c = H2O_STRUCT_FROM_MEMBER(struct h2s_conn, fire, entry);
    h2o_socket_t *sock = c->sock;
    /* Not done yet after all: the next read_start looks again. */
    if (atomic_load(&c->c.active) != 0 || sock->input->size != 0)
        return;
    enum h2s_early e = h2s_refuse_deferred(c);
    c->deferred = 0;
    if (e != H2S_EARLY_SENDING)
        call_inner(c, sock, h2o_socket_error_closed);
}

/* Looks at the `fresh` bytes at the end of sock's input, before libh2o does. */
static enum verdict look(struct h2s_conn *c, h2o_socket_t *sock, size_t fresh)
{
    h2o_buffer_t *in = sock->input;
    const char *why;
    uint64_t back;
    unsigned status = h1frame_feed(&c->h1, in->bytes, in->size, fresh, &why, &back);
    if (!status) {
        /* A control request's head is whole: the core may refuse it before its body, which
         * libh2o would otherwise read whole first. Only the first request of a connection
         * counts: the control API closes after each answer. */
        if (c->c.control && !c->gated && head_done(&c->h1)) {
            c->gated = 1;
            enum h2s_early e = h2s_gate_control(c);
            if (e != H2S_EARLY_NONE) {
                c->h1.state = H1FRAME_REFUSED;
                return ended(e);
            }
        }
        return GO_ON;
    }
    /* The refused request is the first libh2o holds (its head, or a body it is reading) and
     * nothing is under way: answered here, then libh2o closes. */
    if (back >= in->size && atomic_load(&c->c.active) == 0) {
        enum h2s_early e = h2s_refuse_early(c, status, why);
        if (e != H2S_EARLY_FAILED)
            return ended(e);
    }
    if (back < in->size) {
        size_t start = in->size - (size_t)back;
        if (defer(c, in->bytes + start, (size_t)back, status, why) == 0) {
            in->size = start;
            return GO_ON;
        }
        size_t n = sizeof NOT_HTTP - 1 < back ? sizeof NOT_HTTP - 1 : (size_t)back;
        memcpy(in->bytes + start, NOT_HTTP, n);
        in->size = start + n;
        return GO_ON;
    }
    /* Neither could be done (the answer did not fit in the socket): the connection ends. */
    return CLOSE;
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    struct h2s_conn *c = conn_of(sock);
    h2o_buffer_t *in = sock->input;
    if (err || c->h1.state == H1FRAME_OFF) {
        call_inner(c, sock, err);
        return;
    }
    size_t fresh = sock->bytes_read < in->size ? (size_t)sock->bytes_read : in->size;
    if (c->h1.state == H1FRAME_REFUSED) {
        /* Behind a refused request: nothing more is read. */
        in->size -= fresh;
        return;
    }
    switch (look(c, sock, fresh)) {
    case GO_ON:
        call_inner(c, sock, NULL);
        return;
    case CLOSE:
        call_inner(c, sock, h2o_socket_error_closed);
        return;
    case WRITING:
        return;
    }
}

void h2s_refusal_sent(h2o_socket_t *sock, const char *err)
{
    struct h2s_conn *c = conn_of(sock);
    (void)err;
    free(c->refusal);
    c->refusal = NULL;
    /* libh2o's connection closes as if the client had left; where libh2o has none yet (the
     * first bytes of a TLS connection), the socket is closed here. */
    if (c->h1_inner)
        call_inner(c, sock, h2o_socket_error_closed);
    else
        h2o_socket_close(sock);
}

h2o_socket_cb h2s_h1_watch(struct h2s_conn *c, h2o_socket_t *sock, h2o_socket_cb cb)
{
    /* libh2o reads again with nothing left: the requests before a deferred refusal are answered
     * (their answers written: libh2o starts reading from its write callback). The refusal goes
     * in the next timeout phase, out of libh2o's call. */
    if (c->deferred && sock->input->size == 0 && !h2o_timeout_is_linked(&c->fire)) {
        c->fire.cb = on_deferred;
        h2o_timeout_link(c->loop->evloop, &c->loop->fire_phase, &c->fire);
    }
    /* A TLS socket is watched once libh2o has taken it as HTTP/1 (h2o_http1_accept below), not
     * during its handshake. */
    if (cb == on_read || (sock->ssl && !c->h1_ready) || c->h1.state == H1FRAME_OFF)
        return cb;
    if (!c->h1_ready)
        h1frame_init(&c->h1, (size_t)c->loop->srv->cfg->max_header_size);
    c->h1_ready = 1;
    c->h1_inner = cb;
    return on_read;
}

/* libh2o takes an accepted socket as HTTP/1 (cleartext, or TLS without ALPN h2): on TLS, what the
 * handshake's last read decrypted is looked at before libh2o's parser reads it. */
void h2o_http1_accept(h2o_accept_ctx_t *ctx, h2o_socket_t *sock, struct timeval connected_at)
{
    void (*real)(h2o_accept_ctx_t *, h2o_socket_t *, struct timeval) =
        (void (*)(h2o_accept_ctx_t *, h2o_socket_t *, struct timeval))app_library_fn(
            &real_http1_accept, "h2o_http1_accept");
    struct h2s_conn *c = sock->on_close.cb == h2s_on_conn_close ? conn_of(sock) : NULL;
    if (!c || !sock->ssl) {
        real(ctx, sock, connected_at);
        return;
    }
    h1frame_init(&c->h1, (size_t)c->loop->srv->cfg->max_header_size);
    c->h1_ready = 1;
    if (sock->input->size) {
        switch (look(c, sock, sock->input->size)) {
        case GO_ON:
            break;
        case CLOSE:
            h2o_socket_close(sock);
            return;
        case WRITING:
            return;
        }
    }
    c->busy++;
    real(ctx, sock, connected_at);
    c->busy--;
    if (c->closed && !c->busy)
        h2s_conn_free(c);
}
