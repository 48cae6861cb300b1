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

#include "accesslog.h"
#include "config.h"
#include "log.h"
#include "net.h"

struct h2o_server;

/* Requests are logged to `access` (NULL: none). Listens on cfg's address, or on inherited_fd
 * (socket activation; -1 for none), (TLS when cfg names a certificate) and starts the loop threads.
 * cfg and lg must outlive the server. Returns 0 and sets *out, or a negative errno with a one-line
 * reason in err (NET_ERR_LEN bytes): -EADDRINUSE for a port in use, -EINVAL for unusable TLS files.
 * Call from the main thread with SIGTERM and SIGINT blocked. */
int h2o_server_start(struct h2o_server **out, const struct config *cfg, const struct log *lg,
                     int inherited_fd, struct accesslog *access, char *err);

/* The port actually bound. */
unsigned h2o_server_port(const struct h2o_server *srv);

/* Number of loop threads. */
unsigned h2o_server_threads(const struct h2o_server *srv);

/* Stops accepting, lets in-flight requests finish for up to cfg->grace_us, then closes the
 * connections and joins the threads. Call once, from the thread that started the server. */
void h2o_server_stop(struct h2o_server *srv);

/* Frees a stopped server. */
void h2o_server_free(struct h2o_server *srv);

#endif
