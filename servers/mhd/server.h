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

#include "../app.h"

/* The engine's entry points for app_main (servers/app.h). start: Requests are logged to `access`
 * (NULL: none). Listens on cfg's address, or on inherited_fd (socket activation; -1 for none), and
 * starts serving in background threads. cfg and lg must outlive the server. Returns 0 and sets
 * *out; or returns a negative errno (-EADDRINUSE when the port is taken) with a one-line reason in
 * err (CORE_ERR_LEN bytes). Call from the main thread with SIGTERM, SIGINT and SIGPIPE blocked, so
 * that the server's threads inherit the mask. port: the port actually bound (useful with --port 0).
 * threads: event-loop threads serving. stop: stops accepting, lets in-flight requests finish for up
 * to cfg->grace_us, closes every connection and joins the threads; blocks; call once, from the
 * thread that started it. free: frees a stopped server. */
extern const struct app_engine mhd_engine;

#endif
