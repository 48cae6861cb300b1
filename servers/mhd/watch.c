/*
 * The HTTP/1 framing watch of slowsrv's cleartext connections: every byte libmicrohttpd reads
 * from a connection's socket is followed as it arrives (common/http/h1frame.h, stream mode), so
 * that the core refuses what libmicrohttpd would take its own way: a chunk-size line over 4 KiB
 * (libmicrohttpd takes one as long as its read buffer, and one longer stalls the connection on
 * the epoll and select models, or gets its HTML 500 on the others), a chunk size that is not hex.
 * The refused request gets the core's answer, written around libmicrohttpd (mhd_refuse_early),
 * and libmicrohttpd then reads the end of the stream and closes the connection.
 *
 * libmicrohttpd 0.9.75 reads a cleartext socket with recv(2), and a TLS one with GnuTLS's
 * gnutls_record_recv, both called through its PLT: this program's own definitions come first
 * (ELF symbol interposition) and call the libraries', found with dlsym(RTLD_NEXT). Sockets are
 * found by descriptor (a TLS session's, from GnuTLS), in a table sized to the descriptor limit;
 * one that is not in it (a listener, the loop's own descriptors) is passed through untouched, and
 * so is the recv under a TLS session, which carries TLS records. The table and the resolved
 * functions are the process's: one per program, set up once before any connection.
 */
#include <gnutls/gnutls.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "mhd.h"

/* Declared here rather than through <sys/socket.h>, whose fortified inline recv would clash
 * with this definition. */
ssize_t recv(int fd, void *buf, size_t len, int flags);
int shutdown(int fd, int how);
#define SHUTDOWN_READ 0 /* SHUT_RD */

static _Atomic(struct mhd_conn *) *watched;
static atomic_uchar *lingering; /* by descriptor: mhd_watch_linger */
static size_t nwatched;
static _Atomic(void *) real_recv, real_tls_recv, real_shutdown, real_tls_bye;

/* The watched connection on descriptor fd, or NULL. */
static struct mhd_conn *watched_on(int fd)
{
    return watched && fd >= 0 && (size_t)fd < nwatched
               ? atomic_load_explicit(&watched[fd], memory_order_acquire)
               : NULL;
}

/* n bytes just arrived on w's connection at buf: how many of them libmicrohttpd is given. All
 * of them; or, when a request among them is refused, those of the requests before it, and the
 * refusal is answered once libmicrohttpd has answered those and reads again (session: over TLS);
 * 0 if the refused request began before them: answered now, and libmicrohttpd reads the end of
 * the stream. */
static ssize_t follow(struct mhd_conn *w, int fd, void *session, const void *buf, ssize_t n)
{
    if (n <= 0 || w->h1.state == H1FRAME_OFF)
        return n;
    uint64_t base = w->h1.pos;
    const char *why;
    if (!h1frame_feed_stream(&w->h1, buf, (size_t)n, &why))
        return n;
    if (w->h1.head_at > base) {
        /* The socket reads as ended from here: libmicrohttpd reads again once it has answered
         * the requests before, and the refusal is answered then. */
        w->refuse_pending = 1;
        shutdown(fd, SHUTDOWN_READ);
        return (ssize_t)(w->h1.head_at - base);
    }
    mhd_refuse_early(w, fd, session, w->h1.status, why);
    return 0;
}

/* A read after a refusal: answered now if it waited for the requests before it, then the end of
 * the stream. */
static ssize_t after_refusal(struct mhd_conn *w, int fd, void *session)
{
    if (w->refuse_pending) {
        w->refuse_pending = 0;
        mhd_refuse_early(w, fd, session, w->h1.status, w->h1.why);
    }
    return 0;
}

int mhd_watch_init(void)
{
    if (watched)
        return 0;
    struct rlimit rl;
    size_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                   ? (size_t)rl.rlim_cur
                   : 65536;
    /* Zeroed pages: a table for a million descriptors costs memory only where it is used. */
    watched = calloc(n, sizeof *watched);
    lingering = calloc(n, sizeof *lingering);
    if (!watched || !lingering) {
        free(watched);
        free(lingering);
        watched = NULL;
        lingering = NULL;
        return -1;
    }
    nwatched = n;
    return 0;
}

void mhd_watch(struct mhd_conn *w, int fd, int on)
{
    if (!watched || fd < 0 || (size_t)fd >= nwatched)
        return;
    if (on) {
        h1frame_init_stream(&w->h1, (size_t)w->shard->loop->srv->cfg->max_header_size);
        w->tls = mhd_shard_tls(w->shard);
    }
    if (on)
        atomic_store_explicit(&lingering[fd], 0, memory_order_relaxed);
    atomic_store_explicit(&watched[fd], on ? w : NULL, memory_order_release);
}

void mhd_watch_linger(int fd, int on)
{
    if (lingering && fd >= 0 && (size_t)fd < nwatched)
        atomic_store_explicit(&lingering[fd], (unsigned char)on, memory_order_release);
}

/* 1 if the connection on fd lingers (mhd_watch_linger). */
static int lingers(int fd)
{
    return lingering && fd >= 0 && (size_t)fd < nwatched &&
           atomic_load_explicit(&lingering[fd], memory_order_acquire);
}

/* Over TLS libmicrohttpd ends the session (close_notify) before it closes: a lingering one
 * stays silent, as its socket does. */
int gnutls_bye(gnutls_session_t session, gnutls_close_request_t how)
{
    int (*real)(gnutls_session_t, gnutls_close_request_t) =
        (int (*)(gnutls_session_t, gnutls_close_request_t))app_library_fn(&real_tls_bye,
                                                                          "gnutls_bye");
    int fd = -1, send_fd;
    gnutls_transport_get_int2(session, &fd, &send_fd);
    return lingers(fd) ? GNUTLS_E_SUCCESS : real(session, how);
}

/* libmicrohttpd shuts a connection down before closing it; a lingering one is left open. */
int shutdown(int fd, int how)
{
    int (*real)(int, int) = (int (*)(int, int))app_library_fn(&real_shutdown, "shutdown");
    return lingers(fd) ? 0 : real(fd, how);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t (*real)(int, void *, size_t, int) =
        (ssize_t(*)(int, void *, size_t, int))app_library_fn(&real_recv, "recv");
    struct mhd_conn *w = watched_on(fd);
    if (!w || w->tls)
        return real(fd, buf, len, flags);
    if (w->h1.state == H1FRAME_REFUSED)
        return after_refusal(w, fd, NULL); /* libmicrohttpd then closes */
    ssize_t n = real(fd, buf, len, flags);
    return (flags & 2 /* MSG_PEEK */) ? n : follow(w, fd, NULL, buf, n);
}

ssize_t gnutls_record_recv(gnutls_session_t session, void *data, size_t size)
{
    ssize_t (*real)(gnutls_session_t, void *, size_t) =
        (ssize_t(*)(gnutls_session_t, void *, size_t))app_library_fn(&real_tls_recv,
                                                                     "gnutls_record_recv");
    int fd = -1, send_fd;
    gnutls_transport_get_int2(session, &fd, &send_fd);
    struct mhd_conn *w = watched_on(fd);
    if (w && w->h1.state == H1FRAME_REFUSED)
        return after_refusal(w, fd, session);
    ssize_t n = real(session, data, size);
    return w ? follow(w, fd, session, data, n) : n;
}
