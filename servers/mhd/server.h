/*
 * The libmicrohttpd engine of slowsrv: carries out the core's plans over HTTP/1.1.
 *
 * Event-loop models (epoll, poll, select): one MHD daemon per thread in external mode, each with
 * its own SO_REUSEPORT listener and its own timer heap; a delayed request suspends its connection
 * and the loop resumes it when the timer is due, so no thread ever sleeps for a request.
 * thread-per-connection: one MHD daemon in that mode; a delay sleeps in the connection's own
 * thread, which is the point of that model (suspend/resume hangs there in libmicrohttpd 0.9.75).
 */
#ifndef SLOWSRV_MHD_SERVER_H
#define SLOWSRV_MHD_SERVER_H

#include "accesslog.h"
#include "config.h"
#include "log.h"
#include "net.h"

struct mhd_server;

/* Requests are logged to `access` (NULL: none). Listens on cfg's address, or on inherited_fd
 * (socket activation; -1 for none), and starts serving in background threads. cfg and lg must
 * outlive the server. Returns 0 and sets *out; or returns a negative errno (-EADDRINUSE when the
 * port is taken) with a one-line reason in err (NET_ERR_LEN bytes). Call from the main thread with
 * SIGTERM, SIGINT and SIGPIPE blocked, so that the server's threads inherit the mask. */
int mhd_server_start(struct mhd_server **out, const struct config *cfg, const struct log *lg,
                     int inherited_fd, struct accesslog *access, char *err);

/* The port actually bound (useful with --port 0). */
unsigned mhd_server_port(const struct mhd_server *srv);

/* Event-loop threads serving (1 for thread-per-connection, whose threads come and go). */
unsigned mhd_server_threads(const struct mhd_server *srv);

/* Stops accepting, lets in-flight requests finish for up to cfg->grace_us, closes every
 * connection and joins the threads. Blocks; call once, from the thread that started the server. */
void mhd_server_stop(struct mhd_server *srv);

/* Frees a stopped server. */
void mhd_server_free(struct mhd_server *srv);

#endif
