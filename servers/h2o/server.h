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

/* The engine's table for app_main (servers/app.h, which states the calls and their order):
 * prepare makes the server and checks the TLS files (-EINVAL when they do not load), start runs
 * the loops on the listening sockets the app made, stop drains within cfg->grace_us (drain.h)
 * and joins the threads, free frees. */
extern const struct app_engine h2o_engine;

#endif
