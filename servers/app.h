/*
 * app: the program around an engine, shared by both binaries: load and validate the
 * configuration, answer --help/--version/--check-config, start the engine, print the startup
 * line, wait for SIGTERM/SIGINT and drain. Exit codes: 0 clean stop, 1 cannot listen,
 * 2 bad option, value or config.
 */
#ifndef SLOWSRV_APP_H
#define SLOWSRV_APP_H

#include "base/accesslog.h"
#include "plan/config.h"
#include "control/api.h"
#include "base/log.h"
#include "base/net.h"
#include "run/service.h"

/* The engine's server: each binary links one engine, which defines it; opaque to the app. */
struct app_server;

/* What the app makes for the engine's start and keeps for the server's whole life: the
 * configuration, the log, the service (routes, worker pool, counters, access log) and the
 * listening sockets. The engine borrows all of it but the sockets, which it takes over. */
struct app_base {
    const struct config *cfg;
    const struct log *log;
    struct service *svc;
    size_t nloops;   /* loops to run: --threads, or 1 for thread-per-connection */
    int *listen_fds; /* nloops listening sockets (SO_REUSEPORT copies, or dups of systemd's); the
                        engine takes one by setting its entry to -1, the app closes the rest */
    int control_fd;  /* --control's listening socket, or -1: the engine serves the control API
                        on it (control_handle) and takes it by setting it to -1 */
    struct control *control; /* what answers there */
};

/* What an engine offers the app. Every call is made from the main thread, in this order:
 * prepare, then (once the app has bound) start, then stop and free; or free alone after a
 * failed prepare or start. */
struct app_engine {
    struct config_engine caps;    /* its program name and models, for the options */
    const char *name;             /* "mhd", shown as engine=<name> */
    const char *(*library)(void); /* "libmicrohttpd 0.9.75" */
    /* Makes the server and checks what only the engine can check of cfg (the TLS certificate
     * and key its library loads), before anything is bound. On failure fills err (CORE_ERR_LEN)
     * and returns a negative errno (-EINVAL for a config error); *srv may then be set, to free. */
    int (*prepare)(struct app_server **srv, const struct config *cfg, const struct log *lg,
                   char *err, size_t errlen);
    /* Starts serving base->nloops loops on base->listen_fds. On failure fills err and returns a
     * negative errno, with every thread it started stopped. */
    int (*start)(struct app_server *srv, struct app_base *base, char *err, size_t errlen);
    void (*stop)(struct app_server *srv); /* drain within cfg->grace_us and join */
    void (*free)(struct app_server *srv);
};

/* Runs the program; returns its exit status. */
int app_main(int argc, char **argv, const struct app_engine *engine);

/* The library's definition of `name`, a function the program defines too in front of it (ELF
 * symbol interposition: the engine's filters below its library's parsers), found once through
 * dlsym(RTLD_NEXT) and kept in *slot. */
void *app_library_fn(_Atomic(void *) *slot, const char *name);

#endif
