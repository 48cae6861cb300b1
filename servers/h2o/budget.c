/*
 * The HTTP/2 flood budgets' glue (the budgets: common/http/h2budget.h): a filter between
 * libh2o's socket and its HTTP/2 parser, which counts the frames a client sent before libh2o
 * reads them, answers a flood with a GOAWAY and a close, and stops reading a connection that owes
 * acknowledgements it cannot send.
 *
 * libh2o 2.2.5 has no hook for this, and its HTTP/2 connection struct cannot be compiled against
 * (http2_internal.h needs a khash.h that Debian does not ship). What it does have: every read
 * callback of a socket is installed through h2o_socket_read_start, and a socket turns HTTP/2
 * through h2o_http2_accept (ALPN h2, and an HTTP/1 connection that starts with the client
 * preface) or h2o_http2_handle_upgrade (Upgrade: h2c). libh2o calls its exported functions
 * through the PLT, so the executable's definitions of these three come first (ELF symbol
 * interposition): they mark the connection HTTP/2 and put the filter in front of libh2o's own
 * read callback, which it then calls. The real functions are found with dlsym(RTLD_NEXT).
 */
#include <linux/sockios.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "h2o.h"
#include "http/h2budget.h"

#include <h2o/http2.h>

/* Room the kernel must have for the GOAWAY to be written at once: libh2o must never find a
 * write of ours still under way when it writes next. */
#define GOAWAY_ROOM 4096

static _Atomic(void *) real_read_start, real_accept, real_upgrade;

static void on_read(h2o_socket_t *sock, const char *err);
static void on_resume(h2o_timeout_entry_t *entry);

/* The connection of one of our accepted sockets, or NULL (listeners, the timerfd, ...). */
static struct h2s_conn *conn_of(h2o_socket_t *sock)
{
    return sock->on_close.cb == h2s_on_conn_close ? sock->on_close.data : NULL;
}

/* c speaks HTTP/2 from here on; 0, or -1 if there is no memory for its budget (then it goes
 * unfiltered). */
static int begin(struct h2s_conn *c)
{
    if (c->h2)
        return 0;
    if (!(c->h2 = calloc(1, sizeof *c->h2)))
        return -1;
    h2budget_init(&c->h2->budget);
    c->h2->conn = c;
    c->h2->resume.cb = on_resume;
    return 0;
}

/* Calls libh2o's HTTP/2 read callback; returns 0, or -1 if it closed the connection. */
static int call_inner(struct h2s_conn *c, h2o_socket_t *sock, const char *err)
{
    return h2s_call_library(c, sock, c->h2->inner, err);
}

/* libh2o reads what the filter passed; what it leaves is the start of a frame, counted already. */
static void forward(struct h2s_conn *c, h2o_socket_t *sock)
{
    if (call_inner(c, sock, NULL) == 0)
        c->h2->fed = sock->input->size;
}

/* libh2o closes the connection as if the client had closed it. */
static void close_h2(struct h2s_conn *c, h2o_socket_t *sock, const char *err)
{
    call_inner(c, sock, err ? err : h2o_socket_error_closed);
}

static void on_goaway_sent(h2o_socket_t *sock, const char *err)
{
    close_h2(conn_of(sock), sock, err);
}

static int room_for_goaway(int fd)
{
    int queued = 0, size = 0;
    socklen_t len = sizeof size;
    if (ioctl(fd, SIOCOUTQ, &queued) != 0 || getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &len))
        return 0;
    return size - queued >= GOAWAY_ROOM;
}

static void stop_waiting(struct h2s_h2 *h)
{
    if (h2o_timeout_is_linked(&h->resume))
        h2o_timeout_unlink(&h->resume);
}

/* The GOAWAY goes once libh2o's own write is out (looked at every H2S_WAIT_MS), then libh2o
 * closes the connection; a client that does not read keeps that write from going, and the
 * core's sweep shuts it down (conn_end). */
static void send_goaway(struct h2s_conn *c, h2o_socket_t *sock)
{
    struct h2s_h2 *h = c->h2;
    if (c->c.shut) {
        close_h2(c, sock, NULL);
        return;
    }
    if (h2o_socket_is_writing(sock) || !room_for_goaway(h2o_socket_get_fd(sock))) {
        if (!h2o_timeout_is_linked(&h->resume))
            h2o_timeout_link(c->loop->evloop, &c->loop->h2_wait, &h->resume);
        return;
    }
    h2o_iovec_t buf = h2o_iovec_init(h->goaway, h2budget_goaway(&h->budget, h->goaway));
    h2o_socket_write(sock, &buf, 1, on_goaway_sent);
}

/* The budget's verdict: counted, the GOAWAY, the close. What the client sends from here on is
 * dropped unread. */
static void end(struct h2s_conn *c, h2o_socket_t *sock)
{
    struct h2s_h2 *h = c->h2;
    h->ending = 1;
    stop_waiting(h);
    stats_h2(c->loop->core.shard, h2budget_reason(&h->budget));
    conn_end(&c->c, timer_now_us());
    if (!h2o_socket_is_reading(sock))
        h2o_socket_read_start(sock, on_read);
    send_goaway(c, sock);
}

static void on_resume(h2o_timeout_entry_t *entry)
{
    struct h2s_h2 *h = H2O_STRUCT_FROM_MEMBER(struct h2s_h2, resume, entry);
    struct h2s_conn *c = h->conn;
    h2o_socket_t *sock = c->sock;
    if (h->ending) {
        send_goaway(c, sock);
        return;
    }
    /* Shut down by a sweep meanwhile: libh2o must read the end to close it. */
    if (!c->c.shut && h2budget_must_pause(&h->budget, h2o_socket_is_writing(sock))) {
        if (!h2o_timeout_is_linked(&h->resume))
            h2o_timeout_link(c->loop->evloop, &c->loop->h2_wait, &h->resume);
        return;
    }
    h2o_socket_read_start(sock, on_read);
    if (sock->input->size)
        forward(c, sock);
}

/* Reading stops until the connection's write has gone (checked every H2S_WAIT_MS). */
static void pause_reading(struct h2s_conn *c, h2o_socket_t *sock)
{
    h2o_socket_read_stop(sock);
    if (h2o_timeout_is_linked(&c->h2->resume))
        return;
    stats_h2(c->loop->core.shard, STATS_H2_PAUSED);
    h2o_timeout_link(c->loop->evloop, &c->loop->h2_wait, &c->h2->resume);
}

/* The filter: the new bytes are counted, then handed on, held or refused. */
static void on_read(h2o_socket_t *sock, const char *err)
{
    struct h2s_conn *c = conn_of(sock);
    struct h2s_h2 *h = c->h2;
    if (err) {
        close_h2(c, sock, err);
        return;
    }
    if (h->ending) {
        h2o_buffer_consume(&sock->input, sock->input->size);
        return;
    }
    int blocked = h2o_socket_is_writing(sock);
    size_t size = sock->input->size;
    h2budget_written(&h->budget, sock->bytes_written);
    if (h->fed > size)
        h->fed = 0;
    if (h->fed < size && h2budget_feed(&h->budget, (const uint8_t *)sock->input->bytes + h->fed,
                                       size - h->fed, blocked) != H2BUDGET_OK) {
        end(c, sock);
        return;
    }
    h->fed = size;
    if (h2o_timeout_is_linked(&h->resume) || h2budget_must_pause(&h->budget, blocked)) {
        pause_reading(c, sock);
        return;
    }
    forward(c, sock);
}

void h2s_budget_answered(struct h2s_conn *c)
{
    if (c->h2)
        h2budget_answered(&c->h2->budget);
}

void h2s_budget_free(struct h2s_h2 *h)
{
    if (!h)
        return;
    stop_waiting(h);
    free(h);
}

/* libh2o (re)starts reading a socket: an HTTP/2 connection's reads go through the filter. */
void h2o_socket_read_start(h2o_socket_t *sock, h2o_socket_cb cb)
{
    void (*real)(h2o_socket_t *, h2o_socket_cb) =
        (void (*)(h2o_socket_t *, h2o_socket_cb))app_library_fn(&real_read_start,
                                                                "h2o_socket_read_start");
    struct h2s_conn *c = conn_of(sock);
    if (c && !c->h2)
        cb = h2s_h1_watch(c, sock, cb);
    if (c && c->h2 && cb != on_read) {
        c->h2->inner = cb;
        /* What the input holds now was counted before libh2o was handed it (accept) or is
         * read again from its start (after an upgrade the buffer is new). */
        c->h2->fed = sock->input ? sock->input->size : 0;
        cb = on_read;
    }
    real(sock, cb);
}

/* A socket turns HTTP/2 (ALPN h2, or the client preface on an HTTP/1 connection): libh2o reads
 * what the socket holds at once, so that is counted first. */
void h2o_http2_accept(h2o_accept_ctx_t *ctx, h2o_socket_t *sock, struct timeval connected_at)
{
    void (*real)(h2o_accept_ctx_t *, h2o_socket_t *, struct timeval) =
        (void (*)(h2o_accept_ctx_t *, h2o_socket_t *, struct timeval))app_library_fn(
            &real_accept, "h2o_http2_accept");
    struct h2s_conn *c = conn_of(sock);
    enum h2budget_verdict v = H2BUDGET_OK;
    if (!c || begin(c) != 0) {
        real(ctx, sock, connected_at);
        return;
    }
    /* libh2o is handed the preface and the frames within the budget, and answers with its
     * SETTINGS; the rest is dropped. */
    if (sock->input->size) {
        v = h2budget_feed(&c->h2->budget, (const uint8_t *)sock->input->bytes, sock->input->size,
                          0);
        if (v != H2BUDGET_OK && h2budget_verdict_at(&c->h2->budget) < sock->input->size)
            sock->input->size = h2budget_verdict_at(&c->h2->budget);
    }
    c->busy++;
    real(ctx, sock, connected_at);
    c->busy--;
    if (c->closed) {
        if (!c->busy)
            h2s_conn_free(c);
        return;
    }
    c->h2->fed = sock->input->size;
    if (v != H2BUDGET_OK)
        end(c, sock);
}

/* Upgrade: h2c: libh2o answers 101 and reads HTTP/2 once it is written (read_start above). */
int h2o_http2_handle_upgrade(h2o_req_t *req, struct timeval connected_at)
{
    int (*real)(h2o_req_t *, struct timeval) = (int (*)(h2o_req_t *, struct timeval))app_library_fn(
        &real_upgrade, "h2o_http2_handle_upgrade");
    h2o_socket_t *sock =
        req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    struct h2s_conn *c = sock ? conn_of(sock) : NULL;
    int rc = real(req, connected_at);
    if (rc == 0 && c) {
        c->upgraded = 1;
        begin(c);
    }
    return rc;
}
