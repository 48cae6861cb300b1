/*
 * app: the program around an engine, shared by both binaries: load and validate the
 * configuration, answer --help/--version/--check-config, start the engine, print the startup
 * line, wait for SIGTERM/SIGINT and drain. Exit codes: 0 clean stop, 1 cannot listen,
 * 2 bad option, value or config.
 */
#ifndef SLOWSRV_APP_H
#define SLOWSRV_APP_H

#include "accesslog.h"
#include "config.h"
#include "log.h"
#include "net.h"

/* The engine's server: each binary links one engine, which defines it; opaque to the app. */
struct app_server;

/* What an engine offers the app. Every call is made from the main thread. */
struct app_engine {
    struct config_engine caps;    /* its program name and models, for the options */
    const char *name;             /* "mhd", shown as engine=<name> */
    const char *(*library)(void); /* "libmicrohttpd 0.9.75" */
    /* Listens (or takes `inherited`, a socket from systemd, when >= 0) and starts serving; on
     * failure fills err (CORE_ERR_LEN) and returns a negative errno (-EADDRINUSE for a port in
     * use, -EINVAL for a bad setting such as a TLS file). */
    int (*start)(struct app_server **srv, const struct config *cfg, const struct log *lg,
                 int inherited, struct accesslog *access, char *err, size_t errlen);
    unsigned (*port)(const struct app_server *srv);
    unsigned (*threads)(const struct app_server *srv); /* threads shown on the startup line */
    void (*stop)(struct app_server *srv);              /* drain within cfg->grace_us and join */
    void (*free)(struct app_server *srv);
};

/* Runs the program; returns its exit status. */
int app_main(int argc, char **argv, const struct app_engine *engine);

#endif
