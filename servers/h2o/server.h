/*
 * The libh2o engine of slowsrv-h2o: carries out the core's plans over HTTP/1.1, HTTP/2 over
 * cleartext (prior knowledge and Upgrade: h2c) and HTTP/2 over TLS (ALPN).
 *
 * N event-loop threads, each with its own h2o loop and context, its own SO_REUSEPORT listener,
 * its own timer heap driven by a timerfd in the loop, and an eventfd to be told to stop. A
 * delayed request waits in the heap; a request whose client goes away (HTTP/2 stream reset or
 * connection close) is disposed by h2o, which cancels its timer. No thread sleeps.
 *
 * libh2o 2.2.5 reads a whole request body before the handler runs (past 32 MiB into a temporary
 * file in --spool-dir), so /write memory grows with the upload here, unlike slowsrv.
 */
#ifndef SLOWSRV_H2O_SERVER_H
#define SLOWSRV_H2O_SERVER_H

#include "../app.h"

/* The engine's entry points for app_main (servers/app.h). start: Requests are logged to `access`
 * (NULL: none). Listens on cfg's address, or on inherited_fd (socket activation; -1 for none), (TLS
 * when cfg names a certificate) and starts the loop threads. cfg and lg must outlive the server.
 * Returns 0 and sets *out, or a negative errno with a one-line reason in err (CORE_ERR_LEN bytes):
 * -EADDRINUSE for a port in use, -EINVAL for unusable TLS files. Call from the main thread with
 * SIGTERM and SIGINT blocked. port: the port actually bound (useful with --port 0). threads:
 * event-loop threads serving. stop: stops accepting, lets in-flight requests finish for up to
 * cfg->grace_us, closes every connection and joins the threads; blocks; call once, from the thread
 * that started it. free: frees a stopped server. */
extern const struct app_engine h2o_engine;

#endif
