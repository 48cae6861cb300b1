/*
 * The HTTP/1 framing watch: in front of libh2o's HTTP/1 read callback on a cleartext
 * connection, it follows each request as its bytes arrive (common/http/h1frame.h) before libh2o
 * reads them. libh2o 2.2.5 reads a request whole before any handler runs, answers some heads
 * itself (its own text 400 past 100 fields) and takes what the core refuses (a trailer line
 * without a colon, a chunk-size line of any length): the watch lets the core decide these, as
 * on slowsrv.
 *
 * A refused request that is the first libh2o holds, with nothing under way on the connection,
 * gets the core's answer, written around libh2o (h2s_refuse_early), and libh2o then closes the
 * connection as if the client had left. One pipelined behind a request libh2o has still to
 * answer is cut off there instead, and in its place libh2o reads a line that is no HTTP, which
 * it answers with its own 400 and a close once the requests before are answered: the order of
 * the answers stays, and nothing after the refused request is read.
 *
 * On the control listener, the first head is also given to the core as soon as it is whole
 * (h2s_gate_control): what the core refuses from a head there (a missing or wrong token, a Host
 * or Origin it does not allow, a body over the API's limit) is answered and closed before libh2o
 * reads any of the body.
 *
 * Over TLS the watch is off: libh2o may read a first request with the handshake, before the
 * watch is in front of it. There libh2o's own answers stand.
 */
#include <string.h>

#include "h2o.h"

/* What libh2o reads in place of a refused request behind others: not a request line. */
static const char NOT_HTTP[] = "\x01\r\n\r\n";

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

static void on_read(h2o_socket_t *sock, const char *err)
{
    struct h2s_conn *c = conn_of(sock);
    h2o_buffer_t *in = sock->input;
    if (err || c->h1.state == H1FRAME_OFF) {
        call_inner(c, sock, err);
        return;
    }
    if (c->h1.state == H1FRAME_REFUSED) {
        /* Behind a refused request: nothing more is read. */
        in->size -= sock->bytes_read < in->size ? (size_t)sock->bytes_read : in->size;
        return;
    }
    size_t fresh = sock->bytes_read < in->size ? (size_t)sock->bytes_read : in->size;
    const char *why;
    uint64_t back;
    unsigned status = h1frame_feed(&c->h1, in->bytes, in->size, fresh, &why, &back);
    if (!status) {
        /* A control request's head is whole: the core may refuse it before its body, which
         * libh2o would otherwise read whole first. Only the first request of a connection
         * counts: the control API closes after each answer. */
        if (c->c.control && !c->gated && head_done(&c->h1)) {
            c->gated = 1;
            if (h2s_gate_control(c) != 0) {
                c->h1.state = H1FRAME_REFUSED;
                call_inner(c, sock, h2o_socket_error_closed);
                return;
            }
        }
        call_inner(c, sock, NULL);
        return;
    }
    /* The refused request is the first libh2o holds (its head, or a body it is reading) and
     * nothing is under way: answered here, then libh2o closes. */
    if (back >= in->size && atomic_load(&c->c.active) == 0 &&
        h2s_refuse_early(c, status, why) == 0) {
        call_inner(c, sock, h2o_socket_error_closed);
        return;
    }
    if (back < in->size) {
        size_t start = in->size - (size_t)back;
        memcpy(in->bytes + start, NOT_HTTP,
               sizeof NOT_HTTP - 1 < back ? sizeof NOT_HTTP - 1 : (size_t)back);
        in->size = start + (sizeof NOT_HTTP - 1 < back ? sizeof NOT_HTTP - 1 : (size_t)back);
        call_inner(c, sock, NULL);
        return;
    }
    /* Neither could be done (the answer did not fit in the socket): the connection ends. */
    call_inner(c, sock, h2o_socket_error_closed);
}

h2o_socket_cb h2s_h1_watch(struct h2s_conn *c, h2o_socket_t *sock, h2o_socket_cb cb)
{
    if (cb == on_read || sock->ssl || c->h1.state == H1FRAME_OFF)
        return cb;
    if (!c->h1_inner)
        h1frame_init(&c->h1, (size_t)c->loop->srv->cfg->max_header_size);
    c->h1_inner = cb;
    return on_read;
}
