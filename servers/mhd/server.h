/*
 * The libmicrohttpd engine of slowsrv: carries out the core's plans over HTTP/1.1.
 *
 * Event-loop models (epoll, poll, select): a loop per thread, each with its own SO_REUSEPORT
 * listener, timer heap and MHD daemon(s) (epoll: several, see SHARD_CONNECTIONS); a delayed
 * request suspends its connection and the loop resumes it when the timer is due, so no thread
 * ever sleeps for a request.
 * thread-per-connection: one MHD daemon in that mode; a delay sleeps in the connection's own
 * thread, which is the point of that model (suspend/resume hangs there in libmicrohttpd 0.9.75).
 */
#ifndef SLOWSRV_MHD_SERVER_H
#define SLOWSRV_MHD_SERVER_H

#include "../app.h"

/* The engine's table for app_main (servers/app.h, which states the calls and their order):
 * prepare makes the server and checks the TLS files (-EINVAL when they do not load), start runs
 * the loops on the listening sockets the app made, stop drains within cfg->grace_us (drain.h)
 * and joins the threads, free frees. */
extern const struct app_engine mhd_engine;

#endif
