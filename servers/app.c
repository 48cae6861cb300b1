#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "app.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "control/reload.h"
#include "control/scenario.h"
#include "base/timer.h"
#include "report/report.h"
#include "run/wsloop.h"

extern char **environ;

/* Most loops a server runs, whatever --threads says. */
#define APP_MAX_LOOPS 1024

static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return seed;
}

/* The server skeleton, the same for every engine: the engine checks its part of the config, then
 * the service and the listening sockets are made, then the engine starts its loops on them. On
 * failure everything made is undone, err is filled and a negative errno returned (-EINVAL: a
 * config error, -EADDRINUSE: the port is taken). */
static int serve(const struct app_engine *engine, const struct config *cfg, const struct log *lg,
                 int inherited, struct accesslog *al, struct app_server **srv, struct service *svc,
                 struct control *ctl, unsigned *port, unsigned *control_port, size_t *nloops,
                 char *err, size_t errlen)
{
    *srv = NULL;
    int rc = engine->prepare(srv, cfg, lg, err, errlen);
    if (rc != 0) {
        if (*srv)
            engine->free(*srv);
        return rc;
    }
    /* Thread-per-connection has no loops of ours: one listener, one daemon. */
    *nloops = cfg->model == CONFIG_MODEL_THREAD_PER_CONNECTION ? 1 : cfg->threads;
    if (*nloops > APP_MAX_LOOPS)
        *nloops = APP_MAX_LOOPS;
    int *fds = calloc(*nloops, sizeof *fds);
    if (!fds || service_init(svc, cfg, *nloops, al) != 0) {
        free(fds);
        engine->free(*srv);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int control_fd = -1;
    /* The WebSocket sockets' loop: a thread of the core's, idle until a socket comes. */
    struct wsloop_config wc = {cfg->max_connections, cfg->idle_timeout_us, cfg->max_delay_us, al};
    rc = wsloop_start(&svc->ws, &wc);
    if (rc != 0) {
        free(fds);
        engine->free(*srv);
        service_cleanup(svc);
        snprintf(err, errlen, "websocket loop: %s", strerror(-rc));
        return rc;
    }
    rc = control_init(ctl, svc, cfg, lg, err, errlen);
    if (rc != 0) {
        free(fds);
        engine->free(*srv);
        service_cleanup(svc);
        return rc;
    }
    svc->scenario = ctl->scenario;
    svc->report = report_text;
    control_hook(ctl, &svc->control);
    /* An inherited socket keeps the backlog its service manager gave it (Backlog=). */
    rc = net_open(cfg->bind, cfg->port, *nloops, (int)cfg->backlog, inherited, fds, port, err,
                  errlen);
    /* The control API listens apart, so that load tools and routes never meet it. */
    if (rc == 0 && cfg->control_host[0]) {
        char why[CORE_ERR_LEN];
        rc = net_listen(cfg->control_host, cfg->control_port, 1, 64, &control_fd, control_port, why,
                        sizeof why);
        if (rc != 0)
            snprintf(err, errlen, "control: %.400s", why);
    }
    if (rc == 0) {
        char curl[300] = "";
        if (control_fd >= 0)
            net_format_url(curl, sizeof curl, config_control_tls(cfg) ? "https" : "http",
                           cfg->control_host, *control_port);
        service_set_endpoints(svc, *port, control_fd >= 0 ? curl : NULL, *control_port);
        struct app_base base = {cfg, lg, svc, *nloops, fds, control_fd, ctl};
        rc = engine->start(*srv, &base, err, errlen);
        control_fd = base.control_fd;
    }
    for (size_t i = 0; i < *nloops; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (control_fd >= 0)
        close(control_fd);
    free(fds);
    if (rc != 0) {
        engine->free(*srv);
        control_cleanup(ctl);
        service_cleanup(svc);
    }
    return rc;
}

int app_main(int argc, char **argv, const struct app_engine *engine)
{
    struct config cfg;
    enum config_action action;
    char err[CORE_ERR_LEN];
    struct log lg;
    struct app_server *srv = NULL;
    struct service svc;
    struct control ctl;
    unsigned port = 0, control_port = 0;
    size_t nloops = 0;
    sigset_t sigs;
    int sig;

    if (config_load(&cfg, &engine->caps, argc, argv, environ, random_seed(), &action, err,
                    sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", engine->caps.program, err);
        return 2;
    }
    /* The scenario is checked whole against the routes, for --check-config as for a start. */
    if ((action == CONFIG_ACTION_RUN || action == CONFIG_ACTION_CHECK) &&
        scenario_check(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", engine->caps.program, err);
        config_cleanup(&cfg);
        return 2;
    }
    switch (action) {
    case CONFIG_ACTION_HELP:
        config_usage(stdout, &engine->caps);
        config_cleanup(&cfg);
        return 0;
    case CONFIG_ACTION_VERSION:
        printf("%s %s (engine %s, %s)\n", engine->caps.program, SLOWSRV_VERSION, engine->name,
               engine->library());
        config_cleanup(&cfg);
        return 0;
    case CONFIG_ACTION_CHECK:
        fputs(cfg.warnings, stderr);
        printf("%s: ok\n", cfg.check_file);
        config_cleanup(&cfg);
        return 0;
    case CONFIG_ACTION_RUN:
        break;
    }
    log_init(&lg, engine->caps.program, cfg.log_level, stderr);

    /* Every thread inherits this mask; only the main thread takes the signals, in sigwait. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Socket activation (slowsrv.socket, systemd-socket-activate): one listening socket. */
    int inherited = -1;
    int nfds = sd_listen_fds(1);
    if (nfds > 1) {
        fprintf(stderr, "%s: systemd passed %d sockets; give the service exactly one\n",
                engine->caps.program, nfds);
        config_cleanup(&cfg);
        return 2;
    }
    if (nfds == 1)
        inherited = SD_LISTEN_FDS_START;

    struct accesslog access, *al = NULL;
    if (cfg.access_log[0]) {
        if (accesslog_open(&access, cfg.access_log, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", engine->caps.program, err);
            config_cleanup(&cfg);
            return 2;
        }
        al = &access;
    }

    int rc = serve(engine, &cfg, &lg, inherited, al, &srv, &svc, &ctl, &port, &control_port,
                   &nloops, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "%s: %s%s\n", engine->caps.program, err,
                rc == -EADDRINUSE ? " (another server has it; pick another --port)" : "");
        config_cleanup(&cfg);
        if (al)
            accesslog_close(al);
        return rc == -EINVAL ? 2 : 1;
    }
    /* The file is watched before the startup line: a change once it is out is seen. */
    struct reload rl;
    int reloading = reload_init(&rl, &ctl, &cfg, &engine->caps, argc, argv, environ) == 0;
    char url[300];
    net_format_url(url, sizeof url, cfg.tls_cert[0] ? "https" : "http", cfg.bind, port);
    /* A default --threads says where it came from: "threads=1 (cpu.max 100000/100000)". */
    char from[80] = "";
    if (cfg.threads_from[0] && nloops == cfg.threads &&
        cfg.model != CONFIG_MODEL_THREAD_PER_CONNECTION)
        snprintf(from, sizeof from, " (%s)", cfg.threads_from);
    char control[320] = "";
    if (cfg.control_host[0]) {
        char curl[300];
        net_format_url(curl, sizeof curl, config_control_tls(&cfg) ? "https" : "http",
                       cfg.control_host, control_port);
        snprintf(control, sizeof control, " control=%s%s", curl,
                 cfg.control_bearer[0] ? " (token)" : "");
    }
    fprintf(stderr, "%s %s listening on %s (engine=%s model=%s threads=%u%s)%s\n",
            engine->caps.program, SLOWSRV_VERSION, url, engine->name, config_model_name(cfg.model),
            (unsigned)nloops, from, control);
    /* What the configuration found worth saying, after the startup line: one line each. */
    for (const char *w = cfg.warnings; *w;) {
        const char *nl = strchr(w, '\n');
        int n = nl ? (int)(nl - w) : (int)strlen(w);
        LOG(&lg, LOG_LEVEL_WARN, "%.*s", n, w);
        w += n + (nl != NULL);
    }
    fflush(stderr);
    /* Type=notify units wait for this; a no-op when NOTIFY_SOCKET is unset. */
    sd_notifyf(0, "READY=1\nSTATUS=listening on %s", url);
    control_start(&ctl); /* the scenario's clock starts with the service */

    /* SIGHUP reopens the access log (logrotate) and reloads the config file, as a change of
     * the file does; SIGTERM and SIGINT drain and stop. */
    int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
    /* The watched directory changed: the file is read once it is quiet (due), or at the latest
     * RELOAD_QUIET_MAX_MS after the first change (deadline). */
    uint64_t due = 0, deadline = 0;
    for (sig = 0; !sig;) {
        struct pollfd pf[2] = {{sfd, POLLIN, 0}, {reloading ? rl.fd : -1, POLLIN, 0}};
        uint64_t now = timer_now_us(), wake = due ? (due < deadline ? due : deadline) : 0;
        int wait_ms = wake                   ? (wake > now ? (int)((wake - now + 999) / 1000) : 0)
                      : reloading && rl.lost ? RELOAD_REWATCH_MS
                                             : -1;
        int n = sfd >= 0 ? poll(pf, 2, wait_ms) : 0;
        if (sfd < 0 && sigwait(&sigs, &sig) != 0)
            sig = 0;
        if (n > 0 && (pf[1].revents & POLLIN) && reload_events(&rl)) {
            now = timer_now_us();
            due = now + RELOAD_QUIET_MS * 1000ULL;
            if (!deadline)
                deadline = now + RELOAD_QUIET_MAX_MS * 1000ULL;
        }
        if (reloading && rl.lost && !due && reload_rewatch(&rl))
            reload_apply(&rl, 0);
        if (due && timer_now_us() >= (due < deadline ? due : deadline)) {
            due = deadline = 0;
            reload_apply(&rl, 0);
        }
        struct signalfd_siginfo si;
        if (n > 0 && (pf[0].revents & POLLIN) && read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
            sig = (int)si.ssi_signo;
        if (sig != SIGHUP)
            continue;
        sig = 0;
        if (al && accesslog_reopen(al) != 0)
            LOG(&lg, LOG_LEVEL_WARN, "access-log: cannot reopen %s: %s", cfg.access_log,
                strerror(errno));
        if (reloading)
            reload_apply(&rl, 1);
    }
    if (sfd >= 0)
        close(sfd);
    if (reloading)
        reload_cleanup(&rl);
    sd_notify(0, "STOPPING=1");
    LOG(&lg, LOG_LEVEL_INFO, "%s: draining for up to %llu ms", strsignal(sig),
        (unsigned long long)(cfg.grace_us / 1000));
    service_stop(&svc);
    engine->stop(srv);
    engine->free(srv);
    control_cleanup(&ctl);
    service_cleanup(&svc);
    if (al)
        accesslog_close(al);
    config_cleanup(&cfg);
    LOG(&lg, LOG_LEVEL_INFO, "stopped");
    return 0;
}

void *app_library_fn(_Atomic(void *) *slot, const char *name)
{
    void *fn = atomic_load_explicit(slot, memory_order_relaxed);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        if (!fn)
            abort(); /* the library is linked in: it cannot be missing */
        atomic_store_explicit(slot, fn, memory_order_relaxed);
    }
    return fn;
}
